#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The background worker: results stream per stage; newer requests win.

use crate::common;

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use citewise::pipeline::channel::{Channel, ChannelId, ChannelOutput};
use citewise::pipeline::{Models, Prepared, Query, Recommender};
use citewise::runtime::{Worker, WorkerEvent};

/// How long the test waits for the worker before it fails (a bound on a
/// broken worker, not a synchronisation: every wait below is for an event
/// that is certain to come).
const WAIT: Duration = Duration::from_secs(60);

/// A gate the test holds. A channel passing through it records the query
/// it runs for and, while the gate is shut, waits there.
#[derive(Default)]
struct Gate {
    state: Mutex<GateState>,
    changed: Condvar,
}

#[derive(Default)]
struct GateState {
    open: bool,
    /// The queries (their context) that reached the gate, in order.
    entered: Vec<String>,
}

impl Gate {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        // A test that failed while holding the lock still opens the gate.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn set_open(&self, open: bool) {
        self.lock().open = open;
        self.changed.notify_all();
    }

    /// Records `query`, then waits while the gate is shut.
    fn pass(&self, query: &str) {
        let mut state = self.lock();
        state.entered.push(query.to_string());
        self.changed.notify_all();
        drop(self.changed.wait_while(state, |s| !s.open).unwrap_or_else(PoisonError::into_inner));
    }

    /// Waits until a request for `query` has reached the gate.
    fn wait_entered(&self, query: &str) {
        let state = self.lock();
        let (state, waited) =
            self.changed.wait_timeout_while(state, WAIT, |s| !s.entered.iter().any(|q| q == query)).unwrap_or_else(PoisonError::into_inner);
        let entered = state.entered.clone();
        drop(state);
        assert!(!waited.timed_out(), "the request for {query:?} never reached the gate; it saw {entered:?}");
    }

    fn entered(&self) -> Vec<String> {
        self.lock().entered.clone()
    }
}

/// Opens the gate when dropped: declared after the worker, it is dropped
/// before it, so a failing test does not leave the worker's thread (which
/// the worker's drop joins) waiting at a shut gate.
struct OpenOnDrop(Arc<Gate>);

impl Drop for OpenOnDrop {
    fn drop(&mut self) {
        self.0.set_open(true);
    }
}

/// A fake channel that stands in as `id`: it passes its gate (recording
/// the query) and finds nothing, so the ranking is the real channels'.
struct GatedChannel {
    id: ChannelId,
    gate: Arc<Gate>,
}

impl Channel for GatedChannel {
    fn id(&self) -> ChannelId {
        self.id
    }

    fn retrieve(&self, query: &Prepared, _k: usize) -> citewise::error::Result<ChannelOutput> {
        self.gate.pass(&query.query.context);
        Ok(ChannelOutput::plain(Vec::new()))
    }
}

/// The worker's events up to the end of request `last` (`Finished`), each
/// as `<id> <stage>` (`… complete` for the last stage), `<id> stopped` or
/// `<id> finished`; the complete results of `last` are kept.
fn events_until_finished(worker: &Worker, last: u64) -> (Vec<String>, Option<citewise::pipeline::Recommendations>) {
    let mut seen = Vec::new();
    let mut complete = None;
    loop {
        let event = worker.recv_timeout(WAIT).unwrap_or_else(|| panic!("request {last} finishes; seen {seen:?}"));
        match event {
            WorkerEvent::Stage { id, results, .. } => {
                seen.push(format!("{id} {}{}", results.stage, if results.complete { " complete" } else { "" }));
                if id == last && results.complete {
                    complete = Some(results);
                }
            }
            WorkerEvent::Stopped { id, .. } => seen.push(format!("{id} stopped")),
            WorkerEvent::Finished { id, .. } => {
                seen.push(format!("{id} finished"));
                if id == last {
                    return (seen, complete);
                }
            }
            WorkerEvent::Checked { id, .. } => seen.push(format!("{id} checked")),
            WorkerEvent::Failed { id, message, .. } => panic!("request {id} failed: {message}"),
        }
    }
}

#[test]
fn stages_stream_and_newer_requests_supersede_older_ones() {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    import(&lib, &[common::fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    // bm25 and evidence (no models: no rerank stage), then two fake
    // channels: one that waits at the test's gate, and one after it that
    // only records which requests got that far.
    let gate = Arc::new(Gate::default());
    let beyond = Arc::new(Gate::default());
    beyond.set_open(true);
    let rec = Recommender::new(Arc::new(lib), &Models::none())
        .with_channel(Box::new(GatedChannel { id: ChannelId::Citation, gate: gate.clone() }))
        .with_channel(Box::new(GatedChannel { id: ChannelId::Hatten, gate: beyond.clone() }));
    assert_eq!(rec.stages().names(), ["bm25", "evidence", "citation", "hatten"]);
    let worker = Worker::spawn(rec);
    let _open_on_exit = OpenOnDrop(gate.clone());

    // One request: a partial result after each stage, the last one complete.
    gate.set_open(true);
    let single = "BLEU scores of translations";
    let id = worker.request(Query::new(single));
    let (seen, results) = events_until_finished(&worker, id);
    let at = |id: u64, what: &str| format!("{id} {what}");
    assert_eq!(seen, [at(id, "bm25"), at(id, "evidence"), at(id, "citation"), at(id, "hatten complete"), at(id, "finished")]);
    let results = results.unwrap();
    assert_eq!(results.candidates[0].id, "bib:papineni2002bleu");
    assert!(results.candidates[0].paper.is_some());

    // A burst, ordered by the gate rather than by timing. Request 1 runs
    // its bm25 and evidence stages (and sends them) and then waits at the
    // gate, on the worker's thread; requests 2 and 3 are made while it
    // waits, so both are queued when it goes on.
    gate.set_open(false);
    let q = |i: u32| format!("query number {i} about translation");
    let first = worker.request(Query::new(q(1)));
    gate.wait_entered(&q(1));
    let second = worker.request(Query::new(q(2)));
    let newest = worker.request(Query::new(q(3)));
    gate.set_open(true);
    let (seen, results) = events_until_finished(&worker, newest);
    assert_eq!(
        seen,
        [
            at(first, "bm25"),
            at(first, "evidence"),
            // Superseded at the gate: request 1 stops at the stage boundary
            // after it, sending no more results.
            at(first, "stopped"),
            // Superseded while queued: request 2 never runs.
            at(second, "stopped"),
            at(newest, "bm25"),
            at(newest, "evidence"),
            at(newest, "citation"),
            at(newest, "hatten complete"),
            at(newest, "finished"),
        ]
    );
    assert!(results.is_some());
    assert_eq!(gate.entered(), [single.to_string(), q(1), q(3)], "request {second} never ran");
    assert_eq!(beyond.entered(), [single.to_string(), q(3)], "request {first} went no further than the stage it was superseded in");

    // Errors come back as events; the first event after the newest
    // request's end is this one (nothing of the older requests follows).
    let bad = worker.request(Query::new("   "));
    match worker.recv_timeout(WAIT) {
        Some(WorkerEvent::Failed { id, message, .. }) => {
            assert_eq!(id, bad);
            assert!(message.contains("query is empty"), "{message}");
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
                Some(WorkerEvent::Stage { id: got, results, .. }) if got == id && results.complete => return results,
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

#[test]
fn checks_wait_for_recommendations_and_a_newer_check_supersedes_an_older_one() {
    use citewise::check::Bibliography;
    use citewise::corpus::citation_markup::CiteGrammar;
    use citewise::runtime::{BibliographyOf, CheckRequest};
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    import(&lib, &[common::fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    let gate = Arc::new(Gate::default());
    let rec = Recommender::new(Arc::new(lib), &Models::none())
        .with_channel(Box::new(GatedChannel { id: ChannelId::Citation, gate: gate.clone() }));
    let worker = Worker::spawn(rec);
    let _open_on_exit = OpenOnDrop(gate.clone());
    let check = |text: &str| CheckRequest {
        file: "draft.tex".into(),
        text: text.into(),
        grammar: CiteGrammar::PLAIN,
        bibliography: BibliographyOf::Read(Bibliography::default()),
    };
    let older = "Phrase tables translate phrases \\cite{koehn2003phrase}.";
    let newer = "BLEU scores machine translation output \\cite{papineni2002bleu}.";
    // A recommendation waits at the gate; two checks and a second
    // recommendation are asked meanwhile.
    let q1 = "statistical phrase-based translation";
    let first = worker.request(Query::new(q1));
    gate.wait_entered(q1);
    let _superseded = worker.check_for((), check(older));
    let checked = worker.check_for((), check(newer));
    let q2 = "automatic evaluation of machine translation";
    let second = worker.request(Query::new(q2));
    gate.set_open(true);
    let mut seen = Vec::new();
    let report = loop {
        match worker.recv_timeout(WAIT).unwrap_or_else(|| panic!("the check finishes; seen {seen:?}")) {
            WorkerEvent::Checked { id, report, .. } => {
                seen.push(format!("{id} checked"));
                break report;
            }
            WorkerEvent::Finished { id, .. } => seen.push(format!("{id} finished")),
            WorkerEvent::Stopped { id, .. } => seen.push(format!("{id} stopped")),
            WorkerEvent::Stage { .. } => {}
            WorkerEvent::Failed { id, message, .. } => panic!("{id} failed: {message}"),
        }
    };
    assert_eq!(seen, [format!("{first} stopped"), format!("{second} finished"), format!("{checked} checked")], "recommendations first");
    assert_eq!(report.citations.len(), 1);
    assert_eq!(report.citations[0].key, "papineni2002bleu", "the newer check's draft");
    let entered = gate.entered();
    assert!(entered.iter().any(|q| q.contains("BLEU scores machine translation output")), "{entered:?}");
    assert!(!entered.iter().any(|q| q.contains("Phrase tables translate")), "the older check never ran: {entered:?}");
}
