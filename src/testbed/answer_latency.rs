//! F5 answers while the library learns its evidence trust in the
//! background: what `citewise bench answers` measures. Each request goes to
//! the editor's worker, as F5 sends it, and is timed to its complete
//! answer; the user "reads" for `gap` before the next one (the background
//! work runs in those gaps, and pauses while an answer is made).

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::library::Library;
use crate::pipeline::background::{BackgroundEncoding, EncodingEvent, EncodingOptions, Phase};
use crate::pipeline::{Models, Query, Recommender};
use crate::runtime::{reopen_all, Worker, WorkerEvent};

/// What a run of [`answer_latency`] saw.
#[derive(Debug, Clone, Default)]
pub struct AnswerLatency {
    /// Each answer with nothing in the background, in ms.
    pub idle_ms: Vec<f64>,
    /// Each answer while the trust was learned, in ms.
    pub learning_ms: Vec<f64>,
    /// Seconds the learning took (gaps and answers included).
    pub learning_seconds: f64,
    /// What it came to: the line it learned, or why it did not.
    pub learned: Option<String>,
    /// Progress events of the learning seen (the status bar's news).
    pub progress_events: usize,
}

/// Times answers to the first `idle` of `queries` (after one that loads
/// the models), then answers to the others while the library's trust is
/// learned in the background (forced, as if due), until the learning ends
/// or the queries do; `gap` between answers. No query is asked twice (a
/// repeated one would meet its cached scores).
pub fn answer_latency(library: Arc<Library>, models: Arc<Models>, queries: &[Query], idle: usize, gap: Duration) -> Result<AnswerLatency> {
    if queries.len() < idle + 2 {
        return Err(Error::Input(format!(
            "{} queries: at least {} are needed (a warm-up, {idle} idle, one while learning)",
            queries.len(),
            idle + 2
        )));
    }
    let worker = Worker::spawn_reopening(Recommender::new(library.clone(), &models), reopen_all(&library, &models));
    let mut seen = AnswerLatency::default();
    let mut next = queries.iter();
    // The models load on the first answer (not timed).
    answer(&worker, next.next().expect("queries"))?;
    for q in next.by_ref().take(idle) {
        seen.idle_ms.push(answer(&worker, q)?);
        std::thread::sleep(gap);
    }
    let options = EncodingOptions { phases: vec![Phase::Trust], relearn: true, ..EncodingOptions::default() };
    let t = Instant::now();
    let background = BackgroundEncoding::spawn(library.clone(), models.clone(), worker.busy_flag(), options);
    loop {
        let deadline = match next.next() {
            Some(q) => {
                seen.learning_ms.push(answer(&worker, q)?);
                Instant::now() + gap
            }
            // Out of queries: the learning is waited for.
            None => Instant::now() + Duration::from_secs(3600),
        };
        let mut over = false;
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match background.events().recv_timeout(left) {
                Ok(EncodingEvent::Progress { .. }) => seen.progress_events += 1,
                Ok(EncodingEvent::Learned { line, .. }) => {
                    worker.reload();
                    seen.learned = Some(line);
                }
                Ok(EncodingEvent::Skipped { why, .. }) => seen.learned = Some(format!("not learned: {why}")),
                Ok(EncodingEvent::Finished) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => {
                    over = true;
                    break;
                }
                Ok(_) => {}
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => break,
            }
        }
        if over {
            break;
        }
    }
    seen.learning_seconds = t.elapsed().as_secs_f64();
    Ok(seen)
}

/// One request, timed to its complete answer.
fn answer(worker: &Worker, query: &Query) -> Result<f64> {
    let t = Instant::now();
    let id = worker.request(query.clone());
    loop {
        match worker.recv_timeout(Duration::from_secs(600)) {
            Some(WorkerEvent::Finished { id: done, .. }) if done == id => return Ok(t.elapsed().as_secs_f64() * 1000.0),
            Some(WorkerEvent::Failed { id: done, message, .. }) if done == id => return Err(Error::Input(message)),
            Some(_) => {}
            None => return Err(Error::Input("no answer in ten minutes".into())),
        }
    }
}
