//! Mining each training query's positives and hard negatives with the
//! current model: of its top pool candidates that are not cited, those whose
//! words overlap a cited paper's by Jaccard ≥ `jaccard` count as further
//! positives (near-duplicates), the others are its hard negatives.

use std::collections::{HashMap, HashSet};

use super::super::words;
use super::data::TrainingData;
use super::TrainOptions;
use crate::index::vectors::top_k;

/// |a ∩ b| / |a ∪ b|.
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let inter = a.intersection(b).count();
    inter as f32 / (a.len() + b.len() - inter) as f32
}

/// One epoch's mined lists, per training query (indices into the papers).
pub(super) struct Mined {
    /// The cited papers first, then the near-duplicates found.
    pub positives: Vec<Vec<usize>>,
    /// The non-cited candidates that are not near-duplicates, best first.
    pub hard: Vec<Vec<usize>>,
}

/// Mines over a run's epochs, keeping each paper's word set once computed.
#[derive(Default)]
pub(super) struct Miner {
    word_sets: HashMap<usize, HashSet<String>>,
}

impl Miner {
    /// Mines every training query: `query_vecs` are their vectors and
    /// `pool_vecs` the pool's, `d` wide, under the current weights.
    pub fn mine(&mut self, data: &TrainingData, pool_vecs: &[f32], query_vecs: &[f32], d: usize, opts: &TrainOptions) -> Mined {
        let mut positives: Vec<Vec<usize>> = Vec::with_capacity(data.train.len());
        let mut hard: Vec<Vec<usize>> = Vec::with_capacity(data.train.len());
        for (qi, e) in data.train.iter().enumerate() {
            let hits = top_k(pool_vecs, d, &query_vecs[qi * d..(qi + 1) * d], opts.hard_negatives + e.cited.len(), 2);
            let candidates: Vec<usize> = hits.into_iter().map(|(row, _)| data.pool[row]).filter(|p| !e.cited.contains(p)).collect();
            for &p in e.cited.iter().chain(&candidates) {
                let paper = &data.papers[p];
                self.word_sets.entry(p).or_insert_with(|| words::words(&format!("{} {}", paper.title, paper.abstract_text)).collect());
            }
            let mut pos = e.cited.clone();
            let mut neg = Vec::new();
            for p in candidates {
                let w = &self.word_sets[&p];
                if e.cited.iter().any(|c| jaccard(&self.word_sets[c], w) >= opts.jaccard) {
                    pos.push(p);
                } else {
                    neg.push(p);
                }
            }
            positives.push(pos);
            hard.push(neg);
        }
        Mined { positives, hard }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(words: &str) -> HashSet<String> {
        words.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn jaccard_is_the_shared_share_of_all_words() {
        assert_eq!(jaccard(&set("a b c"), &set("b c d")), 0.5);
        assert_eq!(jaccard(&set("a b"), &set("b a")), 1.0);
        assert_eq!(jaccard(&set("a"), &set("b")), 0.0);
        assert_eq!(jaccard(&set(""), &set("")), 0.0);
    }
}
