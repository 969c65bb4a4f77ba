//! What the editor does with background news: the encoding's (and the
//! trust learning's) progress in the status bar, and the recommender opened
//! again whenever a channel's vectors cover the library or a trust was
//! learned; Zotero's changes synced into the library.

use super::app::App;
use crate::library::zotero::{WatchEvent, RETRY_AFTER};
use crate::pipeline::background::EncodingEvent;
use crate::runtime::Worker;

/// Applies `event` to the app and the worker.
pub fn apply(event: &EncodingEvent, app: &mut App, worker: &Worker) {
    match event {
        EncodingEvent::Covered { .. } => worker.reload(),
        EncodingEvent::Learned { sentences, line } => {
            worker.reload();
            app.set_status(format!("{line} (learned from {sentences} of the library's citing sentences)"));
        }
        _ => {}
    }
    app.set_encoding(event.status());
}

/// Zotero's changes are in the library: the next request sees them.
pub fn apply_zotero(event: WatchEvent, app: &mut App, worker: &Worker) {
    match event {
        WatchEvent::Synced(summary) => {
            worker.reload();
            app.set_status(summary.line());
        }
        WatchEvent::Refreshed => worker.reload(),
        WatchEvent::Failed(why) => app.set_status(format!("Zotero's changes not read (tried again in {} s): {why}", RETRY_AFTER.as_secs())),
    }
}
