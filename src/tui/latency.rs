//! Input-to-render latency while the worker is busy: what `citewise bench
//! keys` measures.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

use super::app::{App, AppSettings};
use super::screen;
use crate::draft::ContextMode;
use crate::error::{Error, Result};
use crate::library::Library;
use crate::pipeline::worker::{Worker, WorkerEvent};
use crate::pipeline::{Models, Recommender};

/// Types `keys` characters into the editor, one every `gap`, while a new
/// recommendation request with a long context is issued every 20 keys (each
/// superseding the last, so the worker never idles). Returns the time from
/// each key to the end of the frame that shows it, in milliseconds.
pub fn input_latency(library: Arc<Library>, models: &Models, keys: usize, gap: Duration) -> Result<Vec<f64>> {
    let mut settings = AppSettings::defaults(library.papers().num_papers());
    settings.context_mode = ContextMode::Paragraph;
    let seed = "Neural ranking models for query completion and citation recommendation use dense retrieval, \
                BM25 prefetch and cross-encoder re-ranking of candidates. "
        .repeat(20);
    let mut app = App::new(&seed, None, "references.bib".into(), settings);
    app.cursor_to_end();
    let worker = Worker::spawn(Recommender::new(library, models));
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).map_err(|e| Error::Terminal(e.to_string()))?;
    let text = "the quick brown fox jumps over the lazy dog while citations stream in ";
    let mut out = Vec::with_capacity(keys);
    for (i, c) in text.chars().cycle().take(keys).enumerate() {
        if i % 20 == 0 {
            let id = worker.request(app.query());
            app.on_requested(id);
        }
        let t = Instant::now();
        app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        terminal.draw(|f| screen::draw(f, &app)).map_err(|e| Error::Terminal(e.to_string()))?;
        out.push(t.elapsed().as_secs_f64() * 1000.0);
        // The rest of a loop turn: results that arrived are shown.
        while let Some(ev) = worker.try_recv() {
            if let WorkerEvent::Stage { id, results } = ev {
                app.on_results(id, results, Vec::new());
            }
        }
        std::thread::sleep(gap);
    }
    Ok(out)
}
