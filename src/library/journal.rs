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

/// The index a journal was saved against: its identity and how many
/// records it held then.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexStamp {
    pub id: String,
    pub records: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Journal {
    #[serde(skip)]
    path: PathBuf,
    files: BTreeMap<String, Stamp>,
    /// Files read part of the way (a stream committed batch by batch): the
    /// file's stamp and the lines committed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    partial: BTreeMap<String, (Stamp, u64)>,
    /// The index at the last save (none: a journal written before journals
    /// recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    index: Option<IndexStamp>,
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
        self.partial.remove(&key(file, tag));
        self.files.insert(key(file, tag), stamp);
    }

    /// The lines of `file` (read this way, with exactly this content)
    /// committed so far by an import that stopped part of the way (0: none).
    pub fn lines_done(&self, file: &Path, tag: &str, stamp: Stamp) -> u64 {
        self.partial.get(&key(file, tag)).filter(|(s, _)| *s == stamp).map_or(0, |(_, n)| *n)
    }

    /// Records that the first `lines` of `file` are committed.
    pub fn mark_lines_done(&mut self, file: &Path, tag: &str, stamp: Stamp, lines: u64) {
        self.partial.insert(key(file, tag), (stamp, lines));
    }

    /// Forgets one file (it is read again when it comes back).
    pub fn forget(&mut self, file: &Path, tag: &str) {
        self.files.remove(&key(file, tag));
    }

    /// The files (and ways of reading them) listed as imported.
    pub fn files(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// The index this journal was last saved against.
    pub fn index(&self) -> Option<&IndexStamp> {
        self.index.as_ref()
    }

    /// Records the index the listed files are in (before [`Journal::save`]).
    pub fn set_index(&mut self, index: IndexStamp) {
        self.index = Some(index);
    }

    /// Why the journal does not describe `index` any more, if it does not
    /// (what the journal claims; the caller says what the index holds):
    /// the index is another one than the journal was saved against (it was
    /// deleted and created anew), or it holds fewer records than then.
    /// Files listed as imported would then be skipped although their
    /// records are gone.
    pub fn disagreement(&self, index: &IndexStamp) -> Option<String> {
        let files = self.files.len();
        if files == 0 {
            return None;
        }
        let listed = if files == 1 { "1 imported file".to_string() } else { format!("{files} imported files") };
        match &self.index {
            Some(then) if !then.id.is_empty() && then.id != index.id => {
                Some(format!("the index was created anew after the journal listed {listed} ({} records)", then.records))
            }
            Some(then) if index.records < then.records => Some(format!("the journal lists {listed} ({} records)", then.records)),
            None if index.records == 0 => Some(format!("the journal lists {listed}")),
            _ => None,
        }
    }

    /// Forgets every file (they are read again).
    pub fn discard(&mut self) {
        self.files.clear();
        self.partial.clear();
        self.index = None;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn journal(index: Option<IndexStamp>) -> Journal {
        let mut j = Journal { index, ..Default::default() };
        j.mark_done(Path::new("/nowhere/a.bib"), Stamp { size: 1, hash: 2 });
        j
    }

    fn stamp(id: &str, records: u64) -> IndexStamp {
        IndexStamp { id: id.into(), records }
    }

    #[test]
    fn a_journal_disagrees_with_an_index_that_lost_records_or_was_created_anew() {
        let j = journal(Some(stamp("a", 10)));
        assert_eq!(j.disagreement(&stamp("a", 10)), None);
        assert_eq!(j.disagreement(&stamp("a", 12)), None, "more records: another import or --add-cited");
        assert_eq!(j.disagreement(&stamp("a", 0)).unwrap(), "the journal lists 1 imported file (10 records)");
        assert!(j.disagreement(&stamp("b", 30)).unwrap().contains("created anew"));
        // A journal written before journals recorded the index.
        assert_eq!(journal(None).disagreement(&stamp("a", 3)), None);
        assert!(journal(None).disagreement(&stamp("a", 0)).is_some());
        assert_eq!(Journal::default().disagreement(&stamp("a", 0)), None, "nothing listed: nothing to discard");
    }
}
