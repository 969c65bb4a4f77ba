use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph};
use ratatui::Frame;

use super::border;
use crate::tui::app::{App, Focus};
use crate::tui::text::display_safe;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let name = app.draft().and_then(|p| p.file_name()).map_or("(new draft)".to_string(), |n| n.to_string_lossy().into_owned());
    let title = format!(" {name}{} ", if app.is_dirty() { " •" } else { "" });
    let block = Block::bordered().title(title).border_style(border(app, Focus::Editor));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let (title, abstract_text) = app.global_context();
    let (title, abstract_text) = (display_safe(title), display_safe(abstract_text));
    let muted = Style::new().fg(app.settings().theme.muted);
    let mut lines = Vec::new();
    if !title.is_empty() {
        lines
            .push(Line::from(vec![Span::styled("Title: ", muted), Span::styled(title.clone(), Style::new().add_modifier(Modifier::BOLD))]));
    }
    if !abstract_text.is_empty() {
        lines.push(Line::from(vec![Span::styled("Abstract: ", muted), Span::styled(abstract_text.clone(), muted)]));
    }
    let [header, body] = Layout::vertical([Constraint::Length(lines.len() as u16), Constraint::Min(1)]).areas(inner);
    if !lines.is_empty() {
        frame.render_widget(Paragraph::new(lines), header);
    }
    frame.render_widget(app.editor(), body);
}
