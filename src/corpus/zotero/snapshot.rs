//! A consistent copy of a database Zotero may hold open.
//!
//! Zotero keeps `zotero.sqlite` under an exclusive lock while it runs and
//! citewise never writes to it, never locks it, never opens it through
//! SQLite at all: the file (and its write-ahead log, when there is one) is
//! copied byte for byte into a temporary directory and the copy is opened.
//! A copy is torn when the file changed while it was read (its length or
//! modification time differ before and after, or SQLite's quick check
//! fails); it is taken again, a few times, before the reader says so.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rusqlite::{Connection, OpenFlags};

use crate::error::{Error, Result};

/// Tries at a copy that did not change while it was read.
const ATTEMPTS: usize = 4;

/// A database copied out of a Zotero data directory, open read-only.
pub struct Copied {
    pub conn: Connection,
    /// Set when every attempt saw the file change: the copy passed SQLite's
    /// check but may miss the latest write.
    pub note: Option<String>,
    // Dropped after `conn` (fields drop in order): the copy's directory.
    _dir: tempfile::TempDir,
}

/// What the file looked like: length and modification time, with its
/// write-ahead log's.
fn look(file: &Path) -> Option<(u64, SystemTime, u64, Option<SystemTime>)> {
    let m = std::fs::metadata(file).ok()?;
    let wal = std::fs::metadata(wal_of(file)).ok();
    Some((m.len(), m.modified().ok()?, wal.as_ref().map_or(0, |w| w.len()), wal.and_then(|w| w.modified().ok())))
}

fn wal_of(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_os_string();
    name.push("-wal");
    PathBuf::from(name)
}

fn zotero_error(file: &Path, reason: impl std::fmt::Display) -> Error {
    Error::Zotero { path: file.to_path_buf(), reason: reason.to_string() }
}

/// Copies `file` (a SQLite database) and opens the copy. A copy taken
/// while the file changed is taken again; when every attempt saw a change,
/// the last copy that passes SQLite's check is used, with a note.
pub fn copy_and_open(file: &Path) -> Result<Copied> {
    let mut problem = String::new();
    let mut changed: Option<(Connection, tempfile::TempDir)> = None;
    for _ in 0..ATTEMPTS {
        let before = look(file).ok_or_else(|| zotero_error(file, "cannot be read (is this a Zotero data directory?)"))?;
        let dir = tempfile::Builder::new().prefix("citewise-zotero-").tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let copy = dir.path().join("copy.sqlite");
        std::fs::copy(file, &copy).map_err(|e| Error::io(file, e))?;
        if before.2 > 0 {
            // A log that vanished meanwhile was checkpointed: the look below differs.
            let _ = std::fs::copy(wal_of(file), wal_of(&copy));
        }
        let after = look(file);
        let conn = Connection::open_with_flags(&copy, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
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
        if after == Some(before) {
            return Ok(Copied { conn, note: None, _dir: dir });
        }
        problem = "it changed while it was copied".into();
        changed = Some((conn, dir));
    }
    match changed {
        Some((conn, dir)) => Ok(Copied {
            conn,
            note: Some(format!("{} changed while it was copied; the next import reads the latest changes", file.display())),
            _dir: dir,
        }),
        None => Err(zotero_error(file, format!("no consistent copy after {ATTEMPTS} tries: {problem}"))),
    }
}
