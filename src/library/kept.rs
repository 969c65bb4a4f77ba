//! The small files a library keeps of what it learned from its own citing
//! documents (the evidence trust, `check`'s flag): JSON read as a settings
//! file (a regular file, within [`crate::limits::SETTINGS_FILE`]), written
//! atomically and removed as the library's one writer.

use std::path::Path;

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::Library;
use crate::error::{Error, Result};

/// The value kept at `path`, if there is one (an error names the file).
pub fn read<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let text = match crate::limits::read_regular_text(path, crate::limits::SETTINGS_FILE) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    serde_json::from_str(&text).map(Some).map_err(|e| Error::corrupt(path, e))
}

/// Keeps `value` at `path` (inside the library's write lock).
pub fn save<T: Serialize>(lib: &Library, path: &Path, value: &T) -> Result<()> {
    let bytes = serde_json::to_vec_pretty(value).map_err(|e| Error::corrupt(path, e))?;
    lib.writing().during(|| crate::util::write_atomic(path, &bytes))
}

/// Removes the file at `path` (inside the library's write lock); true if
/// there was one.
pub fn remove(lib: &Library, path: &Path) -> Result<bool> {
    lib.writing().during(|| match std::fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(Error::io(path, e)),
    })
}
