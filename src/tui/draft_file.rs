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
    /// The file is not UTF-8: it was read (and is written) as
    /// Windows-1252 / Latin-1.
    pub windows_1252: bool,
}

impl Default for DraftFormat {
    /// A new file: LF, no byte order mark, a final newline.
    fn default() -> Self {
        DraftFormat { crlf: false, bom: false, final_newline: true, windows_1252: false }
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
        let format = DraftFormat {
            crlf: newlines > 0 && crlf * 2 > newlines,
            bom,
            final_newline: content.is_empty() || content.ends_with('\n'),
            windows_1252: false,
        };
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

/// A draft as read.
pub struct Loaded {
    pub text: String,
    pub format: DraftFormat,
    /// What the user should know about how it was read (`file:LINE: not
    /// valid UTF-8 …`), as `import` says it.
    pub note: Option<String>,
}

/// Reads a draft: its text as the editor shows it and its format (a file
/// that does not exist yet reads as empty, in the default format). A file
/// that is not UTF-8 reads as `import` reads one: each line that is not
/// valid UTF-8 as Windows-1252, said with its line number. A file with no
/// UTF-8 in it at all is written back as Windows-1252; one that mixes
/// them is written as UTF-8.
pub fn load(path: &Path) -> Result<Loaded> {
    let bytes = match crate::corpus::source::read_bytes_up_to(path, crate::limits::TEXT_FILE) {
        Ok(b) => b,
        Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Loaded { text: String::new(), format: DraftFormat::default(), note: None })
        }
        Err(e) => return Err(e),
    };
    if let Ok(content) = std::str::from_utf8(&bytes) {
        let (text, format) = DraftFormat::of(content);
        return Ok(Loaded { text, format, note: None });
    }
    let decoded = crate::corpus::source::decode_text(&bytes);
    let note = decoded.note(path);
    let (text, mut format) = DraftFormat::of(&decoded.text);
    // Valid multi-byte UTF-8 anywhere: the file is UTF-8 with a stray byte.
    let utf8_lines = bytes.split(|&b| b == b'\n').filter(|l| !l.is_ascii() && std::str::from_utf8(l).is_ok()).count();
    format.windows_1252 = utf8_lines == 0;
    Ok(Loaded { text, format, note })
}

/// Writes the editor's `text` to the draft atomically, in `format` (through
/// a symbolic link to the file it points to, keeping its permissions).
pub fn save(path: &Path, text: &str, format: &DraftFormat) -> Result<()> {
    let content = format.encode(text);
    let bytes = if format.windows_1252 {
        let layout = crate::export::encoding::Layout { windows_1252: true, crlf: false };
        layout.encode(&content).map_err(|why| Error::Input(format!("{}: {why}", path.display())))?
    } else {
        content.into_bytes()
    };
    crate::util::write_atomic(path, &bytes)
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
        let Loaded { text, format, note } = load(&p).unwrap();
        assert_eq!(text, "\\section{A}\nText.\n");
        assert!(note.is_none());
        save(&p, &format!("{text}More."), &format).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"\\section{A}\r\nText.\r\nMore.\r\n");
        let new = load(&dir.path().join("new.tex")).unwrap();
        assert_eq!((new.text.as_str(), new.format), ("", DraftFormat::default()));
    }

    #[test]
    fn a_draft_over_the_budget_is_an_error_before_it_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("huge.tex");
        std::fs::File::create(&p).unwrap().set_len(crate::limits::TEXT_FILE + 1).unwrap();
        let e = load(&p).err().expect("refused").to_string();
        assert!(e.contains("more than 512 MiB of text"), "{e}");
    }

    #[test]
    fn a_latin1_draft_opens_with_its_line_named_and_is_saved_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("draft.tex");
        // "café" in Latin-1 on line 2.
        std::fs::write(&p, b"\\section{A}\nA caf\xe9 study.\n").unwrap();
        let Loaded { text, format, note } = load(&p).unwrap();
        assert_eq!(text, "\\section{A}\nA café study.\n");
        assert_eq!(note.unwrap(), format!("{}:2: not valid UTF-8; this line was read as Windows-1252", p.display()));
        assert!(format.windows_1252);
        save(&p, &format!("{text}Déjà vu.\n"), &format).unwrap();
        assert_eq!(std::fs::read(&p).unwrap(), b"\\section{A}\nA caf\xe9 study.\nD\xe9j\xe0 vu.\n", "written back in Latin-1");
        // A character Latin-1 cannot hold: an error that says so, the file untouched.
        let e = save(&p, "x \u{1F600}", &format).unwrap_err().to_string();
        assert!(e.contains("cannot hold"), "{e}");
        assert_eq!(std::fs::read(&p).unwrap(), b"\\section{A}\nA caf\xe9 study.\nD\xe9j\xe0 vu.\n");
        // A UTF-8 draft with one stray byte stays UTF-8.
        std::fs::write(&p, b"\xc3\x9cnicode line\nstray \xe9\n").unwrap();
        let loaded = load(&p).unwrap();
        assert!(!loaded.format.windows_1252 && loaded.note.unwrap().contains(":2: not valid UTF-8"));
    }
}
