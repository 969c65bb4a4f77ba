//! The latest-wins job runner the front ends share: one thread owns the
//! `Recommender`; requests go in keyed by what they are for (the editor has
//! one key, the language server one per document), and results stream back
//! per stage. A newer request for a key supersedes a queued one and stops a
//! running one at its next stage boundary; so does cancelling it. When the
//! library gains vectors (background encoding), the runner can be told to
//! open its recommender again, between requests. What waits is a key's
//! newest request and newest check only: an older check is dropped when a
//! newer one comes, so a flood of edits holds one draft per key, not one
//! per edit.
//!
//! A [`Lane`] does a key's newest job on a thread of its own, the same way
//! (the language server's diagnostics, which need no model and must not
//! wait for a recommendation).
//!
//! **Architecture invariant:** this is the only place that decides which
//! request runs; the editor and the language server only ask and listen.
//! A reply deadline is the listener's (the language server answers with the
//! fused list when the rerank stage is late): the runner never waits.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender};

use crate::library::Library;
use crate::pipeline::stage::StageTimings;
use crate::pipeline::{Models, Query, Recommendations, Recommender};

/// What the runner reports about request `id` for `key`.
#[derive(Debug)]
pub enum Event<K> {
    /// Results after a stage.
    Stage { key: K, id: u64, results: Recommendations },
    /// The request failed (e.g. an empty query).
    Failed { key: K, id: u64, message: String },
    /// The request was superseded or cancelled before it completed (queued,
    /// or stopped at a stage boundary); the wall time of the stages it ran.
    Stopped { key: K, id: u64, timings: StageTimings },
    /// The request ran every stage; the wall time of each.
    Finished { key: K, id: u64, timings: StageTimings },
    /// A check of a draft's citations is done (its sentences scored, those
    /// unchanged since the key's last check taken from its cache).
    Checked { key: K, id: u64, report: Box<crate::check::Report> },
}

impl<K> Event<K> {
    /// The request the event is about.
    pub fn id(&self) -> u64 {
        match self {
            Event::Stage { id, .. }
            | Event::Failed { id, .. }
            | Event::Stopped { id, .. }
            | Event::Finished { id, .. }
            | Event::Checked { id, .. } => *id,
        }
    }
}

/// The editor's runner: one key.
pub type Worker = Runner<()>;
/// What the editor's runner reports.
pub type WorkerEvent = Event<()>;

enum Job<K> {
    Recommend {
        key: K,
        id: u64,
        query: Query,
    },
    /// A check was asked (it waits in [`Checks`], the newest per key; it
    /// runs after every recommendation waiting).
    Check,
    /// Open the recommender again (the library's vectors changed).
    Reload,
}

/// A draft to check: its text, the grammar its citations are read with,
/// and its bibliography.
pub struct CheckRequest {
    pub file: String,
    pub text: String,
    pub grammar: crate::corpus::citation_markup::CiteGrammar,
    pub bibliography: BibliographyOf,
}

/// A check's bibliography: as the asker read it (its own, or shared with
/// the asker without a copy), or a file the runner reads (off the asker's
/// thread).
pub enum BibliographyOf {
    Read(crate::check::Bibliography),
    Shared(Arc<crate::check::Bibliography>),
    File(std::path::PathBuf),
}

struct CheckJob<K> {
    key: K,
    id: u64,
    request: CheckRequest,
}

/// Makes the recommender again, on the runner's thread.
pub type Reopen = Box<dyn Fn() -> Recommender + Send>;

/// A [`Reopen`] that opens every stage `models` allow on `library` (for
/// when the background encoding has covered the library with a channel's
/// vectors).
pub fn reopen_all(library: &Arc<Library>, models: &Arc<Models>) -> Reopen {
    let (library, models) = (library.clone(), models.clone());
    Box::new(move || Recommender::new(library.clone(), &models))
}

/// The newest request per key; a key whose request was cancelled has none.
type Newest<K> = Arc<Mutex<HashMap<K, u64>>>;

/// The checks asked and not yet taken up by the runner: the newest per key,
/// in the order asked (an older one of its key is dropped, text and all).
type Checks<K> = Arc<Mutex<Vec<CheckJob<K>>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Handle to the runner thread.
pub struct Runner<K> {
    jobs: Option<Sender<Job<K>>>,
    events: Receiver<Event<K>>,
    next_id: AtomicU64,
    newest: Newest<K>,
    /// The newest check per key.
    newest_check: Newest<K>,
    /// The checks waiting for the runner.
    asked_checks: Checks<K>,
    busy: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl<K: Clone + Eq + Hash + Send + 'static> Runner<K> {
    /// Starts the runner; `recommender` is moved to its thread.
    pub fn spawn(recommender: Recommender) -> Runner<K> {
        Runner::start(recommender, None)
    }

    /// Starts the runner with `reopen`, which [`Runner::reload`] calls on
    /// the runner's thread to make the recommender again.
    pub fn spawn_reopening(recommender: Recommender, reopen: Reopen) -> Runner<K> {
        Runner::start(recommender, Some(reopen))
    }

    fn start(recommender: Recommender, reopen: Option<Reopen>) -> Runner<K> {
        let (jobs, job_rx) = crossbeam_channel::unbounded::<Job<K>>();
        let (event_tx, events) = crossbeam_channel::unbounded();
        let newest: Newest<K> = Arc::default();
        let newest_check: Newest<K> = Arc::default();
        let asked_checks: Checks<K> = Arc::default();
        let busy = Arc::new(AtomicBool::new(false));
        let thread = {
            let latest = Latest { newest: newest.clone(), checks: newest_check.clone(), asked: asked_checks.clone() };
            let busy = busy.clone();
            std::thread::Builder::new()
                .name("citewise-runner".into())
                .spawn(move || run(recommender, reopen, &job_rx, &event_tx, &latest, &busy))
                .expect("spawn the runner thread")
        };
        Runner { jobs: Some(jobs), events, next_id: AtomicU64::new(0), newest, newest_check, asked_checks, busy, thread: Some(thread) }
    }

    /// Queues a request for `key` and returns its id (ids rise across
    /// keys); every earlier request for `key` is superseded.
    pub fn request_for(&self, key: K, query: Query) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        self.newest.lock().unwrap_or_else(PoisonError::into_inner).insert(key.clone(), id);
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Recommend { key, id, query });
        }
        id
    }

    /// Queues a check of a draft for `key` (superseding the key's earlier
    /// check, not its recommendation) and returns its id. Checks run when
    /// no recommendation waits, and yield to one that comes: the sentences
    /// scored so far are kept and the check goes on after it. A check of
    /// the key still waiting is dropped at once (its text with it).
    pub fn check_for(&self, key: K, request: CheckRequest) -> u64 {
        let id = self.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        lock(&self.newest_check).insert(key.clone(), id);
        {
            let mut asked = lock(&self.asked_checks);
            asked.retain(|c| c.key != key);
            asked.push(CheckJob { key, id, request });
        }
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Check);
        }
        id
    }

    /// Cancels request `id` for `key` if it is still the newest: it stops
    /// at its next stage boundary (or is dropped from the queue).
    pub fn cancel(&self, key: &K, id: u64) {
        let mut newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
        if newest.get(key) == Some(&id) {
            newest.remove(key);
        }
    }

    /// Forgets `key` (a closed document): its request and its check, if
    /// any, stop.
    pub fn forget(&self, key: &K) {
        lock(&self.newest).remove(key);
        lock(&self.newest_check).remove(key);
        lock(&self.asked_checks).retain(|c| c.key != *key);
    }

    /// Stops every request and check (each at its next stage boundary or
    /// sentence) and lets the runner's thread go without waiting for it: a
    /// process that is ending need not wait for a check of a long draft.
    /// Nothing is asked of the runner after this.
    pub fn abandon(&mut self) {
        lock(&self.newest).clear();
        lock(&self.newest_check).clear();
        lock(&self.asked_checks).clear();
        self.jobs.take();
        // Dropped unjoined: the thread ends when it next looks.
        self.thread.take();
    }

    /// Makes the recommender again before the next request (its stores are
    /// opened anew, so vectors written since are used); a no-op for a
    /// runner started without `reopen`.
    pub fn reload(&self) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Reload);
        }
    }

    /// Set while the runner answers a request (or reopens); background work
    /// waits on it.
    pub fn busy_flag(&self) -> Arc<AtomicBool> {
        self.busy.clone()
    }

    /// The events, for a loop that waits on several sources.
    pub fn events(&self) -> &Receiver<Event<K>> {
        &self.events
    }

    /// A pending event, without waiting.
    pub fn try_recv(&self) -> Option<Event<K>> {
        self.events.try_recv().ok()
    }

    /// Waits up to `timeout` for an event.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Event<K>> {
        self.events.recv_timeout(timeout).ok()
    }
}

impl Runner<()> {
    /// Queues the editor's request and returns its id; every earlier one
    /// is superseded.
    pub fn request(&self, query: Query) -> u64 {
        self.request_for((), query)
    }
}

impl<K> Drop for Runner<K> {
    fn drop(&mut self) {
        // No request is current any more: the running one stops at its next
        // stage boundary, and closing the queue ends the thread.
        lock(&self.newest).clear();
        lock(&self.newest_check).clear();
        lock(&self.asked_checks).clear();
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn is_newest<K: Eq + Hash>(newest: &Newest<K>, key: &K, id: u64) -> bool {
    lock(newest).get(key) == Some(&id)
}

/// The newest recommendation and the newest check of each key, and the
/// checks asked.
struct Latest<K> {
    newest: Newest<K>,
    checks: Newest<K>,
    asked: Checks<K>,
}

fn run<K: Clone + Eq + Hash>(
    mut rec: Recommender,
    reopen: Option<Reopen>,
    jobs: &Receiver<Job<K>>,
    events: &Sender<Event<K>>,
    latest: &Latest<K>,
    busy: &AtomicBool,
) {
    // Checks waiting (each key's newest), and each key's scored sentences.
    let mut checks: Vec<CheckJob<K>> = Vec::new();
    let mut caches: HashMap<K, crate::check::SupportCache> = HashMap::new();
    loop {
        let first = if checks.is_empty() {
            match jobs.recv() {
                Ok(j) => Some(j),
                Err(_) => return,
            }
        } else {
            jobs.try_recv().ok()
        };
        // Of the queued requests, only each key's newest runs (in the order
        // asked); the others are stopped. A reload is done first.
        let mut queued: Vec<(K, u64, Query)> = Vec::new();
        let mut reload = false;
        for j in first.into_iter().chain(jobs.try_iter()) {
            match j {
                Job::Recommend { key, id, query } => queued.push((key, id, query)),
                Job::Check => {
                    for c in lock(&latest.asked).drain(..) {
                        checks.retain(|old| old.key != c.key);
                        checks.push(c);
                    }
                }
                Job::Reload => reload = true,
            }
        }
        busy.store(true, Ordering::SeqCst);
        if let (true, Some(reopen)) = (reload, &reopen) {
            rec = reopen();
            // Scores of the library as it was.
            caches.clear();
        }
        for (key, id, query) in queued {
            if is_newest(&latest.newest, &key, id) {
                serve(&rec, key, id, &query, events, &latest.newest);
            } else {
                let _ = events.send(Event::Stopped { key, id, timings: Vec::new() });
            }
        }
        checks.retain(|c| is_newest(&latest.checks, &c.key, c.id));
        caches.retain(|k, _| lock(&latest.checks).contains_key(k));
        if let Some(c) = checks.first() {
            let cache = caches.entry(c.key.clone()).or_default();
            // Yield to any request that comes, and stop when superseded.
            let stop = || !jobs.is_empty() || !is_newest(&latest.checks, &c.key, c.id);
            let r = &c.request;
            let bib = match &r.bibliography {
                BibliographyOf::Read(b) => Ok(std::borrow::Cow::Borrowed(b)),
                BibliographyOf::Shared(b) => Ok(std::borrow::Cow::Borrowed(&**b)),
                BibliographyOf::File(path) => crate::check::Bibliography::read(path).map(std::borrow::Cow::Owned),
            };
            let checked =
                bib.and_then(|bib| crate::check::Checker::with_support(&rec).check_until(&r.file, &r.text, &r.grammar, &bib, cache, &stop));
            match checked {
                Ok(Some(report)) => {
                    let _ = events.send(Event::Checked { key: c.key.clone(), id: c.id, report: Box::new(report) });
                    checks.remove(0);
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = events.send(Event::Failed { key: c.key.clone(), id: c.id, message: e.to_string() });
                    checks.remove(0);
                }
            }
        }
        busy.store(false, Ordering::SeqCst);
    }
}

fn serve<K: Clone + Eq + Hash>(rec: &Recommender, key: K, id: u64, query: &Query, events: &Sender<Event<K>>, newest: &Newest<K>) {
    // Evidence or papers another process imported meanwhile are used from
    // this request on (a reload that fails keeps what was there).
    let _ = rec.library().refresh();
    let mut last: Option<(bool, StageTimings)> = None;
    let result = rec.recommend_streaming(query, &mut |results| {
        if !is_newest(newest, &key, id) {
            return false;
        }
        last = Some((results.complete, results.timings.clone()));
        let sent = events.send(Event::Stage { key: key.clone(), id, results }).is_ok();
        sent && is_newest(newest, &key, id)
    });
    let end = match (result, last) {
        (Err(e), _) => Event::Failed { key, id, message: e.to_string() },
        (Ok(()), Some((true, timings))) => Event::Finished { key, id, timings },
        (Ok(()), last) => Event::Stopped { key, id, timings: last.map(|(_, t)| t).unwrap_or_default() },
    };
    let _ = events.send(end);
}

/// A job a [`Lane`] has done: for `key`, the job asked as `id`; none when
/// its work panicked (the panic hook printed why).
#[derive(Debug)]
pub struct Done<K, R> {
    pub key: K,
    pub id: u64,
    pub result: Option<R>,
}

/// The jobs waiting in a lane: the newest per key, in the order asked.
type Waiting<K, J> = Arc<Mutex<Vec<(K, u64, J)>>>;

/// A key's newest job, done on a thread of its own: while a job waits, a
/// newer one for its key takes its place (the older is dropped at once),
/// so a flood of asks holds one job per key and the thread only ever works
/// on what is newest. Results come back as events ([`Lane::events`]); the
/// thread is never waited for (it ends after its job once the lane goes).
pub struct Lane<K, J, R> {
    waiting: Waiting<K, J>,
    /// Rung after each ask; closed when the lane goes.
    bell: Sender<()>,
    done: Receiver<Done<K, R>>,
    next_id: u64,
}

impl<K: Eq + Send + 'static, J: Send + 'static, R: Send + 'static> Lane<K, J, R> {
    /// Starts the lane's thread (named `name`), which does `work` on each
    /// job. A job whose work panics is done with no result (the panic is
    /// printed by the hook) and the lane goes on.
    pub fn spawn(name: &str, mut work: impl FnMut(J) -> R + Send + 'static) -> std::io::Result<Lane<K, J, R>> {
        let waiting: Waiting<K, J> = Arc::default();
        let (bell, rung) = crossbeam_channel::bounded::<()>(1);
        let (done_tx, done) = crossbeam_channel::unbounded();
        let queue = waiting.clone();
        std::thread::Builder::new().name(name.into()).spawn(move || {
            // A closed bell (the lane dropped) ends the thread.
            while rung.recv().is_ok() {
                loop {
                    let next = {
                        let mut q = lock(&queue);
                        (!q.is_empty()).then(|| q.remove(0))
                    };
                    let Some((key, id, job)) = next else { break };
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(job))).ok();
                    if done_tx.send(Done { key, id, result }).is_err() {
                        return;
                    }
                }
            }
        })?;
        Ok(Lane { waiting, bell, done, next_id: 0 })
    }

    /// Asks for `job` for `key` (a job of `key` still waiting is dropped)
    /// and returns its id (ids rise).
    pub fn ask(&mut self, key: K, job: J) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        {
            let mut q = lock(&self.waiting);
            q.retain(|(k, _, _)| *k != key);
            q.push((key, id, job));
        }
        // Full: the thread has yet to look, and will see this job then.
        let _ = self.bell.try_send(());
        id
    }

    /// Drops the job of `key` that waits, if any (one being done still
    /// reports).
    pub fn forget(&self, key: &K) {
        lock(&self.waiting).retain(|(k, _, _)| k != key);
    }

    /// Drops every job that waits.
    pub fn clear(&self) {
        lock(&self.waiting).clear();
    }

    /// The results, for a loop that waits on several sources. The lane's
    /// thread outlives every job (a panic is caught), so this is never
    /// disconnected while the lane lives.
    pub fn events(&self) -> &Receiver<Done<K, R>> {
        &self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Jobs asked while the lane works wait; of each key's, only the newest
    /// is done, and a job's panic leaves the lane working.
    #[test]
    fn a_lane_does_only_each_keys_newest_job() {
        let (gate_tx, gate) = crossbeam_channel::unbounded::<()>();
        let (entered_tx, entered) = crossbeam_channel::unbounded::<u32>();
        let mut lane: Lane<&str, (u32, bool), u32> = Lane::spawn("test-lane", move |(n, wait): (u32, bool)| {
            if wait {
                let _ = entered_tx.send(n);
                let _ = gate.recv();
            }
            assert!(n != 99, "a job that panics");
            n
        })
        .unwrap();
        // The first job holds the thread until the gate opens.
        let first = lane.ask("a", (1, true));
        assert_eq!(entered.recv_timeout(Duration::from_secs(30)), Ok(1));
        let mut asked = Vec::new();
        for n in 2..=1000 {
            asked.push(lane.ask("a", (n, false)));
        }
        let b = lane.ask("b", (7, false));
        let panics = lane.ask("c", (99, false));
        lane.forget(&"c");
        gate_tx.send(()).unwrap();
        let wait = Duration::from_secs(30);
        let got: Vec<(&str, u64, Option<u32>)> =
            (0..3).map(|_| lane.events().recv_timeout(wait).map(|d| (d.key, d.id, d.result)).expect("a result")).collect();
        assert_eq!(got, [("a", first, Some(1)), ("a", *asked.last().unwrap(), Some(1000)), ("b", b, Some(7))]);
        assert!(panics > b);
        // A panic is done with no result, and the next job is done.
        let panics = lane.ask("c", (99, false));
        let after = lane.ask("d", (5, false));
        let c = lane.events().recv_timeout(wait).expect("the panic's report");
        assert_eq!((c.key, c.id, c.result), ("c", panics, None));
        let d = lane.events().recv_timeout(wait).expect("the lane goes on after a panic");
        assert_eq!((d.key, d.id, d.result), ("d", after, Some(5)));
        assert!(lane.events().try_recv().is_err(), "nothing else was done");
    }
}
