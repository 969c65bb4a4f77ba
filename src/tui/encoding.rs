//! What the editor does with the background encoding's news: progress in
//! the status bar, and the recommender opened again whenever a channel's
//! vectors cover the library.

use super::app::App;
use crate::pipeline::background::EncodingEvent;
use crate::runtime::Worker;

/// Applies `event` to the app and the worker.
pub fn apply(event: &EncodingEvent, app: &mut App, worker: &Worker) {
    if let EncodingEvent::Covered { .. } = event {
        worker.reload();
    }
    app.set_encoding(event.status());
}
