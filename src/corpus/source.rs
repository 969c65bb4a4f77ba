//! Finding input files and reading them as text (`.gz` transparently).

use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// What an input file holds, judged by its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Bibtex,
    PapersJsonl,
}

impl Format {
    /// `x.bib`, `x.bib.gz` → BibTeX; `x.jsonl`, `x.jsonl.gz`, `x.json.gz` → papers JSONL.
    pub fn of(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        let name = name.strip_suffix(".gz").unwrap_or(&name);
        if name.ends_with(".bib") || name.ends_with(".bibtex") {
            Some(Format::Bibtex)
        } else if name.ends_with(".jsonl") || name.ends_with(".ndjson") {
            Some(Format::PapersJsonl)
        } else {
            None
        }
    }
}

/// The most text one input file may hold, compressed or not: the whole file
/// is held in memory while it is read, and a small `.gz` can expand to
/// gigabytes.
pub const MAX_TEXT_BYTES: u64 = crate::limits::TEXT_FILE;

/// Expands files and directories (recursively, sorted) into importable files.
/// Files named explicitly must have a known format; unknown files inside
/// directories are ignored. Each directory and file is visited once, however
/// many symbolic links lead to it (a link to an ancestor is not followed
/// again).
pub fn expand_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Format)>> {
    let mut out = Vec::new();
    let mut seen = Visited::default();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            walk(p, &mut seen, &mut |path| {
                if let Some(fmt) = Format::of(path) {
                    out.push((path.to_path_buf(), fmt));
                }
            })?;
        } else {
            let fmt = Format::of(p)
                .ok_or_else(|| Error::Input(format!("{}: unknown file type (expected .bib, .jsonl, optionally .gz)", p.display())))?;
            if seen.first_visit(p) {
                out.push((p.clone(), fmt));
            }
        }
    }
    Ok(out)
}

/// Canonical paths already walked.
#[derive(Default)]
pub struct Visited(std::collections::HashSet<PathBuf>);

impl Visited {
    /// True the first time `path` (after resolving links) is seen.
    pub fn first_visit(&mut self, path: &Path) -> bool {
        self.0.insert(std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()))
    }
}

/// Directories deeper than this below a walked one are not entered.
const MAX_WALK_DEPTH: usize = 64;

/// Calls `file` for every file under `dir`, in sorted order, following
/// symbolic links but entering each directory (and reporting each file)
/// once, at most [`MAX_WALK_DEPTH`] levels down. Unreadable subdirectories
/// are passed over.
pub fn walk(dir: &Path, seen: &mut Visited, file: &mut dyn FnMut(&Path)) -> Result<()> {
    walk_from(dir, seen, file, 0)
}

fn walk_from(dir: &Path, seen: &mut Visited, file: &mut dyn FnMut(&Path), depth: usize) -> Result<()> {
    if depth > MAX_WALK_DEPTH || !seen.first_visit(dir) {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            // A subdirectory that cannot be listed is not a reason to stop.
            let _ = walk_from(&p, seen, file, depth + 1);
        } else if p.is_file() && seen.first_visit(&p) {
            file(&p);
        }
    }
    Ok(())
}

/// Reads a file's bytes, gunzipping when the name ends in `.gz`; more than
/// [`MAX_TEXT_BYTES`] (after decompression) is an error that says so.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    read_bytes_up_to(path, MAX_TEXT_BYTES)
}

/// [`read_bytes`] with another limit.
pub fn read_bytes_up_to(path: &Path, limit: u64) -> Result<Vec<u8>> {
    let too_big = || {
        Error::Input(format!(
            "{}: more than {} MiB of text{}; split it into smaller files",
            path.display(),
            limit >> 20,
            if is_gz(path) { " once decompressed" } else { "" }
        ))
    };
    // Only a regular file: a FIFO or a device named as a file is refused
    // before a byte is read.
    let file = crate::limits::open_regular(path).map_err(|e| Error::io(path, e))?;
    let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
    if !is_gz(path) {
        if size > limit {
            return Err(too_big());
        }
        let mut out = Vec::with_capacity(size as usize);
        // At most the limit, whatever the size said (files under /proc say 0).
        (&file).take(limit + 1).read_to_end(&mut out).map_err(|e| Error::io(path, e))?;
        if out.len() as u64 > limit {
            return Err(too_big());
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity((size as usize).saturating_mul(4).min(limit as usize));
    flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file))
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(|e| Error::Input(format!("{}: not a readable gzip file ({e})", path.display())))?;
    if out.len() as u64 > limit {
        return Err(too_big());
    }
    Ok(out)
}

/// A file's lines one at a time (gunzipped when the name ends in `.gz`),
/// each under a budget, with how far into the file (its bytes on disk)
/// reading has come: what a file too large to hold is read with.
pub struct LineStream {
    reader: Box<dyn BufRead>,
    read: std::rc::Rc<std::cell::Cell<u64>>,
    size: u64,
    path: PathBuf,
}

/// Counts the bytes read from the file on disk.
struct Counted<R> {
    inner: R,
    read: std::rc::Rc<std::cell::Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.set(self.read.get() + n as u64);
        Ok(n)
    }
}

/// One line of a [`LineStream`].
pub enum Line {
    Text(String),
    /// Longer than the budget: skipped, with its length so far.
    TooLong(u64),
}

impl LineStream {
    /// Opens a regular file (a FIFO or a device is refused before a byte is read).
    pub fn open(path: &Path) -> Result<LineStream> {
        let file = crate::limits::open_regular(path).map_err(|e| Error::io(path, e))?;
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let read = std::rc::Rc::new(std::cell::Cell::new(0));
        let counted = std::io::BufReader::new(Counted { inner: file, read: read.clone() });
        let reader: Box<dyn BufRead> =
            if is_gz(path) { Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(counted))) } else { Box::new(counted) };
        Ok(LineStream { reader, read, size, path: path.to_path_buf() })
    }

    /// The next line (without its line end; invalid UTF-8 replaced), at
    /// most `limit` bytes; none at the end of the file.
    pub fn next_line(&mut self, limit: u64) -> Result<Option<Line>> {
        let unreadable = |e: std::io::Error| Error::Input(format!("{}: not readable ({e})", self.path.display()));
        let mut buf = Vec::new();
        let n = (&mut self.reader).take(limit + 1).read_until(b'\n', &mut buf).map_err(unreadable)?;
        if n == 0 {
            return Ok(None);
        }
        if buf.last() != Some(&b'\n') && n as u64 > limit {
            // Over budget: the rest of the line is skipped unread.
            let mut skipped = n as u64;
            loop {
                let chunk = self.reader.fill_buf().map_err(unreadable)?;
                if chunk.is_empty() {
                    break;
                }
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        self.reader.consume(i + 1);
                        skipped += i as u64;
                        break;
                    }
                    None => {
                        let len = chunk.len();
                        self.reader.consume(len);
                        skipped += len as u64;
                    }
                }
            }
            return Ok(Some(Line::TooLong(skipped)));
        }
        while matches!(buf.last(), Some(b'\n' | b'\r')) {
            buf.pop();
        }
        Ok(Some(Line::Text(String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))))
    }

    /// Bytes of the file on disk read so far, and its size.
    pub fn position(&self) -> (u64, u64) {
        (self.read.get(), self.size)
    }
}

/// A file's size and a hash of its bytes on disk, read in pieces (a file
/// too large to hold is stamped without being held).
pub fn stamp_of_file(path: &Path) -> Result<(u64, u64)> {
    let mut file = crate::limits::open_regular(path).map_err(|e| Error::io(path, e))?;
    let mut buf = vec![0u8; 1 << 20];
    let (mut size, mut hash) = (0u64, crate::util::fnv1a64(b""));
    loop {
        let n = file.read(&mut buf).map_err(|e| Error::io(path, e))?;
        if n == 0 {
            return Ok((size, hash));
        }
        size += n as u64;
        hash = crate::util::fnv1a64_on(hash, &buf[..n]);
    }
}

fn is_gz(path: &Path) -> bool {
    path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"))
}

/// Text decoded from bytes, and where a fallback decoding was needed.
pub struct Decoded {
    pub text: String,
    /// 1-based lines that were not valid UTF-8 (read as Windows-1252).
    pub non_utf8_lines: Vec<usize>,
}

impl Decoded {
    /// `file:LINE: not valid UTF-8 ...` for the first few such lines, or `None`.
    pub fn note(&self, path: &Path) -> Option<String> {
        let first = *self.non_utf8_lines.first()?;
        let more = match self.non_utf8_lines.len() {
            1 => String::new(),
            n => format!(" (and {} more)", crate::util::counted(n - 1, "line")),
        };
        Some(format!("{}:{first}: not valid UTF-8; this line was read as Windows-1252{more}", path.display()))
    }
}

/// Decodes UTF-8 line by line: a line that is not valid UTF-8 is read as
/// Windows-1252/Latin-1 (every byte maps to a character, so nothing is
/// dropped), and the lines around it stay as they are.
pub fn decode_text(bytes: &[u8]) -> Decoded {
    decode_owned(bytes.to_vec())
}

/// [`decode_text`] without a copy when the bytes are valid UTF-8.
pub fn decode_owned(mut bytes: Vec<u8>) -> Decoded {
    if let Some(text) = utf16_with_bom(&bytes) {
        return Decoded { text, non_utf8_lines: Vec::new() };
    }
    if bytes.starts_with(b"\xEF\xBB\xBF") {
        bytes.drain(..3);
    }
    let bytes = match String::from_utf8(bytes) {
        Ok(text) => return Decoded { text, non_utf8_lines: Vec::new() },
        Err(e) => e.into_bytes(),
    };
    let mut text = String::with_capacity(bytes.len() + bytes.len() / 8);
    let mut non_utf8_lines = Vec::new();
    for (i, line) in bytes.split_inclusive(|&b| b == b'\n').enumerate() {
        match std::str::from_utf8(line) {
            Ok(s) => text.push_str(s),
            Err(_) => {
                non_utf8_lines.push(i + 1);
                text.extend(line.iter().map(|&b| latin1_char(b)));
            }
        }
    }
    Decoded { text, non_utf8_lines }
}

/// Text saved as UTF-16 (as some Windows editors do), told by its byte
/// order mark; unpaired surrogates become U+FFFD.
fn utf16_with_bom(bytes: &[u8]) -> Option<String> {
    let little = match bytes.get(..2)? {
        [0xFF, 0xFE] => true,
        [0xFE, 0xFF] => false,
        _ => return None,
    };
    let units =
        bytes[2..].chunks_exact(2).map(|p| if little { u16::from_le_bytes([p[0], p[1]]) } else { u16::from_be_bytes([p[0], p[1]]) });
    Some(char::decode_utf16(units).map(|c| c.unwrap_or(char::REPLACEMENT_CHARACTER)).collect())
}

pub(crate) fn latin1_char(b: u8) -> char {
    // Windows-1252 differs from Latin-1 in 0x80..0x9F; map the printable ones.
    const CP1252: [char; 32] = [
        '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8D}', 'Ž', '\u{8F}', '\u{90}', '‘', '’', '“', '”', '•',
        '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9D}', 'ž', 'Ÿ',
    ];
    if (0x80..0xA0).contains(&b) {
        CP1252[(b - 0x80) as usize]
    } else {
        b as char
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_stream_reads_gzip_line_by_line_and_skips_a_line_over_its_budget() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lines.jsonl.gz");
        let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::default());
        write!(gz, "first\r\n{}\nthird", "x".repeat(100_000)).unwrap();
        gz.finish().unwrap();
        let mut lines = LineStream::open(&path).unwrap();
        let text = |l: Option<Line>| match l {
            Some(Line::Text(t)) => t,
            _ => panic!("not a line of text"),
        };
        assert_eq!(text(lines.next_line(1000).unwrap()), "first");
        assert!(matches!(lines.next_line(1000).unwrap(), Some(Line::TooLong(n)) if n == 100_000));
        assert_eq!(text(lines.next_line(1000).unwrap()), "third", "the line after the long one is whole");
        assert!(lines.next_line(1000).unwrap().is_none());
        let (read, size) = lines.position();
        assert_eq!(read, size, "the whole file on disk was read");
        assert_eq!(stamp_of_file(&path).unwrap(), (size, crate::util::fnv1a64(&std::fs::read(&path).unwrap())));
    }

    #[test]
    fn formats_by_name() {
        assert_eq!(Format::of(Path::new("a/b.bib.gz")), Some(Format::Bibtex));
        assert_eq!(Format::of(Path::new("B.BIB")), Some(Format::Bibtex));
        assert_eq!(Format::of(Path::new("papers.jsonl.gz")), Some(Format::PapersJsonl));
        assert_eq!(Format::of(Path::new("notes.txt")), None);
    }

    #[test]
    fn invalid_utf8_falls_back_to_cp1252_for_that_line_only() {
        let d = decode_text(b"M\xc3\xbcller one\nM\xfcller \x93q\x94\nGr\xc3\xbc\xc3\x9fe\n");
        assert_eq!(d.text, "Müller one\nMüller “q”\nGrüße\n");
        assert_eq!(d.non_utf8_lines, [2]);
        assert_eq!(d.note(Path::new("a.bib")).unwrap(), "a.bib:2: not valid UTF-8; this line was read as Windows-1252");
        let mut utf16 = vec![0xFF, 0xFE];
        utf16.extend("@misc{ü, title={Grüße}}".encode_utf16().flat_map(u16::to_le_bytes));
        assert_eq!(decode_text(&utf16).text, "@misc{ü, title={Grüße}}");
        let ok = decode_text("\u{feff}Grüße".as_bytes());
        assert_eq!(ok.text, "Grüße");
        assert!(ok.non_utf8_lines.is_empty());
    }

    #[test]
    fn walks_visit_each_directory_once_through_link_loops() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        std::fs::write(sub.join("x.bib"), "@misc{x, title={X}}").unwrap();
        std::os::unix::fs::symlink(dir.path(), sub.join("up")).unwrap();
        std::os::unix::fs::symlink(sub.join("x.bib"), dir.path().join("a/same.bib")).unwrap();
        let files = expand_inputs(&[dir.path().to_path_buf(), sub.join("x.bib")]).unwrap();
        assert_eq!(files.len(), 1, "{files:?}");
    }

    #[test]
    fn broken_and_oversized_gzip_are_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let bad = dir.path().join("bad.bib.gz");
        std::fs::write(&bad, b"not gzip at all").unwrap();
        let e = read_bytes(&bad).unwrap_err().to_string();
        assert!(e.starts_with(&format!("{}: not a readable gzip file", bad.display())), "{e}");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &[b' '; 1 << 20]).unwrap();
        let whole = gz.finish().unwrap();
        let cut = dir.path().join("cut.jsonl.gz");
        std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
        assert!(read_bytes(&cut).unwrap_err().to_string().contains("not a readable gzip file"));
        let bomb = dir.path().join("bomb.bib.gz");
        std::fs::write(&bomb, &whole).unwrap();
        assert_eq!(read_bytes(&bomb).unwrap().len(), 1 << 20);
        let e = read_bytes_up_to(&bomb, 1 << 19).unwrap_err().to_string();
        assert_eq!(e, format!("{}: more than 0 MiB of text once decompressed; split it into smaller files", bomb.display()));
    }
}
