//! The latest-wins job runner the front ends share: one thread owns the
//! `Recommender`; requests go in keyed by what they are for (the editor has
//! one key, the language server one per document), and results stream back
//! per stage. A newer request for a key supersedes a queued one and stops a
//! running one at its next stage boundary; so does cancelling it. When the
//! library gains vectors (background encoding), the runner can be told to
//! open its recommender again, between requests.
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
    Stopped { key: K, id: u64, timings: Vec<(String, Duration)> },
    /// The request ran every stage; the wall time of each.
    Finished { key: K, id: u64, timings: Vec<(String, Duration)> },
}

impl<K> Event<K> {
    /// The request the event is about.
    pub fn id(&self) -> u64 {
        match self {
            Event::Stage { id, .. } | Event::Failed { id, .. } | Event::Stopped { id, .. } | Event::Finished { id, .. } => *id,
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
    /// Open the recommender again (the library's vectors changed).
    Reload,
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

/// Handle to the runner thread.
pub struct Runner<K> {
    jobs: Option<Sender<Job<K>>>,
    events: Receiver<Event<K>>,
    next_id: AtomicU64,
    newest: Newest<K>,
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
        let busy = Arc::new(AtomicBool::new(false));
        let thread = {
            let (newest, busy) = (newest.clone(), busy.clone());
            std::thread::Builder::new()
                .name("citewise-runner".into())
                .spawn(move || run(recommender, reopen, &job_rx, &event_tx, &newest, &busy))
                .expect("spawn the runner thread")
        };
        Runner { jobs: Some(jobs), events, next_id: AtomicU64::new(0), newest, busy, thread: Some(thread) }
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

    /// Cancels request `id` for `key` if it is still the newest: it stops
    /// at its next stage boundary (or is dropped from the queue).
    pub fn cancel(&self, key: &K, id: u64) {
        let mut newest = self.newest.lock().unwrap_or_else(PoisonError::into_inner);
        if newest.get(key) == Some(&id) {
            newest.remove(key);
        }
    }

    /// Forgets `key` (a closed document): its request, if any, stops.
    pub fn forget(&self, key: &K) {
        self.newest.lock().unwrap_or_else(PoisonError::into_inner).remove(key);
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
        self.newest.lock().unwrap_or_else(PoisonError::into_inner).clear();
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn is_newest<K: Eq + Hash>(newest: &Newest<K>, key: &K, id: u64) -> bool {
    newest.lock().unwrap_or_else(PoisonError::into_inner).get(key) == Some(&id)
}

fn run<K: Clone + Eq + Hash>(
    mut rec: Recommender,
    reopen: Option<Reopen>,
    jobs: &Receiver<Job<K>>,
    events: &Sender<Event<K>>,
    newest: &Newest<K>,
    busy: &AtomicBool,
) {
    while let Ok(first) = jobs.recv() {
        // Of the queued requests, only each key's newest runs (in the order
        // asked); the others are stopped. A reload is done first.
        let mut queued: Vec<(K, u64, Query)> = Vec::new();
        let mut reload = false;
        for j in std::iter::once(first).chain(jobs.try_iter()) {
            match j {
                Job::Recommend { key, id, query } => queued.push((key, id, query)),
                Job::Reload => reload = true,
            }
        }
        busy.store(true, Ordering::SeqCst);
        if let (true, Some(reopen)) = (reload, &reopen) {
            rec = reopen();
        }
        for (key, id, query) in queued {
            if is_newest(newest, &key, id) {
                serve(&rec, key, id, &query, events, newest);
            } else {
                let _ = events.send(Event::Stopped { key, id, timings: Vec::new() });
            }
        }
        busy.store(false, Ordering::SeqCst);
    }
}

fn serve<K: Clone + Eq + Hash>(rec: &Recommender, key: K, id: u64, query: &Query, events: &Sender<Event<K>>, newest: &Newest<K>) {
    // Evidence or papers another process imported meanwhile are used from
    // this request on (a reload that fails keeps what was there).
    let _ = rec.library().refresh();
    let mut last: Option<(bool, Vec<(String, Duration)>)> = None;
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
