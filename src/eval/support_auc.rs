//! How well the support score of `citewise check` tells a true citation
//! from a swapped one: for each held-out context and its cited paper, the
//! true citation, (a) a random library paper, (b) a hard swap — a paper the
//! fused list ranks in its top 20 for the sentence that the context does not
//! cite. ROC-AUC of true against each swap, and the share of each flagged
//! weak. Also fits the support model (`--fit`) on a split's items.

use rand::seq::IndexedRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::harness::query_at;
use crate::check::support::{features, flag_threshold, model_for, Alternatives, Signals, SupportModel, FEATURES, SUPPORT_DEPTH};
use crate::corpus::benchmark::CitationContext;
use crate::error::Result;
use crate::pipeline::Recommender;

/// The hard swap is drawn from the fused list's top this many.
pub const HARD_FROM: usize = 20;

/// One scored pair.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckItem {
    pub context: String,
    pub source: String,
    /// `true`, `random` or `hard`.
    pub variant: String,
    pub paper: String,
    pub signals: Signals,
    /// The alternatives' signals (the sentence's best fused papers other
    /// than this one), so that features can be computed again offline.
    #[serde(default)]
    pub others: Vec<Signals>,
    /// Computed again when read back ([`CheckItem::rescored`]).
    #[serde(default, skip_deserializing)]
    pub features: [f32; FEATURES],
    pub score: f32,
}

impl CheckItem {
    /// The item with its features and score computed again by the current
    /// [`features`] and `model` (none: the model that fits its signals).
    pub fn rescored(mut self, model: Option<&SupportModel>) -> CheckItem {
        self.features = features(&self.signals, &self.others);
        self.score = model.unwrap_or_else(|| model_for(&self.signals)).score(&self.features);
        self
    }
}

/// The figures of one evaluation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckEval {
    pub contexts: usize,
    pub auc_random: f64,
    pub auc_hard: f64,
    /// Shares flagged weak at each model's threshold.
    pub flagged_true: f64,
    pub flagged_random: f64,
    pub flagged_hard: f64,
    /// The threshold the library learned for the full model's scores
    /// (`check::calibration`; none: the shipped ones).
    #[serde(default)]
    pub learned_threshold: Option<f32>,
    pub items: Vec<CheckItem>,
}

/// Scores every context's true citation and its two swaps.
pub fn evaluate_check(rec: &Recommender, contexts: &[CitationContext], library_ids: &[String], on_done: &dyn Fn()) -> Result<CheckEval> {
    let scorer = crate::check::calibration::scorer(rec);
    let papers = rec.library().papers();
    let mut rng = rand::rngs::StdRng::seed_from_u64(0xc4ec);
    let mut items = Vec::new();
    let mut counted = 0;
    for c in contexts {
        on_done();
        let Some(truth) = c.cited.iter().find(|id| papers.paper_by_id(id).ok().flatten().is_some()).cloned() else { continue };
        let query = query_at(c, false, SUPPORT_DEPTH);
        let Ok((prepared, fused)) = scorer.fused(query) else { continue };
        let hard: Vec<&str> =
            fused.iter().take(HARD_FROM).filter(|f| !f.records().any(|r| c.cited.iter().any(|x| x == r))).map(|f| f.id.as_str()).collect();
        let Some(hard) = hard.choose(&mut rng).map(|s| s.to_string()) else { continue };
        let random = (0..100).filter_map(|_| library_ids.choose(&mut rng)).find(|r| !c.cited.contains(r)).cloned();
        let Some(random) = random else { continue };
        let ids = [truth.clone(), random.clone(), hard.clone()];
        let scored = scorer.score_fused(&prepared, fused, &ids, Alternatives::AnyOther)?;
        counted += 1;
        for (variant, id) in [("true", &truth), ("random", &random), ("hard", &hard)] {
            let Some(own) = scored.signals.get(id) else { continue };
            let others: Vec<Signals> = scored.alternatives(id, &[]).iter().filter_map(|a| scored.signals.get(*a).copied()).collect();
            let f = features(own, &others);
            let score = model_for(own).score(&f);
            items.push(CheckItem {
                context: c.id.clone(),
                source: c.source.clone(),
                variant: variant.into(),
                paper: id.clone(),
                signals: *own,
                others,
                features: f,
                score,
            });
        }
    }
    Ok(summarise(counted, items, None, scorer.learned_threshold()))
}

/// AUCs and flagged shares of scored items, flagged under `threshold`
/// (none: the threshold of the model that fits each item's signals, or
/// `learned`, the library's, for the full model's).
pub fn summarise(contexts: usize, items: Vec<CheckItem>, threshold: Option<f32>, learned: Option<f32>) -> CheckEval {
    let scores = |v: &str| items.iter().filter(|i| i.variant == v).map(|i| i.score).collect::<Vec<f32>>();
    let flagged = |v: &str| {
        let of: Vec<&CheckItem> = items.iter().filter(|i| i.variant == v).collect();
        let below = |i: &&&CheckItem| i.score < threshold.unwrap_or_else(|| flag_threshold(&i.signals, learned));
        of.iter().filter(below).count() as f64 / of.len().max(1) as f64
    };
    let (t, r, h) = (scores("true"), scores("random"), scores("hard"));
    CheckEval {
        contexts,
        auc_random: auc(&t, &r),
        auc_hard: auc(&t, &h),
        flagged_true: flagged("true"),
        flagged_random: flagged("random"),
        flagged_hard: flagged("hard"),
        learned_threshold: learned,
        items,
    }
}

/// ROC-AUC: the chance that a positive scores above a negative (ties half).
pub fn auc(pos: &[f32], neg: &[f32]) -> f64 {
    if pos.is_empty() || neg.is_empty() {
        return f64::NAN;
    }
    let mut wins = 0.0;
    for p in pos {
        for n in neg {
            wins += if p > n {
                1.0
            } else if p == n {
                0.5
            } else {
                0.0
            };
        }
    }
    wins / (pos.len() * neg.len()) as f64
}

/// Fits a logistic support model on items (true against both swaps, the
/// classes weighed equally) over the features `used` (others fixed at 0),
/// with its threshold at the `flag_share` quantile of the true citations'
/// scores in the group (a field, a split) where that quantile is lowest, so
/// that no group has more of its true citations flagged.
pub fn fit(groups: &[&[CheckItem]], used: &[usize], flag_share: f64) -> SupportModel {
    let items: Vec<CheckItem> = groups.iter().flat_map(|g| g.iter().cloned()).collect();
    let data: Vec<(&[f32; FEATURES], f32, f32)> = {
        let items = &items;
        let pos = items.iter().filter(|i| i.variant == "true").count().max(1) as f32;
        let neg = items.iter().filter(|i| i.variant != "true").count().max(1) as f32;
        items.iter().map(|i| if i.variant == "true" { (&i.features, 1.0, 0.5 / pos) } else { (&i.features, 0.0, 0.5 / neg) }).collect()
    };
    let mut model = SupportModel { bias: 0.0, weights: [0.0; FEATURES], threshold: 0.5 };
    let (rate, l2) = (2.0, 1e-3);
    for _ in 0..4000 {
        let mut grad = [0.0f32; FEATURES];
        let mut grad_b = 0.0;
        for (x, y, w) in &data {
            let err = (model.score(x) - y) * w;
            grad_b += err;
            for &j in used {
                grad[j] += err * x[j];
            }
        }
        model.bias -= rate * grad_b;
        for &j in used {
            model.weights[j] -= rate * (grad[j] + l2 * model.weights[j]);
        }
    }
    let quantile = |group: &[CheckItem]| {
        let mut scores: Vec<f32> = group.iter().filter(|i| i.variant == "true").map(|i| model.score(&i.features)).collect();
        scores.sort_by(f32::total_cmp);
        let at = ((scores.len() as f64 * flag_share) as usize).min(scores.len().saturating_sub(1));
        scores.get(at).copied()
    };
    model.threshold = groups.iter().filter_map(|g| quantile(g)).fold(f32::INFINITY, f32::min);
    if model.threshold.is_infinite() {
        model.threshold = 0.5;
    }
    model
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auc_counts_pairs_and_ties() {
        assert_eq!(auc(&[0.9, 0.8], &[0.1, 0.2]), 1.0);
        assert_eq!(auc(&[0.1], &[0.9]), 0.0);
        assert_eq!(auc(&[0.5], &[0.5]), 0.5);
        assert_eq!(auc(&[0.9, 0.3], &[0.5]), 0.5);
    }

    #[test]
    fn a_fitted_model_separates_what_its_features_separate() {
        let item = |variant: &str, x: f32| CheckItem {
            context: String::new(),
            source: String::new(),
            variant: variant.into(),
            paper: String::new(),
            signals: Signals::default(),
            others: Vec::new(),
            features: [x, 0.0, 0.0, 0.0, 0.0],
            score: 0.0,
        };
        let mut items: Vec<CheckItem> = (0..50).map(|i| item("true", 0.5 + i as f32 / 100.0)).collect();
        items.extend((0..50).map(|i| item("hard", i as f32 / 100.0)));
        let m = fit(&[&items], &[0], 0.04);
        assert!(m.weights[0] > 0.0 && m.weights[1..].iter().all(|w| *w == 0.0), "{m:?}");
        let flagged = items.iter().filter(|i| i.variant == "true" && m.score(&i.features) < m.threshold).count();
        assert_eq!(flagged, 2, "4 % of 50 true citations under the threshold");
    }
}
