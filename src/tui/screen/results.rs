use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use super::border;
use crate::pipeline::rerank::{CITATION_BADGE, CITED_FOR_BADGE, RERANK_BADGE};
use crate::tui::app::{App, Focus};
use crate::tui::text::display_safe;

const SPINNER: [&str; 8] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧"];

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let visible = app.visible();
    let stage = match (app.results(), app.is_pending()) {
        (r, true) if r.is_none_or(|r| !r.complete) => {
            let s = r.map_or("searching".to_string(), |r| format!("{} done, refining", r.stage));
            format!(" {} {s} ", SPINNER[app.spinner() % SPINNER.len()])
        }
        (Some(r), _) => format!(" {} papers ", visible.len()) + if r.complete { "" } else { "(partial) " },
        (None, _) => String::new(),
    };
    let bottom = if !app.filter().is_empty() {
        format!(" filter: {} ", app.filter())
    } else if app.focus() == Focus::Results && app.results().is_some() {
        keys_hint(app)
    } else {
        String::new()
    };
    let block = Block::bordered()
        .title(" Results ")
        .title(Line::from(stage).right_aligned())
        .title_bottom(bottom)
        .border_style(border(app, Focus::Results));
    if app.results().is_none() {
        let keys = app.settings().keymap.keys_of(crate::tui::keymap::Action::AskCitations).join(" or ");
        let hint = Paragraph::new(format!("Write, then press {keys} to get citations for the text at the cursor."))
            .style(Style::new().fg(app.settings().theme.muted))
            .wrap(Wrap { trim: true })
            .block(block);
        frame.render_widget(hint, area);
        return;
    }
    let width = area.width.saturating_sub(4) as usize;
    let items: Vec<ListItem> = visible
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let marked = app.is_marked(&c.id);
            let mark = if marked { "✓" } else { " " };
            let (title, byline) = match &c.paper {
                Some(p) => {
                    let year = p.year.map_or("n.d.".to_string(), |y| y.to_string());
                    (
                        display_safe(&p.title).into_owned(),
                        display_safe(&format!("{} · {year} · {}", p.short_authors(), p.venue)).into_owned(),
                    )
                }
                None => (display_safe(&c.id).into_owned(), String::new()),
            };
            // Which stage ranked the paper where (see `badge`).
            let signals = [(RERANK_BADGE, c.rerank), (CITATION_BADGE, c.citation), (CITED_FOR_BADGE, c.cited_for)];
            let channels: String = c
                .channels
                .iter()
                .map(|ch| (ch.channel.badge(), ch.rank))
                .chain(signals.iter().filter_map(|(badge, s)| s.map(|s| (*badge, s.rank))))
                .map(|(badge, rank)| format!("{badge}{rank} "))
                .collect();
            let label = format!("  {:.2} {}", c.score, channels.trim_end());
            let title_style = if marked {
                Style::new().fg(app.settings().theme.marked).add_modifier(Modifier::BOLD)
            } else {
                Style::new().add_modifier(Modifier::BOLD)
            };
            ListItem::new(vec![
                Line::from(vec![
                    Span::styled(format!("{mark}{:>2}. ", i + 1), Style::new().fg(app.settings().theme.accent)),
                    Span::styled(truncate(&title, width.saturating_sub(5)), title_style),
                ]),
                Line::from(vec![
                    Span::raw("     "),
                    // The byline yields to the score and ranks (the row holds
                    // width + 2 characters; 5 are the indent).
                    Span::styled(
                        truncate(&byline, (width + 2).saturating_sub(5 + label.chars().count())),
                        Style::new().fg(app.settings().theme.muted),
                    ),
                    Span::styled(label, Style::new().fg(app.settings().theme.muted)),
                ]),
            ])
        })
        .collect();
    let list = List::new(items).block(block).highlight_style(Style::new().bg(app.settings().theme.selection_bg));
    let mut state = ListState::default().with_selected((!visible.is_empty()).then_some(app.selected()));
    frame.render_stateful_widget(list, area, &mut state);
}

/// What the list's keys do, on its lower border while it has the focus:
/// marking moves on to the next paper.
fn keys_hint(app: &App) -> String {
    use crate::tui::keymap::Action;
    let keys = |a: Action| app.settings().keymap.keys_of(a).join("/");
    format!(" {}: mark, then next  {}: cite  {}: export ", keys(Action::Mark), keys(Action::InsertCitation), keys(Action::Export))
}

/// Cuts to `max` characters with an ellipsis.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
