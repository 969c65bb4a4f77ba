//! `citewise --demo`: a small built-in library, evidence and draft written
//! for the demo, set up in the data directory on first use.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::library::evidence_import::import_evidence;
use crate::library::import::{import, ImportOptions, Quiet};
use crate::library::Library;

const LIBRARY_BIB: &str = include_str!("../../assets/demo/library.bib");
const CITATIONS: &str = include_str!("../../assets/demo/citations.jsonl");
const DRAFT: &str = include_str!("../../assets/demo/draft.tex");

/// Builds (or reuses) the demo library under `dir`; returns the library
/// directory and the draft to open. The draft is written only if missing,
/// so the user's edits to it survive.
pub fn prepare(dir: &Path) -> Result<(PathBuf, PathBuf)> {
    let src = dir.join("source");
    std::fs::create_dir_all(&src).map_err(|e| Error::io(&src, e))?;
    let bib = src.join("library.bib");
    let citations = src.join("citations.jsonl");
    std::fs::write(&bib, LIBRARY_BIB).map_err(|e| Error::io(&bib, e))?;
    std::fs::write(&citations, CITATIONS).map_err(|e| Error::io(&citations, e))?;
    let lib_dir = dir.join("library");
    let lib = Library::open_or_create(&lib_dir)?;
    import(&lib, &[bib], ImportOptions::default(), &Quiet)?;
    import_evidence(&lib, &[citations], None, false)?;
    let draft = dir.join("draft.tex");
    if !draft.exists() {
        std::fs::write(&draft, DRAFT).map_err(|e| Error::io(&draft, e))?;
    }
    Ok((lib_dir, draft))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demo_library_is_complete() {
        let dir = tempfile::tempdir().unwrap();
        let (lib_dir, draft) = prepare(dir.path()).unwrap();
        let lib = Library::open(&lib_dir).unwrap();
        assert_eq!(lib.papers().num_papers(), 12);
        let stats = lib.evidence().stats().unwrap();
        assert_eq!(stats.papers, 12, "every demo paper has evidence");
        assert!(std::fs::read_to_string(draft).unwrap().contains("\\title{Recommending Citations"));
        // Again: nothing doubles.
        prepare(dir.path()).unwrap();
        assert_eq!(Library::open(&lib_dir).unwrap().papers().num_papers(), 12);
    }
}
