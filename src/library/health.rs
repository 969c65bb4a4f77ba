//! Verifying a library on disk (`citewise doctor`): every index opens and
//! reads through, every vector store holds what its manifest lists, and
//! the import journal agrees with the paper index. Each problem comes with
//! the command that repairs it.

use std::path::{Path, PathBuf};

use super::journal::{IndexStamp, Journal};
use super::MetaError;
use crate::index::health::{self, IndexKind};
use crate::index::vectors::{StoreState, VectorStore};
use crate::index::PaperIndex;
use crate::util::citewise_command;

/// Something wrong with a library, and the command that repairs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub what: String,
    pub repair: String,
}

/// What was found in a library.
#[derive(Debug, Default)]
pub struct Report {
    /// Papers in the paper index (none: it does not read).
    pub papers: Option<u64>,
    /// The vector stores there are: name, and what each lists (none: damaged).
    pub stores: Vec<(&'static str, Option<StoreState>)>,
    pub problems: Vec<Problem>,
}

/// The name of the citation channel's store in [`Report::stores`].
pub const CITATION_STORE: &str = "citation channel";
/// The name of the student's stand-ins for the citation channel.
pub const STUDENT_STORE: &str = "citation channel stand-ins (student)";

/// The library's vector stores: what each holds, and its directory name.
pub const STORES: &[(&str, &str)] = &[
    ("dense channel (HAtten)", "vectors"),
    (CITATION_STORE, "citation-vectors"),
    (STUDENT_STORE, "citation-vectors-student"),
    ("evidence span vectors", "span-vectors"),
];

/// The problems of the library in `dir` (none for a directory that holds
/// no library: there is nothing to verify).
pub fn verify(dir: &Path) -> Vec<Problem> {
    inspect(dir).problems
}

/// Verifies the library in `dir` and says what it holds. Changes nothing.
pub fn inspect(dir: &Path) -> Report {
    let mut report = Report::default();
    if !dir.join("library.json").exists() && !dir.join("papers").join("meta.json").exists() {
        // No library here yet: nothing to verify.
        return report;
    }
    report.problems.extend(meta_problem(dir));
    for (kind, sub) in [(IndexKind::Papers, "papers"), (IndexKind::Evidence, "evidence"), (IndexKind::Citances, "citances")] {
        let index = dir.join(sub);
        if !index.join("meta.json").exists() {
            continue;
        }
        match health::check(&index) {
            Ok(n) if kind == IndexKind::Papers => report.papers = Some(n),
            Ok(n) if kind == IndexKind::Evidence => {
                let stamp = IndexStamp { id: crate::index::identity::of(&index).unwrap_or_default(), records: n };
                report.problems.extend(evidence_journal_problem(dir, &stamp));
            }
            Ok(_) => {}
            Err(why) => report.problems.push(Problem {
                what: format!("the {} at {} is damaged ({why})", kind.name(), index.display()),
                repair: index_repair(kind, &index, dir),
            }),
        }
    }
    let papers_dir = dir.join("papers");
    if !papers_dir.join("meta.json").exists() {
        report.papers = Some(0);
    }
    if let Some(papers) = report.papers {
        let stamp = IndexStamp { id: PaperIndex::identity_in(&papers_dir).unwrap_or_default(), records: papers };
        report.problems.extend(journal_problem(dir, &stamp));
        report.problems.extend(zotero_problem(dir, &stamp));
    }
    for (name, sub) in STORES {
        match VectorStore::inspect(&dir.join(sub)) {
            Ok(Some(state)) => report.stores.push((name, Some(state))),
            Ok(None) => {}
            Err(e) => {
                report.stores.push((name, None));
                report.problems.push(Problem {
                    what: format!("the vectors of the {name} are damaged: {}: {}", e.path.display(), e.why),
                    repair: format!("run `{}`, which empties them and computes them again", citewise_command(dir, "embed")),
                });
            }
        }
    }
    report
}

/// The commands that rebuild an index of the library in `dir`; for the
/// papers of a library imported from Zotero, the Zotero import (which
/// reads every item again into a new index).
fn index_repair(kind: IndexKind, index: &Path, dir: &Path) -> String {
    let zotero = super::zotero::ZoteroState::load(dir).ok().flatten().filter(|s| !s.dir.as_os_str().is_empty());
    match zotero {
        Some(state) if kind == IndexKind::Papers => format!(
            "move {} away, then run `{}`{}",
            index.display(),
            citewise_command(dir, &format!("import --zotero {}", crate::util::shell_quoted(&state.dir.to_string_lossy()))),
            if Journal::load(&dir.join("import-journal.json")).is_ok_and(|j| j.files().next().is_some()) {
                ", and import your other paper files again"
            } else {
                ""
            }
        ),
        _ => kind.repair(index),
    }
}

/// What is wrong with `library.json`, the file that says a directory holds
/// a library and in which format: missing or not readable.
fn meta_problem(dir: &Path) -> Option<Problem> {
    let path = dir.join("library.json");
    let has_papers = dir.join("papers").join("meta.json").exists();
    let what = match super::read_meta(dir) {
        Ok(_) => return None,
        // No library here yet: nothing is damaged (`doctor` says so).
        Err(MetaError::Missing) if !has_papers => return None,
        Err(MetaError::Missing) => format!("{} is missing, though the library's papers are there", path.display()),
        Err(MetaError::Unreadable(why)) => format!("{} does not read ({why})", path.display()),
    };
    let repair = if has_papers {
        format!("run `{}`, which writes it again for the papers there", citewise_command(dir, "doctor --repair"))
    } else {
        format!("move {} away and import your papers again: {}", path.display(), citewise_command(dir, "import FILE.bib"))
    };
    Some(Problem { what, repair })
}

/// What `doctor --repair` mends by itself: a missing or unreadable
/// `library.json` beside a paper index that reads (an unreadable one is kept
/// as `library.json.bak`). Returns what was done.
pub fn repair(dir: &Path) -> crate::error::Result<Vec<String>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    super::lock::Writing::of_library(dir).during(|| repair_meta(dir))
}

fn repair_meta(dir: &Path) -> crate::error::Result<Vec<String>> {
    let mut done = Vec::new();
    let papers = dir.join("papers");
    if meta_problem(dir).is_some() && papers.join("meta.json").exists() {
        health::check(&papers).map_err(|why| {
            crate::error::Error::Input(format!("the paper index at {} is damaged too ({why}); import your papers again", papers.display()))
        })?;
        let path = dir.join("library.json");
        if path.exists() {
            let backup = dir.join("library.json.bak");
            std::fs::rename(&path, &backup).map_err(|e| crate::error::Error::io(&path, e))?;
            done.push(format!("kept the unreadable {} as {}", path.display(), backup.display()));
        }
        super::write_meta(dir)?;
        done.push(format!("wrote {}", path.display()));
    }
    Ok(done)
}

/// The import journal of the library in `dir` against its paper index:
/// a journal that lists files whose records are gone.
pub fn journal_problem(dir: &Path, index: &IndexStamp) -> Option<Problem> {
    let path = dir.join("import-journal.json");
    let journal = match Journal::load(&path) {
        Ok(j) => j,
        Err(e) => {
            return Some(Problem {
                what: format!("the import journal does not read ({e})"),
                repair: format!("delete {} and run `{}` on your paper files again", path.display(), citewise_command(dir, "import")),
            })
        }
    };
    let why = journal.disagreement(index)?;
    let files: Vec<PathBuf> = journal.files().map(PathBuf::from).collect();
    let mut shown: Vec<String> = files.iter().take(5).map(|f| f.display().to_string()).collect();
    if files.len() > shown.len() {
        shown.push(format!("… ({} files in all)", files.len()));
    }
    Some(Problem {
        what: format!("the library at {} lost its paper records: its paper index holds {} papers, but {why}", dir.display(), index.records),
        repair: format!(
            "run `citewise import` on your files again (it reads them anew): {}",
            citewise_command(dir, &format!("import {}", shown.join(" ")))
        ),
    })
}

/// The Zotero import's state of the library in `dir` against its paper
/// index: items it lists whose records are gone. The next `import
/// --zotero` reads them all again by itself; the repair says so.
fn zotero_problem(dir: &Path, index: &IndexStamp) -> Option<Problem> {
    let state = super::zotero::ZoteroState::load(dir).ok()??;
    let why = state.lost_records(index)?;
    Some(Problem {
        what: format!("the library at {} lost its Zotero records: {why}", dir.display()),
        repair: format!(
            "run `{}`, which reads every item again",
            citewise_command(dir, &format!("import --zotero {}", crate::util::shell_quoted(&state.dir.to_string_lossy())))
        ),
    })
}

/// The evidence journal of the library in `dir` against its evidence
/// index: a journal that lists files whose spans are gone.
fn evidence_journal_problem(dir: &Path, index: &IndexStamp) -> Option<Problem> {
    let path = dir.join("evidence-journal.json");
    let why = Journal::load(&path).ok()?.disagreement(index)?;
    Some(Problem {
        what: format!(
            "the evidence database at {} lost its spans: its evidence index holds {} spans, but {why}",
            dir.display(),
            index.records
        ),
        repair: format!(
            "run `{}` on your citing-sentence files (PDFs, LaTeX, JSON Lines) again; it reads them anew",
            citewise_command(dir, "import --evidence")
        ),
    })
}

/// The journal problem of an open library (what `info` says).
pub fn journal_problem_of(lib: &super::Library) -> Option<Problem> {
    journal_problem(lib.dir(), &super::import::index_stamp(lib))
}
