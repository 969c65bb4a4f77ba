//! Importing citing sentences into the library's evidence database.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::PathBuf;

use serde::Serialize;

use super::journal::{Journal, Stamp};
use super::Library;
use crate::corpus::source::read_bytes;
use crate::error::{Error, Result};
use crate::evidence::link::Linker;
use crate::evidence::record::EvidenceBuilder;
use crate::evidence::sources::{read_sentences, SourceReport};
use crate::evidence::store::EvidenceStats;

/// What an evidence import did.
#[derive(Debug, Default, Serialize)]
pub struct EvidenceImportSummary {
    pub files: usize,
    pub files_unchanged: usize,
    pub sentences: usize,
    pub spans_extracted: usize,
    /// Per file.
    pub reports: Vec<(PathBuf, SourceReport)>,
    pub stats: EvidenceStats,
    pub seconds: f64,
}

/// Imports files of citing sentences (benchmark contexts or full text).
/// `split` keeps only that split of benchmark contexts.
pub fn import_evidence(lib: &Library, files: &[PathBuf], split: Option<&str>, force: bool) -> Result<EvidenceImportSummary> {
    let t = std::time::Instant::now();
    let journal_path = lib.dir().join("evidence-journal.json");
    let mut journal = Journal::load(&journal_path)?;
    let tag = split.map(|s| format!("split={s}")).unwrap_or_default();
    let mut summary = EvidenceImportSummary { files: files.len(), ..Default::default() };
    let mut builder = EvidenceBuilder::default();
    let mut done: Vec<(PathBuf, Stamp)> = Vec::new();
    let years: RefCell<HashMap<String, Option<i32>>> = RefCell::new(HashMap::new());
    let year_of = |id: &str| -> Option<i32> {
        if let Some(y) = years.borrow().get(id) {
            return *y;
        }
        let y = lib.papers().paper_by_id(id).ok().flatten().and_then(|p| p.year);
        years.borrow_mut().insert(id.to_string(), y);
        y
    };
    let linker = Linker::new(lib.papers());
    for file in files {
        if !file.is_file() {
            return Err(Error::Library(format!("{}: not a file", file.display())));
        }
        let stamp = Stamp::of(&read_bytes(file)?);
        if !force && journal.is_done_as(file, &tag, stamp) {
            summary.files_unchanged += 1;
            continue;
        }
        let (sentences, report) = read_sentences(file, split, &linker, &year_of)?;
        summary.sentences += sentences.len();
        for s in &sentences {
            for r in s.records(&year_of) {
                summary.spans_extracted += 1;
                builder.add(r);
            }
        }
        summary.reports.push((file.clone(), report));
        done.push((file.clone(), stamp));
    }
    if !done.is_empty() {
        lib.evidence().merge_and_write(builder)?;
        for (f, s) in done {
            journal.mark_done_as(&f, &tag, s);
        }
        journal.save()?;
    }
    summary.stats = lib.evidence().stats()?;
    summary.seconds = t.elapsed().as_secs_f64();
    Ok(summary)
}
