//! A panic in the editor leaves the terminal usable and the text saved:
//! the panic hook writes the unsaved text to the autosave file (which the
//! next start offers to restore), restores the terminal, and only then
//! prints the panic message.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::autosave;

/// The text a panic saves, kept current by the event loop.
#[derive(Clone)]
pub struct CrashSaver {
    unsaved: Arc<Mutex<Option<String>>>,
    autosave: PathBuf,
    draft: Option<PathBuf>,
}

impl CrashSaver {
    /// Saves to the autosave file `autosave` of the draft `draft`.
    pub fn new(autosave: PathBuf, draft: Option<PathBuf>) -> CrashSaver {
        CrashSaver { unsaved: Arc::new(Mutex::new(None)), autosave, draft }
    }

    /// The editor's text where it has changes not saved to the file; `None`
    /// when the file holds it.
    pub fn update(&self, unsaved: Option<String>) {
        *self.unsaved.lock().unwrap_or_else(|e| e.into_inner()) = unsaved;
    }

    /// The autosave file.
    pub fn path(&self) -> &Path {
        &self.autosave
    }

    /// Writes the unsaved text, if any, to the autosave file; true when it
    /// wrote.
    pub fn save(&self) -> crate::error::Result<bool> {
        // A panic while the lock is held (it never is for long) must not
        // hang the hook: then there is nothing newer to save.
        let text = match self.unsaved.try_lock() {
            Ok(g) => g.clone(),
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner().clone(),
            Err(std::sync::TryLockError::WouldBlock) => None,
        };
        match text {
            Some(text) => autosave::write(&self.autosave, self.draft.as_deref(), &text).map(|()| true),
            None => Ok(false),
        }
    }
}

/// Installs the editor's panic hook, in front of the one installed before:
/// a panic on the calling (UI) thread saves `saver`'s text, runs `restore`
/// (which gives the terminal back: raw mode off, main screen, cursor), then
/// lets the previous hook print the message. Panics on other threads go to
/// the previous hook alone.
pub fn install_panic_hook(saver: CrashSaver, restore: impl Fn() + Send + Sync + 'static) {
    let ui = std::thread::current().id();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() != ui {
            previous(info);
            return;
        }
        let saved = saver.save();
        restore();
        previous(info);
        match saved {
            Ok(true) => eprintln!("citewise: your unsaved text is in {}; open the draft again to restore it", saver.path().display()),
            Ok(false) => {}
            Err(e) => eprintln!("citewise: the unsaved text could not be autosaved: {e}"),
        }
    }));
}
