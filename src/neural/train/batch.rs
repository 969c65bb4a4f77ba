//! One training batch: each query's positive and hard negative drawn from
//! its mined lists, its text (stripped of the citing title and abstract at
//! the `global_dropout` rate), and which of the batch's papers may serve as
//! its negatives.

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::Rng;

use super::super::hatten::DocText;
use super::data::TrainingData;
use super::mining::Mined;
use super::TrainOptions;

/// `b` queries against `2b` papers. The masks are `[b, 2b]`, row-major.
pub(super) struct Batch {
    pub queries: Vec<DocText>,
    /// The queries' positives, then their hard negatives.
    pub docs: Vec<DocText>,
    /// 1 where the paper is not one of the query's positives.
    pub valid: Vec<f32>,
    /// 1 at the query's own positive.
    pub pos_hot: Vec<f32>,
    /// 1 at the query's own hard negative.
    pub neg_hot: Vec<f32>,
}

impl Batch {
    /// Draws the batch of the training queries `batch` (indices into
    /// `data.train` and `mined`). A query without hard negatives gets a
    /// random pool paper.
    pub fn draw(batch: &[usize], data: &TrainingData, mined: &Mined, opts: &TrainOptions, rng: &mut StdRng) -> Batch {
        let b = batch.len();
        let mut docs: Vec<DocText> = Vec::with_capacity(2 * b);
        let mut pos_ids = Vec::with_capacity(b);
        let mut neg_ids = Vec::with_capacity(b);
        for &qi in batch {
            let p = *mined.positives[qi].choose(rng).expect("a cited paper");
            let n = match mined.hard[qi].choose(rng) {
                Some(n) => *n,
                None => data.pool[rng.random_range(0..data.pool.len())],
            };
            pos_ids.push(p);
            neg_ids.push(n);
        }
        for &p in pos_ids.iter().chain(&neg_ids) {
            docs.push(data.paper_text(p));
        }
        let queries: Vec<DocText> = batch
            .iter()
            .map(|&qi| {
                let t = &data.train[qi].text;
                if !t.context.is_empty() && rng.random::<f32>() < opts.global_dropout {
                    t.local_only()
                } else {
                    t.clone()
                }
            })
            .collect();
        let mut valid = vec![0f32; b * 2 * b];
        let mut pos_hot = vec![0f32; b * 2 * b];
        let mut neg_hot = vec![0f32; b * 2 * b];
        for (i, &qi) in batch.iter().enumerate() {
            pos_hot[i * 2 * b + i] = 1.0;
            neg_hot[i * 2 * b + b + i] = 1.0;
            for (j, p) in pos_ids.iter().chain(&neg_ids).enumerate() {
                if !mined.positives[qi].contains(p) {
                    valid[i * 2 * b + j] = 1.0;
                }
            }
        }
        Batch { queries, docs, valid, pos_hot, neg_hot }
    }

    pub fn len(&self) -> usize {
        self.queries.len()
    }
}
