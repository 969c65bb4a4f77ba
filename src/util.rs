//! Small shared helpers.

use std::io::Write;
use std::path::Path;

use crate::error::{Error, Result};

/// Writes a file atomically: a temporary file in the same directory, synced,
/// then renamed over the target.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_file(&tmp);
        return Err(Error::io(path, e));
    }
    Ok(())
}

/// FNV-1a 64-bit hash: a stable content fingerprint (not cryptographic).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Peak resident set size of this process in bytes (Linux), if known.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `s` safe to print on a terminal: control characters (escape sequences
/// among them), bidirectional overrides and zero-width characters removed,
/// tabs and line breaks as spaces.
pub fn printable(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() || is_invisible_format(c);
    if !s.chars().any(unsafe_char) {
        return s.into();
    }
    s.chars()
        .filter_map(|c| if matches!(c, '\t' | '\n' | '\r') { Some(' ') } else { (!unsafe_char(c)).then_some(c) })
        .collect::<String>()
        .into()
}

/// Bidirectional controls (U+202A–202E, U+2066–2069, U+200E/F, U+061C) and
/// zero-width characters (U+200B–200D, U+2060, U+FEFF).
fn is_invisible_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{061C}' | '\u{FEFF}')
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

    #[test]
    fn printable_removes_escapes_and_invisible_controls() {
        assert_eq!(printable("plain title"), "plain title");
        assert_eq!(printable("A\u{1b}[2J\u{1b}]0;owned\u{7}title\u{9b}31m"), "A[2J]0;ownedtitle31m");
        assert_eq!(printable("abc\u{202E}fed\u{200B}\u{FEFF}\tx\ny"), "abcfed x y");
    }

    #[test]
    fn fnv_known_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
    }
}
