use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::tui::app::App;
use crate::tui::keymap::Action;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let settings = app.settings();
    let t = &settings.theme;
    let timings = app
        .results()
        .map(|r| {
            r.timings
                .iter()
                .filter(|(n, _)| n != "fuse")
                .map(|(n, d)| format!("{n} {:.0} ms", d.as_secs_f64() * 1000.0))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default();
    let help = settings.keymap.keys_of(Action::Help).join("/");
    let left = format!(
        " {} · {} papers · {} · {}{}",
        settings.device,
        settings.library_papers,
        settings.context_mode.label(),
        if app.marked_count() == 0 { String::new() } else { format!("{} marked · ", app.marked_count()) },
        if timings.is_empty() { String::new() } else { timings },
    );
    let msg = if app.status().is_empty() { String::new() } else { format!(" │ {}", app.status()) };
    let line = Line::from(vec![
        Span::raw(left),
        Span::styled(msg, Style::new().fg(t.accent)),
        Span::styled(format!("  {help} help "), Style::new().fg(t.muted)),
    ]);
    frame.render_widget(Paragraph::new(line).style(Style::new().bg(t.status_bg).fg(t.text)), area);
}
