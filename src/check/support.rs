//! How well a cited paper supports its sentence: a score in [0, 1] from
//! every signal the pipeline has for the pair, each beside the same signal
//! of the papers that fit the sentence best (the alternatives) — the fused
//! rank among the library, the BM25 rank, the cross-encoder's probability,
//! the citation encoder's cosine and the best cosine of the sentence to
//! what others cited the paper for. A logistic model over them, fitted on
//! the benchmark's `val` split and a field held out of it
//! (`citewise eval --fit-support`), turns them into the score.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::pipeline::{Candidate, ChannelId, Prepared, Query, Recommender};

/// How deep the fused list is read for a paper's rank among the library.
pub const SUPPORT_DEPTH: usize = 100;

/// The papers a cited one is compared with (and offered instead).
pub const ALTERNATIVES: usize = 3;

/// What the pipeline says of one paper for one sentence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Signals {
    /// Rank in the fused list (none: below [`SUPPORT_DEPTH`]).
    pub rank: Option<usize>,
    /// Rank in BM25's own list.
    pub bm25_rank: Option<usize>,
    /// The cross-encoder's probability (none: not installed).
    pub cross_encoder: Option<f32>,
    /// The citation encoder's cosine.
    pub citation: Option<f32>,
    /// The best cosine of the sentence to a span citing the paper (none:
    /// no span cites it).
    pub cited_for: Option<f32>,
}

/// The number of features of a pair.
pub const FEATURES: usize = 5;

/// The features of a paper's signals beside the alternatives' signals: its
/// rank gain in the fused list (`1/log2(1 + rank)`, 0 below the depth), the
/// cross-encoder's margin over the best alternative and the share of the
/// alternatives it beats, and the same two for the citation encoder's
/// cosine. Chosen on three fields (the benchmark's `val`, and `scicite` and
/// `acl-arc` held out of the evidence), each fitted on the other two: the
/// models' own scores (not their margins), BM25's rank and cited-for's
/// cosine told true citations from hard swaps in the evidence's own field
/// and worse outside it (mean AUC against hard swaps 0.744 with these five,
/// 0.697 with the scores and cited-for as well).
pub fn features(own: &Signals, others: &[Signals]) -> [f32; FEATURES] {
    let gain = |r: Option<usize>| r.map_or(0.0, |r| 1.0 / (1.0 + r as f32).log2());
    let best = |f: fn(&Signals) -> Option<f32>| others.iter().filter_map(f).fold(None, |m: Option<f32>, x| Some(m.map_or(x, |m| m.max(x))));
    let margin = |own: Option<f32>, best: Option<f32>| own.map_or(0.0, |o| o - best.unwrap_or(0.0));
    let beaten = |own: Option<f32>, f: fn(&Signals) -> Option<f32>| match own {
        Some(o) if !others.is_empty() => others.iter().filter(|s| f(s).unwrap_or(0.0) < o).count() as f32 / others.len() as f32,
        _ => 0.0,
    };
    let (ce, cos) = (own.cross_encoder, own.citation);
    [
        gain(own.rank),
        margin(ce, best(|s| s.cross_encoder)),
        margin(cos, best(|s| s.citation)),
        beaten(ce, |s| s.cross_encoder),
        beaten(cos, |s| s.citation),
    ]
}

/// A logistic model of support over [`features`], with the threshold below
/// which a citation is flagged weak.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SupportModel {
    pub bias: f32,
    pub weights: [f32; FEATURES],
    pub threshold: f32,
}

impl SupportModel {
    pub fn score(&self, f: &[f32; FEATURES]) -> f32 {
        let z = self.bias + self.weights.iter().zip(f).map(|(w, x)| w * x).sum::<f32>();
        1.0 / (1.0 + (-z).exp())
    }
}

/// The model when the cross-encoder and the citation encoder ran, fitted
/// by `citewise eval --fit-support` on three fields, never on `test`: 500
/// contexts of the benchmark's `val` split and 600 each of `scicite` and
/// `acl-arc` held out of the evidence database (`scripts/dev-split.py
/// --hold-out`), true citations against random and hard swaps, the fields
/// weighed alike. The threshold is the 4 % quantile of the true
/// citations' scores in the field where that is lowest (`acl-arc`, 3.8 %
/// flagged): 2.6 % of `val`'s are flagged, 3.2 % of `scicite`'s. AUC true vs random / hard: `val` 0.966 / 0.761, `scicite`
/// 0.976 / 0.825, `acl-arc` 0.941 / 0.689.
pub const MODEL: SupportModel = SupportModel { bias: -0.2299, weights: [1.1273, 3.4252, 2.2147, 1.2842, 0.1821], threshold: 0.2203 };

/// The model on the word channels alone (no models installed): the rank
/// gain, fitted as [`MODEL`] (AUC true vs random / hard: `val` 0.882 /
/// 0.585). It scores but never flags: a true citation falls below the fused
/// list's depth about as often as a wrong one (its gain 0), so a threshold
/// that flags a wrong paper flags a fifth of the true ones.
pub const WORDS_MODEL: SupportModel = SupportModel { bias: -0.7492, weights: [2.5478, 0.0, 0.0, 0.0, 0.0], threshold: 0.0 };

/// The model that fits what ran for a pair.
pub fn model_for(s: &Signals) -> &'static SupportModel {
    if s.cross_encoder.is_some() {
        &MODEL
    } else {
        &WORDS_MODEL
    }
}

/// The score under which a pair with signals `s` is flagged weak: the
/// library's learned threshold for [`MODEL`]'s scores (`learned`, from
/// [`super::calibration`]), else the threshold of the model that fits.
pub fn flag_threshold(s: &Signals, learned: Option<f32>) -> f32 {
    let model = model_for(s);
    match learned {
        Some(t) if *model == MODEL => t,
        _ => model.threshold,
    }
}

/// A paper's support for a sentence.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Support {
    pub score: f32,
    pub weak: bool,
    pub signals: Signals,
}

/// The signals of a sentence's papers and of the papers that fit it best.
#[derive(Debug, Clone)]
pub struct Scored {
    /// The fused list (one entry per work).
    pub fused: Vec<Candidate>,
    /// The alternatives' ids, best fused first.
    pub top: Vec<String>,
    /// The records of each of `top` (its own id and its work's others).
    pub works: HashMap<String, Vec<String>>,
    pub signals: HashMap<String, Signals>,
    /// The sentence's analysed terms (for abstracts) and span terms (for
    /// evidence), as the pipeline prepared them.
    pub terms: Vec<String>,
    pub span_terms: Vec<String>,
    /// The threshold the library learned for [`MODEL`]'s scores
    /// ([`super::calibration`]; none: the shipped one).
    pub learned_threshold: Option<f32>,
}

impl Scored {
    /// The support of paper `id`, beside the best [`ALTERNATIVES`] papers
    /// that are neither it nor one of `excluded` (the sentence's other
    /// cited papers).
    pub fn support(&self, id: &str, excluded: &[String]) -> Option<Support> {
        let own = self.signals.get(id)?;
        let others: Vec<Signals> = self.alternatives(id, excluded).iter().filter_map(|a| self.signals.get(*a).copied()).collect();
        let score = model_for(own).score(&features(own, &others));
        Some(Support { score, weak: score < flag_threshold(own, self.learned_threshold), signals: *own })
    }

    /// The best [`ALTERNATIVES`] papers for the sentence other than `id`
    /// and `excluded`.
    pub fn alternatives(&self, id: &str, excluded: &[String]) -> Vec<&str> {
        let other = |t: &&String| self.works.get(*t).is_none_or(|records| records.iter().all(|r| r != id && !excluded.contains(r)));
        self.top.iter().filter(|t| *t != id && !excluded.contains(t)).filter(other).map(String::as_str).take(ALTERNATIVES).collect()
    }
}

/// Which fused papers are the alternatives of each scored paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alternatives {
    /// The best papers the sentence does not cite (a check: the scored
    /// papers are the sentence's citations).
    NotCited,
    /// The best papers other than the one scored (an evaluation: the
    /// scored papers are a true citation and its swaps, and the true one
    /// is an alternative of each swap).
    AnyOther,
}

/// Scores papers for sentences with a recommender's stages, and flags them
/// under a threshold (the shipped one, or the one its library learned).
pub struct Scorer<'a> {
    rec: &'a Recommender,
    learned_threshold: Option<f32>,
}

impl<'a> Scorer<'a> {
    /// A scorer that flags under the shipped thresholds
    /// ([`super::calibration::scorer`] flags under the library's).
    pub fn new(rec: &'a Recommender) -> Scorer<'a> {
        Scorer { rec, learned_threshold: None }
    }

    /// The same, flagging [`MODEL`]'s scores under `learned` (none: the
    /// shipped threshold).
    pub fn flagging_under(self, learned: Option<f32>) -> Scorer<'a> {
        Scorer { learned_threshold: learned, ..self }
    }

    /// The threshold the library learned for [`MODEL`]'s scores, if any.
    pub fn learned_threshold(&self) -> Option<f32> {
        self.learned_threshold
    }

    /// The signals of `ids` (library ids: the papers a sentence cites) and
    /// of the sentence's best [`ALTERNATIVES`] other fused papers for
    /// `query` (its `k` is set to [`SUPPORT_DEPTH`]).
    pub fn score(&self, query: Query, ids: &[String]) -> Result<Scored> {
        let (prepared, fused) = self.fused(query)?;
        self.score_fused(&prepared, fused, ids, Alternatives::NotCited)
    }

    /// The query prepared and its fused list, [`SUPPORT_DEPTH`] deep.
    pub fn fused(&self, query: Query) -> Result<(Prepared, Vec<Candidate>)> {
        let prepared = self.rec.prepare(&query.with_k(SUPPORT_DEPTH))?;
        let fused = self.rec.fused(&prepared)?;
        Ok((prepared, fused))
    }

    /// [`Scorer::score`] on a fused list already made, with the
    /// alternatives `alternatives` says.
    pub fn score_fused(&self, prepared: &Prepared, fused: Vec<Candidate>, ids: &[String], alternatives: Alternatives) -> Result<Scored> {
        let rank_of = |id: &str| fused.iter().position(|c| c.records().any(|r| r == id));
        let is_one_of_ids = |c: &&Candidate| c.records().any(|r| ids.iter().any(|i| i == r));
        let top: Vec<&Candidate> = match alternatives {
            Alternatives::NotCited => fused.iter().filter(|c| !is_one_of_ids(c)).take(ALTERNATIVES).collect(),
            // Deep enough that `ALTERNATIVES` are left for each of `ids`.
            Alternatives::AnyOther => fused.iter().take(ALTERNATIVES + ids.len()).collect(),
        };
        let works: HashMap<String, Vec<String>> = top.iter().map(|c| (c.id.clone(), c.records().map(String::from).collect())).collect();
        let top: Vec<String> = top.iter().map(|c| c.id.clone()).collect();
        let mut seen = std::collections::HashSet::new();
        let members: Vec<String> = ids.iter().chain(&top).filter(|m| seen.insert(m.as_str())).cloned().collect();
        let mut signals: HashMap<String, Signals> = HashMap::new();
        for id in &members {
            let at = rank_of(id);
            let bm25 = at.and_then(|i| fused[i].channels.iter().find(|s| s.channel == ChannelId::Bm25)).map(|s| s.rank);
            signals.insert(id.clone(), Signals { rank: at.map(|i| i + 1), bm25_rank: bm25, ..Signals::default() });
        }
        self.model_signals(prepared, &members, &mut signals)?;
        Ok(Scored {
            fused,
            top,
            works,
            signals,
            terms: prepared.terms.clone(),
            span_terms: prepared.span_terms.clone(),
            learned_threshold: self.learned_threshold,
        })
    }

    /// The cross-encoder's, the citation encoder's and cited-for's signals
    /// of `members` that have a library record (when the models are there).
    fn model_signals(&self, prepared: &Prepared, members: &[String], signals: &mut HashMap<String, Signals>) -> Result<()> {
        let Some(stage) = self.rec.rerank_stage() else { return Ok(()) };
        let library = self.rec.library();
        let mut candidates = Vec::new();
        for id in members {
            if let Some(p) = library.papers().paper_by_id(id)? {
                let mut c = Candidate::new(id.clone());
                c.paper = Some(p);
                candidates.push(c);
            }
        }
        if candidates.is_empty() {
            return Ok(());
        }
        let s = stage.score(library, prepared, &candidates, true, true)?;
        for (i, c) in candidates.iter().enumerate() {
            let entry = signals.entry(c.id.clone()).or_default();
            entry.cross_encoder = s.rerank.get(i).copied();
            entry.citation = s.citation.as_ref().and_then(|v| v.get(i).copied());
            entry.cited_for = s.cited_for.get(i).copied().flatten();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_compare_a_paper_with_the_alternatives() {
        let own = Signals { rank: Some(1), bm25_rank: Some(3), cross_encoder: Some(0.9), citation: Some(0.5), cited_for: None };
        let alt = Signals { rank: Some(2), bm25_rank: None, cross_encoder: Some(0.4), citation: Some(0.7), cited_for: Some(0.6) };
        let f = features(&own, &[alt, Signals { cross_encoder: Some(0.2), ..Signals::default() }]);
        assert_eq!(f[0], 1.0, "rank 1: full gain");
        assert!((f[1] - 0.5).abs() < 1e-6, "0.9 over the best alternative's 0.4");
        assert!((f[2] + 0.2).abs() < 1e-6, "0.5 under the best alternative's 0.7");
        assert_eq!((f[3], f[4]), (1.0, 0.5), "beats both alternatives' cross-encoder scores, one of their cosines");
        let words = Signals { rank: Some(1), bm25_rank: Some(1), ..Signals::default() };
        assert_eq!(*model_for(&words), WORDS_MODEL);
        assert!(WORDS_MODEL.score(&features(&words, &[])) > WORDS_MODEL.score(&features(&Signals::default(), &[])));
    }
}
