//! Ranking metrics for one query and their averages.
//!
//! With several relevant papers, Recall@K is the fraction of them in the top
//! K and MRR uses the first relevant hit (both from [`crate::ranking`], which
//! the trainers' validation shares), and nDCG@10 uses binary gains with the
//! ideal DCG of min(10, |relevant|) hits.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

pub use crate::ranking::{paired_bootstrap, quantile, Paired};
use crate::ranking::{recall_at, reciprocal_rank};

/// The cut-offs reported for recall.
pub const RECALL_AT: [usize; 7] = [1, 5, 10, 20, 100, 200, 500];

/// Metrics of one ranked list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Scores {
    /// Recall at each cut-off of [`RECALL_AT`].
    pub recall: [f64; 7],
    pub mrr: f64,
    pub ndcg10: f64,
}

/// Scores a ranked list (best first) against the relevant set.
pub fn score(ranked: &[String], relevant: &HashSet<String>) -> Scores {
    if relevant.is_empty() {
        return Scores::default();
    }
    let recall = RECALL_AT.map(|k| recall_at(ranked, relevant, k));
    let mrr = reciprocal_rank(ranked, |id| relevant.contains(id));
    let hit_ranks: Vec<usize> = ranked.iter().enumerate().filter(|(_, id)| relevant.contains(*id)).map(|(i, _)| i).collect();
    let dcg: f64 = hit_ranks.iter().filter(|&&r| r < 10).map(|&r| 1.0 / ((r + 2) as f64).log2()).sum();
    let ideal: f64 = (0..relevant.len().min(10)).map(|i| 1.0 / ((i + 2) as f64).log2()).sum();
    Scores { recall, mrr, ndcg10: dcg / ideal }
}

/// Running mean of [`Scores`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Mean {
    pub n: usize,
    pub sum: Scores,
}

impl Mean {
    pub fn add(&mut self, s: &Scores) {
        self.n += 1;
        for i in 0..RECALL_AT.len() {
            self.sum.recall[i] += s.recall[i];
        }
        self.sum.mrr += s.mrr;
        self.sum.ndcg10 += s.ndcg10;
    }

    pub fn mean(&self) -> Scores {
        let n = self.n.max(1) as f64;
        let mut m = self.sum;
        m.recall.iter_mut().for_each(|r| *r /= n);
        m.mrr /= n;
        m.ndcg10 /= n;
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }
    fn set(v: &[&str]) -> HashSet<String> {
        v.iter().map(|s| s.to_string()).collect()
    }
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn single_relevant_at_rank_three() {
        let s = score(&ids(&["a", "b", "c", "d"]), &set(&["c"]));
        assert_eq!(s.recall, [0.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        assert!(close(s.mrr, 1.0 / 3.0));
        // DCG = 1/log2(4) = 0.5; ideal = 1.
        assert!(close(s.ndcg10, 0.5));
    }

    #[test]
    fn two_relevant_one_found() {
        // Relevant {b, z}; b at rank 2, z missing.
        let s = score(&ids(&["a", "b", "c"]), &set(&["b", "z"]));
        assert_eq!(s.recall, [0.0, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5]);
        assert!(close(s.mrr, 0.5));
        // DCG = 1/log2(3); ideal = 1 + 1/log2(3).
        let expect = (1.0 / 3f64.log2()) / (1.0 + 1.0 / 3f64.log2());
        assert!(close(s.ndcg10, expect));
    }

    #[test]
    fn beyond_cutoffs_and_missing() {
        let mut ranked: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
        ranked[14] = "hit".into();
        ranked[150] = "deep".into();
        let s = score(&ranked, &set(&["hit"]));
        assert_eq!(s.recall, [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
        let deep = score(&ranked, &set(&["deep"]));
        assert_eq!(deep.recall, [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0]);
        assert_eq!(s.ndcg10, 0.0);
        assert!(close(s.mrr, 1.0 / 15.0));
        assert_eq!(score(&ranked, &set(&["nope"])), Scores::default());
    }

    #[test]
    fn mean_and_quantiles() {
        let mut m = Mean::default();
        m.add(&score(&ids(&["a"]), &set(&["a"])));
        m.add(&score(&ids(&["b"]), &set(&["a"])));
        assert_eq!(m.n, 2);
        assert!(close(m.mean().mrr, 0.5));
        assert!(close(m.mean().recall[0], 0.5));
        let xs = [5.0, 1.0, 3.0, 2.0, 4.0];
        assert_eq!(quantile(&xs, 0.5), 3.0);
        assert_eq!(quantile(&xs, 0.95), 5.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
    }

    #[test]
    fn paired_bootstrap_brackets_the_difference_and_sees_a_consistent_gain() {
        // b beats a by 1 on 30 of 100 queries, ties elsewhere: a gain of 0.3
        // that every resample sees.
        let a = vec![0.0; 100];
        let b: Vec<f64> = (0..100).map(|i| if i % 10 < 3 { 1.0 } else { 0.0 }).collect();
        let p = paired_bootstrap(&a, &b, 2000, 0.95);
        assert!(close(p.diff, 0.3));
        assert!(p.lo > 0.15 && p.lo < 0.3 && p.hi > 0.3 && p.hi < 0.45, "{p:?}");
        assert!(p.not_worse());
        // Gains and losses in equal number: the interval straddles 0.
        let mixed: Vec<f64> = (0..100).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }).collect();
        let q = paired_bootstrap(&a, &mixed, 2000, 0.95);
        assert!(q.lo < 0.0 && q.hi > 0.0, "{q:?}");
        // The reverse of a consistent gain is a loss beyond chance.
        assert!(!paired_bootstrap(&b, &a, 2000, 0.95).not_worse());
        assert_eq!(paired_bootstrap(&a, &b, 2000, 0.95), p, "a fixed seed: the same interval every time");
    }
}
