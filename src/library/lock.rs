//! One writer per library. Every write to a library — papers, evidence,
//! vectors, adapted weights, the Zotero state — happens while its writer
//! holds `LIBRARY/write.lock`, an advisory lock of the operating system
//! (`flock` on Unix) on that file: a second process that wants to write
//! waits for the first, and a holder that crashes or is killed loses the
//! lock with its process, so nothing is left to break by hand. The file
//! also says who holds it (its command line and process id), for the
//! waiting writer's message.
//!
//! Within a process, [`Writing`] makes the lock re-entrant and shared by
//! threads: a command that writes throughout holds it for its whole run
//! ([`Writing::hold`]); the front ends' background work (encoding, Zotero's
//! changes, span vectors) takes it for each commit ([`Writing::during`]),
//! so an import beside an open editor waits at most for one commit.
//!
//! A second file, `LIBRARY/encoding.lock`, is held by the one front end
//! that encodes the library's vectors in the background
//! ([`EncoderSlot`]): other windows and language servers on the same
//! library wait for it instead of encoding the same papers again.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;

use crate::error::{Error, Result};

/// The file whose lock makes a process the library's writer.
pub const WRITE_LOCK: &str = "write.lock";

/// The file whose lock makes a front end the library's background encoder.
pub const ENCODING_LOCK: &str = "encoding.lock";

/// An operating-system lock on a file of the library, released when
/// dropped or when its process ends.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

/// Opens (creating it) the lock file `name` of the library in `dir`.
fn lock_file(dir: &Path, name: &str) -> Result<(File, PathBuf)> {
    let path = dir.join(name);
    let file =
        std::fs::OpenOptions::new().read(true).write(true).create(true).truncate(false).open(&path).map_err(|e| Error::io(&path, e))?;
    Ok((file, path))
}

/// Who holds the lock in `file`, in words ("`citewise import refs.bib`,
/// process 1234"), as its holder wrote it; "another process" when it says
/// nothing.
fn holder_of(file: &mut File) -> String {
    let mut text = String::new();
    let _ = file.rewind().and_then(|()| file.take(512).read_to_string(&mut text));
    match text.trim() {
        // Not a citewise process (it writes its command line), or one that has not yet.
        "" => "another process".to_string(),
        said => crate::util::printable(said).into_owned(),
    }
}

/// What this process is, for another's message: its command line.
fn this_process() -> String {
    let args: Vec<String> = std::env::args().map(|a| crate::util::shell_quoted(&a)).collect();
    let mut line = args.join(" ");
    if line.len() > 200 {
        line = format!("{}…", line.chars().take(200).collect::<String>());
    }
    format!("`{line}`, process {}", std::process::id())
}

/// Writes who now holds the lock into its file.
fn sign(file: &mut File) {
    let line = this_process();
    let _ = file.set_len(0).and_then(|()| file.rewind()).and_then(|()| file.write_all(line.as_bytes()));
}

impl FileLock {
    /// Takes the lock `name` of the library in `dir` if no other holds it;
    /// otherwise says who does.
    pub fn try_take(dir: &Path, name: &str) -> Result<std::result::Result<FileLock, String>> {
        let (mut file, path) = lock_file(dir, name)?;
        match file.try_lock() {
            Ok(()) => {
                sign(&mut file);
                Ok(Ok(FileLock { file }))
            }
            Err(TryLockError::WouldBlock) => Ok(Err(holder_of(&mut file))),
            Err(TryLockError::Error(e)) => Err(Error::io(path, e)),
        }
    }

    /// Takes the lock `name` of the library in `dir`, waiting while another
    /// process holds it; `on_wait` is told who that is before the wait.
    pub fn take(dir: &Path, name: &str, on_wait: &dyn Fn(&str)) -> Result<FileLock> {
        if let Ok(lock) = Self::try_take(dir, name)? {
            return Ok(lock);
        }
        let (mut file, path) = lock_file(dir, name)?;
        on_wait(&holder_of(&mut file));
        file.lock().map_err(|e| Error::io(path, e))?;
        sign(&mut file);
        Ok(FileLock { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        // Says nobody holds it, then lets it go (the process's end would too).
        let _ = self.file.set_len(0);
        let _ = self.file.unlock();
    }
}

/// How a process tells that a write waits for another process.
type Notice = Box<dyn Fn(&str) + Send + Sync>;

/// The library's write lock as a process shares it among its threads.
pub struct Writing {
    dir: PathBuf,
    state: Mutex<State>,
    free: Condvar,
    /// Told who holds the lock when a write has to wait.
    notice: Mutex<Option<Notice>>,
}

#[derive(Debug, Default)]
struct State {
    lock: Option<FileLock>,
    /// Held until [`Writing::release`] (a command that writes throughout).
    held: bool,
    /// The thread writing now, and how deep in nested writes it is.
    owner: Option<ThreadId>,
    depth: usize,
}

impl Writing {
    /// The write lock of the library in `dir` (nothing is taken yet).
    pub fn new(dir: &Path) -> Writing {
        Writing { dir: dir.to_path_buf(), state: Mutex::new(State::default()), free: Condvar::new(), notice: Mutex::new(None) }
    }

    /// How this process tells that a write waits for another process
    /// (given who that is): a command prints it, a front end shows it.
    pub fn tell_waits(&self, notice: impl Fn(&str) + Send + Sync + 'static) {
        *self.notice.lock().unwrap_or_else(|e| e.into_inner()) = Some(Box::new(notice));
    }

    fn take(&self) -> Result<FileLock> {
        FileLock::take(&self.dir, WRITE_LOCK, &|holder| {
            if let Some(tell) = self.notice.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
                tell(holder);
            }
        })
    }

    /// The one [`Writing`] of this process for the library in `dir`: every
    /// open of the library shares it (the operating system's lock is the
    /// process's, and two opens of one library in one process must take
    /// turns, not wait for each other).
    pub fn of_library(dir: &Path) -> std::sync::Arc<Writing> {
        static ALL: Mutex<Vec<(PathBuf, std::sync::Weak<Writing>)>> = Mutex::new(Vec::new());
        let key = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        let mut all = ALL.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|(_, w)| w.strong_count() > 0);
        if let Some(w) = all.iter().find(|(d, _)| *d == key).and_then(|(_, w)| w.upgrade()) {
            return w;
        }
        let w = std::sync::Arc::new(Writing::new(dir));
        all.push((key, std::sync::Arc::downgrade(&w)));
        w
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes the lock for as long as this process runs (or until
    /// [`Writing::release`]), waiting for another writer first. For
    /// commands that write throughout.
    pub fn hold(&self) -> Result<()> {
        let mut state = self.state();
        if state.lock.is_none() {
            state.lock = Some(self.take()?);
        }
        state.held = true;
        Ok(())
    }

    /// Lets a lock taken by [`Writing::hold`] go once no write is running.
    pub fn release(&self) {
        let mut state = self.state();
        state.held = false;
        if state.owner.is_none() {
            state.lock = None;
        }
    }

    /// Whether this process holds the lock now.
    pub fn is_held(&self) -> bool {
        self.state().lock.is_some()
    }

    /// Runs `write` as the library's one writer: other threads of this
    /// process that write wait for it, and the lock is taken for the call
    /// (waiting for another process) unless this process holds it already.
    /// A write may run writes within it.
    pub fn during<T>(&self, write: impl FnOnce() -> Result<T>) -> Result<T> {
        let me = std::thread::current().id();
        {
            let mut state = self.state();
            while state.owner.is_some_and(|o| o != me) {
                state = self.free.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            state.owner = Some(me);
            state.depth += 1;
            if state.lock.is_none() {
                // Taken with the state held: this process's other writers wait here, not on the file.
                match self.take() {
                    Ok(lock) => state.lock = Some(lock),
                    Err(e) => {
                        self.leave(&mut state);
                        return Err(e);
                    }
                }
            }
        }
        let result = write();
        self.leave(&mut self.state());
        result
    }

    fn leave(&self, state: &mut State) {
        state.depth -= 1;
        if state.depth == 0 {
            state.owner = None;
            if !state.held {
                state.lock = None;
            }
            self.free.notify_all();
        }
    }
}

/// The right to encode a library's vectors in the background: one front
/// end at a time holds it.
pub struct EncoderSlot {
    _lock: FileLock,
}

impl EncoderSlot {
    /// The slot if free, else who holds it.
    pub fn try_take(dir: &Path) -> Result<std::result::Result<EncoderSlot, String>> {
        Ok(FileLock::try_take(dir, ENCODING_LOCK)?.map(|l| EncoderSlot { _lock: l }))
    }

    /// The slot, once the front end that holds it lets it go (or ends).
    pub fn take(dir: &Path) -> Result<EncoderSlot> {
        Ok(EncoderSlot { _lock: FileLock::take(dir, ENCODING_LOCK, &|_| {})? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_second_taker_is_told_who_holds_the_lock() {
        let dir = tempfile::tempdir().unwrap();
        let first = FileLock::try_take(dir.path(), WRITE_LOCK).unwrap().expect("free");
        let who = FileLock::try_take(dir.path(), WRITE_LOCK).unwrap().expect_err("held");
        assert!(who.ends_with(&format!(", process {}", std::process::id())), "{who}");
        assert!(who.starts_with('`'), "names the holder's command line: {who}");
        drop(first);
        assert!(FileLock::try_take(dir.path(), WRITE_LOCK).unwrap().is_ok(), "free once dropped");
    }

    #[test]
    fn writes_of_one_process_take_turns_and_nest() {
        let dir = tempfile::tempdir().unwrap();
        let writing = Arc::new(Writing::new(dir.path()));
        let inside = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (writing, inside, most) = (writing.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        writing
                            .during(|| {
                                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                                most.fetch_max(now, Ordering::SeqCst);
                                // A nested write on the same thread does not wait for itself.
                                writing.during(|| Ok(()))?;
                                inside.fetch_sub(1, Ordering::SeqCst);
                                Ok(())
                            })
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "one writer at a time");
        assert!(!writing.is_held(), "let go after the last write");
        writing.hold().unwrap();
        writing.during(|| Ok(())).unwrap();
        assert!(writing.is_held(), "a held lock stays held after a write");
        writing.release();
        assert!(!writing.is_held());
    }

    #[test]
    fn two_opens_of_one_library_share_its_lock() {
        let dir = tempfile::tempdir().unwrap();
        let a = Writing::of_library(dir.path());
        let b = Writing::of_library(&dir.path().join("."));
        assert!(Arc::ptr_eq(&a, &b));
        a.hold().unwrap();
        // Would wait for ever on the file if it were a lock of its own.
        b.during(|| Ok(())).unwrap();
        a.release();
    }
}
