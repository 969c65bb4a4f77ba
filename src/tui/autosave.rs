//! Autosave of the draft into the data directory, and restore after a crash.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::util::{fnv1a64, write_atomic};

#[derive(Debug, Serialize, Deserialize)]
pub struct Autosave {
    /// The draft this text belongs to (empty for an unnamed draft).
    pub draft: String,
    /// Seconds since the Unix epoch.
    pub saved_at: u64,
    pub text: String,
}

/// Where the autosave of `draft` lives.
pub fn path_for(dir: &Path, draft: Option<&Path>) -> PathBuf {
    let key =
        draft.map(|d| std::fs::canonicalize(d).unwrap_or_else(|_| d.to_path_buf()).to_string_lossy().into_owned()).unwrap_or_default();
    dir.join(format!("{:016x}.json", fnv1a64(key.as_bytes())))
}

pub fn write(path: &Path, draft: Option<&Path>, text: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| crate::error::Error::io(dir, e))?;
    }
    let a = Autosave {
        draft: draft.map(|d| d.display().to_string()).unwrap_or_default(),
        saved_at: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()),
        text: text.to_string(),
    };
    write_atomic(path, serde_json::to_string(&a).expect("serializable").as_bytes())
}

pub fn read(path: &Path) -> Option<Autosave> {
    serde_json::from_slice(&crate::limits::read_regular(path, crate::limits::TEXT_FILE).ok()?).ok()
}

pub fn remove(path: &Path) {
    let _ = std::fs::remove_file(path);
}

/// `2026-11-23 01:33 UTC`.
pub fn format_time(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rem / 3600, rem % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_format() {
        assert_eq!(format_time(0), "1970-01-01 00:00 UTC");
        assert_eq!(format_time(1_795_400_000), "2026-11-23 02:13 UTC");
    }

    #[test]
    fn round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = path_for(dir.path(), Some(Path::new("/x/draft.tex")));
        write(&p, Some(Path::new("/x/draft.tex")), "hello").unwrap();
        assert_eq!(read(&p).unwrap().text, "hello");
        remove(&p);
        assert!(read(&p).is_none());
    }
}
