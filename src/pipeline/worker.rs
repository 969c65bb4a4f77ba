//! A background worker that owns the `Recommender`: requests go in over a
//! channel, results stream back per stage. A newer request supersedes a
//! queued one and stops a running one at its next stage boundary. When the
//! library gains vectors (background encoding), the worker can be told to
//! open its recommender again, between requests.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use super::{Query, Recommendations, Recommender};

/// What the worker reports.
#[derive(Debug)]
pub enum WorkerEvent {
    /// Results after a stage of request `id`.
    Stage { id: u64, results: Recommendations },
    /// Request `id` failed (e.g. an empty query).
    Failed { id: u64, message: String },
}

enum Job {
    Recommend {
        id: u64,
        query: Query,
    },
    /// Open the recommender again (the library's vectors changed).
    Reload,
}

/// Makes the recommender again, on the worker's thread.
pub type Reopen = Box<dyn Fn() -> Recommender + Send>;

/// A [`Reopen`] that opens every stage `models` allow on `library` (for
/// when the background encoding has covered the library with a channel's
/// vectors).
pub fn reopen_all(library: &Arc<crate::library::Library>, models: &Arc<super::Models>) -> Reopen {
    let (library, models) = (library.clone(), models.clone());
    Box::new(move || Recommender::new(library.clone(), &models))
}

/// Handle to the worker thread.
pub struct Worker {
    jobs: Option<Sender<Job>>,
    events: Receiver<WorkerEvent>,
    latest: Arc<AtomicU64>,
    busy: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the worker; `recommender` is moved to its thread.
    pub fn spawn(recommender: Recommender) -> Worker {
        Worker::start(recommender, None)
    }

    /// Starts the worker with `reopen`, which [`Worker::reload`] calls on
    /// the worker's thread to make the recommender again.
    pub fn spawn_reopening(recommender: Recommender, reopen: Reopen) -> Worker {
        Worker::start(recommender, Some(reopen))
    }

    fn start(recommender: Recommender, reopen: Option<Reopen>) -> Worker {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (event_tx, events) = mpsc::channel();
        let latest = Arc::new(AtomicU64::new(0));
        let busy = Arc::new(AtomicBool::new(false));
        let state = Shared { latest: latest.clone(), busy: busy.clone() };
        let thread = std::thread::Builder::new()
            .name("citewise-worker".into())
            .spawn(move || run(recommender, reopen, job_rx, event_tx, state))
            .expect("spawn worker thread");
        Worker { jobs: Some(jobs), events, latest, busy, thread: Some(thread) }
    }

    /// Queues a request and returns its id; every earlier request is
    /// superseded.
    pub fn request(&self, query: Query) -> u64 {
        let id = self.latest.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Recommend { id, query });
        }
        id
    }

    /// Makes the recommender again before the next request (its stores are
    /// opened anew, so vectors written since are used); a no-op for a
    /// worker started without `reopen`.
    pub fn reload(&self) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job::Reload);
        }
    }

    /// Set while the worker answers a request (or reopens); background work
    /// waits on it.
    pub fn busy_flag(&self) -> Arc<AtomicBool> {
        self.busy.clone()
    }

    /// A pending event, without waiting.
    pub fn try_recv(&self) -> Option<WorkerEvent> {
        self.events.try_recv().ok()
    }

    /// Waits up to `timeout` for an event.
    pub fn recv_timeout(&self, timeout: std::time::Duration) -> Option<WorkerEvent> {
        self.events.recv_timeout(timeout).ok()
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        // Closing the job channel ends the thread after its current stage.
        self.latest.fetch_add(1, Ordering::SeqCst);
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the worker thread shares with its handle.
struct Shared {
    latest: Arc<AtomicU64>,
    busy: Arc<AtomicBool>,
}

fn run(mut rec: Recommender, reopen: Option<Reopen>, jobs: Receiver<Job>, events: Sender<WorkerEvent>, shared: Shared) {
    let Shared { latest, busy } = shared;
    while let Ok(first) = jobs.recv() {
        // Only the newest queued request matters; any reload is done first.
        let mut job = None;
        let mut reload = false;
        for j in std::iter::once(first).chain(jobs.try_iter()) {
            match j {
                Job::Recommend { id, query } => job = Some((id, query)),
                Job::Reload => reload = true,
            }
        }
        busy.store(true, Ordering::SeqCst);
        if let (true, Some(reopen)) = (reload, &reopen) {
            rec = reopen();
        }
        if let Some((id, query)) = job.filter(|(id, _)| *id == latest.load(Ordering::SeqCst)) {
            serve(&rec, id, &query, &events, &latest);
        }
        busy.store(false, Ordering::SeqCst);
    }
}

fn serve(rec: &Recommender, id: u64, query: &Query, events: &Sender<WorkerEvent>, latest: &AtomicU64) {
    // Evidence or papers another process imported meanwhile are used from
    // this request on (a reload that fails keeps what was there).
    let _ = rec.library().refresh();
    let current = || latest.load(Ordering::SeqCst) == id;
    let result = rec.recommend_streaming(query, &mut |results| {
        if !current() {
            return false;
        }
        events.send(WorkerEvent::Stage { id, results }).is_ok() && current()
    });
    if let Err(e) = result {
        let _ = events.send(WorkerEvent::Failed { id, message: e.to_string() });
    }
}
