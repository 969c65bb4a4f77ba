//! Validation after each epoch: R@10 and R@100 of the `val` queries over the
//! mining pool, with and without the citing title and abstract.

use burn::tensor::Device;

use super::super::hatten::{DocText, Hatten, HattenConfig};
use super::super::words::WordVectors;
use super::data::{embed, Example, TrainingData};
use super::TrainProgress;
use crate::index::vectors::top_k;
use crate::ranking::recall_at;

/// The four recalls an epoch is judged by.
pub(super) struct Recalls {
    pub r10: f64,
    pub r100: f64,
    pub local_r10: f64,
    pub local_r100: f64,
}

/// Validates `model` (without gradients). Returns the recalls and the
/// pool's vectors, which the next epoch mines with.
#[allow(clippy::too_many_arguments)]
pub(super) fn validate(
    model: &Hatten,
    config: &HattenConfig,
    words: &WordVectors,
    device: &Device,
    data: &TrainingData,
    val_texts: &[DocText],
    val_local: &[DocText],
    progress: &dyn TrainProgress,
) -> (Recalls, Vec<f32>) {
    progress.phase("validating", 2 * data.val.len() as u64);
    let pool_vecs = embed(model, config, words, &data.pool_texts, device, &|_| {});
    let recall = |texts: &[DocText]| {
        let query_vecs = embed(model, config, words, texts, device, &|n| progress.advance(n, None));
        mean_recall(&data.val, &query_vecs, &pool_vecs, &data.pool, config.dim())
    };
    let (r10, r100) = recall(val_texts);
    let (local_r10, local_r100) = recall(val_local);
    (Recalls { r10, r100, local_r10, local_r100 }, pool_vecs)
}

/// Mean R@10 and R@100 of `queries` over the pool: `query_vecs` and
/// `pool_vecs` are `d` wide, a row per query and per pool paper (`pool`
/// maps the rows to papers).
fn mean_recall(queries: &[Example], query_vecs: &[f32], pool_vecs: &[f32], pool: &[usize], d: usize) -> (f64, f64) {
    let (mut r10, mut r100) = (0f64, 0f64);
    for (qi, e) in queries.iter().enumerate() {
        let hits = top_k(pool_vecs, d, &query_vecs[qi * d..(qi + 1) * d], 100, 2);
        let ranked: Vec<usize> = hits.into_iter().map(|(r, _)| pool[r]).collect();
        r10 += recall_at(&ranked, &e.cited, 10);
        r100 += recall_at(&ranked, &e.cited, 100);
    }
    let n = queries.len() as f64;
    (r10 / n, r100 / n)
}
