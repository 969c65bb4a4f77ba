//! A context that asks for citations in several sentences (a paragraph
//! with a `[CIT]` in each place it still lacks one; see
//! [`super::Query::claims`]) is searched as a whole and claim by claim: a
//! whole paragraph's words favour the papers its several claims share,
//! while each claim has its own cited paper. The fused lists are merged by
//! weighted reciprocal rank, the whole context's weighing 1 and each
//! claim's [`super::Fusion::claim_weight`].

use std::collections::HashMap;

use super::answer::Candidate;

/// Merges fused lists (each best first, with its weight) into one by
/// weighted reciprocal rank with constant `rrf_k`. A paper keeps what the
/// first list that holds it says of it (its channels' ranks there); its
/// score becomes the merged one and `fused_rank` its place in the merge.
/// Ties keep the order in which the papers were first met.
pub fn merge(lists: Vec<(Vec<Candidate>, f32)>, rrf_k: f32) -> Vec<Candidate> {
    let mut at: HashMap<String, usize> = HashMap::new();
    let mut out: Vec<(f32, Candidate)> = Vec::new();
    for (list, weight) in lists {
        for (rank, c) in list.into_iter().enumerate() {
            let add = weight / (rrf_k + (rank + 1) as f32);
            match at.get(&c.id) {
                Some(&i) => out[i].0 += add,
                None => {
                    at.insert(c.id.clone(), out.len());
                    out.push((add, c));
                }
            }
        }
    }
    // A stable sort: ties stay in the order first met.
    out.sort_by(|a, b| b.0.total_cmp(&a.0));
    out.into_iter()
        .enumerate()
        .map(|(i, (score, mut c))| {
            c.score = score;
            c.fused_rank = i + 1;
            c
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[&str]) -> Vec<Candidate> {
        ids.iter().map(|id| Candidate::new(*id)).collect()
    }

    fn ids(c: &[Candidate]) -> Vec<&str> {
        c.iter().map(|c| c.id.as_str()).collect()
    }

    #[test]
    fn each_claims_best_paper_rises_beside_the_whole_contexts() {
        let whole = list(&["w1", "w2", "w3", "a2", "b2"]);
        let claim_a = list(&["a1", "a2", "w1"]);
        let claim_b = list(&["b1", "b2", "w2"]);
        let merged = merge(vec![(whole, 1.0), (claim_a, 1.0), (claim_b, 1.0)], 5.0);
        assert_eq!(ids(&merged)[..4], ["w1", "w2", "a2", "b2"], "found by the whole and a claim");
        assert!(ids(&merged)[..6].contains(&"a1") && ids(&merged)[..6].contains(&"b1"), "each claim's best is near the top");
        assert_eq!(merged.iter().map(|c| c.fused_rank).collect::<Vec<_>>(), (1..=merged.len()).collect::<Vec<_>>());
        assert!(merged.windows(2).all(|w| w[0].score >= w[1].score));
    }

    #[test]
    fn a_claim_weighing_nothing_leaves_the_whole_contexts_order() {
        let merged = merge(vec![(list(&["x", "y", "z"]), 1.0), (list(&["z", "q"]), 0.0)], 5.0);
        assert_eq!(ids(&merged), ["x", "y", "z", "q"]);
    }
}
