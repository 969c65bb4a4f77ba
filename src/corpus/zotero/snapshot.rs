//! A consistent copy of a database Zotero may hold open.
//!
//! Zotero keeps `zotero.sqlite` under an exclusive lock while it runs and
//! citewise never writes to it, never locks it, never opens it through
//! SQLite at all: the file and its logs (the write-ahead log, and the
//! rollback journal an exclusive-mode connection keeps between
//! transactions) are copied byte for byte into a temporary directory, and
//! the copy is opened read-write (it is citewise's own), so that SQLite
//! rolls back what a transaction in progress had written into the file
//! (a hot journal) and replays what a log committed. A copy is torn when
//! the files changed while they were read (their lengths or modification
//! times differ before and after, or SQLite's quick check fails on the
//! copy); it is taken again, a few times, before the reader says so.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

/// Tries at a copy that did not change while it was read.
const ATTEMPTS: usize = 4;

/// The prefix of the copies' directories (a copy a killed process left
/// behind is removed by the next reader once it is an hour old).
const PREFIX: &str = "citewise-zotero-";

/// The logs SQLite keeps beside a database.
const LOGS: [&str; 2] = ["-wal", "-journal"];

/// A database copied out of a Zotero data directory.
pub struct Copied {
    pub conn: Connection,
    /// Set when every attempt saw the files change: the copy passed
    /// SQLite's check but may miss the latest write.
    pub torn: Option<String>,
    // Dropped after `conn` (fields drop in order): the copy's directory.
    _dir: tempfile::TempDir,
}

type Look = Vec<Option<(u64, SystemTime)>>;

/// What the files looked like: length and modification time of the
/// database and of each log.
fn look(file: &Path) -> Look {
    std::iter::once(file.to_path_buf())
        .chain(LOGS.iter().map(|l| with_suffix(file, l)))
        .map(|f| std::fs::metadata(f).ok().and_then(|m| Some((m.len(), m.modified().ok()?))))
        .collect()
}

fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push(suffix);
    PathBuf::from(name)
}

fn zotero_error(file: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Zotero { path: file.to_path_buf(), reason: reason.to_string() }
}

/// Removes the copies that processes killed while reading left behind.
fn remove_stale_copies() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for e in entries.flatten() {
        let stale = e.metadata().ok().and_then(|m| m.modified().ok()).is_some_and(|t| t < hour_ago);
        if stale && e.file_name().to_string_lossy().starts_with(PREFIX) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Copies `file` (a SQLite database) with its logs and opens the copy. A
/// copy taken while the files changed is taken again; when every attempt
/// saw a change, the last copy that passes SQLite's check is used, marked
/// torn.
pub fn copy_and_open(file: &Path) -> Result<Copied> {
    remove_stale_copies();
    let mut problem = String::new();
    let mut changed: Option<(Connection, tempfile::TempDir)> = None;
    for _ in 0..ATTEMPTS {
        let before = look(file);
        if before[0].is_none() {
            return Err(zotero_error(file, "cannot be read (is this a Zotero data directory?)"));
        }
        let dir = tempfile::Builder::new().prefix(PREFIX).tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let copy = dir.path().join("copy.sqlite");
        std::fs::copy(file, &copy).map_err(|e| Error::io(file, e))?;
        for (log, seen) in LOGS.iter().zip(&before[1..]) {
            if seen.is_some() {
                // A log that vanished meanwhile was checkpointed or committed: the look below differs.
                let _ = std::fs::copy(with_suffix(file, log), with_suffix(&copy, log));
            }
        }
        let after = look(file);
        let conn = Connection::open_with_flags(&copy, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(|e| zotero_error(file, e))?;
        match conn.query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0)) {
            Ok(check) if check == "ok" => {}
            Ok(check) => {
                problem = format!("the copy does not pass SQLite's check ({check})");
                continue;
            }
            Err(e) => {
                problem = format!("the copy does not open as a database ({e})");
                continue;
            }
        }
        if after == before {
            return Ok(Copied { conn, torn: None, _dir: dir });
        }
        problem = "it changed while it was copied".into();
        changed = Some((conn, dir));
    }
    match changed {
        Some((conn, dir)) => Ok(Copied {
            conn,
            torn: Some(format!("{} changed while it was copied; what it removed is left for the next import", file.display())),
            _dir: dir,
        }),
        None => Err(zotero_error(file, format!("no consistent copy after {ATTEMPTS} tries: {problem}"))),
    }
}
