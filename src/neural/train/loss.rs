//! The training objectives over a batch's cosines ([`Loss`]).

use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};

use super::super::hatten::{Hatten, HattenConfig};
use super::super::words::WordVectors;
use super::batch::Batch;
use super::{BatchNegatives, Loss, TrainOptions};

/// The loss of a batch under `opts.loss`, with gradients (`ad` is the
/// autodiff device).
pub(super) fn batch_loss(
    model: &Hatten,
    config: &HattenConfig,
    words: &WordVectors,
    batch: Batch,
    opts: &TrainOptions,
    ad: &Device,
) -> Tensor<1> {
    let b = batch.len();
    let q = model.encode(config, words, &batch.queries, ad);
    let p = model.encode(config, words, &batch.docs, ad);
    let sims = q.matmul(p.transpose()); // [b, 2b]
    let tensor = |v: Vec<f32>| Tensor::<2>::from_data(TensorData::new(v, [b, 2 * b]), ad);
    let (valid, pos_hot, neg_hot) = (tensor(batch.valid), tensor(batch.pos_hot), tensor(batch.neg_hot));
    match opts.loss {
        Loss::Triplet => triplet_loss(sims, valid, pos_hot, neg_hot, opts),
        Loss::Softmax => softmax_loss(sims, valid, pos_hot, opts.temperature),
    }
}

/// Cross-entropy of each query's positive against its hard negative and the
/// batch's other papers (never another positive), at `temperature`.
fn softmax_loss(sims: Tensor<2>, valid: Tensor<2>, pos_hot: Tensor<2>, temperature: f32) -> Tensor<1> {
    let allowed = valid + pos_hot.clone();
    let logits = sims / temperature as f64 + (allowed - 1.0) * 1.0e4;
    -(log_softmax(logits, 1) * pos_hot).sum_dim(1).mean()
}

/// The margin triplet loss of a batch: `sims` `[b, 2b]` are the queries'
/// cosines with the batch's papers; `pos_hot` / `neg_hot` mark each query's
/// positive and mined hard negative, `valid` the papers that are not its
/// positives.
fn triplet_loss(sims: Tensor<2>, valid: Tensor<2>, pos_hot: Tensor<2>, neg_hot: Tensor<2>, opts: &TrainOptions) -> Tensor<1> {
    let pos = (sims.clone() * pos_hot).sum_dim(1); // [b, 1]
    let hard_neg = (sims.clone() * neg_hot).sum_dim(1);
    let hard_loss = (hard_neg - pos.clone()).add_scalar(opts.margin).clamp_min(0.0).mean();
    // Every in-batch triplet's hinge, zero where the paper is a positive.
    let violations = || (sims.clone() - pos.clone()).add_scalar(opts.margin).clamp_min(0.0) * valid.clone();
    let batch_loss = match opts.batch_negatives {
        // Averaged over every in-batch triplet.
        BatchNegatives::All => violations().sum() / valid.clone().sum().clamp_min(1.0),
        // Averaged over the triplets that still violate the margin, so that
        // easy negatives do not dilute the gradient.
        BatchNegatives::Active => {
            let v = violations();
            let active = v.clone().greater_elem(0.0).float().sum().clamp_min(1.0);
            v.sum() / active
        }
        // Only each query's hardest in-batch negative.
        BatchNegatives::Hardest => {
            let masked = sims.clone() + (valid.clone() - 1.0) * 4.0;
            (masked.max_dim(1) - pos.clone()).add_scalar(opts.margin).clamp_min(0.0).mean()
        }
    };
    hard_loss + batch_loss
}
