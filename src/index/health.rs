//! The state of a tantivy index on disk: errors opening or writing one in
//! plain words with the command that repairs it, and a read-through check
//! for `doctor`.

use std::path::{Path, PathBuf};

use tantivy::collector::Count;
use tantivy::directory::error::{LockError, OpenReadError};
use tantivy::query::{AllQuery, TermQuery};
use tantivy::schema::{FieldType, IndexRecordOption};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, TantivyError, Term};

use crate::error::Error;

/// Which of the library's indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexKind {
    Papers,
    Evidence,
    Citances,
}

impl IndexKind {
    /// What the index is, for messages.
    pub fn name(self) -> &'static str {
        match self {
            IndexKind::Papers => "paper index",
            IndexKind::Evidence => "evidence index",
            IndexKind::Citances => "index of citing sentences",
        }
    }

    /// The commands that rebuild the index in `dir`.
    pub fn repair(self, dir: &Path) -> String {
        // The index lives in its library's directory.
        let library = dir.parent().unwrap_or(dir);
        match self {
            IndexKind::Papers => format!(
                "move {} away, then run `{}` on your paper files (.bib, .jsonl)",
                dir.display(),
                crate::util::citewise_command(library, "import --force")
            ),
            IndexKind::Evidence | IndexKind::Citances => format!(
                "move {} away, then run `{}` on your citing-sentence files (PDF, LaTeX, Markdown, JSON Lines)",
                dir.display(),
                crate::util::citewise_command(library, "import --evidence --force")
            ),
        }
    }
}

/// The error of an index that cannot be opened or read: where, what is
/// wrong in plain words, and the repair.
pub fn damaged(kind: IndexKind, dir: &Path, e: &TantivyError) -> Error {
    if let TantivyError::LockFailure(LockError::LockBusy, _) = e {
        return busy(dir);
    }
    Error::corrupt(dir, format!("the {} is damaged ({}). To rebuild it, {}", kind.name(), describe(e), kind.repair(dir)))
}

/// The error of a writer that cannot be had: another process holds it.
pub fn writer_error(dir: &Path, e: TantivyError) -> Error {
    match e {
        TantivyError::LockFailure(LockError::LockBusy, _) => busy(dir),
        e => Error::Index(e),
    }
}

/// Another import holds the writer of the index in `dir` (named by the
/// library that holds the index).
fn busy(dir: &Path) -> Error {
    Error::Busy(dir.parent().unwrap_or(dir).to_path_buf())
}

/// What is wrong, in plain words, with the file involved where known.
fn describe(e: &TantivyError) -> String {
    match e {
        TantivyError::OpenReadError(OpenReadError::FileDoesNotExist(path)) => format!("a file is missing: {}", name(path)),
        TantivyError::OpenReadError(OpenReadError::IoError { filepath, .. }) => {
            format!("a file is truncated or changed: {}", name(filepath))
        }
        TantivyError::OpenReadError(OpenReadError::IncompatibleIndex(_)) | TantivyError::IncompatibleIndex(_) => {
            "it was written in a format this build does not read".into()
        }
        _ => "a file is truncated or changed".into(),
    }
}

fn name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// Opens the index in `dir` and reads it through: the checksum of every
/// file of its segments, a count over every document, a term search in
/// each indexed text field, and the first and last stored document of each
/// segment. The number of documents, or what is wrong in plain words.
pub fn check(dir: &Path) -> Result<u64, String> {
    let index = Index::open_in_dir(dir).map_err(|e| describe(&e))?;
    let damaged = index.validate_checksum().map_err(|e| describe(&e))?;
    if !damaged.is_empty() {
        let mut names: Vec<String> = damaged.iter().map(|p: &PathBuf| name(p)).collect();
        names.sort();
        return Err(format!("a file is truncated or changed: {}", names.join(", ")));
    }
    let reader: IndexReader = index.reader_builder().reload_policy(ReloadPolicy::Manual).try_into().map_err(|e| describe(&e))?;
    let searcher = reader.searcher();
    let n = searcher.search(&AllQuery, &Count).map_err(|e| describe(&e))?;
    let schema = index.schema();
    for (field, entry) in schema.fields() {
        let FieldType::Str(options) = entry.field_type() else { continue };
        if options.get_indexing_options().is_none() {
            continue;
        }
        let q = TermQuery::new(Term::from_field_text(field, "model"), IndexRecordOption::Basic);
        searcher.search(&q, &Count).map_err(|e| describe(&e))?;
    }
    for seg in searcher.segment_readers() {
        let store = seg.get_store_reader(1).map_err(|e| describe(&TantivyError::from(e)))?;
        let mut alive = seg.doc_ids_alive();
        let first = alive.next();
        for doc in first.into_iter().chain(alive.last()) {
            store.get::<TantivyDocument>(doc).map_err(|e| describe(&e))?;
        }
    }
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_writer_lock_is_busy_not_damage() {
        let e = TantivyError::LockFailure(LockError::LockBusy, None);
        let err = damaged(IndexKind::Papers, Path::new("/lib/papers"), &e);
        assert_eq!(err.to_string(), "another citewise import is writing to /lib; wait for it to finish");
    }
}
