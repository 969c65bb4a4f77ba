//! Library: a directory that holds the paper records and their index.
//!
//! Layout (format [`FORMAT`]):
//! ```text
//! DIR/library.json          format version and the build that wrote it
//! DIR/papers/               tantivy index; each document stores the full record
//! DIR/import-journal.json   files already imported (path, size, content hash)
//! DIR/evidence/             tantivy index of evidence spans
//! DIR/evidence-journal.json citing-sentence files already imported
//! DIR/citances/             tantivy index of the citing sentences as read
//! DIR/vectors/              paper vectors of the dense channel (see `index::vectors`)
//! DIR/zotero.json           the Zotero data directory imported from, and what each sync saw
//! ```

pub mod adapt;
pub mod embed;
pub mod evidence_import;
pub mod health;
pub mod import;
pub mod journal;
pub mod kept;
pub mod lock;
pub mod student;
pub mod zotero;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::evidence::citances::CitanceIndex;
use crate::evidence::store::EvidenceIndex;
use crate::index::PaperIndex;

/// On-disk format version. Bump when the layout or the index schema changes.
pub const FORMAT: u32 = 1;

/// Environment variable that overrides the default library directory.
pub const LIBRARY_ENV: &str = "CITEWISE_LIBRARY";

#[derive(Debug, Serialize, Deserialize)]
struct Meta {
    format: u32,
    written_by: String,
}

/// Why `library.json` gave no description.
#[derive(Debug)]
pub enum MetaError {
    Missing,
    /// It does not read (why, in words).
    Unreadable(String),
}

/// The description of the library in `dir` (`library.json`).
fn read_meta(dir: &Path) -> std::result::Result<Meta, MetaError> {
    let path = dir.join("library.json");
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(MetaError::Missing),
        Err(e) => return Err(MetaError::Unreadable(e.to_string())),
    };
    serde_json::from_slice(&bytes).map_err(|e| MetaError::Unreadable(e.to_string()))
}

/// Writes `library.json` for this build's format.
fn write_meta(dir: &Path) -> Result<()> {
    let meta = Meta { format: FORMAT, written_by: env!("CARGO_PKG_VERSION").into() };
    crate::util::write_atomic(&dir.join("library.json"), serde_json::to_string_pretty(&meta).expect("serializes").as_bytes())
}

/// A library an import is about to make, noted before it makes it: a
/// library is made with its first paper, so one this run made that holds
/// no paper and no evidence span when the guard goes (a path with a typo,
/// no Zotero to import from) is taken away again, with the directories made
/// for it. Where a library was there before, nothing is touched.
pub struct Unmade {
    dir: PathBuf,
    /// What was there before (none: a library was, or it is settled).
    before: Option<Before>,
    /// Told where a library was taken away.
    tell: Option<Tell>,
}

/// What an [`Unmade`] is told where it took a library away.
type Tell = Box<dyn FnOnce(&Path)>;

/// What the directory of a library to be made held before.
struct Before {
    /// Its entries (none when it did not exist).
    entries: std::collections::HashSet<std::ffi::OsString>,
    /// The directory and the ancestors of it that did not exist, innermost first.
    made: Vec<PathBuf>,
}

impl Unmade {
    /// Notes what `dir` holds before an import makes a library there.
    pub fn at(dir: &Path) -> Unmade {
        let library_there = dir.join("library.json").exists() || dir.join("papers").exists();
        let before = (!library_there).then(|| {
            let entries = std::fs::read_dir(dir).map(|d| d.filter_map(|e| e.ok().map(|e| e.file_name())).collect()).unwrap_or_default();
            let made = dir.ancestors().take_while(|p| !p.as_os_str().is_empty() && !p.exists()).map(Path::to_path_buf).collect();
            Before { entries, made }
        });
        Unmade { dir: dir.to_path_buf(), before, tell: None }
    }

    /// Calls `tell` with the library's directory if it is taken away.
    pub fn telling(mut self, tell: impl FnOnce(&Path) + 'static) -> Unmade {
        self.tell = Some(Box::new(tell));
        self
    }

    /// Takes the library this run made away if it holds no paper and no
    /// evidence span (as the library's one writer: another import that is
    /// filling it meanwhile is waited for): every entry of its directory
    /// that was not there before, then the directories made for it, where
    /// they are empty. Whether it did; once settled, it does nothing more.
    pub fn settle(&mut self) -> bool {
        let Some(before) = self.before.take() else { return false };
        let dir = self.dir.clone();
        let removed = dir.join("library.json").exists()
            && lock::Writing::of_library(&dir)
                .during(|| {
                    let empty = {
                        let lib = Library::open(&dir)?;
                        lib.papers().num_papers() == 0 && lib.evidence().num_spans() == 0
                    };
                    if empty {
                        remove_new_entries(&dir, &before.entries);
                    }
                    Ok(empty)
                })
                .unwrap_or(false);
        // A directory made for nothing goes too (one that holds anything stays).
        for d in &before.made {
            let _ = std::fs::remove_dir(d);
        }
        if removed {
            if let Some(tell) = self.tell.take() {
                tell(&dir);
            }
        }
        removed
    }
}

impl Drop for Unmade {
    fn drop(&mut self) {
        self.settle();
    }
}

/// Removes what `dir` holds besides `kept` (best effort).
fn remove_new_entries(dir: &Path, kept: &std::collections::HashSet<std::ffi::OsString>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        if kept.contains(&e.file_name()) {
            continue;
        }
        let path = e.path();
        let _ = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
            _ => std::fs::remove_file(&path),
        };
    }
}

/// An opened library.
pub struct Library {
    dir: PathBuf,
    /// Where the evidence database lives (`dir` unless opened with another
    /// evidence set, as an evaluation does).
    evidence_root: PathBuf,
    papers: PaperIndex,
    evidence: EvidenceIndex,
    citances: CitanceIndex,
    /// The library's one writer ([`lock`]): this process's share of it.
    writing: std::sync::Arc<lock::Writing>,
}

impl Library {
    /// The platform data directory (e.g. `~/.local/share/citewise/library`).
    pub fn default_dir() -> Result<PathBuf> {
        crate::util::default_library_dir()
            .ok_or_else(|| Error::Missing("no home directory: pass --library DIR or set CITEWISE_LIBRARY".into()))
    }

    /// Opens a library, creating it when the directory holds none.
    pub fn open_or_create(dir: &Path) -> Result<Library> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let meta_path = dir.join("library.json");
        if !meta_path.exists() {
            if dir.join("papers").join("meta.json").exists() {
                return Err(Self::missing_meta(dir));
            }
            lock::Writing::of_library(dir).during(|| if meta_path.exists() { Ok(()) } else { write_meta(dir) })?;
        }
        Self::open(dir)
    }

    fn missing_meta(dir: &Path) -> Error {
        Error::Corrupt {
            path: dir.join("library.json"),
            source: format!(
                "is missing, though the library's papers are there; run `{}` to write it again",
                crate::util::citewise_command(dir, "doctor --repair")
            )
            .into(),
        }
    }

    /// Opens an existing library; a missing or incompatible one is an error
    /// that says what to run.
    pub fn open(dir: &Path) -> Result<Library> {
        Self::open_with_evidence(dir, dir)
    }

    /// Opens a library whose evidence database (spans, citing sentences,
    /// span vectors, evidence journal) lives in `evidence_root` instead:
    /// the same papers with another set of evidence.
    pub fn open_with_evidence(dir: &Path, evidence_root: &Path) -> Result<Library> {
        let meta_path = dir.join("library.json");
        let meta = match read_meta(dir) {
            Ok(meta) => meta,
            Err(MetaError::Missing) if dir.join("papers").join("meta.json").exists() => return Err(Self::missing_meta(dir)),
            Err(MetaError::Missing) => {
                return Err(Error::Missing(format!(
                    "no library at {}: import papers first with `{}` (or pass --library DIR)",
                    dir.display(),
                    crate::util::citewise_command(dir, "import FILE.bib")
                )))
            }
            Err(MetaError::Unreadable(why)) => {
                return Err(Error::Corrupt {
                    path: meta_path,
                    source: format!(
                        "does not read as a citewise library's description ({why}); run `{}` to write it again",
                        crate::util::citewise_command(dir, "doctor --repair")
                    )
                    .into(),
                })
            }
        };
        if meta.format != FORMAT {
            return Err(Self::stale(
                dir,
                &format!("it was written in format {} by citewise {}; this build reads format {FORMAT}", meta.format, meta.written_by),
            ));
        }
        let papers = PaperIndex::open_or_create(&dir.join("papers"))?;
        let evidence = EvidenceIndex::open_or_create(&evidence_root.join("evidence"))?;
        let citances = CitanceIndex::open_or_create(&evidence_root.join("citances"))?;
        Ok(Library {
            dir: dir.to_path_buf(),
            evidence_root: evidence_root.to_path_buf(),
            papers,
            evidence,
            citances,
            writing: lock::Writing::of_library(dir),
        })
    }

    fn stale(dir: &Path, why: &str) -> Error {
        Error::Corrupt {
            path: dir.to_path_buf(),
            source: format!(
                "cannot be read: {why}. Rebuild it: move the directory away and run `{}` on your files again",
                crate::util::citewise_command(dir, "import")
            )
            .into(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn papers(&self) -> &PaperIndex {
        &self.papers
    }

    /// The library's write lock: every write goes through
    /// [`lock::Writing::during`]; a command that writes throughout
    /// [`lock::Writing::hold`]s it.
    pub fn writing(&self) -> &lock::Writing {
        &self.writing
    }

    pub fn evidence(&self) -> &EvidenceIndex {
        &self.evidence
    }

    /// Sees what another process committed since this library was opened:
    /// papers, evidence spans and citing sentences (an import running
    /// beside the editor).
    pub fn refresh(&self) -> Result<()> {
        self.papers.reload()?;
        self.evidence.reload()?;
        self.citances.reload()
    }

    /// The citing sentences behind the evidence, as read.
    pub fn citances(&self) -> &CitanceIndex {
        &self.citances
    }

    /// Where the dense channel's paper vectors live.
    pub fn vectors_dir(&self) -> PathBuf {
        self.dir.join("vectors")
    }

    /// Where the papers' vectors under the citation bi-encoder live (the
    /// citation channel, and the rerank stage's bi-encoder scores).
    pub fn citation_vectors_dir(&self) -> PathBuf {
        self.dir.join("citation-vectors")
    }

    /// Where the papers' stand-in vectors in the citation encoder's space,
    /// written by the student distilled from it, live (for the papers that
    /// have no vector of the citation encoder's own yet).
    pub fn student_vectors_dir(&self) -> PathBuf {
        self.dir.join("citation-vectors-student")
    }

    /// Where the evidence spans' vectors (citation bi-encoder) are kept.
    pub fn span_vectors_dir(&self) -> PathBuf {
        self.evidence_root.join("span-vectors")
    }

    /// The directory of the evidence database (the library's own unless
    /// opened with [`Library::open_with_evidence`]).
    pub fn evidence_root(&self) -> &Path {
        &self.evidence_root
    }
}
