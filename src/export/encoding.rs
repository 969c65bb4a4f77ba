//! How a bibliography file spells its text, so that entries appended to it
//! match: UTF-8 or Windows-1252 (Latin-1), LF or CRLF line ends.

use unicode_normalization::UnicodeNormalization;

use crate::corpus::source::latin1_char;

/// The encoding and line ends of a file's bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The bytes are not UTF-8: read (and written) as Windows-1252.
    pub windows_1252: bool,
    /// Most lines end with `\r\n`.
    pub crlf: bool,
}

impl Layout {
    /// The layout of a file's content (an empty file: UTF-8 and LF).
    pub fn of(bytes: &[u8]) -> Layout {
        let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count();
        let crlf = bytes.windows(2).filter(|w| w == b"\r\n").count();
        Layout { windows_1252: std::str::from_utf8(body).is_err(), crlf: newlines > 0 && crlf * 2 > newlines }
    }

    /// The bytes of `text` (with `\n` line ends) in this layout. A character
    /// Windows-1252 has no byte for is written as a LaTeX accent on its
    /// letter (`ő` as `{\H{o}}`, `ł` as `{\l}`); one that has neither is an
    /// error naming it.
    pub fn encode(&self, text: &str) -> Result<Vec<u8>, String> {
        let text = if self.crlf { text.replace('\n', "\r\n") } else { text.to_string() };
        if !self.windows_1252 {
            return Ok(text.into_bytes());
        }
        let mut out = Vec::with_capacity(text.len());
        for c in text.chars() {
            if let Some(b) = windows_1252_byte(c) {
                out.push(b);
            } else if let Some(latex) = latex_for(c) {
                out.extend(latex.bytes());
            } else {
                return Err(format!(
                    "the file is not UTF-8 (it reads as Latin-1/Windows-1252) and cannot hold “{c}” (U+{:04X}); convert it to UTF-8 to add this entry",
                    c as u32
                ));
            }
        }
        Ok(out)
    }
}

/// The Windows-1252 byte of `c` (as the reader decodes bytes, so that what
/// is written reads back the same).
fn windows_1252_byte(c: char) -> Option<u8> {
    if c.is_ascii() {
        return Some(c as u8);
    }
    (0x80..=0xFF_u8).find(|&b| latin1_char(b) == c)
}

/// `c` as LaTeX in ASCII: a letter with accents, or one of the letters
/// LaTeX has a command for.
fn latex_for(c: char) -> Option<String> {
    let named = match c {
        'ł' => Some("{\\l}"),
        'Ł' => Some("{\\L}"),
        'đ' => Some("{\\dj}"),
        'Đ' => Some("{\\DJ}"),
        'ı' => Some("{\\i}"),
        'ȷ' => Some("{\\j}"),
        'ŋ' => Some("{\\ng}"),
        'Ŋ' => Some("{\\NG}"),
        _ => None,
    };
    if let Some(n) = named {
        return Some(n.to_string());
    }
    let mut parts = c.nfd();
    let base = parts.next().filter(|b| b.is_ascii_alphabetic())?;
    let mut out = base.to_string();
    let mut any = false;
    for mark in parts {
        let cmd = match mark {
            '\u{300}' => "`",
            '\u{301}' => "'",
            '\u{302}' => "^",
            '\u{303}' => "~",
            '\u{304}' => "=",
            '\u{306}' => "u",
            '\u{307}' => ".",
            '\u{308}' => "\"",
            '\u{30a}' => "r",
            '\u{30b}' => "H",
            '\u{30c}' => "v",
            '\u{323}' => "d",
            '\u{327}' => "c",
            '\u{328}' => "k",
            '\u{331}' => "b",
            _ => return None,
        };
        out = format!("\\{cmd}{{{out}}}");
        any = true;
    }
    any.then(|| format!("{{{out}}}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts() {
        assert_eq!(Layout::of(b""), Layout { windows_1252: false, crlf: false });
        assert_eq!(Layout::of(b"a\r\nb\r\n"), Layout { windows_1252: false, crlf: true });
        assert_eq!(Layout::of(b"M\xfcller\n"), Layout { windows_1252: true, crlf: false });
        assert_eq!(Layout::of("\u{feff}Müller\r\n".as_bytes()), Layout { windows_1252: false, crlf: true });
    }

    #[test]
    fn windows_1252_with_latex_for_the_rest() {
        let l = Layout { windows_1252: true, crlf: true };
        assert_eq!(l.encode("Müller “q” €\n").unwrap(), b"M\xfcller \x93q\x94 \x80\r\n");
        assert_eq!(l.encode("Erdős Łódź Čapek ệ").unwrap(), b"Erd{\\H{o}}s {\\L}\xf3d{\\'{z}} {\\v{C}}apek {\\^{\\d{e}}}".to_vec());
        let err = l.encode("中").unwrap_err();
        assert!(err.contains("U+4E2D"), "{err}");
        assert_eq!(Layout { windows_1252: false, crlf: false }.encode("中\n").unwrap(), "中\n".as_bytes());
    }
}
