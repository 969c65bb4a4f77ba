//! The import journal: which files were fully imported and committed, so an
//! interrupted or repeated import skips them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::util::{fnv1a64, write_atomic};

/// Size and content hash of an imported file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    pub size: u64,
    pub hash: u64,
}

impl Stamp {
    pub fn of(bytes: &[u8]) -> Stamp {
        Stamp { size: bytes.len() as u64, hash: fnv1a64(bytes) }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Journal {
    #[serde(skip)]
    path: PathBuf,
    files: BTreeMap<String, Stamp>,
}

impl Journal {
    pub fn load(path: &Path) -> Result<Journal> {
        let mut j = match std::fs::read_to_string(path) {
            Ok(text) => {
                serde_json::from_str(&text).map_err(|e| Error::Parse { path: path.into(), line: e.line(), reason: e.to_string() })?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Journal::default(),
            Err(e) => return Err(Error::io(path, e)),
        };
        j.path = path.to_path_buf();
        Ok(j)
    }

    /// Whether `file` was imported with exactly this content.
    pub fn is_done(&self, file: &Path, stamp: Stamp) -> bool {
        self.is_done_as(file, "", stamp)
    }

    pub fn mark_done(&mut self, file: &Path, stamp: Stamp) {
        self.mark_done_as(file, "", stamp)
    }

    /// Like [`Journal::is_done`] for one way of reading the file (`tag`,
    /// e.g. a split filter).
    pub fn is_done_as(&self, file: &Path, tag: &str, stamp: Stamp) -> bool {
        self.files.get(&key(file, tag)) == Some(&stamp)
    }

    pub fn mark_done_as(&mut self, file: &Path, tag: &str, stamp: Stamp) {
        self.files.insert(key(file, tag), stamp);
    }

    pub fn save(&self) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        write_atomic(&self.path, text.as_bytes())
    }
}

fn key(file: &Path, tag: &str) -> String {
    let path = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf()).to_string_lossy().into_owned();
    if tag.is_empty() {
        path
    } else {
        format!("{path}#{tag}")
    }
}
