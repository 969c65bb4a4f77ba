#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Snapshots of the editor's screens, drawn on a `TestBackend`.

use crate::common;

use std::path::PathBuf;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use citewise::export::{ExportReport, Exported};
use citewise::index::analyzer;
use citewise::pipeline::{ChannelId, Recommendations, Stage};
use citewise::tui::app::{App, AppSettings, Focus};
use citewise::tui::screen;

fn app(text: &str) -> App {
    App::new(text, Some(PathBuf::from("draft.tex")), PathBuf::from("references.bib"), AppSettings::defaults(12))
}

fn render(app: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| screen::draw(f, app)).unwrap();
    t.backend().to_string()
}

const DRAFT: &str = "\\title{Recommending Citations While You Write}\n\nSearch engines complete the query prefix a user types, and the best systems personalise these completions with the user's history.";

/// The demo library's complete answer for the draft's last sentence, as
/// `citewise recommend --json` writes it: stages bm25, evidence and rerank
/// with the citation encoder's signals, the timings left out (wall times
/// vary). Kept in `tests/fixtures/recommendations.json`, so that the
/// snapshots depend neither on which models are installed nor on their
/// numbers.
fn fixture_answer() -> Recommendations {
    let path = common::fixture("recommendations.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let answer: Recommendations = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    // An answer as the pipeline writes it: it reads back to the same JSON.
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    assert_eq!(json(&serde_json::to_string(&answer).unwrap()), json(&text), "{} is not an answer as written", path.display());
    answer
}

/// An app showing the fixture answer for the draft's last sentence.
fn app_with_results() -> App {
    app_with_edited_results(|_| {})
}

/// Same, with the answer changed by `edit` before it reaches the app.
fn app_with_edited_results(edit: impl FnOnce(&mut Recommendations)) -> App {
    let mut a = app(DRAFT);
    a.cursor_to_end();
    let mut r = fixture_answer();
    // The fixture answers the query the app makes.
    let q = a.query();
    assert_eq!(r.context, q.context_used(), "the fixture's context is the query's");
    assert_eq!(r.terms, analyzer::distinct_terms(&analyzer::english(), &q.local_text()), "the fixture's terms are the query's");
    edit(&mut r);
    a.on_requested(1);
    a.on_results(1, r);
    a
}

#[test]
fn empty_editor() {
    insta::assert_snapshot!(render(&app(""), 120, 30));
}

#[test]
fn results_with_evidence() {
    let mut a = app_with_results();
    a.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    a.on_key(KeyEvent::new(KeyCode::Char(' '), KeyModifiers::NONE));
    assert_eq!(a.focus(), Focus::Results);
    assert_eq!(a.marked_count(), 1);
    let top = a.visible()[0].paper.as_ref().unwrap().title.clone();
    assert_eq!(top, "Learning to Personalize Query Auto-Completion");
    insta::assert_snapshot!(render(&a, 120, 30));
}

#[test]
fn help_overlay() {
    let mut a = app(DRAFT);
    a.on_key(KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE));
    insta::assert_snapshot!(render(&a, 120, 30));
}

/// Every line of the help is shown: in full at 120×30 and 80×24, and
/// where it does not fit, ↓ scrolls down to its last line; any other key
/// closes it (and is not typed).
#[test]
fn the_help_shows_every_line_scrolling_where_it_does_not_fit() {
    use citewise::tui::app::Overlay;
    let last = "any other key closes it.";
    let mut a = app(DRAFT);
    a.on_key(KeyEvent::new(KeyCode::F(1), KeyModifiers::NONE));
    for (w, h) in [(120, 30), (80, 24)] {
        let screen = render(&a, w, h);
        assert!(screen.contains(last) && screen.contains("F8 "), "{w}×{h}:\n{screen}");
        assert!(!screen.contains("for more"), "{w}×{h}:\n{screen}");
    }
    let screen = render(&a, 80, 14);
    assert!(!screen.contains(last) && screen.contains(" Keys (↓/↑ for more) "), "{screen}");
    for _ in 0..30 {
        a.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    let screen = render(&a, 80, 14);
    assert!(screen.contains(last), "{screen}");
    assert_eq!(*a.overlay(), Overlay::Help);
    a.on_key(KeyEvent::new(KeyCode::Char('x'), KeyModifiers::NONE));
    assert_eq!(*a.overlay(), Overlay::None);
    assert_eq!(a.text(), DRAFT, "the key that closed the help is not typed");
}

#[test]
fn export_confirmation() {
    let mut a = app_with_results();
    let report = ExportReport {
        file: PathBuf::from("references.bib"),
        entries: vec![Exported::Added("shokouhi2013learning".into()), Exported::Present("bar-yossef2011context".into())],
        backup: Some(PathBuf::from("references.bib.bak")),
    };
    a.on_export_started(2);
    assert_eq!(a.status(), "exporting 2 papers to references.bib…");
    a.on_exported(Ok(report), false);
    assert_eq!(a.status(), "exported 2 papers to references.bib", "the status bar says the export finished");
    insta::assert_snapshot!(render(&a, 120, 30));
}

#[test]
fn a_failed_export_ends_the_exporting_status() {
    let mut a = app(DRAFT);
    a.on_export_started(1);
    a.on_exported(Err("references.bib is read-only; nothing was written".into()), false);
    assert_eq!(a.status(), "export failed (nothing was written)");
    assert!(render(&a, 120, 30).contains("references.bib is read-only"), "the reason is shown");
}

#[test]
fn narrow_80x24() {
    let a = app_with_results();
    insta::assert_snapshot!(render(&a, 80, 24));
}

/// A paper nothing cites: the sentences of its own abstract that match the
/// query, said to be the paper's own words, with the query terms marked.
#[test]
fn abstract_when_nothing_cites_a_paper() {
    let mut best = Vec::new();
    let a = app_with_edited_results(|r| {
        let top = &mut r.candidates[0];
        top.evidence.clear();
        best = top.own_words.clone();
    });
    let screen = render(&a, 120, 30);
    assert!(screen.contains("From the paper's own abstract"), "{screen}");
    assert!(!screen.contains("support"), "no evidence line is shown: {screen}");
    assert!(!best.is_empty());
    insta::assert_snapshot!(screen);
}

/// `o` on an evidence sentence read from a PDF opens that PDF at its page.
#[test]
fn open_the_citing_document_from_the_evidence_pane() {
    let mut a = app_with_edited_results(|r| {
        let top = &mut r.candidates[0];
        top.evidence[0].citing_file = Some("/papers/session-aware.pdf".into());
        top.evidence[0].citing_page = Some(4);
    });
    a.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(a.focus(), Focus::Evidence);
    let effects = a.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::NONE));
    assert_eq!(effects, [citewise::tui::app::Effect::OpenFile { path: "/papers/session-aware.pdf".into(), page: Some(4) }]);
    // Evidence without a file (from a prepared corpus) says so.
    a.on_key(KeyEvent::new(KeyCode::Char('j'), KeyModifiers::NONE));
    assert!(a.on_key(KeyEvent::new(KeyCode::Char('o'), KeyModifiers::NONE)).is_empty());
    assert!(a.status().contains("did not come from a file"), "{}", a.status());
}

fn paper(title: &str) -> citewise::corpus::Paper {
    citewise::corpus::Paper {
        id: "p1".into(),
        key: "k".into(),
        authors: vec!["Ann Author".into()],
        year: Some(2020),
        title: title.into(),
        venue: "Venue".into(),
        ..Default::default()
    }
}

/// Results of one complete request, with fixed stage timings (no models needed).
fn app_with(candidates: Vec<citewise::pipeline::Candidate>) -> App {
    let mut a = app(DRAFT);
    a.cursor_to_end();
    let ms = std::time::Duration::from_millis;
    let r = Recommendations {
        stage: Stage::Rerank,
        complete: true,
        candidates,
        timings: vec![
            (Stage::Channel(ChannelId::Bm25), ms(12)),
            (Stage::Channel(ChannelId::Evidence), ms(48)),
            (Stage::Channel(ChannelId::Citation), ms(31)),
            (Stage::Rerank, ms(230)),
        ],
        ..Default::default()
    };
    a.on_requested(1);
    a.on_results(1, r);
    a
}

/// At 80 columns a failed save's message is shown in full; the stage
/// timings give way to it.
#[test]
fn narrow_80x24_failed_save() {
    let c = citewise::pipeline::Candidate { paper: Some(paper("Query Auto-Completion")), ..citewise::pipeline::Candidate::new("p1") };
    let mut a = app_with(vec![c]);
    let message = "not saved: /home/ann/paper/draft.tex: Permission denied (os error 13)";
    a.set_status(message);
    let screen = render(&a, 80, 24);
    let status_line = screen.lines().nth(23).unwrap();
    assert!(status_line.contains(message), "{status_line}");
    // With no message, the timings are shown.
    a.set_status("");
    assert!(render(&a, 80, 24).lines().nth(23).unwrap().contains("bm25 12 ms"));
    insta::assert_snapshot!(screen);
}

/// Bidirectional overrides, zero-width and control characters in a title
/// or an evidence sentence do not reach the screen, and the panes' right
/// borders stay where they are.
#[test]
fn invisible_characters_do_not_break_the_borders() {
    let title = "Evil\u{202e}txt.exe \u{200b}Zero\u{200d}Width\u{feff} and\ta\u{2067}tab\u{1b}[31m";
    let mut c = citewise::pipeline::Candidate { paper: Some(paper(title)), ..citewise::pipeline::Candidate::new("p1") };
    c.evidence.push(citewise::pipeline::channel::EvidenceSnippet {
        text: "as shown\u{202e} by\u{200b} them\t(see\u{2066} [3])".into(),
        support: 2,
        citing_title: "A\u{202d}nother\u{200f} Paper\r\nTwo".into(),
        citing_year: Some(2021),
        sentence: "as shown\u{202e} by\u{200b} them".into(),
        citing_file: None,
        citing_page: None,
    });
    let a = app_with(vec![c]);
    for (w, h) in [(120, 30), (80, 24)] {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| screen::draw(f, &a)).unwrap();
        let buf = t.backend().buffer().clone();
        let bad = |s: &str| {
            s.chars().any(|ch| {
                ch.is_control() || matches!(ch, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{feff}')
            })
        };
        for y in 0..h {
            for x in 0..w {
                assert!(!bad(buf[(x, y)].symbol()), "cell ({x}, {y}) holds {:?}", buf[(x, y)].symbol());
            }
        }
        // Every row of the panes ends with a border in the last column.
        for y in 0..h - 1 {
            assert!(matches!(buf[(w - 1, y)].symbol(), "│" | "┐" | "┘"), "row {y}: {:?}", buf[(w - 1, y)].symbol());
        }
        let screen = t.backend().to_string();
        assert!(screen.contains("Eviltxt.exe ZeroWidth and atab[31m"), "{screen}");
        assert!(screen.contains("Another Paper Two"), "{screen}");
    }
}

/// A check of a two-citation draft, as the runner reports it: one citation
/// whose paper fits its sentence weakly (with a better paper and its
/// evidence), one clean.
fn check_report() -> citewise::check::Report {
    use citewise::check::{CitationReport, Finding, Kind, PaperRef, Report, Severity, Suggestion};
    let weak = Finding {
        kind: Kind::WeakSupport,
        severity: Severity::Warning,
        key: "mihalcea2004textrank".into(),
        line: 3,
        column: 120,
        range: 0..0,
        message: "`mihalcea2004textrank` (“TextRank: Bringing Order into Text”) fits its sentence weakly (support 0.08)".into(),
        fix: "check that the paper says what the sentence claims; the papers below fit it better".into(),
        suggestions: vec![Suggestion {
            key: "shokouhi2013personalize".into(),
            id: "doi:10.1145/2484028.2484076".into(),
            title: "Learning to Personalize Query Auto-Completion".into(),
            why: "fits the sentence".into(),
            support: Some(0.91),
            evidence: vec!["personalised query auto-completion from the user's history".into()],
        }],
        library_title: None,
        keep: None,
        best_match: Some("its abstract: “We rank the sentences of a text by a graph.”".into()),
    };
    let citation = |key: &str, title: &str, line, support, findings: Vec<Finding>| CitationReport {
        key: key.into(),
        line,
        column: 1,
        sentence: "Search engines complete the query prefix a user types [CIT].".into(),
        paper: Some(PaperRef { id: key.into(), title: title.into(), year: Some(2013) }),
        support: Some(support),
        signals: None,
        findings,
    };
    Report {
        file: "draft.tex".into(),
        citations: vec![
            citation("shokouhi2013personalize", "Learning to Personalize Query Auto-Completion", 2, 0.93, Vec::new()),
            citation("mihalcea2004textrank", "TextRank: Bringing Order into Text", 3, 0.08, vec![weak.clone()]),
        ],
        findings: vec![weak],
        notices: Vec::new(),
    }
}

#[test]
fn the_check_view_lists_citations_weakest_first_and_shows_one_with_its_alternatives() {
    use citewise::tui::app::{Effect, Overlay};
    let mut a = app(DRAFT);
    assert_eq!(a.on_key(KeyEvent::new(KeyCode::F(8), KeyModifiers::NONE)), [Effect::Check]);
    a.on_check_requested(7);
    a.on_checked(6, check_report());
    assert_eq!(*a.overlay(), Overlay::None, "an older check is not shown");
    a.on_checked(7, check_report());
    assert_eq!(*a.overlay(), Overlay::Check);
    assert_eq!(a.check_view().unwrap().current().unwrap().key, "mihalcea2004textrank", "the weakest first");
    insta::assert_snapshot!(render(&a, 120, 30));
    a.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    insta::assert_snapshot!("check_view_details", render(&a, 120, 30));
    a.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    a.on_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    assert_eq!(a.check_view().unwrap().current().unwrap().key, "shokouhi2013personalize");
    a.on_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert_eq!(*a.overlay(), Overlay::None);
}
