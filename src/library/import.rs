//! Importing files into a library: parse, upsert, commit in batches, journal.
//!
//! Re-importing is idempotent (records with the same id replace each other).
//! Files are journaled only after the commit that made their records durable,
//! so an interrupted import re-run redoes exactly the files that were not yet
//! committed; nothing is lost or doubled.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use serde::Serialize;

use super::journal::{IndexStamp, Journal, Stamp};
use super::Library;
use crate::corpus::bibtex::{self, EntryOutcome};
use crate::corpus::source::{decode_owned, expand_inputs, read_bytes, Format};
use crate::corpus::{jsonl, Paper};
use crate::error::Result;

/// Records per commit.
const COMMIT_EVERY: usize = 50_000;

/// An entry that was not imported, with where and why.
#[derive(Debug, Clone, Serialize)]
pub struct Skip {
    pub file: PathBuf,
    pub line: usize,
    pub reason: String,
}

impl std::fmt::Display for Skip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let file = self.file.display().to_string();
        match self.line {
            // A whole file skipped: its error already names it.
            0 if self.reason.starts_with(&file) => f.write_str(&self.reason),
            0 => write!(f, "{file}: {}", self.reason),
            line => write!(f, "{file}:{line}: {}", self.reason),
        }
    }
}

/// What an import did.
#[derive(Debug, Default, Serialize)]
pub struct ImportSummary {
    pub files: usize,
    /// Files skipped because the journal shows them imported with the same content.
    pub files_unchanged: usize,
    pub imported: usize,
    pub updated: usize,
    pub skipped: Vec<Skip>,
    /// Non-fatal remarks (e.g. a file that was not valid UTF-8).
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct ImportOptions {
    /// Re-read files even when the journal shows them unchanged.
    pub force: bool,
}

/// Progress callbacks (the CLI draws a progress bar from them).
pub trait ImportProgress {
    fn start(&self, _files: usize, _bytes: u64) {}
    fn file_done(&self, _file: &Path, _bytes: u64) {}
    fn finish(&self) {}
}

/// No progress reporting.
pub struct Quiet;
impl ImportProgress for Quiet {}

struct Parsed {
    file: PathBuf,
    stamp: Stamp,
    papers: Vec<Paper>,
    skipped: Vec<Skip>,
    note: Option<String>,
}

/// Imports files and directories into the library.
pub fn import(lib: &Library, inputs: &[PathBuf], opts: ImportOptions, progress: &dyn ImportProgress) -> Result<ImportSummary> {
    lib.writing().during(|| {
        let files = expand_inputs(inputs)?;
        let total_bytes = files.iter().map(|(p, _)| std::fs::metadata(p).map_or(0, |m| m.len())).sum();
        progress.start(files.len(), total_bytes);

        let journal_path = lib.dir().join("import-journal.json");
        let mut journal = Journal::load(&journal_path)?;
        let mut summary = ImportSummary { files: files.len(), ..Default::default() };
        let stamp = index_stamp(lib);
        if let Some(why) = journal.disagreement(&stamp) {
            summary.notes.push(format!(
                "the paper index holds {} papers, but {why}: the import journal {} was discarded and every file is read again",
                stamp.records,
                journal_path.display()
            ));
            journal.discard();
        }
        let mut known = lib.papers().all_ids()?;
        // The writer (and its lock) is taken only once there is something to write.
        let mut writer: Option<crate::index::PaperWriter> = None;

        // Parse on a second thread while this one feeds the index writer.
        let (tx, rx) = mpsc::sync_channel::<Result<Option<Parsed>>>(4);
        let force = opts.force;
        std::thread::scope(|scope| -> Result<()> {
            let files_ref = &files;
            let before = journal.clone();
            scope.spawn(move || {
                for (path, format) in files_ref {
                    let msg = parse_file(path, *format, &before, force);
                    if tx.send(msg).is_err() {
                        break;
                    }
                }
            });
            let mut pending_files: Vec<(PathBuf, Stamp)> = Vec::new();
            let mut since_commit = 0usize;
            for (msg, (path, _)) in rx.into_iter().zip(files.iter()) {
                let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
                let parsed = match msg {
                    Ok(Some(parsed)) => parsed,
                    Ok(None) => {
                        summary.files_unchanged += 1;
                        progress.file_done(path, bytes);
                        continue;
                    }
                    // A file that cannot be read is one skip, not the end of the run.
                    Err(e) => {
                        summary.skipped.push(Skip { file: path.clone(), line: 0, reason: e.to_string() });
                        progress.file_done(path, bytes);
                        continue;
                    }
                };
                let w = match &mut writer {
                    Some(w) => w,
                    None => writer.insert(lib.papers().writer()?),
                };
                for paper in &parsed.papers {
                    w.upsert(paper)?;
                    let legacy_id = (paper.id.starts_with("doi:") && !paper.key.is_empty()).then(|| Paper::bibtex_id("", &paper.key));
                    let existed = known.contains(&paper.id) || legacy_id.as_ref().is_some_and(|l| known.remove(l));
                    if existed {
                        summary.updated += 1;
                    } else {
                        summary.imported += 1;
                        known.insert(paper.id.clone());
                    }
                }
                since_commit += parsed.papers.len();
                summary.skipped.extend(parsed.skipped);
                summary.notes.extend(parsed.note);
                pending_files.push((parsed.file, parsed.stamp));
                if since_commit >= COMMIT_EVERY {
                    w.commit()?;
                    for (f, s) in pending_files.drain(..) {
                        journal.mark_done(&f, s);
                    }
                    lib.papers().reload()?;
                    journal.set_index(index_stamp(lib));
                    journal.save()?;
                    since_commit = 0;
                }
                progress.file_done(path, bytes);
            }
            if let Some(w) = writer.take() {
                w.finish()?;
                for (f, s) in pending_files.drain(..) {
                    journal.mark_done(&f, s);
                }
                lib.papers().reload()?;
                journal.set_index(index_stamp(lib));
                journal.save()?;
            }
            Ok(())
        })?;
        lib.papers().reload()?;
        progress.finish();
        Ok(summary)
    })
}

/// The paper index as the journal records it.
pub fn index_stamp(lib: &Library) -> IndexStamp {
    IndexStamp { id: lib.papers().identity(), records: lib.papers().num_papers() }
}

/// `Ok(None)` when the journal shows the file unchanged.
fn parse_file(path: &Path, format: Format, journal: &Journal, force: bool) -> Result<Option<Parsed>> {
    let bytes = read_bytes(path)?;
    let stamp = Stamp::of(&bytes);
    if !force && journal.is_done(path, stamp) {
        return Ok(None);
    }
    let decoded = decode_owned(bytes);
    let note = decoded.note(path);
    let mut papers = Vec::new();
    let mut skipped = Vec::new();
    let skip = |line, reason| Skip { file: path.to_path_buf(), line, reason };
    match format {
        Format::Bibtex => {
            for outcome in bibtex::parse_source(&decoded.text) {
                match outcome {
                    EntryOutcome::Paper(p) => papers.push(*p),
                    EntryOutcome::Skipped { line, reason } => skipped.push(skip(line, reason)),
                }
            }
        }
        Format::PapersJsonl => {
            for (i, line) in decoded.text.lines().enumerate() {
                if line.trim().is_empty() {
                    continue;
                }
                match jsonl::parse_line(line) {
                    Ok(p) => papers.push(p),
                    Err(reason) => skipped.push(skip(i + 1, reason)),
                }
            }
        }
    }
    Ok(Some(Parsed { file: path.to_path_buf(), stamp, papers, skipped, note }))
}
