//! Fine-tuning the cross-encoder reranker: a triplet loss on sigmoid scores
//! (the cited paper above one of the pipeline's own prefetched non-cited
//! candidates by a margin), Adam on the top layers and the head, validation
//! by reranking each `val` query's prefetched list, the best checkpoint kept,
//! resumable.
//!
//! The prefetched lists come from the caller (the pipeline), so this module
//! knows nothing of channels.

use std::path::Path;
use std::time::Instant;

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::Device;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::cross_encoder::{logits, scores, split_base, PairEncoder, QueryTokens, RerankerConfig, RerankerTop};
use super::tokenizer::batch;
use super::tokenizer::Encoded;
use super::training_run::{clipped_adam, Counters, TrainingRun};
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::ranking::{recall_at, reciprocal_rank};

/// One citation context with the pipeline's prefetched papers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RerankExample {
    pub local: String,
    pub title: String,
    pub abstract_text: String,
    /// Indices (into the papers) of the cited papers.
    pub cited: Vec<usize>,
    /// Indices of the prefetched papers, best first.
    pub prefetched: Vec<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RerankTrainOptions {
    /// Triplets per step.
    pub batch: usize,
    pub learning_rate: f64,
    pub margin: f32,
    /// Negatives are drawn from this many top prefetched non-cited papers.
    pub negatives_from: usize,
    /// Steps between validations (and checkpoints).
    pub eval_every: usize,
    /// Prefetched papers reranked in validation (K_r).
    pub rerank_depth: usize,
    pub max_steps: usize,
    pub max_minutes: Option<f64>,
    pub seed: u64,
}

impl Default for RerankTrainOptions {
    fn default() -> RerankTrainOptions {
        RerankTrainOptions {
            batch: 16,
            learning_rate: 1e-4,
            margin: 0.1,
            negatives_from: 30,
            eval_every: 200,
            rerank_depth: 20,
            max_steps: 2000,
            max_minutes: None,
            seed: 23,
        }
    }
}

/// Validation after some steps.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Checkpoint {
    pub step: usize,
    /// Mean loss over the steps since the last checkpoint.
    pub loss: f32,
    /// R@10 and MRR of the prefetched order (what reranking must beat).
    pub prefetch_r10: f64,
    pub prefetch_mrr: f64,
    /// R@10 and MRR after reranking the top `rerank_depth`.
    pub r10: f64,
    pub mrr: f64,
    pub seconds: f64,
    pub best: bool,
}

/// Progress of a reranker training run, with its checkpoints.
pub trait RerankProgress: super::training_run::RunProgress {
    fn checkpoint(&self, c: &Checkpoint);
}

/// A reranker run's saved state (`train-state.json`).
pub type RerankState = super::training_run::RunState<Steps, Checkpoint, RerankTrainOptions>;

/// The counters of the reranker's `train-state.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Steps {
    pub steps_done: usize,
    pub best_mrr: f64,
}

impl Counters for Steps {
    fn done(&self) -> usize {
        self.steps_done
    }
    fn best_score(&mut self) -> &mut f64 {
        &mut self.best_mrr
    }
}

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

struct Encoders<'a> {
    pairs: &'a PairEncoder,
    papers: &'a [Paper],
}

impl Encoders<'_> {
    fn query(&self, e: &RerankExample) -> Result<QueryTokens> {
        self.pairs.query(&e.local, &e.title, &e.abstract_text)
    }
    fn pair(&self, q: &QueryTokens, paper: usize) -> Result<Encoded> {
        let p = &self.papers[paper];
        Ok(self.pairs.pair(q, &self.pairs.candidate(&p.title, &p.abstract_text)?))
    }
}

/// Fine-tunes the reranker from its base model; returns the validation
/// history.
#[allow(clippy::too_many_arguments)]
pub fn train_reranker(
    config: &RerankerConfig,
    base_dir: &Path,
    papers: &[Paper],
    train: &[RerankExample],
    val: &[RerankExample],
    out: &Path,
    opts: &RerankTrainOptions,
    device: &Device,
    progress: &dyn RerankProgress,
) -> Result<Vec<Checkpoint>> {
    train_reranker_from(config, base_dir, None, papers, train, val, out, opts, device, progress)
}

/// [`train_reranker`] going on from fine-tuned top weights (`start`, as a
/// reranker's `model.safetensors` holds them): the run validates them
/// before its first step, so they are the first best and only a step that
/// beats them replaces them.
#[allow(clippy::too_many_arguments)]
pub fn train_reranker_from(
    config: &RerankerConfig,
    base_dir: &Path,
    start: Option<&[u8]>,
    papers: &[Paper],
    train: &[RerankExample],
    val: &[RerankExample],
    out: &Path,
    opts: &RerankTrainOptions,
    device: &Device,
    progress: &dyn RerankProgress,
) -> Result<Vec<Checkpoint>> {
    if train.is_empty() || val.is_empty() {
        return Err(Error::Input("reranker training needs train and val examples whose cited papers are in the pool".into()));
    }
    let mut run = TrainingRun::<Steps, Checkpoint, RerankTrainOptions>::open(out, "reranker.json", opts.max_minutes)?;
    let pairs = PairEncoder::new(&base_dir.join("tokenizer.json"), config.max_len, config.max_candidate_tokens)?;
    let enc = Encoders { pairs: &pairs, papers };

    // Frozen lower layers run without autodiff; the top trains on the autodiff device.
    let (bottom, _) = split_base(config, base_dir, device)?;
    let heads = bottom.heads();
    let bottom_layers = bottom.encoder.layer.len();
    let ad = device.clone().autodiff();
    let (_, fresh_top) = split_base(config, base_dir, &ad)?;
    let mut top = if run.resuming() {
        let last = run.files.last();
        let bytes = std::fs::read(&last).map_err(|e| Error::io(&last, e))?;
        fresh_top.load_bytes(bytes, &last.display().to_string())?
    } else if let Some(bytes) = start {
        fresh_top.load_bytes(bytes.to_vec(), "the starting reranker weights")?
    } else {
        fresh_top
    };
    run.begin(opts.clone(), &config.to_string())?;
    let mut optim = clipped_adam();

    // The validation pairs are the same at every checkpoint: encoded once.
    let mut val_pairs: Vec<Vec<Encoded>> = Vec::with_capacity(val.len());
    for e in val {
        let q = enc.query(e)?;
        let depth = opts.rerank_depth.min(e.prefetched.len());
        val_pairs.push(e.prefetched[..depth].iter().map(|&p| enc.pair(&q, p)).collect::<Result<_>>()?);
    }
    let (mut pre_r10, mut pre_mrr) = (0.0, 0.0);
    for e in val {
        let (r, m) = r10_rr(&e.prefetched, &e.cited);
        pre_r10 += r;
        pre_mrr += m;
    }
    let n_val = val.len() as f64;
    let (pre_r10, pre_mrr) = (pre_r10 / n_val, pre_mrr / n_val);
    let validate = |inference: &RerankerTop| -> (f64, f64) {
        progress.phase("validating", val.len() as u64);
        let (mut r10, mut mrr) = (0.0, 0.0);
        for (e, pairs) in val.iter().zip(&val_pairs) {
            let s = logits(&bottom, inference, pairs, device);
            let (r, m) = r10_rr(&reranked(&e.prefetched, &s), &e.cited);
            r10 += r;
            mrr += m;
            progress.advance(1, None);
        }
        (r10 / n_val, mrr / n_val)
    };
    // Validates `top`, keeps it when it is the best so far and records the
    // checkpoint (`loss` over the steps since the last one, begun at `since`).
    let checkpoint =
        |run: &mut TrainingRun<Steps, Checkpoint, RerankTrainOptions>, top: &RerankerTop, loss: f32, since: Instant| -> Result<()> {
            let inference = top.valid();
            let (r10, mrr) = validate(&inference);
            let best = run.keep(mrr, |path| inference.save(path))?;
            let c = Checkpoint {
                step: run.state.counters.steps_done,
                loss,
                prefetch_r10: pre_r10,
                prefetch_mrr: pre_mrr,
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
                    let r = rand::Rng::random_range(&mut rng, 0..papers.len());
                    if !e.cited.contains(&r) {
                        break r;
                    }
                },
            };
            batch_pairs.push(enc.pair(&q, pos)?);
            negs.push(enc.pair(&q, neg)?);
        }
        let b = batch_pairs.len();
        batch_pairs.extend(negs);
        let input = batch(&batch_pairs, device);
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
