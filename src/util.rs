//! Small shared helpers.

use std::borrow::Cow;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

/// The file a write to `path` replaces: `path` itself or, where `path` is a
/// symbolic link (or a chain of them), the file the links lead to, which
/// need not exist yet. Writing there keeps the links.
pub fn write_target(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    // As many links as the kernel follows (Linux: 40).
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = std::fs::read_link(&p).map_err(|e| Error::io(&p, e))?;
                p = if link.is_absolute() { link } else { p.parent().unwrap_or(Path::new("")).join(link) };
            }
            _ => return Ok(p),
        }
    }
    Err(Error::io(path, std::io::Error::other("too many levels of symbolic links")))
}

/// The cores this process may use: the one place that asks the system
/// (the threads for model work are sized from it in
/// [`crate::neural::parallel`]; the index's search and writer threads, the
/// document readers and the commands' workers too).
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `n` and its noun, plural unless `n` is one: "1 thread", "3 threads".
pub fn counted<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    let s = if n == N::from(1) { "" } else { "s" };
    format!("{n} {noun}{s}")
}

/// The directory a file is in (`.` for a bare file name).
fn dir_of(file: &Path) -> &Path {
    file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// Writes `bytes` to a new temporary file beside `target` (so that renaming
/// it over `target` is atomic) with `target`'s permissions, synced to disk,
/// and returns its path. `wrap` wraps the file's writer (tests inject
/// failures through it). On failure nothing is left behind.
pub fn write_temp(target: &Path, bytes: &[u8], wrap: &mut dyn FnMut(std::fs::File) -> Box<dyn Write>) -> Result<PathBuf> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let tmp = dir_of(target).join(format!(".{name}.citewise-{}-{n}.tmp", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        let f = std::fs::File::create(&tmp)?;
        if let Ok(meta) = std::fs::metadata(target) {
            f.set_permissions(meta.permissions())?;
        }
        let mut w = wrap(f.try_clone()?);
        w.write_all(bytes)?;
        w.flush()?;
        drop(w);
        f.sync_all()
    })();
    match result {
        Ok(()) => Ok(tmp),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(Error::io(target, e))
        }
    }
}

/// Renames the temporary file `tmp` over `target` and syncs the directory,
/// so that `target` holds either its old or its new content, also after a
/// crash. On failure `tmp` is removed.
pub fn replace_with(tmp: &Path, target: &Path) -> Result<()> {
    if let Err(e) = std::fs::rename(tmp, target) {
        let _ = std::fs::remove_file(tmp);
        return Err(Error::io(target, e));
    }
    if let Ok(dir) = std::fs::File::open(dir_of(target)) {
        let _ = dir.sync_all();
    }
    Ok(())
}

/// Writes a file atomically: a temporary file beside the file it replaces,
/// synced, then renamed over it. A symbolic link is written through (the
/// file it points to is replaced, the link stays) and the file keeps its
/// permissions.
/// Removes the directories of `dirs` that exist, with what they hold;
/// whether any did.
pub fn remove_dirs(dirs: &[PathBuf]) -> Result<bool> {
    let mut removed = false;
    for dir in dirs {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
            removed = true;
        }
    }
    Ok(removed)
}

pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let target = write_target(path)?;
    let tmp = write_temp(&target, bytes, &mut |f| Box::new(f))?;
    replace_with(&tmp, &target)
}

/// The library directory used when none is named (`library/` in the data
/// directory, e.g. `~/.local/share/citewise/library`).
pub fn default_library_dir() -> Option<PathBuf> {
    crate::dirs::data_path("library")
}

/// A `citewise` command line that acts on the library in `library`, as a
/// user can paste it: `--library DIR` unless it is the default library.
pub fn citewise_command(library: &Path, args: &str) -> String {
    if default_library_dir().as_deref() == Some(library) {
        return format!("citewise {args}");
    }
    format!("citewise --library {} {args}", shell_quoted(&library.display().to_string()))
}

/// `s` as one shell word (quoted when it needs to be).
pub fn shell_quoted(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:,=@%".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// FNV-1a 64-bit hash: a stable content fingerprint (not cryptographic).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    fnv1a64_on(0xcbf2_9ce4_8422_2325, bytes)
}

/// [`fnv1a64`] carried on from `hash` (the hash of what came before), so
/// that bytes read in pieces hash as if read at once.
pub fn fnv1a64_on(hash: u64, bytes: &[u8]) -> u64 {
    let mut h = hash;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Peak resident set size of this process in bytes (Linux), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    peak_rss_in("/proc/self/status")
}

/// Peak resident set size in bytes of the live process `pid` since it
/// started its program (Linux: `VmHWM`); none once it has ended. Not
/// `wait4`'s `ru_maxrss`, which counts in a child the memory its parent
/// had when it started it.
pub fn peak_rss_bytes_of(pid: u32) -> Option<u64> {
    peak_rss_in(&format!("/proc/{pid}/status"))
}

fn peak_rss_in(status_file: &str) -> Option<u64> {
    let status = std::fs::read_to_string(status_file).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `s` safe to print on a terminal or draw in a cell grid: stripped of bidirectional controls,
/// zero-width characters and other control characters (which make a
/// terminal draw text over the pane borders), with tabs and line ends
/// as spaces.
pub fn printable(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || invisible(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // A CRLF is one line end.
            '\r' if chars.peek() == Some(&'\n') => {}
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() || invisible(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Characters that change how a terminal lays out the text around them
/// without drawing anything themselves.
fn invisible(c: char) -> bool {
    matches!(
        c,
        // Bidirectional marks, embeddings, overrides and isolates.
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        // Zero-width space, non-joiner, joiner; word joiner and invisible
        // operators; byte order mark; interlinear annotation; soft hyphen.
        | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{00ad}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_content() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1, "no temporary file left behind");
    }

    #[cfg(unix)]
    #[test]
    fn atomic_write_goes_through_links_and_keeps_the_mode() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let real_dir = dir.path().join("real");
        std::fs::create_dir(&real_dir).unwrap();
        let real = real_dir.join("draft.tex");
        std::fs::write(&real, "old").unwrap();
        std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
        // A relative link to a relative link.
        symlink("real/draft.tex", dir.path().join("middle.tex")).unwrap();
        let link = dir.path().join("draft.tex");
        symlink("middle.tex", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(std::fs::read(&real).unwrap(), b"new", "the file it points to is written");
        assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
        assert_eq!(std::fs::read_dir(&real_dir).unwrap().count(), 1, "no temporary file left behind");

        // A link to a file that does not exist yet creates that file.
        let dangling = dir.path().join("new.bib");
        symlink("real/new.bib", &dangling).unwrap();
        write_atomic(&dangling, b"x").unwrap();
        assert!(std::fs::symlink_metadata(&dangling).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(real_dir.join("new.bib")).unwrap(), b"x");

        // A loop is an error, not a hang.
        symlink("loop-b", dir.path().join("loop-a")).unwrap();
        symlink("loop-a", dir.path().join("loop-b")).unwrap();
        let err = write_atomic(&dir.path().join("loop-a"), b"x").unwrap_err();
        assert!(err.to_string().contains("symbolic links"), "{err}");
    }

    #[test]
    fn printable_removes_escapes_and_invisible_controls() {
        assert_eq!(printable("plain title"), "plain title");
        assert_eq!(printable("A\u{1b}[2J\u{1b}]0;owned\u{7}title\u{9b}31m"), "A[2J]0;ownedtitle31m");
        assert_eq!(printable("abc\u{202E}fed\u{200B}\u{FEFF}\tx\ny"), "abcfed x y");
    }

    #[test]
    fn counted_nouns_are_plural_unless_one() {
        assert_eq!(counted(1, "thread"), "1 thread");
        assert_eq!(counted(0, "paper"), "0 papers");
        assert_eq!(counted(16, "thread"), "16 threads");
        assert_eq!(counted(1_u64, "evidence span"), "1 evidence span");
    }

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }
}
