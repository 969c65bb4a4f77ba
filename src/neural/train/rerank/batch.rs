//! The training pairs of a step.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::SeedableRng;

use super::data::{Encoders, RerankExample};
use super::options::RerankTrainOptions;
use crate::error::Result;
use crate::neural::tokenizer::Encoded;

/// The training pairs of step `step`: for each of its `opts.batch`
/// examples (in `order`, cycling), a cited paper, then (after all of
/// those) a negative for each from the first `opts.negatives_from`
/// prefetched papers it does not cite (any other paper when none).
pub(super) fn draw_batch(
    enc: &Encoders,
    train: &[RerankExample],
    order: &[usize],
    step: usize,
    opts: &RerankTrainOptions,
) -> Result<Vec<Encoded>> {
    let mut rng = StdRng::seed_from_u64(opts.seed ^ (step as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut batch_pairs: Vec<Encoded> = Vec::with_capacity(2 * opts.batch);
    let mut negs: Vec<Encoded> = Vec::with_capacity(opts.batch);
    for k in 0..opts.batch {
        let e = &train[order[(step * opts.batch + k) % order.len()]];
        let q = enc.query(e)?;
        let pos = *e.cited.choose(&mut rng).expect("examples have a cited paper");
        let pool: Vec<usize> = e.prefetched.iter().copied().filter(|p| !e.cited.contains(p)).take(opts.negatives_from).collect();
        let neg = match pool.choose(&mut rng) {
            Some(n) => *n,
            None => loop {
                let r = rand::Rng::random_range(&mut rng, 0..enc.papers.len());
                if !e.cited.contains(&r) {
                    break r;
                }
            },
        };
        batch_pairs.push(enc.pair(&q, pos)?);
        negs.push(enc.pair(&q, neg)?);
    }
    batch_pairs.extend(negs);
    Ok(batch_pairs)
}
