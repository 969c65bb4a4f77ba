//! Measures of one ranked list against the items it should hold: Recall@K
//! and the reciprocal rank. The one definition used by the trainers'
//! validation (`neural`) and by evaluation (`eval::metrics`); it depends on
//! nothing, so every layer may use it.

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
