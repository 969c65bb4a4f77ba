//! Input-to-render latency while the worker is busy (and, if asked, while
//! the library's missing vectors are encoded in the background): what
//! `citewise bench keys` measures.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use crate::draft::ContextMode;
use crate::error::{Error, Result};
use crate::library::Library;
use crate::pipeline::background::{BackgroundEncoding, EncodingEvent, EncodingOptions};
use crate::pipeline::{Models, Recommender};
use crate::runtime::{reopen_all, Worker, WorkerEvent};
use crate::tui::app::{App, AppSettings};
use crate::tui::screen;

/// What a run of [`input_latency`] saw.
#[derive(Debug, Clone, Default)]
pub struct KeyLatency {
    /// From each key to the end of the frame that shows it, in ms.
    pub ms: Vec<f64>,
    /// Papers the background encoding encoded meanwhile (by phase label).
    pub encoded: Vec<(&'static str, u64)>,
    /// Channels whose vectors came to cover the library meanwhile.
    pub covered: Vec<&'static str>,
    /// Frames whose status bar showed the encoding's progress.
    pub frames_with_progress: usize,
    /// The last status bar line about the encoding.
    pub last_status: Option<String>,
    /// The stages (channels, fuse, rerank) of the last answer received.
    pub last_stages: Vec<String>,
}

/// Types `keys` characters into the editor, one every `gap`, while a new
/// recommendation request with a long context is issued every 20 keys (each
/// superseding the last, so the worker never idles), and, with `encoding`,
/// the library's missing vectors are encoded in the background as the
/// editor does it (progress to the status bar, the recommender reopened as
/// channels come to cover the library).
pub fn input_latency(
    library: Arc<Library>,
    models: Arc<Models>,
    keys: usize,
    gap: Duration,
    encoding: Option<EncodingOptions>,
) -> Result<KeyLatency> {
    let mut settings = AppSettings::defaults(library.papers().num_papers());
    settings.context_mode = ContextMode::Paragraph;
    let seed = "Neural ranking models for query completion and citation recommendation use dense retrieval, \
                BM25 prefetch and cross-encoder re-ranking of candidates. "
        .repeat(20);
    let mut app = App::new(&seed, None, "references.bib".into(), settings);
    app.cursor_to_end();
    let worker = Worker::spawn_reopening(Recommender::new(library.clone(), &models), reopen_all(&library, &models));
    let background = encoding.map(|o| BackgroundEncoding::spawn(library.clone(), models.clone(), worker.busy_flag(), o));
    let mut seen = KeyLatency::default();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).map_err(|e| Error::Terminal(e.to_string()))?;
    let text = "the quick brown fox jumps over the lazy dog while citations stream in ";
    seen.ms.reserve(keys);
    for (i, c) in text.chars().cycle().take(keys).enumerate() {
        if i % 20 == 0 {
            let id = worker.request(app.query());
            app.on_requested(id);
        }
        let t = Instant::now();
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        terminal.draw(|f| screen::draw(f, &app)).map_err(|e| Error::Terminal(e.to_string()))?;
        seen.ms.push(t.elapsed().as_secs_f64() * 1000.0);
        if background.is_some() && status_row(&terminal).contains("encoding ") {
            seen.frames_with_progress += 1;
        }
        // The rest of a loop turn: results that arrived are shown.
        while let Some(ev) = worker.try_recv() {
            if let WorkerEvent::Stage { id, results, .. } = ev {
                seen.last_stages = results.timings.iter().map(|(n, _)| n.name().to_string()).collect();
                app.on_results(id, results);
            }
        }
        while let Some(ev) = background.as_ref().and_then(BackgroundEncoding::try_recv) {
            crate::tui::encoding::apply(&ev, &mut app, &worker);
            match ev {
                EncodingEvent::Progress { phase, done, .. } => match seen.encoded.iter_mut().find(|(p, _)| *p == phase.label()) {
                    Some(e) => e.1 = done,
                    None => seen.encoded.push((phase.label(), done)),
                },
                EncodingEvent::Covered { phase, .. } => seen.covered.push(phase.label()),
                _ => {}
            }
            if app.encoding().is_some() {
                seen.last_status = app.encoding().map(String::from);
            }
        }
        std::thread::sleep(gap);
    }
    Ok(seen)
}

/// The bottom row of the frame last drawn: the status bar.
fn status_row(terminal: &Terminal<TestBackend>) -> String {
    let buffer = terminal.backend().buffer();
    let y = buffer.area.height.saturating_sub(1);
    (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_string()).collect()
}
