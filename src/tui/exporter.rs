//! Bibliography work off the UI thread: exports (read the file, find
//! duplicates, back it up, write it) and the keys papers would get run on a
//! thread of their own, one at a time, in the order asked; the editor
//! learns of each result through [`Exporter::try_recv`].

use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread::JoinHandle;

use super::app::CitedAt;
use crate::corpus::Paper;
use crate::error::Result;
use crate::export::bibfile::{entries_of, planned_keys};
use crate::export::{export, ExportReport, KeyStyle};

/// A bibliography's entries, as export reads them.
pub type BibEntries = crate::export::bibfile::Entries;

/// What the export thread reports.
#[derive(Debug)]
pub enum ExportEvent {
    /// An export finished (or failed); `cite` as asked. `entries` are the
    /// file's entries after it, where they could be read.
    Exported { result: Result<ExportReport, String>, cite: bool, entries: Option<BibEntries> },
    /// The keys papers have or would get, for the clipboard.
    Keys(Result<Vec<String>, String>),
    /// A paper of the library was exported for the draft's citation
    /// `citation` (the check view's `a` and `b`), or not; `entries` as for
    /// [`ExportEvent::Exported`].
    ExportedFor { result: Result<ExportReport, String>, citation: CitedAt, entries: Option<BibEntries> },
}

enum Job {
    Export { file: PathBuf, papers: Vec<Paper>, style: KeyStyle, cite: bool },
    ExportFor { file: PathBuf, papers: Vec<Paper>, style: KeyStyle, citation: CitedAt },
    Keys { file: PathBuf, papers: Vec<Paper>, style: KeyStyle },
}

/// An export function: [`export`], or a stand-in in tests.
pub type ExportFn = dyn Fn(&Path, &[Paper], KeyStyle) -> Result<ExportReport> + Send;

/// Handle to the export thread. Dropping it waits for the export in hand,
/// so that quitting never cuts one short.
pub struct Exporter {
    jobs: Option<Sender<Job>>,
    events: Receiver<ExportEvent>,
    thread: Option<JoinHandle<()>>,
}

impl Exporter {
    /// Starts the export thread.
    pub fn spawn() -> Exporter {
        Exporter::spawn_with(Box::new(export))
    }

    /// Starts the export thread with `export` doing the exports.
    pub fn spawn_with(export: Box<ExportFn>) -> Exporter {
        let (jobs, job_rx) = mpsc::channel::<Job>();
        let (event_tx, events) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("citewise-export".into())
            .spawn(move || run(&*export, job_rx, event_tx))
            .expect("spawn export thread");
        Exporter { jobs: Some(jobs), events, thread: Some(thread) }
    }

    /// Queues an export of `papers` to `file`; returns at once.
    pub fn export(&self, file: PathBuf, papers: Vec<Paper>, style: KeyStyle, cite: bool) {
        self.send(Job::Export { file, papers, style, cite });
    }

    /// Queues an export of `papers` to `file` for the draft's citation
    /// `citation`; returns at once.
    pub fn export_for(&self, file: PathBuf, papers: Vec<Paper>, style: KeyStyle, citation: CitedAt) {
        self.send(Job::ExportFor { file, papers, style, citation });
    }

    /// Queues working out the keys `papers` have or would get in `file`.
    pub fn keys(&self, file: PathBuf, papers: Vec<Paper>, style: KeyStyle) {
        self.send(Job::Keys { file, papers, style });
    }

    fn send(&self, job: Job) {
        if let Some(jobs) = &self.jobs {
            let _ = jobs.send(job);
        }
    }

    /// A finished job, without waiting.
    pub fn try_recv(&self) -> Option<ExportEvent> {
        self.events.try_recv().ok()
    }

    /// Waits up to `timeout` for a finished job.
    pub fn recv_timeout(&self, timeout: std::time::Duration) -> Option<ExportEvent> {
        self.events.recv_timeout(timeout).ok()
    }
}

impl Drop for Exporter {
    fn drop(&mut self) {
        self.jobs.take();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn run(export: &ExportFn, jobs: Receiver<Job>, events: Sender<ExportEvent>) {
    while let Ok(job) = jobs.recv() {
        let event = match job {
            Job::Export { file, papers, style, cite } => {
                let result = export(&file, &papers, style).map_err(|e| e.to_string());
                ExportEvent::Exported { result, cite, entries: entries_of(&file).ok() }
            }
            Job::ExportFor { file, papers, style, citation } => {
                let result = export(&file, &papers, style).map_err(|e| e.to_string());
                ExportEvent::ExportedFor { result, citation, entries: entries_of(&file).ok() }
            }
            Job::Keys { file, papers, style } => ExportEvent::Keys(planned_keys(&file, &papers, style).map_err(|e| e.to_string())),
        };
        if events.send(event).is_err() {
            return;
        }
    }
}
