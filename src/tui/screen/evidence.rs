use std::cell::RefCell;

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;
use tantivy::tokenizer::TextAnalyzer;

use super::border;
use crate::tui::app::{App, Focus};
use crate::tui::text::display_safe;

thread_local! {
    static ANALYZER: RefCell<TextAnalyzer> = RefCell::new(crate::index::analyzer::english());
}

/// Splits text into spans, highlighting words whose analyzed form is a query term.
fn highlighted(text: &str, terms: &[String], base: Style, hl: Style) -> Vec<Span<'static>> {
    let text = display_safe(text);
    let mut out = Vec::new();
    ANALYZER.with(|a| {
        let mut a = a.borrow_mut();
        for (i, word) in text.split(' ').enumerate() {
            if i > 0 {
                out.push(Span::styled(" ", base));
            }
            let hit = crate::index::analyzer::terms(&mut a, word).iter().any(|t| terms.contains(t));
            out.push(Span::styled(word.to_string(), if hit { hl } else { base }));
        }
    });
    out
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let block = Block::bordered().title(" Evidence ").border_style(border(app, Focus::Evidence));
    let Some(c) = app.current() else {
        frame.render_widget(block, area);
        return;
    };
    let terms = app.results().map(|r| r.query_terms.as_slice()).unwrap_or_default();
    let t = &app.settings().theme;
    let mut lines: Vec<Line> = Vec::new();
    if c.evidence.is_empty() {
        if c.own_words.is_empty() {
            lines.push(Line::styled("No citing sentence in the evidence database, and no abstract.", Style::new().fg(t.muted)));
        } else {
            lines.push(Line::styled(
                "From the paper's own abstract (no citing sentence in the evidence database):",
                Style::new().fg(t.muted),
            ));
            let base = Style::new().fg(t.text);
            for sentence in &c.own_words {
                let mut spans = vec![Span::styled("“", base)];
                spans.extend(highlighted(sentence, terms, base, base.fg(t.highlight).add_modifier(Modifier::BOLD)));
                spans.push(Span::styled("”", base));
                lines.push(Line::from(spans));
            }
        }
    }
    for (i, e) in c.evidence.iter().enumerate() {
        let selected = app.focus() == Focus::Evidence && i == app.evidence_selected();
        let base = if selected { Style::new().bg(t.selection_bg) } else { Style::new() };
        let mut spans = vec![Span::styled(if selected { "▶ " } else { "• " }, Style::new().fg(t.accent))];
        spans.extend(highlighted(&e.text, terms, base, base.fg(t.highlight).add_modifier(Modifier::BOLD)));
        lines.push(Line::from(spans));
        let year = e.citing_year.map_or("n.d.".to_string(), |y| y.to_string());
        lines.push(Line::styled(
            format!("  — {} ({year}) · support {}", display_safe(&e.citing_title), e.support),
            Style::new().fg(t.muted),
        ));
        if selected && e.sentence != e.text {
            lines.push(Line::styled(format!("  “{}”", display_safe(&e.sentence)), Style::new().fg(t.muted).add_modifier(Modifier::ITALIC)));
        }
    }
    let scroll = (app.evidence_selected() as u16).saturating_mul(2).saturating_sub(area.height.saturating_sub(4));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }).scroll((scroll, 0)).block(block), area);
}
