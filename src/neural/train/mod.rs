//! Training HAtten on a benchmark's `train` split.
//!
//! Each query forms triplets (query, positive, negative) scored by cosine:
//! by default under a softmax (the positive's cross-entropy against all of
//! its negatives at temperature 0.05), or as margin triplet losses
//! ([`Loss`]). Each query's positive is a cited paper, or a near-duplicate
//! of one: a candidate of the current model's prefetch that is not cited
//! but whose words overlap a cited
//! paper's by Jaccard ≥ `jaccard`. Its hard negative is drawn from the
//! current model's top-`hard_negatives` non-cited candidates; every other
//! paper of the batch is a further (random) negative. The mined lists are
//! refreshed at the start of every epoch over a mining pool (every cited
//! paper of `train`/`val` plus random pool papers), which also serves to
//! validate R@10 / R@100 on `val` after each epoch, with and without the
//! citing title and abstract (a share of the training queries drop them
//! too). The best epoch's weights (highest mean of those four recalls) are
//! kept; a run resumes from its last finished epoch.
//!
//! This module holds the epoch loop; `options` the run's settings and
//! reports, `data` the benchmark and pool, `mining` the positives and hard
//! negatives, `batch` the draws of a step, `loss` the objectives and
//! `validation` the recalls. Files, state, resume and the best / last
//! weights are [`run`]'s, shared by every trainer here. `adapt` fine-tunes
//! trained weights on a library's own papers, without labels (the inverse
//! cloze task), with the same batches and objective; `distill` trains a
//! student of the citation encoder; `rerank` fine-tunes the cross-encoder
//! reranker.

pub mod adapt;
mod batch;
mod data;
pub mod distill;
mod loss;
mod mining;
mod options;
pub mod rerank;
pub mod run;
pub mod steps;
mod validation;

use std::path::Path;
use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Device;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::hatten::{DocText, Hatten, HattenConfig};
use super::words::WordVectors;
use crate::error::Result;
use batch::Batch;
use data::TrainingData;
use mining::Miner;
use run::{clipped_adam, Counters, TrainingRun};

pub use data::{embed, load_papers, query_text, EMBED_BATCH};
pub use mining::jaccard;
pub use options::{BatchNegatives, EpochReport, Loss, LrSchedule, Quiet, TrainOptions, TrainProgress};

/// The counters of HAtten's `train-state.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Epochs {
    /// Epochs finished.
    epochs_done: usize,
    /// The best epoch's mean of the four validation recalls.
    #[serde(alias = "best_r10")]
    best_score: f64,
}

impl Counters for Epochs {
    fn done(&self) -> usize {
        self.epochs_done
    }
    fn best_score(&mut self) -> &mut f64 {
        &mut self.best_score
    }
}

/// Trains on `bench`'s `train` split, validating on `val`; writes into `out`.
pub fn train(
    bench: &Path,
    out: &Path,
    config: &HattenConfig,
    opts: &TrainOptions,
    words: &WordVectors,
    device: &Device,
    progress: &dyn TrainProgress,
) -> Result<Vec<EpochReport>> {
    let mut run = TrainingRun::<Epochs, EpochReport, TrainOptions>::open(out, "config.json", opts.max_minutes)?;
    let mut rng = StdRng::seed_from_u64(opts.seed);
    progress.phase("loading the benchmark", 0);
    let data = TrainingData::load(bench, opts, &mut rng)?;

    let ad = device.clone().autodiff();
    ad.seed(opts.seed); // the initialisation and dropout are repeatable
    let mut model = if run.resuming() { Hatten::load(config, &run.files.last(), &ad)? } else { config.init(&ad) };
    run.begin(opts.clone(), &config.to_string())?;
    let mut optim = clipped_adam();
    let mut miner = Miner::default();
    let train_texts: Vec<DocText> = data.train.iter().map(|e| e.text.clone()).collect();
    let val_texts: Vec<DocText> = data.val.iter().map(|e| e.text.clone()).collect();
    let val_local: Vec<DocText> = data.val.iter().map(|e| e.text.local_only()).collect();
    // The pool's vectors under the current weights, when validation has
    // already computed them (the next epoch mines with the same weights).
    let mut current_pool: Option<Vec<f32>> = None;

    for epoch in run.state.counters.epochs_done..opts.epochs {
        let t0 = Instant::now();
        // Mine with the current model.
        let inference = model.valid();
        let pool_vecs = match current_pool.take() {
            Some(v) => v,
            None => {
                progress.phase("embedding the mining pool", data.pool_texts.len() as u64);
                embed(&inference, config, words, &data.pool_texts, device, &|n| progress.advance(n, None))
            }
        };
        progress.phase("mining", data.train.len() as u64);
        let query_vecs = embed(&inference, config, words, &train_texts, device, &|n| progress.advance(n, None));
        let mined = miner.mine(&data, &pool_vecs, &query_vecs, config.dim(), opts);

        // Train one epoch.
        let mut order: Vec<usize> = (0..data.train.len()).collect();
        order.shuffle(&mut rng);
        let steps = order.len().div_ceil(opts.batch);
        progress.phase(&format!("epoch {}/{}", epoch + 1, opts.epochs), steps as u64);
        let mut loss_sum = 0f32;
        let mut done_steps = 0;
        for batch in order.chunks(opts.batch) {
            let batch = Batch::draw(batch, &data, &mined, opts, &mut rng);
            let loss = loss::batch_loss(&model, config, words, batch, opts, &ad);
            let value = loss.clone().into_scalar::<f32>();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            let progress_in_run = (epoch as f64 + done_steps as f64 / steps as f64) / opts.epochs as f64;
            model = optim.step(opts.lr_schedule.rate(opts.learning_rate, progress_in_run), model, grads);
            loss_sum += value;
            done_steps += 1;
            progress.advance(1, Some(loss_sum / done_steps as f32));
            if run.out_of_time() {
                break;
            }
        }

        // Validate, keep the weights, save the state.
        let inference = model.valid();
        let (recalls, pool_vecs) = validation::validate(&inference, config, words, device, &data, &val_texts, &val_local, progress);
        current_pool = Some(pool_vecs);
        let mut report = EpochReport {
            epoch: epoch + 1,
            steps: done_steps,
            loss: loss_sum / done_steps.max(1) as f32,
            val_r10: recalls.r10,
            val_r100: recalls.r100,
            val_local_r10: recalls.local_r10,
            val_local_r100: recalls.local_r100,
            seconds: t0.elapsed().as_secs_f64(),
            best: false,
        };
        report.best = run.keep(report.score(), |path| inference.save(path))?;
        progress.epoch(&report);
        run.state.counters.epochs_done = epoch + 1;
        run.record(report)?;
        if run.out_of_time() {
            break;
        }
    }
    Ok(run.into_history())
}
