//! Snapshots of the editor's screens, drawn on a `TestBackend`.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use citewise::export::{ExportReport, Exported};
use citewise::library::Library;
use citewise::pipeline::{Models, Query, Recommendations, Recommender};
use citewise::tui::app::{App, AppSettings, Focus};
use citewise::tui::{demo, screen};

fn app(text: &str) -> App {
    App::new(text, Some(PathBuf::from("draft.tex")), PathBuf::from("references.bib"), AppSettings::defaults(12))
}

fn render(app: &App, w: u16, h: u16) -> String {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| screen::draw(f, app)).unwrap();
    t.backend().to_string()
}

const DRAFT: &str = "\\title{Recommending Citations While You Write}\n\nSearch engines complete the query prefix a user types, and the best systems personalise these completions with the user's history.";

/// An app showing the demo library's results for the draft's last sentence.
/// The stages are pinned (BM25, evidence and the rerank stage with the
/// citation encoder), so the snapshots do not depend on which models or
/// vectors happen to be present; without the models the test skips (fails
/// under `CI=true`).
fn app_with_results() -> Option<(tempfile::TempDir, App)> {
    app_with_edited_results(|_| {})
}

/// Same, with the results changed by `edit` before they reach the app.
fn app_with_edited_results(edit: impl FnOnce(&mut Recommendations)) -> Option<(tempfile::TempDir, App)> {
    if !common::models_or_fail("the editor snapshots with results") {
        return None;
    }
    let dir = tempfile::tempdir().unwrap();
    let (lib_dir, _) = demo::prepare(dir.path()).unwrap();
    let lib = Arc::new(Library::open(&lib_dir).unwrap());
    let mut a = app(DRAFT);
    a.cursor_to_end();
    let q: Query = a.query();
    let rec = Recommender::with_stages(lib.clone(), &Models::installed(), &["bm25", "evidence", "rerank"]).unwrap();
    let mut r = rec.recommend(&q).unwrap();
    r.timings.clear(); // wall times vary; keep the snapshot stable
    edit(&mut r);
    let terms = lib.papers().query_terms(&q.local_text());
    a.on_requested(1);
    a.on_results(1, r, terms);
    Some((dir, a))
}

#[test]
fn empty_editor() {
    insta::assert_snapshot!(render(&app(""), 120, 30));
}

#[test]
fn results_with_evidence() {
    let Some((_d, mut a)) = app_with_results() else { return };
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

#[test]
fn export_confirmation() {
    let Some((_d, mut a)) = app_with_results() else { return };
    let report = ExportReport {
        file: PathBuf::from("references.bib"),
        entries: vec![Exported::Added("shokouhi2013learning".into()), Exported::Present("bar-yossef2011context".into())],
        backup: Some(PathBuf::from("references.bib.bak")),
    };
    a.on_exported(Ok(report), false);
    insta::assert_snapshot!(render(&a, 120, 30));
}

#[test]
fn narrow_80x24() {
    let Some((_d, a)) = app_with_results() else { return };
    insta::assert_snapshot!(render(&a, 80, 24));
}

/// A paper nothing cites: the sentences of its own abstract that match the
/// query, said to be the paper's own words, with the query terms marked.
#[test]
fn abstract_when_nothing_cites_a_paper() {
    let mut best = Vec::new();
    let Some((_d, a)) = app_with_edited_results(|r| {
        let top = &mut r.candidates[0];
        top.evidence.clear();
        best = top.own_words.clone();
    }) else {
        return;
    };
    let screen = render(&a, 120, 30);
    assert!(screen.contains("From the paper's own abstract"), "{screen}");
    assert!(!screen.contains("support"), "no evidence line is shown: {screen}");
    assert!(!best.is_empty());
    insta::assert_snapshot!(screen);
}

/// `o` on an evidence sentence read from a PDF opens that PDF at its page.
#[test]
fn open_the_citing_document_from_the_evidence_pane() {
    let Some((_d, mut a)) = app_with_edited_results(|r| {
        let top = &mut r.candidates[0];
        top.evidence[0].citing_file = Some("/papers/session-aware.pdf".into());
        top.evidence[0].citing_page = Some(4);
    }) else {
        return;
    };
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
