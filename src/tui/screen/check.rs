//! The check view: the draft's citations, weakest support first, and for
//! the highlighted one (Enter) its findings, what others cited its paper
//! for and the papers that fit its sentence better; `a` applies the
//! highlighted suggestion, `b` adds the cited paper to the bibliography.

use ratatui::layout::{Margin, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};
use ratatui::Frame;

use crate::check::{CitationReport, Severity};
use crate::tui::app::{App, CheckView};
use crate::tui::text::display_safe;

pub fn draw(frame: &mut Frame, area: Rect, app: &App) {
    let Some(view) = app.check_view() else { return };
    let r = area.inner(Margin { horizontal: 2, vertical: 1 });
    frame.render_widget(Clear, r);
    let theme = &app.settings().theme;
    let (title, lines) = if view.details { details(view, app) } else { list(view, app, r.height.saturating_sub(2) as usize) };
    let hint = if view.details {
        " j/k: suggestion  a: apply it  b: add the cited paper to the bibliography  Enter/Esc: back "
    } else {
        " j/k: move  Enter: evidence and suggestions  b: add the cited paper to the bibliography  Esc: close "
    };
    frame.render_widget(
        Paragraph::new(lines).wrap(Wrap { trim: false }).block(
            Block::bordered()
                .title(format!(" {title} "))
                .title_bottom(Line::styled(hint, Style::new().fg(theme.muted)))
                .border_style(Style::new().fg(theme.focus)),
        ),
        r,
    );
}

fn mark(c: &CitationReport) -> &'static str {
    match c.findings.iter().map(|f| f.severity).max() {
        Some(Severity::Error) => "✗",
        Some(Severity::Warning) => "!",
        _ => " ",
    }
}

/// One line per citation: mark, support, line, key, title and what is wrong.
fn list<'a>(view: &'a CheckView, app: &App, height: usize) -> (String, Vec<Line<'a>>) {
    let theme = &app.settings().theme;
    let title = format!(
        "Citations: {} checked, {} with findings",
        view.report.citations.len(),
        view.report.citations.iter().filter(|c| !c.findings.is_empty()).count()
    );
    let first = view.selected.saturating_sub(height.saturating_sub(1));
    let lines = view
        .order
        .iter()
        .enumerate()
        .skip(first)
        .take(height.max(1))
        .map(|(row, &i)| {
            let c = &view.report.citations[i];
            let support = c.support.map_or_else(|| "  — ".into(), |s| format!("{s:.2}"));
            let what = c.findings.first().map_or_else(String::new, |f| format!("  {}", f.kind.name()));
            let title = c.paper.as_ref().map_or_else(|| "not in the library".into(), |p| display_safe(&p.title).into_owned());
            let style = if row == view.selected { Style::new().fg(theme.focus).add_modifier(Modifier::REVERSED) } else { Style::new() };
            Line::from(vec![
                Span::styled(format!("{} {support} l.{:<4} ", mark(c), c.line), style),
                Span::styled(display_safe(&c.key).into_owned(), style.fg(theme.accent)),
                Span::styled(format!("  {title}"), style),
                Span::styled(what, style.fg(theme.muted)),
            ])
        })
        .collect();
    (title, lines)
}

/// The highlighted citation: its sentence, findings, best match and the
/// papers offered with their evidence.
fn details<'a>(view: &'a CheckView, app: &App) -> (String, Vec<Line<'a>>) {
    let theme = &app.settings().theme;
    let Some(c) = view.current() else { return ("Citation".into(), Vec::new()) };
    let support = c.support.map_or_else(|| "not scored".into(), |s| format!("support {s:.2}"));
    let mut lines = vec![Line::styled(display_safe(&c.sentence).into_owned(), Style::new().add_modifier(Modifier::ITALIC)), Line::raw("")];
    if let Some(p) = &c.paper {
        let year = p.year.map_or_else(String::new, |y| format!(" ({y})"));
        lines.push(Line::from(vec![
            Span::styled("cited: ", Style::new().fg(theme.muted)),
            Span::raw(format!("{}{year}", display_safe(&p.title))),
        ]));
    }
    let mut offered = 0;
    for f in &c.findings {
        lines.push(Line::styled(format!("{}: {}", f.kind.name(), display_safe(&f.message)), Style::new().fg(theme.accent)));
        if let Some(m) = &f.best_match {
            lines.push(Line::raw(format!("  {}", display_safe(m))));
        }
        lines.push(Line::styled(format!("  {}", display_safe(&f.fix)), Style::new().fg(theme.muted)));
        for s in &f.suggestions {
            let support = s.support.map_or_else(String::new, |x| format!(" (support {x:.2})"));
            let title = if s.title.is_empty() { String::new() } else { format!(" “{}”", display_safe(&s.title)) };
            // The suggestion `a` applies stands out.
            let chosen = Style::new().fg(theme.focus).add_modifier(Modifier::REVERSED);
            let style = if offered == view.suggestion { chosen } else { Style::new() };
            offered += 1;
            lines.push(Line::styled(format!("  → {}{title}{support}: {}", display_safe(&s.key), s.why), style));
            for e in &s.evidence {
                lines.push(Line::styled(format!("      cited for: “{}”", display_safe(e)), Style::new().fg(theme.muted)));
            }
        }
    }
    if c.findings.is_empty() {
        lines.push(Line::styled("no findings", Style::new().fg(theme.muted)));
    }
    (format!("{} (line {}, {support})", c.key, c.line), lines)
}
