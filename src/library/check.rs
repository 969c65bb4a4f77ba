//! Verifying a library on disk (`citewise doctor`): every index opens and
//! reads through, every vector store holds what its manifest lists, and
//! the import journal agrees with the paper index. Each problem comes with
//! the command that repairs it.

use std::path::{Path, PathBuf};

use super::journal::{IndexStamp, Journal};
use crate::index::health::{self, IndexKind};
use crate::index::vectors::{StoreState, VectorStore};
use crate::index::PaperIndex;

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
    if !dir.join("library.json").exists() {
        return report;
    }
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
                repair: kind.repair(&index),
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
    }
    for (name, sub) in STORES {
        match VectorStore::inspect(&dir.join(sub)) {
            Ok(Some(state)) => report.stores.push((name, Some(state))),
            Ok(None) => {}
            Err(e) => {
                report.stores.push((name, None));
                report.problems.push(Problem {
                    what: format!("the vectors of the {name} are damaged: {}: {}", e.path.display(), e.why),
                    repair: "run `citewise embed`, which empties them and computes them again".into(),
                });
            }
        }
    }
    report
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
                repair: format!("delete {} and run `citewise import` on your paper files again", path.display()),
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
        repair: format!("run `citewise import` on your files again (it reads them anew): citewise import {}", shown.join(" ")),
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
        repair: "run `citewise import --evidence` on your citing-sentence files (PDFs, LaTeX, JSON Lines) again; it reads them anew".into(),
    })
}

/// The journal problem of an open library (what `info` says).
pub fn journal_problem_of(lib: &super::Library) -> Option<Problem> {
    journal_problem(lib.dir(), &super::import::index_stamp(lib))
}
