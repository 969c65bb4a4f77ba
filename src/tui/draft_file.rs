//! Reading and writing the draft file as it was: its line ends (LF or
//! CRLF), a byte order mark and whether it ends with a newline are kept.

use std::path::Path;

use crate::error::{Error, Result};

/// How a draft file spells what the editor does not show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DraftFormat {
    /// Lines end with `\r\n` (most of them did when the file was read).
    pub crlf: bool,
    /// The file starts with a UTF-8 byte order mark.
    pub bom: bool,
    /// The file ends with a line end.
    pub final_newline: bool,
}

impl Default for DraftFormat {
    /// A new file: LF, no byte order mark, a final newline.
    fn default() -> Self {
        DraftFormat { crlf: false, bom: false, final_newline: true }
    }
}

impl DraftFormat {
    /// The text the editor shows of a file's content (LF line ends, no byte
    /// order mark) and how the file spells it.
    pub fn of(content: &str) -> (String, DraftFormat) {
        let (bom, content) = match content.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, content),
        };
        let newlines = content.matches('\n').count();
        let crlf = content.matches("\r\n").count();
        let format =
            DraftFormat { crlf: newlines > 0 && crlf * 2 > newlines, bom, final_newline: content.is_empty() || content.ends_with('\n') };
        let text = if crlf > 0 { content.replace("\r\n", "\n") } else { content.to_string() };
        (text, format)
    }

    /// The file content for the editor's `text`.
    pub fn encode(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + text.len() / 32 + 4);
        if self.bom {
            out.push('\u{feff}');
        }
        if self.crlf {
            out.push_str(&text.replace('\n', "\r\n"));
        } else {
            out.push_str(text);
        }
        if self.final_newline && !text.ends_with('\n') {
            out.push_str(if self.crlf { "\r\n" } else { "\n" });
        }
        out
    }
}

/// Reads a draft: its text as the editor shows it and its format (a file
/// that does not exist yet reads as empty, in the default format).
pub fn load(path: &Path) -> Result<(String, DraftFormat)> {
    match std::fs::read_to_string(path) {
        Ok(content) => Ok(DraftFormat::of(&content)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((String::new(), DraftFormat::default())),
        Err(e) => Err(Error::io(path, e)),
    }
}

/// Writes the editor's `text` to the draft atomically, in `format` (through
/// a symbolic link to the file it points to, keeping its permissions).
pub fn save(path: &Path, text: &str, format: &DraftFormat) -> Result<()> {
    crate::util::write_atomic(path, format.encode(text).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(content: &str, edit: impl Fn(&str) -> String) -> String {
        let (text, format) = DraftFormat::of(content);
        assert!(!text.contains('\r') && !text.starts_with('\u{feff}'), "{text:?}");
        format.encode(&edit(&text))
    }

    #[test]
    fn line_ends_bom_and_final_newline_are_kept() {
        let same = |t: &str| t.to_string();
        for content in ["a\r\nb\r\n", "a\nb\n", "\u{feff}a\r\nb\r\n", "\u{feff}a\nb", "a\r\nb", "no newline", "\r\n", ""] {
            let expected = if content.is_empty() { "\n" } else { content };
            assert_eq!(round_trip(content, same), expected, "{content:?}");
        }
        // Edits are written in the file's format.
        assert_eq!(round_trip("\u{feff}a\r\nb\r\n", |t| format!("{t}c\nd")), "\u{feff}a\r\nb\r\nc\r\nd\r\n");
        assert_eq!(round_trip("a\r\nb", |t| format!("{t} c\nd")), "a\r\nb c\r\nd");
        // Mixed line ends: the most common one wins.
        assert_eq!(round_trip("a\r\nb\r\nc\nd\r\n", same), "a\r\nb\r\nc\r\nd\r\n");
        // A new file ends with a newline.
        assert_eq!(DraftFormat::default().encode("x"), "x\n");
    }

    #[test]
    fn load_and_save_keep_crlf() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("draft.tex");
        std::fs::write(&p, "\\section{A}\r\nText.\r\n").unwrap();
        let (text, format) = load(&p).unwrap();
        assert_eq!(text, "\\section{A}\nText.\n");
        save(&p, &format!("{text}More."), &format).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"\\section{A}\r\nText.\r\nMore.\r\n");
        assert_eq!(load(&dir.path().join("new.tex")).unwrap(), (String::new(), DraftFormat::default()));
    }
}
