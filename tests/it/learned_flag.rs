#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Where `check` flags a citation, learned by a library from its own citing
//! documents, on real in-field data: the ACM-CR pool (information
//! retrieval / HCI) with the citing sentences of 14 of its 21 citing papers
//! as the library's documents. The shipped threshold flags many true
//! citations of that field; the library learns a lower one in the
//! background, and the citations of the 7 papers it never saw are flagged
//! less.

use crate::common;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use citewise::check::calibration;
use citewise::check::support::MODEL;
use citewise::check::{Bibliography, Checker, Kind, SupportCache};
use citewise::corpus::citation_markup::CiteGrammar;
use citewise::library::Library;
use citewise::pipeline::background::{BackgroundWork, EncodingEvent, EncodingOptions, Phase};
use citewise::pipeline::query::Query;
use citewise::pipeline::{fusion_learning, learned_fusion, Models, Recommender};

/// The share of the true citations of `rows` (ACM-CR contexts as JSON
/// lines) that `check` flags weak in `lib`, as a draft's are checked.
fn flagged(lib: &Arc<Library>, models: &Models, rows: &str) -> (usize, usize) {
    let rec = Recommender::new(lib.clone(), models);
    let scorer = calibration::scorer(&rec);
    let (mut weak, mut all) = (0, 0);
    for row in rows.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()) {
        let mut ids: Vec<String> = row["cited"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect();
        ids.retain(|id| lib.papers().paper_by_id(id).unwrap().is_some());
        if ids.is_empty() {
            continue;
        }
        let query = Query::new(row["context"].as_str().unwrap().to_string()).citing(vec![row["citing_id"].as_str().unwrap().to_string()]);
        let scored = scorer.score(query, &ids).unwrap();
        for id in &ids {
            let others: Vec<String> = ids.iter().filter(|o| *o != id).cloned().collect();
            let s = scored.support(id, &others).unwrap();
            all += 1;
            weak += usize::from(s.weak);
        }
    }
    (weak, all)
}

/// The weak-support findings of `citewise check` on a LaTeX draft of the
/// sentences of `rows`, each `[CIT]` a `\cite` of its papers, the
/// bibliography keyed `p0`, `p1`, … by DOI (ACM-CR's ids).
fn weak_findings(lib: &Arc<Library>, models: &Models, rows: &str) -> usize {
    let (mut draft, mut bib) = (String::new(), String::new());
    let mut keys = std::collections::HashMap::new();
    for row in rows.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()) {
        let mut cite = Vec::new();
        for id in row["cited"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()) {
            let Some(paper) = lib.papers().paper_by_id(&id).unwrap() else { continue };
            let n = keys.len();
            let key = keys.entry(id.clone()).or_insert_with(|| {
                bib.push_str(&format!(
                    "@article{{p{n}, title = {{{}}}, year = {{{}}}, doi = {{{id}}}}}\n",
                    paper.title,
                    paper.year.unwrap_or(2000)
                ));
                format!("p{n}")
            });
            cite.push(key.clone());
        }
        if !cite.is_empty() {
            draft.push_str(
                &row["context"].as_str().unwrap().replacen("[CIT]", &format!("\\cite{{{}}}", cite.join(",")), 1).replace("[CIT]", ""),
            );
            draft.push_str("\n\n");
        }
    }
    let rec = Recommender::new(lib.clone(), models);
    let report = Checker::with_support(&rec)
        .check("draft.tex", &draft, &CiteGrammar::PLAIN, &Bibliography::parse(&bib), &mut SupportCache::default())
        .unwrap();
    report.findings.iter().filter(|f| f.kind == Kind::WeakSupport).count()
}

#[test]
fn a_library_learns_where_check_flags_from_its_own_citations_in_the_background_and_flags_unseen_papers_citations_less() {
    if !common::models_or_fail("the models for check's support score") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(lib_dir) = common::acm_library_with_documents(dir.path()) else { return };
    let acm = common::shared().unwrap().join("data/acm-cr-dev");
    let (_, unseen) = common::acm_citing_documents(&acm);
    let lib = Arc::new(Library::open(&lib_dir).unwrap());
    let models = Arc::new(Models::installed());
    let rec = Recommender::new(lib.clone(), &models);
    assert!(calibration::due(&rec).unwrap().contains("no flag learned yet"));
    let (weak_before, all) = flagged(&lib, &models, &unseen);
    let findings_before = weak_findings(&lib, &models, &unseen);

    // The front ends' background work: the trust, then check's flag.
    let busy = Arc::new(AtomicBool::new(false));
    let options = EncodingOptions {
        phases: vec![Phase::Trust],
        low_priority: false,
        learners: calibration::learners(),
        ..EncodingOptions::default()
    };
    let work = BackgroundWork::start(lib.clone(), models.clone(), busy, options);
    let events = work.events().unwrap().clone();
    let mut line = None;
    loop {
        match events.recv().unwrap() {
            EncodingEvent::Learned { line: l, .. } => line = Some(l),
            EncodingEvent::Skipped { why, .. } => panic!("{why}"),
            EncodingEvent::Finished => break,
            _ => {}
        }
    }
    let learned = calibration::read(&lib).unwrap().expect("the flag is kept");
    let line = line.expect("what was learned is said");
    assert!(line.ends_with(&learned.describe()), "{line}");
    assert!(learned.documents == 14 && learned.sentences >= calibration::MIN_SENTENCES, "{learned:?}");
    assert!(learned.lowered() && learned.threshold < MODEL.threshold, "the field's own citations score lower: {learned:?}");
    assert!(learned.flagged_shipped > calibration::FLAG_SHARE && learned.flagged <= calibration::FLAG_SHARE + 1e-9, "{learned:?}");
    assert_eq!(calibration::due(&Recommender::new(lib.clone(), &models)), None, "learned, and nothing changed since");

    // The citations of papers the library never saw.
    let (weak_after, all_after) = flagged(&lib, &models, &unseen);
    assert_eq!(all, all_after);
    assert!(weak_after < weak_before, "fewer of them flagged: {weak_before} → {weak_after} of {all}");
    assert!(weak_after * 100 <= all * 6, "at most 6 %: {weak_after} of {all}");
    // `citewise check` flags under it too.
    let findings_after = weak_findings(&lib, &models, &unseen);
    assert!(findings_before > 0 && findings_after < findings_before, "weak findings {findings_before} → {findings_after}");

    // A reranker adapted to the library and published since: the flag and
    // the trust were learned with the model before it, so both are due
    // again; once it is removed, neither is.
    let adapted = lib_dir.join(citewise::neural::reranker::ADAPTED_RERANKER_DIR);
    std::fs::create_dir_all(&adapted).unwrap();
    std::fs::write(adapted.join("model.safetensors"), b"weights").unwrap();
    let rec = Recommender::new(lib.clone(), &models);
    let why = calibration::due(&rec).expect("the flag is due again");
    assert_eq!(why, "learned with the default models, now with adapted ones (reranker)");
    let trust = fusion_learning::due(&learned_fusion::read(&lib), &rec).expect("the trust is due again");
    assert_eq!(trust, why, "one rule says why");
    std::fs::remove_dir_all(&adapted).unwrap();
    assert_eq!(calibration::due(&rec), None);
    assert_eq!(fusion_learning::due(&learned_fusion::read(&lib), &rec), None);
}
