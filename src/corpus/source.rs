//! Finding input files and reading them as text (`.gz` transparently).

use std::io::Read;
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

/// Expands files and directories (recursively, sorted) into importable files.
/// Files named explicitly must have a known format; unknown files inside
/// directories are ignored.
pub fn expand_inputs(paths: &[PathBuf]) -> Result<Vec<(PathBuf, Format)>> {
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| Error::io(p, e))?;
        if meta.is_dir() {
            walk(p, &mut out)?;
        } else {
            let fmt = Format::of(p)
                .ok_or_else(|| Error::Input(format!("{}: unknown file type (expected .bib, .jsonl, optionally .gz)", p.display())))?;
            out.push((p.clone(), fmt));
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<(PathBuf, Format)>) -> Result<()> {
    let mut entries: Vec<PathBuf> =
        std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if let Some(fmt) = Format::of(&p) {
            out.push((p, fmt));
        }
    }
    Ok(())
}

/// Reads a file's bytes, gunzipping when the name ends in `.gz`.
pub fn read_bytes(path: &Path) -> Result<Vec<u8>> {
    let raw = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let is_gz = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("gz"));
    if !is_gz {
        return Ok(raw);
    }
    let mut out = Vec::with_capacity(raw.len() * 4);
    flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out).map_err(|e| Error::io(path, e))?;
    Ok(out)
}

/// Text decoded from bytes, and whether a fallback decoding was needed.
pub struct Decoded {
    pub text: String,
    /// 1-based line of the first byte that was not valid UTF-8, if any.
    pub non_utf8_line: Option<usize>,
}

/// Decodes UTF-8; on invalid bytes falls back to Windows-1252/Latin-1 for the
/// whole file (every byte maps to a character), so nothing is dropped.
pub fn decode_text(bytes: &[u8]) -> Decoded {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    match std::str::from_utf8(bytes) {
        Ok(s) => Decoded { text: s.to_string(), non_utf8_line: None },
        Err(e) => {
            let line = bytes[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() + 1;
            Decoded { text: bytes.iter().map(|&b| latin1_char(b)).collect(), non_utf8_line: Some(line) }
        }
    }
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
    fn formats_by_name() {
        assert_eq!(Format::of(Path::new("a/b.bib.gz")), Some(Format::Bibtex));
        assert_eq!(Format::of(Path::new("B.BIB")), Some(Format::Bibtex));
        assert_eq!(Format::of(Path::new("papers.jsonl.gz")), Some(Format::PapersJsonl));
        assert_eq!(Format::of(Path::new("notes.txt")), None);
    }

    #[test]
    fn invalid_utf8_falls_back_to_cp1252_and_reports_line() {
        let d = decode_text(b"line one\nM\xfcller \x93q\x94\n");
        assert_eq!(d.text, "line one\nMüller “q”\n");
        assert_eq!(d.non_utf8_line, Some(2));
        let ok = decode_text("\u{feff}Grüße".as_bytes());
        assert_eq!(ok.text, "Grüße");
        assert_eq!(ok.non_utf8_line, None);
    }
}
