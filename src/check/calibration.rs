//! What a library learned of `check`'s flag from its own citing documents:
//! the support score under which a citation is flagged weak.
//!
//! The shipped threshold ([`MODEL`]) flags 3–4 % of the true citations of
//! the fields it was fitted on. In another field the true citations score
//! lower (ACM-CR, information retrieval / HCI: 10.7 % flagged), and a
//! writer is told that one citation in ten is weak when it is not. The
//! citing sentences of the library's own documents are true citations:
//! scored as a draft's sentence is (without its own document's evidence,
//! as of its year), their scores say where the field's true citations sit.
//! Each sentence counts once, by its best-supported citation: a marker may
//! stand for a group of papers only some of which the sentence cites (a
//! benchmark context gives each of its sentences the whole paragraph's
//! papers), and one of them at least is what it cites.
//! The threshold is lowered to the [`FLAG_SHARE`] quantile of those scores
//! when that lies under the shipped one, and never raised: a library
//! flags no more than the shipped score would.
//!
//! It is one value with one home, [`FILE`] beside the learned fusion (the
//! evidence root); [`scorer`] flags under it, `doctor` shows it.
//! It is learned where the evidence trust is (`import --evidence`, `adapt
//! --fusion`, the front ends' background learning) and turned off with it.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::support::{model_for, Scorer, MODEL};
use crate::error::{Error, Result};
use crate::library::Library;
use crate::pipeline::background::{Learner, Learners};
use crate::pipeline::fusion_learning::{models_changed, moved_little, probes};
use crate::pipeline::{learned_fusion, Recommender};

/// The file, in the library's evidence root.
pub const FILE: &str = "learned-support.json";

/// The share of the library's own citations a learned threshold flags.
pub const FLAG_SHARE: f64 = 0.04;

/// Citing sentences scored, at most (spread over the documents); each is a
/// fused search and the cross-encoder on its citations and alternatives,
/// about 0.15 s on two cores.
pub const SENTENCES: usize = 200;

/// Fewer scored sentences than this teach nothing (a 4 % quantile of fewer
/// is one sentence's score).
pub const MIN_SENTENCES: usize = 50;

/// Fewer citing documents than this teach nothing.
pub const MIN_DOCUMENTS: usize = 3;

/// What was learned, and what it was measured at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LearnedSupport {
    /// The threshold in use (for [`MODEL`]'s scores).
    pub threshold: f32,
    /// The shipped one it was learned against.
    pub shipped_threshold: f32,
    /// Citing sentences scored (each by its best-supported citation), and
    /// the documents they come from.
    pub sentences: usize,
    pub documents: usize,
    /// The shares of those sentences under the shipped threshold and under
    /// the one in use.
    pub flagged_shipped: f64,
    pub flagged: f64,
    /// Evidence spans in the database when it was learned.
    pub spans: u64,
    /// The library's published adaptations it was learned with (the
    /// reranker's scores are the support model's; none: the default models).
    #[serde(default)]
    pub models: Vec<String>,
}

impl LearnedSupport {
    /// The threshold it flags [`MODEL`]'s scores under, while that model
    /// is the one it was learned against (`support::flag_threshold` applies
    /// it to that model's scores alone).
    pub fn in_use(&self) -> Option<f32> {
        (self.shipped_threshold == MODEL.threshold).then_some(self.threshold)
    }

    /// Whether the library flags under a threshold of its own.
    pub fn lowered(&self) -> bool {
        self.threshold < self.shipped_threshold
    }

    /// One line: what `check` flags and what it was learned from.
    pub fn describe(&self) -> String {
        let pct = |x: f64| format!("{:.1} %", 100.0 * x);
        let of = format!("{} citing sentences of {} documents", self.sentences, self.documents);
        if self.lowered() {
            format!(
                "check flags support under {:.3} (learned on {of}: {} of them under the shipped {:.3}, {} under this)",
                self.threshold,
                pct(self.flagged_shipped),
                self.shipped_threshold,
                pct(self.flagged)
            )
        } else {
            format!("check flags support as shipped, under {:.3} (learned on {of}: {} of them under it)", self.threshold, pct(self.flagged))
        }
    }
}

/// What learning came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Learned(LearnedSupport),
    /// Too few citing sentences or documents to learn from.
    TooFew {
        sentences: usize,
        documents: usize,
    },
    /// The models are not installed: the score is the word channels' and
    /// flags nothing.
    NoModels,
}

/// Where the library's learned flag is kept.
pub fn path(lib: &Library) -> PathBuf {
    lib.evidence_root().join(FILE)
}

/// The library's learned flag, if it has one.
pub fn read(lib: &Library) -> Result<Option<LearnedSupport>> {
    crate::library::kept::read(&path(lib))
}

/// The threshold the library flags [`MODEL`]'s scores under (the shipped
/// one when it learned none, or its file does not read: `doctor` says why).
pub fn threshold_of(lib: &Library) -> Option<f32> {
    read(lib).ok().flatten().and_then(|l| l.in_use())
}

/// A scorer over `rec` that flags under the threshold its library learned:
/// what `check` and `eval --check` score with.
pub fn scorer(rec: &Recommender) -> Scorer<'_> {
    Scorer::new(rec).flagging_under(threshold_of(rec.library()))
}

/// Keeps `learned` as the library's (inside the library's write lock).
pub fn save(lib: &Library, learned: &LearnedSupport) -> Result<()> {
    crate::library::kept::save(lib, &path(lib), learned)
}

/// Forgets the library's learned flag (back to the shipped one); true if
/// there was one.
pub fn remove(lib: &Library) -> Result<bool> {
    crate::library::kept::remove(lib, &path(lib))
}

/// Why the library `rec` ranks should learn its flag (again) by itself, if
/// it should: the models are there and it never learned one with evidence
/// in the library, its file does not read, an adaptation was published or
/// removed since, or its evidence moved by
/// `fusion_learning::RELEARN_SHARE` or more. Never while the library's learning is turned
/// off (`adapt --fusion --remove`).
pub fn due(rec: &Recommender) -> Option<String> {
    let lib = rec.library();
    if learned_fusion::is_off(lib) || rec.rerank_stage().is_none() {
        return None;
    }
    let spans = lib.evidence().num_spans();
    match read(lib) {
        Err(e) => Some(format!("the learned flag does not read ({e})")),
        Ok(None) if spans > 0 => Some(format!("{spans} evidence spans, no flag learned yet")),
        Ok(None) => None,
        Ok(Some(l)) => models_changed(&l.models, lib).or_else(|| {
            (l.spans != spans && !moved_little(l.spans, spans)).then(|| format!("learned with {} evidence spans, now {spans}", l.spans))
        }),
    }
}

/// Scores the cited papers of the library's own citing sentences with
/// `rec` (as a draft's are checked: the library's fusion, the sentence's
/// own document set aside) and learns the threshold from them.
/// `on_progress(done, total)` follows the sentences.
pub fn learn(rec: &Recommender, on_progress: &dyn Fn(usize, usize)) -> Result<Outcome> {
    if rec.rerank_stage().is_none() {
        return Ok(Outcome::NoModels);
    }
    let lib = rec.library();
    let (probes, _) = probes(lib, SENTENCES)?;
    let scorer = Scorer::new(rec);
    let mut scores: Vec<f32> = Vec::new();
    let mut documents = std::collections::HashSet::new();
    for (i, probe) in probes.iter().enumerate() {
        on_progress(i, probes.len());
        let mut ids: Vec<String> = Vec::new();
        for id in &probe.cited {
            if lib.papers().paper_by_id(id)?.is_some() {
                ids.push(id.clone());
            }
        }
        ids.sort();
        if ids.is_empty() {
            continue;
        }
        let scored = match scorer.score(probe.query.clone(), &ids) {
            Ok(s) => s,
            Err(Error::InvalidQuery(_)) => continue,
            Err(e) => return Err(e),
        };
        let best = ids
            .iter()
            .filter_map(|id| {
                let others: Vec<String> = ids.iter().filter(|o| *o != id).cloned().collect();
                scored.support(id, &others).filter(|s| *model_for(&s.signals) == MODEL).map(|s| s.score)
            })
            .max_by(f32::total_cmp);
        if let Some(best) = best {
            scores.push(best);
            documents.insert(probe.query.citing.first().cloned().unwrap_or_default());
        }
    }
    on_progress(probes.len(), probes.len());
    if scores.len() < MIN_SENTENCES || documents.len() < MIN_DOCUMENTS {
        return Ok(Outcome::TooFew { sentences: scores.len(), documents: documents.len() });
    }
    let mut learned = from_scores(&scores, documents.len(), lib.evidence().num_spans());
    learned.models = crate::library::adapt::published(lib.dir());
    Ok(Outcome::Learned(learned))
}

/// The flag learned from the scores of the library's own citing sentences.
pub fn from_scores(scores: &[f32], documents: usize, spans: u64) -> LearnedSupport {
    let mut sorted = scores.to_vec();
    sorted.sort_by(f32::total_cmp);
    let at = ((sorted.len() as f64 * FLAG_SHARE) as usize).min(sorted.len().saturating_sub(1));
    let shipped = MODEL.threshold;
    let threshold = sorted.get(at).copied().map_or(shipped, |q| q.min(shipped));
    let under = |t: f32| sorted.iter().filter(|s| **s < t).count() as f64 / sorted.len().max(1) as f64;
    LearnedSupport {
        threshold,
        shipped_threshold: shipped,
        sentences: sorted.len(),
        documents,
        flagged_shipped: under(shipped),
        flagged: under(threshold),
        spans,
        models: Vec::new(),
    }
}

/// Learns the library's flag and keeps it (or, with too few citations,
/// forgets an earlier one: it no longer holds).
pub fn learn_and_keep(rec: &Recommender, on_progress: &dyn Fn(usize, usize)) -> Result<Outcome> {
    let outcome = learn(rec, on_progress)?;
    match &outcome {
        Outcome::Learned(learned) => save(rec.library(), learned)?,
        Outcome::TooFew { .. } => {
            remove(rec.library())?;
        }
        Outcome::NoModels => {}
    }
    Ok(outcome)
}

/// `check`'s flag as the front ends' background work learns it.
struct FlagLearner;

impl Learner for FlagLearner {
    fn label(&self) -> &'static str {
        "where check flags a citation"
    }

    fn due(&self, rec: &Recommender) -> Option<String> {
        due(rec)
    }

    fn learn(&self, rec: &Recommender, on_progress: &dyn Fn(usize, usize)) -> Result<Option<(usize, String)>> {
        Ok(match learn_and_keep(rec, on_progress)? {
            Outcome::Learned(l) => Some((l.sentences, l.describe())),
            Outcome::TooFew { .. } | Outcome::NoModels => None,
        })
    }
}

/// What a front end hands its background work to learn after the trust.
pub fn learners() -> Learners {
    Learners(vec![std::sync::Arc::new(FlagLearner)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threshold_is_lowered_to_the_libraries_own_quantile_and_never_raised() {
        // A field whose true citations score low: a tenth under the shipped threshold.
        let low: Vec<f32> = (0..100).map(|i| MODEL.threshold * 0.5 + i as f32 * 0.01).collect();
        let l = from_scores(&low, 5, 1000);
        assert!(l.lowered() && l.threshold < MODEL.threshold, "{l:?}");
        assert_eq!(l.threshold, low[4], "the 4 % quantile");
        assert!((l.flagged - 0.04).abs() < 1e-9 && l.flagged_shipped > 0.1, "{l:?}");
        let (full, words) = (super::super::support::Signals { cross_encoder: Some(0.5), ..Default::default() }, Default::default());
        assert_eq!(super::super::support::flag_threshold(&full, l.in_use()), l.threshold);
        assert_eq!(super::super::support::flag_threshold(&words, l.in_use()), 0.0, "the word channels' score still flags nothing");
        assert!(l.describe().contains("under the shipped"), "{}", l.describe());
        // A field whose true citations score high keeps the shipped one.
        let high: Vec<f32> = (0..100).map(|i| 0.5 + i as f32 * 0.004).collect();
        let h = from_scores(&high, 5, 1000);
        assert_eq!(h.threshold, MODEL.threshold);
        assert!(!h.lowered() && h.flagged == 0.0, "{h:?}");
        assert!(h.describe().contains("as shipped"), "{}", h.describe());
    }

    #[test]
    fn a_kept_flag_reads_back_and_a_damaged_one_is_the_shipped_threshold() {
        let dir = tempfile::tempdir().unwrap();
        let lib = Library::open_or_create(dir.path()).unwrap();
        assert_eq!(read(&lib).unwrap(), None);
        let l = from_scores(&(0..60).map(|i| 0.01 * i as f32).collect::<Vec<_>>(), 4, 10);
        save(&lib, &l).unwrap();
        assert_eq!(read(&lib).unwrap(), Some(l.clone()));
        assert_eq!(threshold_of(&lib), Some(l.threshold));
        std::fs::write(path(&lib), "{ not json").unwrap();
        assert!(read(&lib).unwrap_err().to_string().contains(FILE));
        assert_eq!(threshold_of(&lib), None);
        assert!(remove(&lib).unwrap() && !remove(&lib).unwrap());
    }
}
