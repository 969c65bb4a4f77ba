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

pub fn help(frame: &mut Frame, area: Rect, app: &App) {
    let rows = app.settings().keymap.help();
    let key_w = rows.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(8);
    let mut lines: Vec<Line> = rows
        .iter()
        .map(|(k, d)| {
            Line::from(vec![
                Span::styled(format!("{k:<key_w$}  "), Style::new().fg(app.settings().theme.accent).add_modifier(Modifier::BOLD)),
                Span::raw(*d),
            ])
        })
        .collect();
    lines.push(Line::raw(""));
    lines.push(Line::styled(
        "Typing goes to the editor; list keys work in Results and Evidence. Any key closes.",
        Style::new().fg(app.settings().theme.muted),
    ));
    let width = (key_w + 60) as u16;
    let r = centered(area, width, lines.len() as u16 + 2);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(Block::bordered().title(" Keys ").border_style(Style::new().fg(app.settings().theme.focus))),
        r,
    );
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
