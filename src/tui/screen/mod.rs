//! Pure draw functions: the whole screen is a function of the [`App`].

mod check;
mod editor;
mod evidence;
mod overlay;
mod results;
mod status;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::widgets::Block;
use ratatui::Frame;

use super::app::{App, Focus, Overlay};

/// Below this width the panes stack vertically.
pub const WIDE: u16 = 110;

pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    frame.render_widget(Block::new().style(Style::new().bg(app.settings().theme.background).fg(app.settings().theme.text)), area);
    let [main, status_area] = Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(area);
    let (editor_area, results_area, evidence_area) = split(main);
    editor::draw(frame, editor_area, app);
    results::draw(frame, results_area, app);
    evidence::draw(frame, evidence_area, app);
    status::draw(frame, status_area, app);
    match app.overlay() {
        Overlay::None => {}
        Overlay::Help => overlay::help(frame, main, app),
        Overlay::Message { title, lines } => overlay::message(frame, main, app, title, lines),
        Overlay::Restore { when, .. } => overlay::message(
            frame,
            main,
            app,
            "Unsaved text found",
            &[format!("An autosave from {when} differs from the file."), "Restore it? (y / n)".into()],
        ),
        Overlay::Filter => overlay::filter(frame, results_area, app),
        Overlay::Check => check::draw(frame, main, app),
    }
}

/// Editor, results and evidence areas.
fn split(main: Rect) -> (Rect, Rect, Rect) {
    if main.width >= WIDE {
        let [left, right] = Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(main);
        let [results, evidence] = Layout::vertical([Constraint::Percentage(60), Constraint::Percentage(40)]).areas(right);
        (left, results, evidence)
    } else {
        let [editor, results, evidence] =
            Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(35), Constraint::Percentage(25)]).areas(main);
        (editor, results, evidence)
    }
}

/// The border style of a pane.
fn border(app: &App, focused: Focus) -> Style {
    if app.focus() == focused && matches!(app.overlay(), Overlay::None | Overlay::Filter) {
        Style::new().fg(app.settings().theme.focus)
    } else {
        Style::new().fg(app.settings().theme.border)
    }
}
