//! Measures of one ranked list against the items it should hold: Recall@K
//! and the reciprocal rank; and how two systems' per-query measures
//! compare (a paired bootstrap interval). The one definition used by the
//! trainers' validation (`neural`), the learning of a library's fusion
//! (`pipeline::fusion_learning`) and evaluation (`eval::metrics`); it depends
//! on nothing, so every layer may use it.

use serde::{Deserialize, Serialize};

/// Recall@K: the share of `relevant` that stands among the first `k` of
/// `ranked` (each entry of `relevant` counted once; 0 when it is empty).
pub fn recall_at<'a, T: PartialEq + 'a>(ranked: &[T], relevant: impl IntoIterator<Item = &'a T>, k: usize) -> f64 {
    let top = &ranked[..k.min(ranked.len())];
    let (mut found, mut n) = (0usize, 0usize);
    for r in relevant {
        n += 1;
        found += usize::from(top.contains(r));
    }
    if n == 0 {
        0.0
    } else {
        found as f64 / n as f64
    }
}

/// 1 / the rank of the first relevant entry of `ranked` (0 when there is none).
pub fn reciprocal_rank<T>(ranked: &[T], is_relevant: impl Fn(&T) -> bool) -> f64 {
    ranked.iter().position(is_relevant).map_or(0.0, |p| 1.0 / (p + 1) as f64)
}

/// The value at quantile `q` (0..=1) of unsorted samples, nearest-rank.
pub fn quantile(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let rank = (q * s.len() as f64).ceil().max(1.0) as usize;
    s[rank.min(s.len()) - 1]
}

/// The mean difference of two systems on the same queries and its
/// bootstrap interval ([`paired_bootstrap`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    pub diff: f64,
    pub lo: f64,
    pub hi: f64,
}

impl Paired {
    /// Whether `b` is not worse than `a` beyond chance (the interval
    /// reaches 0 or lies above it).
    pub fn not_worse(&self) -> bool {
        self.hi >= 0.0
    }
}

/// A paired bootstrap interval of the mean difference `b − a` of two
/// systems scored on the same queries (`a[i]` and `b[i]` the same query):
/// the queries are resampled with replacement `rounds` times (from a fixed
/// seed, so a table is reproducible) and the `(1 − level) / 2` and
/// `(1 + level) / 2` quantiles of the resampled mean differences returned,
/// beside the observed mean difference. An interval that excludes 0 says
/// the difference is larger than the queries' own spread explains.
pub fn paired_bootstrap(a: &[f64], b: &[f64], rounds: usize, level: f64) -> Paired {
    use rand::{Rng, SeedableRng};
    assert_eq!(a.len(), b.len(), "paired scores come from the same queries");
    let n = a.len();
    if n == 0 {
        return Paired { diff: 0.0, lo: 0.0, hi: 0.0 };
    }
    let d: Vec<f64> = a.iter().zip(b).map(|(a, b)| b - a).collect();
    let diff = d.iter().sum::<f64>() / n as f64;
    let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed);
    let means: Vec<f64> = (0..rounds.max(1)).map(|_| (0..n).map(|_| d[rng.random_range(0..n)]).sum::<f64>() / n as f64).collect();
    Paired { diff, lo: quantile(&means, (1.0 - level) / 2.0), hi: quantile(&means, (1.0 + level) / 2.0) }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn recall_counts_the_relevant_found_above_the_cut_off() {
        let ranked = [4, 9, 1, 7, 3];
        assert_eq!(recall_at(&ranked, &[1, 3], 1), 0.0);
        assert_eq!(recall_at(&ranked, &[1, 3], 3), 0.5);
        assert_eq!(recall_at(&ranked, &[1, 3], 5), 1.0);
        // A cut-off past the list's end is the whole list.
        assert_eq!(recall_at(&ranked, &[1, 3, 8, 6], 100), 0.5);
        assert_eq!(recall_at(&ranked, &[1], 0), 0.0);
        assert_eq!(recall_at::<i32>(&[], &[1], 10), 0.0);
        // Nothing relevant: nothing to find.
        assert_eq!(recall_at(&ranked, &[], 10), 0.0);
    }

    #[test]
    fn recall_takes_relevant_items_from_any_collection() {
        let ranked: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        let relevant: HashSet<String> = ["c", "z"].iter().map(|s| s.to_string()).collect();
        assert_eq!(recall_at(&ranked, &relevant, 2), 0.0);
        assert_eq!(recall_at(&ranked, &relevant, 3), 0.5);
        assert_eq!(recall_at(&ranked, relevant.iter().filter(|s| *s != "z"), 3), 1.0);
    }

    #[test]
    fn reciprocal_rank_of_the_first_hit() {
        assert_eq!(reciprocal_rank(&[5, 6, 7, 8], |x| *x >= 7), 1.0 / 3.0);
        assert_eq!(reciprocal_rank(&[5, 6], |x| *x == 5), 1.0);
        assert_eq!(reciprocal_rank(&[5, 6], |x| *x == 9), 0.0);
        assert_eq!(reciprocal_rank::<i32>(&[], |_| true), 0.0);
    }
}
