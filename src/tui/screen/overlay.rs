use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::tui::app::App;

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))]).flex(Flex::Center).areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))]).flex(Flex::Center).areas(v);
    h
}

/// The help's last lines, under the keys.
const HELP_FOOTER: [&str; 2] =
    ["Typing goes to the editor; list keys work in Results and Evidence.", "↓/↑ or j/k scroll this help; any other key closes it."];

/// The keys and what they do, every line of it: as wide as its longest
/// line where there is room (wrapped where there is not), as tall as its
/// lines where there is room, else scrolled by ↓/↑ ([`App::help_scroll`]).
pub fn help(frame: &mut Frame, area: Rect, app: &App) {
    let theme = &app.settings().theme;
    let rows = app.settings().keymap.help();
    let key_w = rows.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(8);
    let widest =
        rows.iter().map(|(_, d)| key_w + 2 + d.chars().count()).chain(HELP_FOOTER.iter().map(|l| l.chars().count())).max().unwrap_or(0);
    let width = (key_w + 60).max(widest + 2).min(area.width as usize);
    let inner = width.saturating_sub(2).max(1);
    let key_style = Style::new().fg(theme.accent).add_modifier(Modifier::BOLD);
    let mut lines: Vec<Line> = Vec::new();
    for (k, d) in &rows {
        for (i, part) in wrapped(d, inner.saturating_sub(key_w + 2)).into_iter().enumerate() {
            let key = if i == 0 { format!("{k:<key_w$}  ") } else { " ".repeat(key_w + 2) };
            lines.push(Line::from(vec![Span::styled(key, key_style), Span::raw(part)]));
        }
    }
    lines.push(Line::raw(""));
    for l in HELP_FOOTER {
        lines.extend(wrapped(l, inner).into_iter().map(|part| Line::styled(part, Style::new().fg(theme.muted))));
    }
    let height = (lines.len() + 2).min(area.height as usize);
    let shown = height.saturating_sub(2);
    let scroll = (app.help_scroll() as usize).min(lines.len().saturating_sub(shown));
    let title = if lines.len() > shown { " Keys (↓/↑ for more) " } else { " Keys " };
    let r = centered(area, width as u16, height as u16);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).scroll((scroll as u16, 0)).block(Block::bordered().title(title).border_style(Style::new().fg(theme.focus))),
        r,
    );
}

/// `text` in lines of at most `width` characters, broken between words (a
/// word longer than a line is a line of its own, cut where it is drawn).
fn wrapped(text: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in text.split(' ') {
        let n = word.chars().count();
        if len > 0 && len + 1 + n > width {
            out.push(std::mem::take(&mut line));
            len = 0;
        }
        if len > 0 {
            line.push(' ');
            len += 1;
        }
        line.push_str(word);
        len += n;
    }
    out.push(line);
    out
}

pub fn message(frame: &mut Frame, area: Rect, app: &App, title: &str, lines: &[String]) {
    let width = lines.iter().map(|l| l.chars().count()).max().unwrap_or(20).max(title.len() + 4) as u16 + 4;
    let r = centered(area, width, lines.len() as u16 + 2);
    frame.render_widget(Clear, r);
    let text: Vec<Line> = lines.iter().map(|l| Line::raw(crate::tui::text::display_safe(l).into_owned())).collect();
    frame.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(format!(" {title} ")).border_style(Style::new().fg(app.settings().theme.focus))),
        r,
    );
}

pub fn filter(frame: &mut Frame, results: Rect, app: &App) {
    let r = Rect { x: results.x + 1, y: results.y + results.height.saturating_sub(2), width: results.width.saturating_sub(2), height: 1 };
    frame.render_widget(Clear, r);
    frame.render_widget(Paragraph::new(format!("/{}▏", app.filter())).style(Style::new().fg(app.settings().theme.accent)), r);
}
