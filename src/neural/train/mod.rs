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

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use burn::module::Module;
use burn::optim::{AdamConfig, GradientsParams};
use burn::tensor::activation::log_softmax;
use burn::tensor::{Device, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::hatten::{DocText, Hatten, HattenConfig};
use super::words::{self, WordVectors};
use crate::corpus::benchmark::{load_contexts, CitationContext};
use crate::corpus::citation_markup::strip_citations;
use crate::corpus::jsonl::parse_line;
use crate::corpus::source::read_bytes;
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::index::vectors::top_k;
use crate::util::write_atomic;

/// Papers embedded per inference batch.
pub const EMBED_BATCH: usize = 128;

/// How the learning rate moves over a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LrSchedule {
    /// The same rate throughout.
    #[default]
    Constant,
    /// Linearly down from the rate at the run's start to 5 % of it at the
    /// end of its last epoch. The position counts the run's epochs, so a
    /// resumed run picks up where the schedule stopped.
    Linear,
}

impl LrSchedule {
    /// The rate at `progress` (0 at the run's start, 1 at its last step).
    pub fn rate(self, base: f64, progress: f64) -> f64 {
        match self {
            LrSchedule::Constant => base,
            LrSchedule::Linear => base * (1.0 - 0.95 * progress.clamp(0.0, 1.0)),
        }
    }
}

/// The training objective.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Loss {
    /// Margin triplet loss: the mined hard negative, and the batch's other
    /// papers as [`BatchNegatives`] says. On short runs it collapses the
    /// encoder (every text near the same vector); kept for comparison.
    Triplet,
    /// The same triplets scored together: softmax cross-entropy of the
    /// positive's cosine against the negatives', at a temperature.
    #[default]
    Softmax,
}

/// How the triplets formed with the other papers of a batch are averaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BatchNegatives {
    /// Over every triplet.
    All,
    /// Over the triplets that violate the margin.
    #[default]
    Active,
    /// Only each query's hardest in-batch negative.
    Hardest,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TrainOptions {
    pub epochs: usize,
    pub batch: usize,
    pub learning_rate: f64,
    pub margin: f32,
    /// Non-cited candidates of the current model's prefetch that hard
    /// negatives are drawn from.
    pub hard_negatives: usize,
    /// Jaccard overlap with a cited paper above which a prefetched paper
    /// counts as a positive.
    pub jaccard: f32,
    /// Papers in the mining and validation pool (cited papers always in).
    pub mining_pool: usize,
    /// Train queries used (all when `None`).
    pub train_limit: Option<usize>,
    /// Validation queries used (all when `None`).
    pub val_limit: Option<usize>,
    /// Stop after this many minutes (at the end of a step), then validate.
    pub max_minutes: Option<f64>,
    /// Probability that a training query loses its citing title and
    /// abstract, so that the encoder also learns local-context-only queries
    /// (what the editor sends when the draft has no title or abstract).
    #[serde(default)]
    pub global_dropout: f32,
    #[serde(default)]
    pub batch_negatives: BatchNegatives,
    #[serde(default)]
    pub loss: Loss,
    /// Softmax temperature ([`Loss::Softmax`]).
    #[serde(default = "default_temperature")]
    pub temperature: f32,
    #[serde(default)]
    pub lr_schedule: LrSchedule,
    pub seed: u64,
}

impl Default for TrainOptions {
    fn default() -> TrainOptions {
        TrainOptions {
            epochs: 6,
            batch: 32,
            learning_rate: 1e-3,
            margin: 0.1,
            hard_negatives: 50,
            jaccard: 0.5,
            mining_pool: 20_000,
            train_limit: None,
            val_limit: None,
            max_minutes: None,
            global_dropout: 0.5,
            batch_negatives: BatchNegatives::Active,
            loss: Loss::Softmax,
            temperature: default_temperature(),
            lr_schedule: LrSchedule::Constant,
            seed: 17,
        }
    }
}

fn default_temperature() -> f32 {
    0.05
}

/// What one epoch achieved.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EpochReport {
    pub epoch: usize,
    pub steps: usize,
    pub loss: f32,
    /// Validation recall over the mining pool, queries with the citing
    /// title and abstract.
    pub val_r10: f64,
    pub val_r100: f64,
    /// The same with local-context-only queries.
    #[serde(default)]
    pub val_local_r10: f64,
    #[serde(default)]
    pub val_local_r100: f64,
    pub seconds: f64,
    pub best: bool,
}

impl EpochReport {
    /// What the best epoch is chosen by: the mean of the four validation
    /// recalls (R@10 and R@100, with and without the global context).
    pub fn score(&self) -> f64 {
        (self.val_r10 + self.val_r100 + self.val_local_r10 + self.val_local_r100) / 4.0
    }
}

/// Progress callbacks (the CLI draws bars).
pub trait TrainProgress {
    /// A phase with `len` units starts (`len` 0: unknown).
    fn phase(&self, name: &str, len: u64);
    /// `n` units done; `loss` when training.
    fn advance(&self, n: u64, loss: Option<f32>);
    fn epoch(&self, report: &EpochReport);
}

/// No output (tests).
pub struct Quiet;
impl TrainProgress for Quiet {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64, _: Option<f32>) {}
    fn epoch(&self, _: &EpochReport) {}
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TrainState {
    /// Epochs finished.
    epochs_done: usize,
    /// The best epoch's mean of the four validation recalls.
    #[serde(alias = "best_r10")]
    best_score: f64,
    history: Vec<EpochReport>,
    options: Option<TrainOptions>,
}

/// The files a training run writes in its output directory (HAtten's and
/// the reranker's alike; only the config file's name differs).
pub struct RunFiles {
    pub dir: PathBuf,
    config_name: &'static str,
}

impl RunFiles {
    pub fn new(dir: &Path, config_name: &'static str) -> RunFiles {
        RunFiles { dir: dir.to_path_buf(), config_name }
    }
    pub fn config(&self) -> PathBuf {
        self.dir.join(self.config_name)
    }
    /// Weights of the best epoch.
    pub fn best(&self) -> PathBuf {
        self.dir.join("model.safetensors")
    }
    /// Weights after the last finished epoch (to resume).
    pub fn last(&self) -> PathBuf {
        self.dir.join("last.safetensors")
    }
    pub fn state(&self) -> PathBuf {
        self.dir.join("train-state.json")
    }

    /// The state a run saved, or a fresh one when there is none yet.
    pub fn read_state<S: serde::de::DeserializeOwned + Default>(&self) -> Result<S> {
        match std::fs::read_to_string(self.state()) {
            Ok(t) => serde_json::from_str(&t).map_err(|e| Error::Parse { path: self.state(), line: e.line(), reason: e.to_string() }),
            Err(_) => Ok(S::default()),
        }
    }
}

/// A training query: its text and the pool indices of its positives.
struct Example {
    text: DocText,
    cited: Vec<usize>,
}

/// Loads the papers of a benchmark.
pub fn load_papers(path: &Path) -> Result<Vec<Paper>> {
    let bytes = read_bytes(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(parse_line(line).map_err(|reason| Error::Parse { path: path.into(), line: i + 1, reason })?);
    }
    Ok(out)
}

/// The query text of a benchmark context (local + global context).
pub fn query_text(c: &CitationContext) -> DocText {
    DocText {
        context: strip_citations(&c.context),
        title: c.citing_title.clone(),
        abstract_text: c.citing_abstract.clone().unwrap_or_default(),
    }
}

fn examples(contexts: &[CitationContext], index: &HashMap<&str, usize>) -> Vec<Example> {
    contexts
        .iter()
        .filter_map(|c| {
            let cited: Vec<usize> = c.cited.iter().filter_map(|id| index.get(id.as_str()).copied()).collect();
            (!cited.is_empty()).then(|| Example { text: query_text(c), cited })
        })
        .collect()
}

/// Encodes texts in batches with a model, on its device, without gradients.
pub fn embed(
    model: &Hatten,
    config: &HattenConfig,
    words: &WordVectors,
    texts: &[DocText],
    device: &Device,
    on_batch: &dyn Fn(u64),
) -> Vec<f32> {
    let mut out = Vec::with_capacity(texts.len() * config.d_model);
    for chunk in texts.chunks(EMBED_BATCH) {
        let v = model.encode(config, words, chunk, device);
        out.extend(v.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 tensor"));
        on_batch(chunk.len() as u64);
    }
    out
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
    let files = RunFiles::new(out, "config.json");
    std::fs::create_dir_all(out).map_err(|e| Error::io(out, e))?;
    let started = Instant::now();
    let mut rng = StdRng::seed_from_u64(opts.seed);

    progress.phase("loading the benchmark", 0);
    let papers = load_papers(&bench.join("papers.jsonl.gz"))?;
    let index: HashMap<&str, usize> = papers.iter().enumerate().map(|(i, p)| (p.id.as_str(), i)).collect();
    let contexts_path = bench.join("contexts.jsonl.gz");
    let mut train_ex = examples(&load_contexts(&contexts_path, Some("train"))?, &index);
    let mut val_ex = examples(&load_contexts(&contexts_path, Some("val"))?, &index);
    if train_ex.is_empty() || val_ex.is_empty() {
        return Err(Error::Library(format!(
            "{}: the train and val splits need contexts whose cited papers are in the pool",
            bench.display()
        )));
    }
    train_ex.shuffle(&mut rng);
    val_ex.shuffle(&mut rng);
    if let Some(n) = opts.train_limit {
        train_ex.truncate(n);
    }
    if let Some(n) = opts.val_limit {
        val_ex.truncate(n);
    }

    // Mining / validation pool: every cited paper plus random others.
    let mut in_pool = vec![false; papers.len()];
    let mut pool: Vec<usize> = Vec::new();
    for e in train_ex.iter().chain(&val_ex) {
        for &c in &e.cited {
            if !in_pool[c] {
                in_pool[c] = true;
                pool.push(c);
            }
        }
    }
    let mut others: Vec<usize> = (0..papers.len()).filter(|i| !in_pool[*i]).collect();
    others.shuffle(&mut rng);
    pool.extend(others.into_iter().take(opts.mining_pool.saturating_sub(pool.len())));
    pool.sort_unstable();
    let pool_texts: Vec<DocText> = pool.iter().map(|&i| DocText::paper(&papers[i].title, &papers[i].abstract_text)).collect();

    // Resume.
    let mut state: TrainState = files.read_state()?;
    let ad = device.clone().autodiff();
    let mut model = if state.epochs_done > 0 && files.last().exists() {
        Hatten::load(config, &files.last(), &ad)?
    } else {
        state = TrainState::default();
        config.init(&ad)
    };
    state.options = Some(opts.clone());
    write_atomic(&files.config(), config.to_string().as_bytes())?;
    let mut optim = AdamConfig::new().with_grad_clipping(Some(burn::optim::grad_clipping::GradientClippingConfig::Norm(1.0))).init();
    let mut word_sets: HashMap<usize, HashSet<String>> = HashMap::new();
    let train_texts: Vec<DocText> = train_ex.iter().map(|e| e.text.clone()).collect();
    let val_texts: Vec<DocText> = val_ex.iter().map(|e| e.text.clone()).collect();
    let val_local: Vec<DocText> = val_ex.iter().map(|e| e.text.local_only()).collect();
    // The pool's vectors under the current weights, when validation has
    // already computed them (the next epoch mines with the same weights).
    let mut current_pool: Option<Vec<f32>> = None;

    let out_of_time = |started: &Instant| opts.max_minutes.is_some_and(|m| started.elapsed().as_secs_f64() > m * 60.0);
    for epoch in state.epochs_done..opts.epochs {
        let t0 = Instant::now();
        // Mine with the current model.
        let inference = model.valid();
        let pool_vecs = match current_pool.take() {
            Some(v) => v,
            None => {
                progress.phase("embedding the mining pool", pool_texts.len() as u64);
                embed(&inference, config, words, &pool_texts, device, &|n| progress.advance(n, None))
            }
        };
        progress.phase("mining", train_ex.len() as u64);
        let qv = embed(&inference, config, words, &train_texts, device, &|n| progress.advance(n, None));
        let d = config.d_model;
        let mut positives: Vec<Vec<usize>> = Vec::with_capacity(train_ex.len());
        let mut hard: Vec<Vec<usize>> = Vec::with_capacity(train_ex.len());
        for (qi, e) in train_ex.iter().enumerate() {
            let hits = top_k(&pool_vecs, d, &qv[qi * d..(qi + 1) * d], opts.hard_negatives + e.cited.len(), 2);
            let candidates: Vec<usize> = hits.into_iter().map(|(row, _)| pool[row]).filter(|p| !e.cited.contains(p)).collect();
            for &p in e.cited.iter().chain(&candidates) {
                word_sets.entry(p).or_insert_with(|| words::words(&format!("{} {}", papers[p].title, papers[p].abstract_text)).collect());
            }
            let mut pos = e.cited.clone();
            let mut neg = Vec::new();
            for p in candidates {
                let w = &word_sets[&p];
                if e.cited.iter().any(|c| jaccard(&word_sets[c], w) >= opts.jaccard) {
                    pos.push(p);
                } else {
                    neg.push(p);
                }
            }
            positives.push(pos);
            hard.push(neg);
        }

        // Train one epoch.
        let mut order: Vec<usize> = (0..train_ex.len()).collect();
        order.shuffle(&mut rng);
        let steps = order.len().div_ceil(opts.batch);
        progress.phase(&format!("epoch {}/{}", epoch + 1, opts.epochs), steps as u64);
        let mut loss_sum = 0f32;
        let mut done_steps = 0;
        for batch in order.chunks(opts.batch) {
            let b = batch.len();
            let mut docs: Vec<DocText> = Vec::with_capacity(2 * b);
            let mut pos_ids = Vec::with_capacity(b);
            let mut neg_ids = Vec::with_capacity(b);
            for &qi in batch {
                let p = *positives[qi].choose(&mut rng).expect("a cited paper");
                let n = match hard[qi].choose(&mut rng) {
                    Some(n) => *n,
                    None => pool[rng.random_range(0..pool.len())],
                };
                pos_ids.push(p);
                neg_ids.push(n);
            }
            for &p in pos_ids.iter().chain(&neg_ids) {
                docs.push(DocText::paper(&papers[p].title, &papers[p].abstract_text));
            }
            let queries: Vec<DocText> = batch
                .iter()
                .map(|&qi| {
                    let t = &train_ex[qi].text;
                    if !t.context.is_empty() && rng.random::<f32>() < opts.global_dropout {
                        t.local_only()
                    } else {
                        t.clone()
                    }
                })
                .collect();
            // Which batch papers may serve as negatives of which query.
            let mut valid = vec![0f32; b * 2 * b];
            let mut pos_hot = vec![0f32; b * 2 * b];
            let mut neg_hot = vec![0f32; b * 2 * b];
            for (i, &qi) in batch.iter().enumerate() {
                pos_hot[i * 2 * b + i] = 1.0;
                neg_hot[i * 2 * b + b + i] = 1.0;
                for (j, p) in pos_ids.iter().chain(&neg_ids).enumerate() {
                    if !positives[qi].contains(p) {
                        valid[i * 2 * b + j] = 1.0;
                    }
                }
            }
            let q = model.encode(config, words, &queries, &ad);
            let p = model.encode(config, words, &docs, &ad);
            let sims = q.matmul(p.transpose()); // [b, 2b]
            let tensor = |v: Vec<f32>| Tensor::<2>::from_data(TensorData::new(v, [b, 2 * b]), &ad);
            let (valid, pos_hot, neg_hot) = (tensor(valid), tensor(pos_hot), tensor(neg_hot));
            let loss = match opts.loss {
                Loss::Triplet => triplet_loss(sims, valid, pos_hot, neg_hot, opts),
                Loss::Softmax => {
                    // Cross-entropy of the positive against the hard negative
                    // and the batch's other papers (never another positive).
                    let allowed = valid + pos_hot.clone();
                    let logits = sims / opts.temperature as f64 + (allowed - 1.0) * 1.0e4;
                    -(log_softmax(logits, 1) * pos_hot).sum_dim(1).mean()
                }
            };
            let value = loss.clone().into_scalar::<f32>();
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            let progress_in_run = (epoch as f64 + done_steps as f64 / steps as f64) / opts.epochs as f64;
            model = optim.step(opts.lr_schedule.rate(opts.learning_rate, progress_in_run), model, grads);
            loss_sum += value;
            done_steps += 1;
            progress.advance(1, Some(loss_sum / done_steps as f32));
            if out_of_time(&started) {
                break;
            }
        }

        // Validate.
        let inference = model.valid();
        progress.phase("validating", 2 * val_ex.len() as u64);
        let pool_vecs = embed(&inference, config, words, &pool_texts, device, &|_| {});
        let recall = |texts: &[DocText]| {
            let vv = embed(&inference, config, words, texts, device, &|n| progress.advance(n, None));
            let (mut r10, mut r100) = (0f64, 0f64);
            for (qi, e) in val_ex.iter().enumerate() {
                let hits = top_k(&pool_vecs, d, &vv[qi * d..(qi + 1) * d], 100, 2);
                let ranked: Vec<usize> = hits.into_iter().map(|(r, _)| pool[r]).collect();
                let found =
                    |k: usize| e.cited.iter().filter(|c| ranked[..k.min(ranked.len())].contains(c)).count() as f64 / e.cited.len() as f64;
                r10 += found(10);
                r100 += found(100);
            }
            let n = val_ex.len() as f64;
            (r10 / n, r100 / n)
        };
        let (r10, r100) = recall(&val_texts);
        let (local_r10, local_r100) = recall(&val_local);
        current_pool = Some(pool_vecs);
        let mut report = EpochReport {
            epoch: epoch + 1,
            steps: done_steps,
            loss: loss_sum / done_steps.max(1) as f32,
            val_r10: r10,
            val_r100: r100,
            val_local_r10: local_r10,
            val_local_r100: local_r100,
            seconds: t0.elapsed().as_secs_f64(),
            best: false,
        };
        report.best = report.score() > state.best_score || state.history.is_empty();
        inference.save(&files.last())?;
        if report.best {
            state.best_score = report.score();
            inference.save(&files.best())?;
        }
        progress.epoch(&report);
        state.history.push(report);
        state.epochs_done = epoch + 1;
        write_atomic(&files.state(), serde_json::to_string_pretty(&state).expect("state serializes").as_bytes())?;
        if out_of_time(&started) {
            break;
        }
    }
    Ok(state.history)
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

/// |a ∩ b| / |a ∪ b|.
pub fn jaccard(a: &HashSet<String>, b: &HashSet<String>) -> f32 {
    if a.is_empty() && b.is_empty() {
        return 0.0;
    }
    let inter = a.intersection(b).count();
    inter as f32 / (a.len() + b.len() - inter) as f32
}

#[cfg(test)]
mod tests {
    use super::LrSchedule;

    #[test]
    fn linear_schedule_falls_from_the_rate_to_a_twentieth() {
        assert_eq!(LrSchedule::Constant.rate(1e-3, 0.7), 1e-3);
        let r = |p| LrSchedule::Linear.rate(1e-3, p);
        assert!((r(0.0) - 1e-3).abs() < 1e-12);
        assert!((r(0.5) - 0.525e-3).abs() < 1e-12);
        assert!((r(1.0) - 0.05e-3).abs() < 1e-12);
        // Past the end (a resumed run given fewer epochs) it stays at the floor.
        assert!((r(1.4) - 0.05e-3).abs() < 1e-12);
        assert!(r(0.3) > r(0.6));
    }
}
