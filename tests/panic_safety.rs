#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! A panic in the editor: the unsaved text is autosaved and the terminal
//! restored before the panic message is printed. (Its own test binary: the
//! panic hook is process-wide.)

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use citewise::tui::autosave;
use citewise::tui::crash::{install_panic_hook, CrashSaver};

#[test]
fn a_panic_saves_the_text_then_restores_the_terminal_then_reports() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("autosave.json");
    let events = Arc::new(Mutex::new(Vec::<String>::new()));
    // (A copy: a failing assertion must not hold the lock the hooks take.)
    let seen = |events: &Arc<Mutex<Vec<String>>>| events.lock().unwrap().clone();
    // The hook installed before (the one that prints the message).
    let ev = events.clone();
    std::panic::set_hook(Box::new(move |info| {
        ev.lock().unwrap().push(format!("previous: {}", info.payload().downcast_ref::<&str>().copied().unwrap_or("?")))
    }));
    let saver = CrashSaver::new(path.clone(), Some(PathBuf::from("draft.tex")));
    let (ev, p) = (events.clone(), path.clone());
    install_panic_hook(saver.clone(), move || {
        let saved = autosave::read(&p).map(|a| a.text).unwrap_or_default();
        ev.lock().unwrap().push(format!("restore (autosave: {saved:?})"));
    });

    // Nothing unsaved: the terminal is restored, no autosave is written.
    assert!(std::panic::catch_unwind(|| panic!("first")).is_err());
    assert_eq!(seen(&events), ["restore (autosave: \"\")", "previous: first"]);
    assert!(!path.exists());

    // Unsaved text: saved before the terminal is restored.
    saver.update(Some("Text typed before the crash.".into()));
    events.lock().unwrap().clear();
    assert!(std::panic::catch_unwind(|| panic!("second")).is_err());
    assert_eq!(seen(&events), ["restore (autosave: \"Text typed before the crash.\")", "previous: second"]);
    let a = autosave::read(&path).unwrap();
    assert_eq!((a.text.as_str(), a.draft.as_str()), ("Text typed before the crash.", "draft.tex"));

    // A panic on another thread (a worker's) leaves the terminal to the editor.
    events.lock().unwrap().clear();
    assert!(std::thread::spawn(|| panic!("worker")).join().is_err());
    assert_eq!(seen(&events), ["previous: worker"]);
}
