//! The background worker: results stream per stage; newer requests win.

mod common;

use std::sync::Arc;
use std::time::Duration;

use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use citewise::pipeline::worker::{Worker, WorkerEvent};
use citewise::pipeline::{Models, Query, Recommender};

#[test]
fn stages_stream_and_newer_requests_supersede_older_ones() {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    import(&lib, &[common::fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    let rec = Recommender::new(Arc::new(lib), &Models::installed());
    // bm25, evidence, and rerank where the models are installed.
    let names = rec.stages().names();
    let worker = Worker::spawn(rec);

    // One request: a partial result after each stage, the last one complete.
    let id = worker.request(Query::new("BLEU scores of translations"));
    let mut stages = Vec::new();
    while let Some(WorkerEvent::Stage { id: got, results }) = worker.recv_timeout(Duration::from_secs(10)) {
        assert_eq!(got, id);
        stages.push((results.stage.clone(), results.complete));
        if results.complete {
            assert_eq!(results.candidates[0].id, "bib:papineni2002bleu");
            assert!(results.candidates[0].paper.is_some());
            break;
        }
    }
    let want: Vec<(String, bool)> = names.iter().enumerate().map(|(i, n)| (n.to_string(), i + 1 == names.len())).collect();
    assert_eq!(&names[..2], ["bm25", "evidence"]);
    assert_eq!(stages, want);

    // A burst: only the newest request is guaranteed to finish, and nothing
    // older arrives after anything newer. The worker skips a queued request
    // that a newer one superseded, and stops a running one at its next stage
    // boundary; so a superseded request completes only if all its stages ran
    // before the next request was made. The 20 requests are made in a tight
    // loop, much faster than a request runs (milliseconds; more with the
    // reranker), so at most the one the worker picked up first can get that
    // far. (This rests on that timing, not on the worker: a requester that
    // paused for a whole request between two requests would see more complete.)
    let ids: Vec<u64> = (0..20).map(|i| worker.request(Query::new(format!("query number {i} about translation")))).collect();
    let last = *ids.last().unwrap();
    let mut seen = Vec::new();
    loop {
        match worker.recv_timeout(Duration::from_secs(10)).expect("the newest request completes") {
            WorkerEvent::Stage { id, results } => {
                seen.push((id, results.complete));
                if id == last && results.complete {
                    break;
                }
            }
            WorkerEvent::Failed { id, message } => panic!("request {id} failed: {message}"),
        }
    }
    assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    assert!(seen.iter().all(|(id, _)| ids.contains(id)), "{seen:?}");
    let completed_older: Vec<u64> = seen.iter().filter(|&&(id, complete)| complete && id != last).map(|&(id, _)| id).collect();
    assert!(completed_older.len() <= 1, "at most one superseded request completes: {seen:?}");
    assert!(worker.recv_timeout(Duration::from_millis(200)).is_none(), "nothing follows the newest request's answer");

    // Errors come back as events.
    let bad = worker.request(Query::new("   "));
    match worker.recv_timeout(Duration::from_secs(10)) {
        Some(WorkerEvent::Failed { id, message }) => {
            assert_eq!(id, bad);
            assert!(message.contains("query is empty"));
        }
        other => panic!("{other:?}"),
    }
}

/// Evidence another process imports while the editor runs is used from the
/// next request on, without a restart.
#[test]
fn evidence_imported_meanwhile_is_picked_up() {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    import(&lib, &[common::fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    let worker = Worker::spawn(Recommender::with_stages(Arc::new(lib), &Models::installed(), &["bm25", "evidence"]).unwrap());
    let ask = |q: &str| {
        let id = worker.request(Query::new(q));
        loop {
            match worker.recv_timeout(Duration::from_secs(20)) {
                Some(WorkerEvent::Stage { id: got, results }) if got == id && results.complete => return results,
                Some(_) => continue,
                None => panic!("no answer"),
            }
        }
    };
    let query = "cross-lingual alignment of sentences from two languages";
    let before = ask(query);
    assert!(before.candidates.iter().all(|c| c.evidence.is_empty()), "no evidence yet");

    // Another handle on the same library (as another process would) imports a document.
    let other = Library::open(dir.path()).unwrap();
    let md = dir.path().join("notes.md");
    std::fs::write(
        dir.path().join("refs.bib"),
        "@inproceedings{koehn, title={Statistical Phrase-Based Translation}, author={Koehn, Philipp}, year={2003}}\n",
    )
    .unwrap();
    std::fs::write(
        &md,
        "---\nbibliography: refs.bib\n---\nPhrase tables need a cross-lingual alignment of the sentences of two languages [@koehn].\n",
    )
    .unwrap();
    let inputs = [citewise::evidence::inputs::EvidenceInput::of(&md).expect("a Markdown file")];
    citewise::library::evidence_import::import_inputs(&other, &inputs, &Default::default(), &|_, _| {}).unwrap();

    let after = ask(query);
    let koehn = after.candidates.iter().find(|c| c.id == "bib:koehn2003phrase").expect("found through the new evidence");
    assert!(koehn.channels.iter().any(|ch| ch.channel.name() == "evidence"), "{:?}", koehn.channels);
    assert!(koehn.evidence.iter().any(|e| e.sentence.contains("cross-lingual alignment")), "{:?}", koehn.evidence);
}
