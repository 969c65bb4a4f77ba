//! A background worker that owns the `Recommender`: requests go in over a
//! channel, results stream back per stage. A newer request supersedes a
//! queued one and stops a running one at its next stage boundary.

use std::sync::atomic::{AtomicU64, Ordering};
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

struct Job {
    id: u64,
    query: Query,
}

/// Handle to the worker thread.
pub struct Worker {
    jobs: Option<Sender<Job>>,
    events: Receiver<WorkerEvent>,
    latest: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the worker; `recommender` is moved to its thread.
    pub fn spawn(recommender: Recommender) -> Worker {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (event_tx, events) = mpsc::channel();
        let latest = Arc::new(AtomicU64::new(0));
        let latest_w = latest.clone();
        let thread = std::thread::Builder::new()
            .name("citewise-worker".into())
            .spawn(move || run(recommender, job_rx, event_tx, latest_w))
            .expect("spawn worker thread");
        Worker { jobs: Some(jobs), events, latest, thread: Some(thread) }
    }

    /// Queues a request and returns its id; every earlier request is
    /// superseded.
    pub fn request(&self, query: Query) -> u64 {
        let id = self.latest.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(Job { id, query });
        }
        id
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

fn run(rec: Recommender, jobs: Receiver<Job>, events: Sender<WorkerEvent>, latest: Arc<AtomicU64>) {
    while let Ok(mut job) = jobs.recv() {
        // Only the newest queued request matters.
        while let Ok(newer) = jobs.try_recv() {
            job = newer;
        }
        if job.id != latest.load(Ordering::SeqCst) {
            continue;
        }
        let id = job.id;
        // Evidence or papers another process imported meanwhile are used
        // from this request on (a reload that fails keeps what was there).
        let _ = rec.library().refresh();
        let current = || latest.load(Ordering::SeqCst) == id;
        let result = rec.recommend_streaming(&job.query, &mut |results| {
            if !current() {
                return false;
            }
            events.send(WorkerEvent::Stage { id, results }).is_ok() && current()
        });
        if let Err(e) = result {
            let _ = events.send(WorkerEvent::Failed { id, message: e.to_string() });
        }
    }
}
