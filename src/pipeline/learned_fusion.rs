//! What a library learned of its own fusion from its citing documents, as
//! one value with one home: how far its evidence is trusted
//! ([`Fusion::evidence_trust`]) and whether the rerank stage speaks where
//! the evidence opens its gate, with what each was measured at. It lives in
//! [`FILE`] beside the evidence it was learned from (the evidence root) and
//! every front end ranks with it through [`fusion_of`]
//! ([`super::Settings::of_library`]); `doctor` shows it. How it is learned
//! is [`super::fusion_learning`]'s.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::fusion::Fusion;
use crate::error::Result;
use crate::library::Library;
use crate::ranking::Paired;

/// The file, in the library's evidence root.
pub const FILE: &str = "learned-fusion.json";

/// Beside it: present while the library's learning is turned off (`adapt
/// --fusion --remove`): nothing learns its trust by itself until `adapt
/// --fusion` does by hand.
pub const OFF_FILE: &str = "learned-fusion.off";

/// The level of the bootstrap interval a learned change must clear (its
/// lower end above 0).
pub const LEVEL: f64 = 0.9;

/// R@10 and MRR of the fused list over the sentences searched.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Figures {
    pub recall10: f64,
    pub mrr: f64,
}

/// What was learned, and what it was measured at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedFusion {
    /// The trust in use: the best one when it beat the shipped one beyond
    /// chance, else 1.
    pub evidence_trust: f32,
    /// The best trust found (in use or not).
    pub best_trust: f32,
    /// Citing sentences searched, and the documents they come from.
    pub sentences: usize,
    pub documents: usize,
    /// Evidence spans in the database when it was learned.
    pub spans: u64,
    /// The channels whose lists were fused (a channel whose vectors came
    /// later changes what the evidence is weighed against).
    #[serde(default)]
    pub channels: Vec<String>,
    /// The library's published adaptations it was learned with
    /// ([`crate::library::adapt::published`]; none: the default models).
    #[serde(default)]
    pub models: Vec<String>,
    /// The shipped fusion's figures and the best trust's.
    pub shipped: Figures,
    pub best: Figures,
    /// The best trust's gain over the shipped one in the per-sentence mean
    /// of R@10 and reciprocal rank, with its bootstrap interval.
    pub gain: Paired,
    /// Each trust tried, with its figures.
    pub tried: Vec<(f32, Figures)>,
    /// The rerank stage against the fused order at the trust in use (none:
    /// the library has no rerank stage to try).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<RerankCheck>,
}

/// The rerank stage tried on the library's own sentences.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerankCheck {
    /// Whether it speaks (it ordered the sentences no worse than the fused list).
    pub kept: bool,
    /// Sentences answered both ways.
    #[serde(default)]
    pub sentences: usize,
    pub fused: Figures,
    pub reranked: Figures,
    /// The reranked order's gain over the fused one (per-sentence mean of
    /// R@10 and reciprocal rank), with its bootstrap interval.
    pub gain: Paired,
}

impl LearnedFusion {
    /// Whether the learned trust is in use (it differs from the shipped one).
    pub fn adopted(&self) -> bool {
        self.evidence_trust != 1.0
    }

    /// Whether the rerank stage was found to order the library's sentences
    /// worse than the fused list (then it does not speak).
    pub fn rerank_off(&self) -> bool {
        self.rerank.as_ref().is_some_and(|r| !r.kept)
    }

    /// The shipped fusion with what was learned.
    pub fn fusion(&self) -> Fusion {
        let shipped = Fusion::default();
        Fusion {
            evidence_trust: self.evidence_trust,
            // The evidence's confidence never exceeds 1: the stage never runs.
            rerank_min_evidence: if self.rerank_off() { 1.0 } else { shipped.rerank_min_evidence },
            ..shipped
        }
    }

    /// One line for `doctor` and the import's summary.
    pub fn describe(&self) -> String {
        let measured = format!(
            "on {} citing sentences of {} documents, R@10 {:.3} → {:.3}, MRR {:.3} → {:.3} (gain {:+.3}, {:.0} % interval {:+.3}..{:+.3})",
            self.sentences,
            self.documents,
            self.shipped.recall10,
            self.best.recall10,
            self.shipped.mrr,
            self.best.mrr,
            self.gain.diff,
            100.0 * LEVEL,
            self.gain.lo,
            self.gain.hi
        );
        let trust = if self.adopted() {
            format!("evidence trusted at {} (learned {measured})", self.evidence_trust)
        } else {
            format!("evidence trusted as shipped (best trust {} not beyond chance {measured})", self.best_trust)
        };
        match &self.rerank {
            Some(r) => format!(
                "{trust}; rerank stage {} (on {} of them, R@10 {:.3} → {:.3}, MRR {:.3} → {:.3} over the fused order, gain {:+.3}, interval {:+.3}..{:+.3})",
                if r.kept { "on" } else { "off: it ordered them worse than the fused list" },
                r.sentences,
                r.fused.recall10,
                r.reranked.recall10,
                r.fused.mrr,
                r.reranked.mrr,
                r.gain.diff,
                r.gain.lo,
                r.gain.hi
            ),
            None => trust,
        }
    }
}

/// Where the library's learned fusion is kept.
pub fn path(lib: &Library) -> PathBuf {
    lib.evidence_root().join(FILE)
}

/// The library's learned fusion, if it has one.
pub fn read(lib: &Library) -> Result<Option<LearnedFusion>> {
    crate::library::kept::read(&path(lib))
}

/// The fusion a library ranks with: the shipped one, with the evidence
/// trust the library learned (a file that cannot be read is the shipped
/// fusion; `doctor` says why).
pub fn fusion_of(lib: &Library) -> Fusion {
    read(lib).ok().flatten().map_or_else(Fusion::default, |l| l.fusion())
}

/// Keeps `learned` as the library's (inside the library's write lock).
pub fn save(lib: &Library, learned: &LearnedFusion) -> Result<()> {
    crate::library::kept::save(lib, &path(lib), learned)
}

/// Forgets the library's learned fusion (back to the shipped one); true if
/// there was one.
pub fn remove(lib: &Library) -> Result<bool> {
    crate::library::kept::remove(lib, &path(lib))
}

/// Whether the library's learning is turned off ([`OFF_FILE`]).
pub fn is_off(lib: &Library) -> bool {
    std::fs::symlink_metadata(lib.evidence_root().join(OFF_FILE)).is_ok()
}

/// Turns the library's learning off: forgets what it learned (true if it
/// had learned something), and nothing learns it again by itself.
pub fn turn_off(lib: &Library) -> Result<bool> {
    let off = lib.evidence_root().join(OFF_FILE);
    let had = remove(lib)?;
    lib.writing().during(|| {
        crate::util::write_atomic(&off, b"the evidence trust is not learned by itself; `citewise adapt --fusion` learns it\n")
    })?;
    Ok(had)
}

/// Turns the library's learning on again (`adapt --fusion`).
pub fn turn_on(lib: &Library) -> Result<()> {
    crate::library::kept::remove(lib, &lib.evidence_root().join(OFF_FILE)).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[cfg(unix)]
    #[test]
    fn a_named_pipe_or_a_damaged_file_where_the_learned_fusion_lives_is_the_shipped_fusion() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::open_or_create(dir.path()).unwrap();
        assert_eq!(read(&lib).unwrap(), None);
        std::fs::write(path(&lib), "{ not json").unwrap();
        assert!(matches!(read(&lib), Err(Error::Corrupt { .. })), "a damaged file says so");
        assert_eq!(fusion_of(&lib), Fusion::default());
        std::fs::remove_file(path(&lib)).unwrap();
        let c = std::ffi::CString::new(path(&lib).to_str().unwrap()).unwrap();
        // SAFETY: a plain system call on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Refused without waiting for a writer that never comes.
        let err = read(&lib).unwrap_err();
        assert!(err.to_string().contains("not a regular file (a named pipe)"), "{err}");
        assert_eq!(fusion_of(&lib), Fusion::default());
    }

    #[cfg(unix)]
    #[test]
    fn the_off_marker_is_never_read_a_named_pipe_there_only_turns_learning_off() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::open_or_create(dir.path()).unwrap();
        assert!(!is_off(&lib));
        let off = lib.evidence_root().join(OFF_FILE);
        let c = std::ffi::CString::new(off.to_str().unwrap()).unwrap();
        // SAFETY: a plain system call on a path this test owns.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(is_off(&lib), "seen without opening it (no writer ever comes)");
        turn_on(&lib).unwrap();
        assert!(!is_off(&lib) && std::fs::symlink_metadata(&off).is_err());
        assert!(!turn_off(&lib).unwrap(), "nothing learned to forget");
        assert!(std::fs::metadata(&off).unwrap().is_file());
    }
}
