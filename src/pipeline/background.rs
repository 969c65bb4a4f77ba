//! Encoding what the library lacks while a front end runs: the student's
//! stand-in citation vectors first (minutes), then HAtten's dense vectors,
//! then the citation encoder's own vectors (slow; they replace the
//! stand-ins); last, the library's evidence trust is learned from its own
//! citing sentences when it is due ([`fusion_learning::due`]: never learned,
//! or the evidence or the channels changed since), and with it what the
//! layers above learn from the same sentences ([`Learner`]: `check`'s
//! flag). A low-priority thread
//! pool of its own (one thread per core but one), pausing whenever the
//! recommender is busy, so typing and answers never wait for it.
//! Progress and "this channel now covers the library" come back as
//! [`EncodingEvent`]s; every store commits as it goes (as `citewise embed`
//! does), so quitting or a crash loses at most one batch (2,048 papers).
//! However many windows and language servers are open on a library, one
//! encodes it (the one that holds its [`EncoderSlot`]); each commit is
//! made as the library's one writer ([`crate::library::lock`]).

use crossbeam_channel::{Receiver, Sender};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Models;
use crate::error::Result;
use crate::library::embed::{embed_citation_vectors, embed_library, embed_student_vectors, EmbedSummary};
use crate::library::lock::EncoderSlot;
use crate::library::Library;

/// What is being encoded, in the order it is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// The student's stand-ins for the citation channel.
    StandIns,
    /// HAtten's vectors for the dense channel.
    Dense,
    /// The citation encoder's own vectors.
    Citation,
    /// The evidence trust, learned from the library's citing sentences
    /// (its progress counts sentences searched, not papers).
    Trust,
    /// What a layer above learns after the trust ([`Learner::label`]):
    /// reported, never configured.
    Learner(&'static str),
}

impl Phase {
    /// The encodings, in order.
    pub const ENCODINGS: [Phase; 3] = [Phase::StandIns, Phase::Dense, Phase::Citation];

    /// How the status bar names it.
    pub fn label(self) -> &'static str {
        match self {
            Phase::StandIns => "citation vectors (student)",
            Phase::Dense => "dense vectors",
            Phase::Citation => "citation vectors",
            Phase::Trust => "evidence trust",
            Phase::Learner(label) => label,
        }
    }

    /// What the status bar (and a client's progress) says it is doing.
    pub fn doing(self) -> String {
        match self {
            Phase::Trust => "learning the evidence trust".into(),
            Phase::Learner(label) => format!("learning {label}"),
            _ => format!("encoding {}", self.label()),
        }
    }
}

/// What the encoding thread reports.
#[derive(Debug, Clone, PartialEq)]
pub enum EncodingEvent {
    /// `done` of `total` steps of `phase` (papers encoded, sentences
    /// searched); `per_second`: its recent rate, which tells the time left.
    Progress { phase: Phase, done: u64, total: u64, per_second: f64 },
    /// `phase` is finished: its channel covers the library (reload the
    /// recommender to use it). `encoded`: papers it encoded now (0: another
    /// front end encoded them).
    Covered { phase: Phase, encoded: usize },
    /// The evidence trust was learned (and kept) from `sentences` of the
    /// library's citing sentences: reload the recommender to rank with it.
    /// `line`: what was learned, as `doctor` says it.
    Learned { sentences: usize, line: String },
    /// `phase` could not run (a model that is not installed, a damaged
    /// store); the next phase runs.
    Skipped { phase: Phase, why: String },
    /// Another front end (`holder`: its command line and process) encodes
    /// this library: this one waits, and takes over if that one ends first.
    Elsewhere { holder: String },
    /// A write waits while another process (`holder`) writes to the library.
    Waiting { holder: String },
    /// Every phase is done.
    Finished,
}

impl EncodingEvent {
    /// What the status bar says while this is the latest news (none once
    /// the encoding is over).
    pub fn status(&self) -> Option<String> {
        match self {
            EncodingEvent::Progress { phase, done, total, per_second } => {
                let percent = if *total == 0 { 100 } else { done * 100 / total };
                let left = total.saturating_sub(*done) as f64 / per_second.max(1e-3);
                let eta = if *done == 0 {
                    String::new()
                } else if left < 90.0 {
                    format!(", {left:.0} s left")
                } else {
                    format!(", {:.0} min left", left / 60.0)
                };
                Some(format!("{} {percent}%{eta}", phase.doing()))
            }
            EncodingEvent::Waiting { holder } => Some(format!("waiting: {holder} is writing to the library")),
            EncodingEvent::Covered { .. }
            | EncodingEvent::Learned { .. }
            | EncodingEvent::Skipped { .. }
            | EncodingEvent::Elsewhere { .. }
            | EncodingEvent::Finished => None,
        }
    }
}

/// How the background encoding runs.
#[derive(Debug, Clone)]
pub struct EncodingOptions {
    /// Threads of the encoding's pool, which the models' matrix products
    /// use (default: as many as the threads for model work,
    /// [`crate::neural::parallel`], and a core fewer than the machine has).
    pub threads: usize,
    /// The phases to run, in order.
    pub phases: Vec<Phase>,
    /// Lower the threads' scheduling priority (nice 19).
    pub low_priority: bool,
    /// Learn the evidence trust even where it is not due (`bench answers
    /// --learning` times answers while it runs).
    pub relearn: bool,
    /// What the layers above learn from the library's citing sentences after
    /// the trust, when due (the front ends pass `check`'s flag).
    pub learners: Learners,
}

/// Learning that a layer above the pipeline does from the library's own
/// citing sentences in the trust phase, after the trust (on the same
/// one-core pool, at the same pace): `check`'s flag
/// (`check::calibration`). The pipeline knows no layer above it; a front end
/// hands its learners down.
pub trait Learner: Send + Sync {
    /// What it learns, as the status bar names it ("learning {label}").
    fn label(&self) -> &'static str;
    /// Why it should learn now over `rec` (the library's recommender, with
    /// its learned fusion), if it should.
    fn due(&self, rec: &super::Recommender) -> Option<String>;
    /// Learns and keeps; `Some((sentences, line))`: what was learned, as
    /// `doctor` says it.
    fn learn(&self, rec: &super::Recommender, on_progress: &dyn Fn(usize, usize)) -> Result<Option<(usize, String)>>;
}

/// The learners a background run carries.
#[derive(Clone, Default)]
pub struct Learners(pub Vec<Arc<dyn Learner>>);

impl std::fmt::Debug for Learners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Learners({})", self.0.len())
    }
}

impl Default for EncodingOptions {
    fn default() -> EncodingOptions {
        use crate::neural::parallel::{cores, threads_here};
        EncodingOptions {
            threads: threads_here().min(cores() - 1).max(1),
            // As the configuration's defaults have it (`Config::background_phases`).
            phases: vec![Phase::StandIns, Phase::Dense, Phase::Trust, Phase::Citation],
            low_priority: true,
            relearn: false,
            learners: Learners::default(),
        }
    }
}

/// Handle to the encoding thread. Dropping it stops the encoding after the
/// piece of 64 papers each thread is on: the threads then wait, using no
/// CPU, until the process ends (what was committed stays; the next start
/// resumes from there).
pub struct BackgroundEncoding {
    events: Receiver<EncodingEvent>,
    stop: Arc<AtomicBool>,
}

/// Stops a [`BackgroundEncoding`] at the piece each thread is on.
#[derive(Clone)]
pub struct EncodingStop(Arc<AtomicBool>);

impl EncodingStop {
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

/// Progress events at most this often (the last of a phase always goes).
const REPORT_EVERY: Duration = Duration::from_millis(250);

impl BackgroundEncoding {
    /// Starts encoding `library`'s missing vectors with `models`; it pauses
    /// while `busy` is set (the recommender answering).
    pub fn spawn(library: Arc<Library>, models: Arc<Models>, busy: Arc<AtomicBool>, options: EncodingOptions) -> BackgroundEncoding {
        let (tx, events) = crossbeam_channel::unbounded();
        let stop = Arc::new(AtomicBool::new(false));
        let pace = Pace { busy, stop: stop.clone() };
        let waits = tx.clone();
        // Another process wrote to the library while this waited: what it
        // wrote (vectors an import computed) is read by opening again.
        let others_wrote = Arc::new(AtomicBool::new(false));
        let noted = others_wrote.clone();
        library.writing().tell_waits(move |holder| {
            noted.store(true, Ordering::SeqCst);
            let _ = waits.send(EncodingEvent::Waiting { holder: holder.to_string() });
        });
        let _ = std::thread::Builder::new().name("citewise-encoding".into()).spawn(move || {
            // One front end of a library encodes it: the others wait for it
            // to end (then they encode what is left, if anything).
            let (_slot, took_over) = match EncoderSlot::try_take(library.dir()) {
                Ok(Ok(slot)) => (slot, false),
                Ok(Err(holder)) => {
                    let _ = tx.send(EncodingEvent::Elsewhere { holder });
                    match EncoderSlot::take(library.dir()) {
                        Ok(slot) => (slot, true),
                        Err(_) => return,
                    }
                }
                Err(e) => {
                    for &phase in &options.phases {
                        let _ = tx.send(EncodingEvent::Skipped { phase, why: e.to_string() });
                    }
                    let _ = tx.send(EncodingEvent::Finished);
                    return;
                }
            };
            if pace.stopped() {
                return;
            }
            // The models' matrix products run on a thread pool of the
            // encoding's own, at its priority (not on the pool that answers
            // queries), and the papers are encoded on one of its threads.
            let low = options.low_priority;
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(options.threads.max(1))
                .thread_name(|i| format!("citewise-encoding-{i}"))
                .start_handler(move |_| {
                    if low {
                        lower_priority();
                    }
                })
                .build();
            match pool {
                Ok(pool) => pool.install(|| encode_phases(&library, &models, &options, &pace, &tx, took_over, &others_wrote)),
                Err(_) => {
                    // No pool of its own: this thread, at its priority.
                    if low {
                        lower_priority();
                    }
                    encode_phases(&library, &models, &options, &pace, &tx, took_over, &others_wrote)
                }
            }
        });
        BackgroundEncoding { events, stop }
    }

    /// A handle that stops the encoding from another thread than the one
    /// that reads its events (as dropping this handle would).
    pub fn stopper(&self) -> EncodingStop {
        EncodingStop(self.stop.clone())
    }

    /// The events, for a loop that waits on several sources.
    pub fn events(&self) -> &Receiver<EncodingEvent> {
        &self.events
    }

    /// A pending event, without waiting.
    pub fn try_recv(&self) -> Option<EncodingEvent> {
        self.events.try_recv().ok()
    }

    /// Waits for the next event; `None` once the encoding thread has ended.
    pub fn recv(&self) -> Option<EncodingEvent> {
        self.events.recv().ok()
    }
}

impl Drop for BackgroundEncoding {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// A front end's background work: what it started with (the encodings and
/// the trust, [`EncodingOptions::phases`]), then the trust learned again
/// whenever new citing sentences come while it runs (a Zotero sync that
/// read PDFs). One run at a time: sentences that come during a run are
/// learned from once it ends.
pub struct BackgroundWork {
    library: Arc<Library>,
    models: Arc<Models>,
    busy: Arc<AtomicBool>,
    /// Whether the trust is learned at all (`background_learning`).
    learns: bool,
    /// What the layers above learn with it.
    learners: Learners,
    running: Option<BackgroundEncoding>,
    /// New sentences came during the run.
    learn_after: bool,
}

impl BackgroundWork {
    /// Starts `options.phases` (nothing runs if there are none); the work
    /// pauses while `busy` is set.
    pub fn start(library: Arc<Library>, models: Arc<Models>, busy: Arc<AtomicBool>, options: EncodingOptions) -> BackgroundWork {
        let learns = options.phases.contains(&Phase::Trust);
        let learners = options.learners.clone();
        let running =
            (!options.phases.is_empty()).then(|| BackgroundEncoding::spawn(library.clone(), models.clone(), busy.clone(), options));
        BackgroundWork { library, models, busy, learns, learners, running, learn_after: false }
    }

    /// The running work's events (none while nothing runs).
    pub fn events(&self) -> Option<&Receiver<EncodingEvent>> {
        self.running.as_ref().map(BackgroundEncoding::events)
    }

    /// A pending event, without waiting.
    pub fn try_recv(&self) -> Option<EncodingEvent> {
        self.running.as_ref().and_then(BackgroundEncoding::try_recv)
    }

    /// The front end saw `event` (`None`: the events ended): a run that
    /// finished is over, and the learning asked for meanwhile starts.
    pub fn saw(&mut self, event: Option<&EncodingEvent>) {
        if matches!(event, None | Some(EncodingEvent::Finished)) {
            self.running = None;
            if std::mem::take(&mut self.learn_after) {
                self.new_sentences();
            }
        }
    }

    /// New citing sentences are in the library: the trust is learned if it
    /// is due, now or once the running work ends.
    pub fn new_sentences(&mut self) {
        if !self.learns {
            return;
        }
        if self.running.is_some() {
            self.learn_after = true;
            return;
        }
        let options = EncodingOptions { phases: vec![Phase::Trust], learners: self.learners.clone(), ..EncodingOptions::default() };
        self.running = Some(BackgroundEncoding::spawn(self.library.clone(), self.models.clone(), self.busy.clone(), options));
    }
}

/// When the encoding threads may go on.
struct Pace {
    busy: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
}

impl Pace {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::SeqCst)
    }

    /// Waits while the recommender is busy, and for good once stopped.
    fn wait(&self) {
        while self.busy.load(Ordering::SeqCst) || self.stopped() {
            std::thread::sleep(Duration::from_millis(if self.stopped() { 200 } else { 5 }));
        }
    }
}

/// How long the rate a phase's time left is told from looks back: between
/// one and two of these.
const RATE_WINDOW: Duration = Duration::from_secs(30);

/// A phase's rate over its last [`RATE_WINDOW`] to twice that (over all of
/// it before then): steps do not all cost the same (the trust's rerank
/// check takes several times a plain search's time per step, an encoding
/// slows while answers are made), and the rate since the start would tell
/// the time left from the cheap steps long after they are over.
#[derive(Debug, Clone, Copy)]
struct RecentRate {
    start: Instant,
    /// The start of the window (a time and the steps done then), and the
    /// point that becomes it next.
    older: (Instant, u64),
    newer: (Instant, u64),
}

impl RecentRate {
    fn new(start: Instant) -> RecentRate {
        RecentRate { start, older: (start, 0), newer: (start, 0) }
    }

    /// Steps per second once `done` steps are done at `now`: over the
    /// window, or over the whole phase where the window saw no step.
    fn observe(&mut self, now: Instant, done: u64) -> f64 {
        if now.saturating_duration_since(self.newer.0) >= RATE_WINDOW {
            self.older = self.newer;
            self.newer = (now, done);
        }
        let (since, from) = if done > self.older.1 { self.older } else { (self.start, 0) };
        done.saturating_sub(from) as f64 / now.saturating_duration_since(since).as_secs_f64().max(1e-3)
    }
}

/// Counts a phase's progress and reports it now and then.
struct Progress<'a> {
    phase: Phase,
    total: AtomicU64,
    done: AtomicU64,
    /// The last report, and the rate told then.
    last: Mutex<(Instant, RecentRate)>,
    tx: Sender<EncodingEvent>,
    pace: &'a Pace,
}

impl<'a> Progress<'a> {
    fn new(phase: Phase, tx: &Sender<EncodingEvent>, pace: &'a Pace) -> Progress<'a> {
        let now = Instant::now();
        let last = Mutex::new((now, RecentRate::new(now)));
        Progress { phase, total: AtomicU64::new(0), done: AtomicU64::new(0), last, tx: tx.clone(), pace }
    }

    fn start(&self, total: u64) {
        self.total.store(total, Ordering::SeqCst);
        self.report(true);
    }

    fn add(&self, k: u64) {
        self.done.fetch_add(k, Ordering::SeqCst);
        self.report(false);
        self.pace.wait();
    }

    fn report(&self, force: bool) {
        let mut last = self.last.lock().expect("progress lock");
        let (done, total) = (self.done.load(Ordering::SeqCst), self.total.load(Ordering::SeqCst));
        if !force && done < total && last.0.elapsed() < REPORT_EVERY {
            return;
        }
        let now = Instant::now();
        last.0 = now;
        let per_second = last.1.observe(now, done);
        let _ = self.tx.send(EncodingEvent::Progress { phase: self.phase, done, total, per_second });
    }
}

/// Runs the phases in order, reporting as it goes. `took_over`: another
/// front end encoded the library meanwhile; `others_wrote`: another process
/// wrote to it while this one waited (an import's vectors). Then a phase is
/// `Covered` (the recommender opened again) even where nothing was left to
/// encode here.
fn encode_phases(
    library: &Arc<Library>,
    models: &Models,
    options: &EncodingOptions,
    pace: &Pace,
    tx: &Sender<EncodingEvent>,
    took_over: bool,
    others_wrote: &AtomicBool,
) {
    for &phase in &options.phases {
        if pace.stopped() {
            return;
        }
        if phase == Phase::Trust {
            match learn_trust(library, models, options, pace, tx) {
                Ok(Some(event)) => {
                    let _ = tx.send(event);
                }
                Ok(None) => {}
                Err(e) => {
                    let _ = tx.send(EncodingEvent::Skipped { phase, why: e.to_string() });
                }
            }
            continue;
        }
        match run_phase(phase, library, models, pace, tx) {
            Ok(s) if s.embedded > 0 || took_over || others_wrote.load(Ordering::SeqCst) => {
                let _ = tx.send(EncodingEvent::Covered { phase, encoded: s.embedded });
            }
            Ok(_) => {}
            Err(e) => {
                let _ = tx.send(EncodingEvent::Skipped { phase, why: e.to_string() });
            }
        }
    }
    let _ = tx.send(EncodingEvent::Finished);
}

/// Learns the library's evidence trust if it is due (or
/// `options.relearn`), at the pace of the encoding: each sentence's search
/// waits while the recommender answers. On one core: its searches run one
/// after another, and the model work in them on one thread of its own (at
/// the encoding's priority). Then each of `options.learners` that is due,
/// with the library's recommender. `Some(Learned)` when anything was
/// learned and kept (its lines joined).
fn learn_trust(
    library: &Arc<Library>,
    models: &Models,
    options: &EncodingOptions,
    pace: &Pace,
    tx: &Sender<EncodingEvent>,
) -> Result<Option<EncodingEvent>> {
    use super::fusion_learning::{due, learn_and_keep, Outcome};
    use super::learned_fusion;
    let mut rec = super::Recommender::open(library.clone(), models, None, super::Settings::default())?;
    let forced = options.relearn && !learned_fusion::is_off(library);
    // Each learning counts from 0 in a progress of its own.
    let follow = |progress: &Progress, done: usize, total: usize| {
        if progress.total.load(Ordering::SeqCst) != total as u64 {
            progress.start(total as u64);
        }
        let before = progress.done.load(Ordering::SeqCst);
        progress.add((done as u64).saturating_sub(before));
    };
    let low = options.low_priority;
    let one_core = rayon::ThreadPoolBuilder::new().num_threads(1).thread_name(|_| "citewise-learning".into()).start_handler(move |_| {
        if low {
            lower_priority();
        }
    });
    let pool = one_core.build().ok();
    fn on_one_core<T: Send>(pool: Option<&rayon::ThreadPool>, f: impl FnOnce() -> T + Send) -> T {
        match pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }
    let trust_due = forced || due(&learned_fusion::read(library), &rec).is_some();
    let mut learned = Vec::new();
    if trust_due {
        let progress = Progress::new(Phase::Trust, tx, pace);
        let learn = || -> Result<Option<(usize, String)>> {
            Ok(match learn_and_keep(&mut rec, &|done, total| follow(&progress, done, total))? {
                Outcome::Learned(l) => Some((l.sentences, l.describe())),
                Outcome::TooFew { .. } => None,
            })
        };
        learned.extend(on_one_core(pool.as_ref(), learn)?);
    }
    if !options.learners.0.is_empty() {
        // As a draft is answered and checked: with what the library learned.
        let rec = super::Recommender::new(library.clone(), models);
        for learner in &options.learners.0 {
            if pace.stopped() || learner.due(&rec).is_none() {
                continue;
            }
            let progress = Progress::new(Phase::Learner(learner.label()), tx, pace);
            learned.extend(on_one_core(pool.as_ref(), || learner.learn(&rec, &|done, total| follow(&progress, done, total)))?);
        }
    }
    let sentences = learned.iter().map(|(n, _)| *n).max();
    let line = learned.into_iter().map(|(_, line)| line).collect::<Vec<_>>().join("; ");
    Ok(sentences.map(|sentences| EncodingEvent::Learned { sentences, line }))
}

/// Runs one phase (on this thread: its pool parallelises the models).
fn run_phase(phase: Phase, library: &Library, models: &Models, pace: &Pace, tx: &Sender<EncodingEvent>) -> Result<EmbedSummary> {
    let progress = Progress::new(phase, tx, pace);
    let on_start = |n: u64| progress.start(n);
    let on_progress = |k: u64| progress.add(k);
    let threads = 1;
    match phase {
        Phase::StandIns => {
            let teacher = models.citation_encoder()?.fingerprint();
            let weights = crate::library::student::student_weights(library.dir())?;
            let student = crate::neural::encoder::HattenEncoder::from_weights(weights, &models.backend().device)?;
            embed_student_vectors(library, &student, &teacher, threads, &on_start, &on_progress)
        }
        Phase::Dense => embed_library(library, &*models.hatten()?, &on_start, &on_progress),
        Phase::Citation => embed_citation_vectors(library, &*models.citation_encoder()?, threads, &on_start, &on_progress),
        // Learned, not encoded ([`learn_trust`]).
        Phase::Trust | Phase::Learner(_) => Ok(EmbedSummary::default()),
    }
}

/// Lowers this thread's scheduling priority (threads it starts inherit
/// it), so the editor and the recommender always come first.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls on this thread's own id.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 19);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_time_left_is_told_from_the_recent_rate_once_the_steps_grow_dearer() {
        let t0 = Instant::now();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut rate = RecentRate::new(t0);
        // The trust's searches: 100 steps in 10 s.
        assert!((rate.observe(at(10.0), 100) - 10.0).abs() < 1e-9, "the whole phase so far");
        // Then its rerank check: a step every 2 s.
        let mut told = 0.0;
        for k in 1..=60u64 {
            told = rate.observe(at(10.0 + 2.0 * k as f64), 100 + k);
        }
        // At 130 s: 160 steps, 1.23 a second since the start; the last
        // window's 0.5 tells the time left.
        assert!((told - 0.5).abs() < 1e-9, "{told}");
        // A window without a step (paused while answers are made, reported
        // every 10 s) tells the whole phase's rate, not none.
        let paused: Vec<f64> = [140.0, 150.0, 160.0, 170.0, 180.0].iter().map(|&s| rate.observe(at(s), 160)).collect();
        assert!((paused[4] - 160.0 / 180.0).abs() < 1e-9, "{paused:?}");
        assert!(paused.iter().all(|r| r.is_finite() && *r > 0.0), "{paused:?}");
    }
}
