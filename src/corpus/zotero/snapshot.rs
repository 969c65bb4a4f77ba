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
//!
//! The files are the data directory's, not citewise's: each is read only
//! if it is a regular file inside the data directory (links followed),
//! under a budget. And nothing in the copy may name a file SQLite then
//! touches: a rollback journal can name a *super-journal* (written by a
//! transaction over several databases), which SQLite, rolling the journal
//! back, checks for and deletes, wherever it is. The copy's journal is
//! stripped of that name before SQLite sees it ([`forget_super_journal`]),
//! so a hot journal is rolled back as an ordinary one: the copy reads as
//! the database stood before its last, unfinished transaction.

use std::io::{Read, Seek, SeekFrom, Write};
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

/// The last 8 bytes of a rollback journal that names a super-journal
/// (SQLite's `aJournalMagic`): name, its length and byte sum (two
/// big-endian u32), then these.
const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// Makes the rollback journal at `journal` (citewise's own copy) name no
/// super-journal: SQLite reads the name only when the journal ends with
/// [`JOURNAL_MAGIC`], so those bytes are zeroed. Returns whether it named one.
fn forget_super_journal(journal: &Path) -> std::io::Result<bool> {
    let mut f = std::fs::OpenOptions::new().read(true).write(true).open(journal)?;
    let len = f.metadata()?.len();
    if len < 16 {
        return Ok(false);
    }
    let mut tail = [0u8; 8];
    f.seek(SeekFrom::Start(len - 8))?;
    f.read_exact(&mut tail)?;
    if tail != JOURNAL_MAGIC {
        return Ok(false);
    }
    f.seek(SeekFrom::Start(len - 8))?;
    f.write_all(&[0u8; 8])?;
    f.sync_all()?;
    Ok(true)
}

/// Copies the regular file `from` to `to`, at most `limit` bytes (a
/// longer file is an error that names the limit).
fn copy_regular(from: &Path, to: &Path, limit: u64) -> std::io::Result<()> {
    let source = crate::limits::open_regular(from)?;
    let mut out = std::fs::File::create(to)?;
    let copied = std::io::copy(&mut source.take(limit + 1), &mut out)?;
    if copied > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!("more than {}, the limit for one Zotero database; not read", crate::limits::human(limit)),
        ));
    }
    Ok(())
}

/// `file` and its logs, each where it really is, once checked to lie in
/// the data directory `dir` (a link that leads out of it is refused).
fn inside(dir: &Path, file: &Path) -> Result<()> {
    let project = crate::project::Project::new(dir).map_err(|e| Error::io(dir, e))?;
    let name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    for suffix in std::iter::once("").chain(LOGS) {
        let named = format!("{name}{suffix}");
        if dir.join(&named).symlink_metadata().is_err() {
            continue; // not there: nothing to read
        }
        if let Err(refused) = project.resolve(dir, &named) {
            return Err(zotero_error(&dir.join(&named), format!("{refused}; not read")));
        }
    }
    Ok(())
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
    inside(file.parent().unwrap_or(Path::new(".")), file)?;
    let mut problem = String::new();
    let mut changed: Option<(Connection, tempfile::TempDir)> = None;
    for _ in 0..ATTEMPTS {
        let before = look(file);
        if before[0].is_none() {
            return Err(zotero_error(file, "cannot be read (is this a Zotero data directory?)"));
        }
        let dir = tempfile::Builder::new().prefix(PREFIX).tempdir().map_err(|e| Error::io(std::env::temp_dir(), e))?;
        let copy = dir.path().join("copy.sqlite");
        copy_regular(file, &copy, crate::limits::ZOTERO_DATABASE).map_err(|e| Error::io(file, e))?;
        for (log, seen) in LOGS.iter().zip(&before[1..]) {
            if seen.is_some() {
                let (from, to) = (with_suffix(file, log), with_suffix(&copy, log));
                match copy_regular(&from, &to, crate::limits::ZOTERO_DATABASE) {
                    Ok(()) => {}
                    // A log that vanished meanwhile was checkpointed or committed: the look below differs.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(Error::io(from, e)),
                }
            }
        }
        let journal = with_suffix(&copy, "-journal");
        if journal.exists() {
            forget_super_journal(&journal).map_err(|e| Error::io(&journal, e))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A rollback journal whose last record names `victim` as its
    /// super-journal, as SQLite writes one (name, length, byte sum, magic).
    fn journal_naming(victim: &Path) -> Vec<u8> {
        let name = victim.to_string_lossy().into_owned().into_bytes();
        let mut j = vec![1u8; 512];
        j.extend_from_slice(&[0, 0, 0, 0]);
        j.extend_from_slice(&name);
        j.extend_from_slice(&(name.len() as u32).to_be_bytes());
        let sum = name.iter().fold(0u32, |s, &b| s.wrapping_add(u32::from(b)));
        j.extend_from_slice(&sum.to_be_bytes());
        j.extend_from_slice(&JOURNAL_MAGIC);
        j
    }

    fn database(dir: &Path) -> PathBuf {
        let file = dir.join("zotero.sqlite");
        let conn = Connection::open(&file).unwrap();
        conn.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1);").unwrap();
        file
    }

    #[test]
    fn a_journal_that_names_a_super_journal_deletes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let file = database(dir.path());
        let victim = dir.path().join("victim.txt");
        std::fs::write(&victim, "keep me").unwrap();
        std::fs::write(with_suffix(&file, "-journal"), journal_naming(&victim)).unwrap();
        let copy = copy_and_open(&file).unwrap();
        assert_eq!(copy.conn.query_row("SELECT x FROM t", [], |r| r.get::<_, i64>(0)).unwrap(), 1);
        drop(copy);
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep me", "the file the journal names is still there");
        assert!(with_suffix(&file, "-journal").exists(), "Zotero's own journal is untouched");
    }

    #[test]
    fn the_magic_is_what_names_a_super_journal() {
        let dir = tempfile::tempdir().unwrap();
        let j = dir.path().join("j");
        std::fs::write(&j, journal_naming(Path::new("/elsewhere"))).unwrap();
        assert!(forget_super_journal(&j).unwrap());
        assert!(!forget_super_journal(&j).unwrap(), "named no more");
        std::fs::write(&j, [1u8; 600]).unwrap();
        assert!(!forget_super_journal(&j).unwrap());
    }

    #[cfg(unix)]
    #[test]
    fn logs_that_are_not_files_or_lead_outside_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = database(dir.path());
        let fifo = with_suffix(&file, "-wal");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a plain system call on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let err = copy_and_open(&file).err().expect("a FIFO log is refused").to_string();
        assert!(err.contains("zotero.sqlite-wal") && err.contains("not a regular file (a named pipe)"), "{err}");
        std::fs::remove_file(&fifo).unwrap();

        let outside = tempfile::tempdir().unwrap();
        let elsewhere = outside.path().join("other.sqlite-journal");
        std::fs::write(&elsewhere, [0u8; 16]).unwrap();
        std::os::unix::fs::symlink(&elsewhere, with_suffix(&file, "-journal")).unwrap();
        let err = copy_and_open(&file).err().expect("a log that leads outside is refused").to_string();
        assert!(err.contains("lies outside the project"), "{err}");
    }
}
