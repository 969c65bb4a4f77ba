//! The budgets of every reader of untrusted input, in one place: what a
//! file, an archive, a PDF or an editor's message may make citewise read
//! into memory. Over budget is one clear line naming the input and the
//! limit; the run goes on with the next input. Sits below every layer.
//!
//! And the one way such a file is opened ([`open_regular`]): only a
//! regular file is read. A FIFO, a device or a socket where a file is
//! expected is refused before a byte is read (opening never waits for a
//! writer), so a path someone else chose can neither hang citewise nor
//! feed it without end.

use std::io::Read;
use std::path::Path;

/// Text of one file, compressed or not (BibTeX, JSON Lines, LaTeX,
/// Markdown, a `.gz` once decompressed).
pub const TEXT_FILE: u64 = 512 << 20;

/// A PDF file as stored.
pub const PDF_FILE: u64 = 512 << 20;

/// One PDF stream once decoded (a page's content, a font, an image).
pub const PDF_STREAM: u64 = 128 << 20;

/// All the streams of one PDF that are kept decoded in memory.
pub const PDF_DOCUMENT: u64 = 512 << 20;

/// A source bundle (`.tar.gz`) once decompressed, all members together;
/// also the most any one member may declare.
pub const BUNDLE: u64 = 512 << 20;

/// One message from an editor (a Language Server Protocol frame). A
/// document sent whole on every change is at most a few MiB.
pub const LSP_FRAME: u64 = 64 << 20;

/// One field of a Zotero item (a title, an abstract), in characters: a
/// longer value is cut.
pub const ZOTERO_VALUE: usize = 64 << 10;

/// All the fields of one Zotero item together, in characters: fields past
/// it are not read.
pub const ZOTERO_ITEM: usize = 256 << 10;

/// A Zotero database (or one of its logs) as copied before it is read.
pub const ZOTERO_DATABASE: u64 = 8 << 30;

/// Zotero items read into memory at once (so at most 512 MiB of fields).
pub const ZOTERO_ITEMS_AT_ONCE: usize = 2048;

/// Citations (cited keys) of one draft that a check reads: those past it
/// are counted and said in one line, not checked. A thesis cites a few
/// thousand; this bounds what a check keeps (about 4 KiB for each).
pub const CHECK_CITATIONS: usize = 20_000;

/// Opens `path` (links followed) for reading if it is a regular file;
/// anything else (a FIFO, a character or block device, a socket, a
/// directory) is an error of kind `InvalidInput` that says what it is.
/// The check is made on the opened file, so the file cannot be swapped
/// between the check and the read; opening does not block on a FIFO.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A FIFO opened for reading waits for a writer unless non-blocking;
        // a regular file ignores the flag.
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path)?;
    let kind = file.metadata()?.file_type();
    if kind.is_file() {
        return Ok(file);
    }
    Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("not a regular file ({})", kind_name(&kind))))
}

/// What a file that is not a regular file is, in words.
fn kind_name(kind: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a named pipe";
        }
        if kind.is_char_device() || kind.is_block_device() {
            return "a device";
        }
        if kind.is_socket() {
            return "a socket";
        }
    }
    if kind.is_dir() {
        "a directory"
    } else {
        "not a plain file"
    }
}

/// The bytes of the regular file at `path`, at most `limit` of them: a
/// longer file (whatever its size says: files under `/proc` say 0) is an
/// error of kind `FileTooLarge` that names the limit.
pub fn read_regular(path: &Path, limit: u64) -> std::io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Err(over(human(size), limit));
    }
    let mut out = Vec::with_capacity(size as usize);
    file.take(limit + 1).read_to_end(&mut out)?;
    if out.len() as u64 > limit {
        return Err(over(format!("more than {}", human(limit)), limit));
    }
    Ok(out)
}

/// [`read_regular`] as UTF-8 text (invalid bytes are an `InvalidData` error).
pub fn read_regular_text(path: &Path, limit: u64) -> std::io::Result<String> {
    String::from_utf8(read_regular(path, limit)?).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

fn over(size: String, limit: u64) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::FileTooLarge, format!("{size}, over the {} limit for one file; not read", human(limit)))
}

/// A small file citewise reads for its own settings (config.toml, a theme,
/// Zotero's prefs.js and profiles.ini): at most this many bytes.
pub const SETTINGS_FILE: u64 = 4 << 20;

/// `n` bytes as a person reads them: `512 MiB`, `2.0 GiB`, `300 bytes`.
pub fn human(n: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    if n >= GIB {
        format!("{:.1} GiB", n as f64 / GIB as f64)
    } else if n >= MIB && n.is_multiple_of(MIB) {
        format!("{} MiB", n / MIB)
    } else if n >= MIB {
        format!("{:.1} MiB", n as f64 / MIB as f64)
    } else if n >= KIB {
        format!("{:.1} KiB", n as f64 / KIB as f64)
    } else {
        format!("{n} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_are_read_and_each_under_its_budget() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("refs.bib");
        std::fs::write(&file, b"@article{a, title={T}}").unwrap();
        assert_eq!(read_regular(&file, 100).unwrap(), b"@article{a, title={T}}");
        let err = read_regular(&file, 10).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge);
        assert!(err.to_string().contains("over the 10 bytes limit"), "{err}");
        let err = read_regular(dir.path(), 100).unwrap_err();
        assert!(err.to_string().contains("not a regular file (a directory)"), "{err}");
        #[cfg(target_os = "linux")]
        {
            // A device that never ends, and one whose reads never come.
            let err = read_regular(Path::new("/dev/zero"), 1 << 20).unwrap_err();
            assert!(err.to_string().contains("not a regular file (a device)"), "{err}");
            let fifo = dir.path().join("fifo.bib");
            let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
            // SAFETY: a plain system call on a path this test owns.
            assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
            let err = read_regular(&fifo, 100).unwrap_err();
            assert!(err.to_string().contains("not a regular file (a named pipe)"), "{err}");
            // A file under /proc says it is empty and is not: the budget holds.
            let err = read_regular(Path::new("/proc/self/maps"), 16).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::FileTooLarge, "{err}");
        }
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(512 << 20), "512 MiB");
        assert_eq!(human(2 << 30), "2.0 GiB");
        assert_eq!(human(1536 << 10), "1.5 MiB");
        assert_eq!(human(300), "300 bytes");
    }
}
