use std::cell::RefCell;

use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Paragraph, Wrap};
use ratatui::Frame;
use tantivy::tokenizer::TextAnalyzer;

use super::border;
use crate::evidence::sentences::split_sentences;
use crate::tui::app::{App, Focus};

thread_local! {
    static ANALYZER: RefCell<TextAnalyzer> = RefCell::new(crate::index::analyzer::english());
}

/// Splits text into spans, highlighting words whose analyzed form is a query term.
fn highlighted<'a>(text: &'a str, terms: &[String], base: Style, hl: Style) -> Vec<Span<'a>> {
    let mut out = Vec::new();
    ANALYZER.with(|a| {
        let mut a = a.borrow_mut();
        for (i, word) in text.split(' ').enumerate() {
            if i > 0 {
                out.push(Span::styled(" ", base));
            }
            let hit = crate::index::analyzer::terms(&mut a, word).iter().any(|t| terms.contains(t));
            out.push(Span::styled(word, if hit { hl } else { base }));
        }
    });
    out
}

/// Sentences of a paper's abstract shown when nothing cites it.
const ABSTRACT_SENTENCES: usize = 2;

/// The `n` sentences of `text` that hold the most query terms, in their
/// order in the text (the first ones when none holds any).
pub fn best_sentences<'a>(text: &'a str, terms: &[String], n: usize) -> Vec<&'a str> {
    let sentences: Vec<&str> = split_sentences(text, &[]).into_iter().map(|(s, e)| text[s..e].trim()).filter(|s| !s.is_empty()).collect();
    let mut scored: Vec<(usize, usize)> = ANALYZER.with(|a| {
        let mut a = a.borrow_mut();
        sentences
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let found = crate::index::analyzer::terms(&mut a, s);
                (i, terms.iter().filter(|t| found.contains(t)).count())
            })
            .collect()
    });
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut keep: Vec<usize> = scored.into_iter().take(n).map(|(i, _)| i).collect();
    keep.sort_unstable();
    keep.into_iter().map(|i| sentences[i]).collect()
}

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let block = Block::bordered().title(" Evidence ").border_style(border(app, Focus::Evidence));
    let Some(c) = app.current() else {
        frame.render_widget(block, area);
        return;
    };
    let terms = app.results.as_ref().map(|r| r.query_terms.clone()).unwrap_or_default();
    let t = &app.settings.theme;
    let mut lines: Vec<Line> = Vec::new();
    if c.evidence.is_empty() {
        let abstract_text = c.paper.as_ref().map(|p| p.abstract_text.as_str()).unwrap_or("");
        let best = best_sentences(abstract_text, &terms, ABSTRACT_SENTENCES);
        if best.is_empty() {
            lines.push(Line::styled("No citing sentence in the evidence database, and no abstract.", Style::new().fg(t.muted)));
        } else {
            lines.push(Line::styled("From the paper's own abstract (no citing sentence in the evidence database):", Style::new().fg(t.muted)));
            let base = Style::new().fg(t.text);
            for sentence in best {
                let mut spans = vec![Span::styled("“", base)];
                spans.extend(highlighted(sentence, &terms, base, base.fg(t.highlight).add_modifier(Modifier::BOLD)));
                spans.push(Span::styled("”", base));
                lines.push(Line::from(spans));
            }
        }
    }
    for (i, e) in c.evidence.iter().enumerate() {
        let selected = app.focus == Focus::Evidence && i == app.evidence_selected;
        let base = if selected { Style::new().bg(t.selection_bg) } else { Style::new() };
        let mut spans = vec![Span::styled(if selected { "▶ " } else { "• " }, Style::new().fg(t.accent))];
        spans.extend(highlighted(&e.text, &terms, base, base.fg(t.highlight).add_modifier(Modifier::BOLD)));
        lines.push(Line::from(spans));
        let year = e.citing_year.map_or("n.d.".to_string(), |y| y.to_string());
        lines.push(Line::styled(
            format!("  — {} ({year}) · support {}", e.citing_title, e.support),
            Style::new().fg(t.muted),
        ));
        if selected && e.sentence != e.text {
            lines.push(Line::styled(format!("  “{}”", e.sentence), Style::new().fg(t.muted).add_modifier(Modifier::ITALIC)));
        }
    }
    let scroll = (app.evidence_selected as u16).saturating_mul(2).saturating_sub(area.height.saturating_sub(4));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }).scroll((scroll, 0)).block(block), area);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abstract_sentences_that_match_the_query_come_first_in_text_order() {
        let text = "We present a tagger. It uses trigram statistics of tags. Parsing is not covered. Smoothing of trigram counts matters.";
        let terms: Vec<String> = ["trigram", "smooth", "count"].iter().map(|s| s.to_string()).collect();
        assert_eq!(best_sentences(text, &terms, 2), ["It uses trigram statistics of tags.", "Smoothing of trigram counts matters."]);
        assert_eq!(best_sentences(text, &[], 1), ["We present a tagger."]);
        assert!(best_sentences("", &terms, 2).is_empty());
    }
}
