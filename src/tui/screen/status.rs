use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::results::truncate;
use crate::pipeline::Stage;
use crate::tui::app::App;
use crate::tui::keymap::Action;
use crate::tui::text::display_safe;

/// What the status bar shows, most important first where it is short of
/// room: the message (a failed save, an export's result), then where the
/// reranker runs and the library, then the help key, then stage timings
/// (as many as fit).
pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let settings = app.settings();
    let t = &settings.theme;
    let width = area.width as usize;
    let timings: Vec<String> = app
        .results()
        .map(|r| {
            r.timings.iter().filter(|(n, _)| *n != Stage::Fuse).map(|(n, d)| format!("{n} {:.0} ms", d.as_secs_f64() * 1000.0)).collect()
        })
        .unwrap_or_default();
    let help = format!("  {} help ", settings.keymap.keys_of(Action::Help).join("/"));
    let mut left = format!(
        " {} · {} papers · {}{} · {}",
        settings.device,
        settings.library_papers,
        app.encoding().map(|e| format!("{} · ", display_safe(e))).unwrap_or_default(),
        settings.context_mode.label(),
        if app.marked_count() == 0 { String::new() } else { format!("{} marked · ", app.marked_count()) },
    );
    let status = display_safe(app.status());
    let mut msg = if status.is_empty() { String::new() } else { format!(" │ {status}") };
    let len = |s: &str| s.chars().count();
    // As many stage timings as there is room for.
    let mut room = width.saturating_sub(len(&left) + len(&msg) + len(&help));
    for (i, t) in timings.iter().enumerate() {
        let t = if i == 0 { t.clone() } else { format!(", {t}") };
        if len(&t) > room {
            break;
        }
        room -= len(&t);
        left.push_str(&t);
    }
    let mut help = help;
    if len(&left) + len(&msg) + len(&help) > width {
        help.clear();
    }
    if len(&left) + len(&msg) > width {
        if msg.is_empty() {
            left = truncate(&left, width);
        } else {
            // The message keeps its room; what is left of the line goes to the rest.
            msg = truncate(&msg, width);
            let room = width - len(&msg);
            left = if room > 12 { truncate(&left, room) } else { String::new() };
            if left.is_empty() {
                msg = truncate(&format!(" {status}"), width);
            }
        }
    }
    let line =
        Line::from(vec![Span::raw(left), Span::styled(msg, Style::new().fg(t.accent)), Span::styled(help, Style::new().fg(t.muted))]);
    frame.render_widget(Paragraph::new(line).style(Style::new().bg(t.status_bg).fg(t.text)), area);
}
