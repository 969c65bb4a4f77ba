//! Fine-tuning the cross-encoder reranker: a triplet loss on sigmoid scores
//! (the cited paper above one of the pipeline's own prefetched non-cited
//! candidates by a margin), Adam on the top layers and the head, validation
//! by reranking each `val` query's prefetched list, the best checkpoint kept,
//! resumable.
//!
//! The prefetched lists come from the caller (the pipeline, or a library's
//! BM25), so this module knows nothing of channels. It holds the step loop;
//! `options` the run's settings, checkpoints and saved state, `data` the
//! examples and a run's inputs, `batch` the draws of a step and
//! `validation` the reranked recalls. Files, state, resume and the best /
//! last weights are [`super::run`]'s.

mod batch;
mod data;
mod options;
mod validation;

use std::path::Path;
use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Device;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use super::run::{clipped_adam, TrainingRun};
use crate::error::{Error, Result};
use crate::neural::cross_encoder::{scores, split_base, PairEncoder, RerankerTop};
use crate::neural::tokenizer;
use batch::draw_batch;
use data::Encoders;
use validation::Validation;

pub use data::{RerankExample, RerankInputs};
pub use options::{Checkpoint, RerankProgress, RerankState, RerankTrainOptions, Steps};
pub use validation::{r10_rr, reranked};

/// A reranker run in its output directory.
type RerankRun = TrainingRun<Steps, Checkpoint, RerankTrainOptions>;

/// Fine-tunes the reranker's top (from the base model's, or from
/// `inputs.start`) on `inputs.train`, validating on `inputs.val`; writes
/// into `out` (a run there resumes instead). Returns the validation history.
pub fn train_reranker(
    inputs: &RerankInputs,
    out: &Path,
    opts: &RerankTrainOptions,
    device: &Device,
    progress: &dyn RerankProgress,
) -> Result<Vec<Checkpoint>> {
    let RerankInputs { config, base_dir, start, papers, train, val } = *inputs;
    if train.is_empty() || val.is_empty() {
        return Err(Error::Input("reranker training needs train and val examples whose cited papers are in the pool".into()));
    }
    let mut run = RerankRun::open(out, "reranker.json", opts.max_minutes)?;
    let pairs = PairEncoder::new(&base_dir.join("tokenizer.json"), config.max_len, config.max_candidate_tokens)?;
    let enc = Encoders { pairs: &pairs, papers };

    // Frozen lower layers run without autodiff; the top trains on the autodiff device.
    let (bottom, _) = split_base(config, base_dir, device)?;
    let heads = bottom.heads();
    let bottom_layers = bottom.encoder.layer.len();
    let ad = device.clone().autodiff();
    ad.seed(opts.seed); // the fresh head and dropout are repeatable
    let (_, fresh_top) = split_base(config, base_dir, &ad)?;
    let mut top = starting_top(&mut run, fresh_top, start)?;
    run.begin(opts.clone(), &config.to_string())?;
    let mut optim = clipped_adam();

    let validation = Validation::new(&enc, val, opts.rerank_depth)?;
    // Validates `top`, keeps it when it is the best so far and records the
    // checkpoint (`loss` over the steps since the last one, begun at `since`).
    let checkpoint = |run: &mut RerankRun, top: &RerankerTop, loss: f32, since: Instant| -> Result<()> {
        let inference = top.valid();
        let (r10, mrr) = validation.rerank(&bottom, &inference, device, progress);
        let best = run.keep(mrr, |path| inference.save(path))?;
        let c = Checkpoint {
            step: run.state.counters.steps_done,
            loss,
            prefetch_r10: validation.prefetch_r10,
            prefetch_mrr: validation.prefetch_mrr,
            r10,
            mrr,
            seconds: since.elapsed().as_secs_f64(),
            best,
        };
        progress.checkpoint(&c);
        run.record(c)
    };
    if start.is_some() && run.state.counters.steps_done == 0 {
        checkpoint(&mut run, &top, 0.0, Instant::now())?;
    }

    let mut order: Vec<usize> = (0..train.len()).collect();
    order.shuffle(&mut StdRng::seed_from_u64(opts.seed));
    let mut loss_sum = 0f32;
    let mut loss_steps = 0usize;
    let mut t0 = Instant::now();
    progress.phase("training", opts.max_steps as u64);
    progress.advance(run.state.counters.steps_done as u64, None);
    while run.state.counters.steps_done < opts.max_steps {
        let step = run.state.counters.steps_done;
        let batch_pairs = draw_batch(&enc, train, &order, step, opts)?;
        let b = batch_pairs.len() / 2;
        let input = tokenizer::batch(&batch_pairs, device);
        let (hidden, pad) = bottom.forward_layers(input, bottom_layers);
        let s = scores(&top, hidden.autodiff(), pad.autodiff(), heads);
        let pos = s.clone().slice(0..b);
        let neg = s.slice(b..2 * b);
        let loss = (neg - pos).add_scalar(opts.margin).clamp_min(0.0).mean();
        let value = loss.clone().into_scalar::<f32>();
        let grads = GradientsParams::from_grads(loss.backward(), &top);
        top = optim.step(opts.learning_rate, top, grads);
        run.state.counters.steps_done += 1;
        loss_sum += value;
        loss_steps += 1;
        progress.advance(1, Some(loss_sum / loss_steps as f32));

        let last_step = run.state.counters.steps_done == opts.max_steps || run.out_of_time();
        if run.state.counters.steps_done.is_multiple_of(opts.eval_every) || last_step {
            checkpoint(&mut run, &top, loss_sum / loss_steps.max(1) as f32, t0)?;
            loss_sum = 0.0;
            loss_steps = 0;
            t0 = Instant::now();
            if last_step {
                break;
            }
            progress.phase("training", opts.max_steps as u64);
            progress.advance(run.state.counters.steps_done as u64, None);
        }
    }
    Ok(run.into_history())
}

/// The top the run trains: its last weights when it resumes, else the
/// `start` weights loaded into `fresh` (the base model's top), else `fresh`.
fn starting_top(run: &mut RerankRun, fresh: RerankerTop, start: Option<&[u8]>) -> Result<RerankerTop> {
    if run.resuming() {
        let last = run.files.last();
        let bytes = std::fs::read(&last).map_err(|e| Error::io(&last, e))?;
        fresh.load_bytes(bytes, &last.display().to_string())
    } else if let Some(bytes) = start {
        fresh.load_bytes(bytes.to_vec(), "the starting reranker weights")
    } else {
        Ok(fresh)
    }
}
