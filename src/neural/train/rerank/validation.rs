//! Validation: each held-out example's prefetched list, its head reranked,
//! scored by the recall of its cited papers in the top 10 and the
//! reciprocal rank of the first one.

use burn::tensor::Device;

use super::data::{Encoders, RerankExample};
use super::options::RerankProgress;
use crate::error::Result;
use crate::neural::bert::Bert;
use crate::neural::cross_encoder::{logits, RerankerTop};
use crate::neural::tokenizer::Encoded;
use crate::ranking::{recall_at, reciprocal_rank};

/// Recall of the cited papers in the top 10 and the reciprocal rank of the
/// first one, for a ranked list of paper indices.
pub fn r10_rr(ranked: &[usize], cited: &[usize]) -> (f64, f64) {
    (recall_at(ranked, cited, 10), reciprocal_rank(ranked, |r| cited.contains(r)))
}

/// `prefetched` with its first `depth` entries put in the order of `scores`
/// (higher first; ties keep the prefetch order).
pub fn reranked(prefetched: &[usize], scores: &[f32]) -> Vec<usize> {
    let depth = scores.len().min(prefetched.len());
    let mut head: Vec<usize> = (0..depth).collect();
    head.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    head.into_iter().map(|i| prefetched[i]).chain(prefetched[depth..].iter().copied()).collect()
}

/// The held-out examples with their pairs, which are the same at every
/// checkpoint (so encoded once), and the figures of the prefetched order.
pub(super) struct Validation<'a> {
    val: &'a [RerankExample],
    /// Each example with its first `rerank_depth` prefetched papers.
    pairs: Vec<Vec<Encoded>>,
    /// R@10 and MRR of the prefetched order (what reranking must beat).
    pub(super) prefetch_r10: f64,
    pub(super) prefetch_mrr: f64,
}

impl<'a> Validation<'a> {
    /// Encodes the pairs of `val` (each example's top `depth` prefetched
    /// papers) and scores the prefetched order.
    pub(super) fn new(enc: &Encoders, val: &'a [RerankExample], depth: usize) -> Result<Validation<'a>> {
        let mut pairs: Vec<Vec<Encoded>> = Vec::with_capacity(val.len());
        for e in val {
            let q = enc.query(e)?;
            let depth = depth.min(e.prefetched.len());
            pairs.push(e.prefetched[..depth].iter().map(|&p| enc.pair(&q, p)).collect::<Result<_>>()?);
        }
        let (mut pre_r10, mut pre_mrr) = (0.0, 0.0);
        for e in val {
            let (r, m) = r10_rr(&e.prefetched, &e.cited);
            pre_r10 += r;
            pre_mrr += m;
        }
        let n_val = val.len() as f64;
        Ok(Validation { val, pairs, prefetch_r10: pre_r10 / n_val, prefetch_mrr: pre_mrr / n_val })
    }

    /// R@10 and MRR after reranking each list's head with `top` over the
    /// frozen `bottom`.
    pub(super) fn rerank(&self, bottom: &Bert, top: &RerankerTop, device: &Device, progress: &dyn RerankProgress) -> (f64, f64) {
        progress.phase("validating", self.val.len() as u64);
        let (mut r10, mut mrr) = (0.0, 0.0);
        for (e, pairs) in self.val.iter().zip(&self.pairs) {
            let s = logits(bottom, top, pairs, device);
            let (r, m) = r10_rr(&reranked(&e.prefetched, &s), &e.cited);
            r10 += r;
            mrr += m;
            progress.advance(1, None);
        }
        let n_val = self.val.len() as f64;
        (r10 / n_val, mrr / n_val)
    }
}
