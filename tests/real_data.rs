#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Tests on the shared data beside the checkout (`../shared`); each returns
//! early, saying so, when it is absent (and fails under `CI=true`).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use citewise::eval::evaluate;
use citewise::eval::harness::{contexts_file, evaluate_at, load_split, papers_file, query_of, AsOf, EVAL_DEPTH, TRAIN_SPLIT};
use citewise::library::evidence_import::import_evidence;
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::journal::Journal;
use citewise::library::Library;
use citewise::pipeline::{Models, Recommender};

/// The whole ACM library: an interrupted import resumes to the same library a
/// clean one gives, with nothing doubled, and nothing real is skipped.
#[test]
fn acm_library_imports_and_resumes_after_a_kill() {
    let Some(shared) = common::shared_or_fail("this real-data test") else { return };
    let acm = shared.join("data/bib/acm-dl");
    let files = citewise::corpus::source::expand_inputs(std::slice::from_ref(&acm)).unwrap().len();
    let dir = tempfile::tempdir().unwrap();
    let lib_dir = dir.path().join("lib");
    let journal_path = lib_dir.join("import-journal.json");

    // Start an import in a separate process and kill it part-way: once its
    // first commit is on disk (the journal is written only after a commit,
    // every 50,000 records; the library holds 113,221), and not before.
    let mut child = common::citewise_command()
        .args(["import", acm.to_str().unwrap()])
        .env("CITEWISE_LIBRARY", &lib_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !journal_path.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the import ended ({status}) before its first commit reached {}", journal_path.display());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no commit of the import reached {} within 10 minutes", journal_path.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();

    // The kill came mid-import: the journal lists some of the files, and the
    // index holds the records of a commit that is not the last.
    let journal = Journal::load(&journal_path).unwrap();
    let listed = journal.files().count();
    let committed = journal.index().expect("the journal records the index it was saved against").records;
    assert!(listed > 0 && listed < files, "the journal lists {listed} of {files} files (the import exited {status})");
    assert!(committed > 0 && committed < 113_221, "the journal records {committed} papers (the import exited {status})");
    let lib = Library::open_or_create(&lib_dir).unwrap();
    let before = lib.papers().num_papers();
    assert!(
        before >= committed && before < 113_221,
        "killed at {before} papers, the journal at {committed}: the kill came after the import's last commit"
    );

    // Resumed: the files the journal lists are not read again, the rest are.
    let s = import(&lib, &[acm], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!(s.files_unchanged, listed, "the files the journal lists are skipped: {s:?}");
    let reasons: Vec<String> = s.skipped.iter().map(|k| k.to_string()).collect();
    assert!(s.skipped.len() <= 20, "unexpected skips: {reasons:#?}");
    assert_eq!(lib.papers().num_papers(), 113_221, "killed at {before} papers; resumed with {s:?}");
    let resumed = Journal::load(&journal_path).unwrap();
    assert_eq!(resumed.index().map(|i| i.records), Some(113_221), "the journal describes the whole library");
    assert!(resumed.files().count() > listed, "the resume journals the files it read");
    let p = lib.papers().paper_by_id("doi:10.1145/2479787.2479868").unwrap().expect("a known WIMS paper");
    assert_eq!(p.title, "Challenges and Issues of Web Intelligence Research");
    assert_eq!(p.authors[0], "David Camacho");
    assert_eq!(p.year, Some(2013));
    assert!(p.keywords.contains(&"web mining".to_string()));
}

/// BM25 alone on the benchmark's test split lands within ±0.03 of the
/// reference figures (R@10 0.318, MRR 0.206; global R@10 0.376); evidence
/// from the train split lifts the fused list well above it, and shows with
/// the papers it covers.
#[test]
fn benchmark_quality_bm25_and_evidence() {
    let Some(shared) = common::shared_or_fail("this real-data test") else { return };
    let bench = shared.join("data/benchmark");
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    let s = import(&lib, &[papers_file(&bench)], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!(s.imported, 119_799);
    let lib = Arc::new(lib);
    let rec = Recommender::with_stages(lib.clone(), &Models::installed(), &["bm25"]).unwrap();
    let contexts = load_split(&bench, "test").unwrap();
    assert_eq!(contexts.len(), 2724);

    // The reference ranks every paper of the pool, whatever its year.
    let local = evaluate_at(&rec, &contexts, "test", false, EVAL_DEPTH, AsOf::AnyYear, &|_| {}).unwrap();
    assert_eq!(local.config.as_of_citing_year, None);
    let all = &local.sources[0].scores;
    #[allow(clippy::approx_constant)] // BM25's measured R@10, not 1/π
    let expected_recall = 0.318;
    assert!((all.recall[2] - expected_recall).abs() <= 0.03, "R@10 {}", all.recall[2]);
    assert!((all.mrr - 0.206).abs() <= 0.03, "MRR {}", all.mrr);

    let global = evaluate_at(&rec, &contexts, "test", true, EVAL_DEPTH, AsOf::AnyYear, &|_| {}).unwrap();
    let g = &global.sources[0].scores;
    assert!((g.recall[2] - 0.376).abs() <= 0.03, "global R@10 {}", g.recall[2]);

    // By default a context is ranked against the papers its author could
    // have cited: its citing paper is in the pool for the scisummnet and
    // acl-arc contexts (1,643), not for sdp-act and scicite.
    let as_of = evaluate(&rec, &contexts, "test", false, &|_| {}).unwrap();
    assert_eq!(as_of.config.as_of_citing_year, Some(1643));
    assert!(as_of.sources[0].scores.recall[2] > all.recall[2], "{} against {}", as_of.sources[0].scores.recall[2], all.recall[2]);
    let sdp = |r: &citewise::eval::EvalReport| r.sources.iter().find(|s| s.source == "sdp-act").unwrap().scores;
    assert_eq!(sdp(&as_of), sdp(&local), "contexts of unknown year rank as before");
    let (mut checked, mut later_before) = (0, 0);
    for c in contexts.iter().filter(|c| c.source == "scisummnet").step_by(40) {
        let Some(year) = lib.papers().years(&[c.citing_id.as_str()]).unwrap()[0] else { continue };
        let years = |q: &citewise::pipeline::Query| -> Vec<(String, Option<i32>)> {
            let ids: Vec<String> = rec.recommend_ids(q).unwrap().candidates.into_iter().map(|c| c.id).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            ids.iter().cloned().zip(lib.papers().years(&refs).unwrap()).collect()
        };
        let q = query_of(c, false).with_k(20);
        later_before += years(&q).iter().filter(|(_, y)| y.is_some_and(|y| y > year)).count();
        let then = years(&q.written_in(Some(year)));
        assert_eq!(then.len(), 20);
        assert!(then.iter().all(|(id, y)| y.is_none_or(|y| y <= year) && *id != c.citing_id), "{} ({year}): {then:?}", c.id);
        checked += 1;
    }
    assert!(checked >= 30 && later_before > 0, "{checked} contexts, {later_before} later papers without the year");

    // Evidence from the train split, fused with BM25.
    let ev = import_evidence(&lib, &[contexts_file(&bench)], Some(TRAIN_SPLIT), false).unwrap();
    assert!(ev.stats.spans > 15_000 && ev.stats.papers > 2_000, "{:?}", ev.stats);
    // The prefetch channels (the rerank stage is measured by `citewise eval`);
    // span vectors are encoded up front, as `eval` does.
    let models = Models::installed();
    if let Ok(spans) = models.span_cosines() {
        spans.warm(&lib, &|_, _| {}).unwrap();
    }
    let fused = Recommender::with_stages(lib.clone(), &models, &["bm25", "evidence"]).unwrap();
    let report = evaluate(&fused, &contexts, "test", false, &|_| {}).unwrap();
    let by = |name: &str| report.sources.iter().find(|s| s.source == name).unwrap().scores;
    assert!(by("all").recall[2] >= 0.45, "fused R@10 {}", by("all").recall[2]);
    assert!(by("scisummnet").recall[2] >= 0.53, "fused scisummnet R@10 {}", by("scisummnet").recall[2]);

    // Top-10 recommendations whose paper has evidence show some.
    let (mut with_evidence, mut shown) = (0, 0);
    for c in contexts.iter().step_by(27) {
        let r = fused.recommend(&query_of(c, false).with_k(10)).unwrap();
        for cand in &r.candidates {
            if !lib.evidence().spans_citing(&cand.id, &[], 1, &[]).unwrap().is_empty() {
                with_evidence += 1;
                shown += !cand.evidence.is_empty() as usize;
            }
        }
    }
    eprintln!("top-10 papers with evidence in the database: {with_evidence}; shown with evidence: {shown}");
    assert!(with_evidence > 50, "{with_evidence}");
    assert!(shown as f64 >= 0.9 * with_evidence as f64, "{shown} of {with_evidence}");
}
