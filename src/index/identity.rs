//! An index directory's identity: a random name written when the index is
//! created, so a journal can tell an index that was deleted and created
//! again from the one it was saved against (tantivy leaves files it did not
//! write alone).

use std::path::Path;

use crate::error::Result;

/// The file of an index directory that holds its identity.
const IDENTITY: &str = "citewise-index-id";

/// Gives the index in `dir` a new identity.
pub fn renew(dir: &Path) -> Result<()> {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let id = format!("{:016x}{:016x}", rand::random::<u64>(), crate::util::fnv1a64(format!("{nanos} {}", std::process::id()).as_bytes()));
    crate::util::write_atomic(&dir.join(IDENTITY), id.as_bytes())
}

/// Gives an index written before indexes had one an identity. A directory
/// that cannot be written (a library on read-only storage) keeps none.
pub fn ensure(dir: &Path) {
    if of(dir).is_none() {
        let _ = renew(dir);
    }
}

/// The identity of the index in `dir` (none: no index there, or one that
/// has none).
pub fn of(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(IDENTITY)).ok().map(|s| s.trim().to_string()).filter(|s| !s.is_empty())
}
