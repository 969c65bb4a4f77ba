//! Distilling the citation encoder into a student paper encoder: a HAtten
//! (its own width, a linear map into the teacher's space) trained to write
//! the teacher's paper vectors, so that a library is encoded several times
//! faster and the teacher's query vectors still find its papers.
//!
//! Two objectives on each batch of papers: the cosine between the student's
//! and the teacher's vector of each paper (`1 − cos`), and, for the
//! teacher's vectors of sentences of the batch's abstracts (stand-ins for
//! citing sentences), the KL divergence from the teacher's softmax over the
//! batch's papers to the student's (a ranking loss on the teacher's top
//! neighbours, which are in every batch as hard papers). Validation is on
//! held-out papers: the mean cosine to the teacher, and how many of the
//! teacher's top 10 for held-out sentences the student's vectors also put
//! in their top 10. The best checkpoint is kept and a run resumes
//! ([`super::run`]). Gathering papers and teacher vectors
//! is the caller's ([`crate::library::student`]).

use std::path::Path;
use std::time::Instant;

use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::{Device, Tensor, TensorData};
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::super::hatten::{DocText, Hatten, HattenConfig};
use super::super::words::WordVectors;
use super::data::embed;
use super::run::{RunProgress, TrainingRun};
use super::steps::{run_steps, Checkpoint, StepCounters, StepPlan};
use crate::error::{Error, Result};
use crate::index::vectors::{dot, top_k};

/// What a student learns from: papers with the teacher's vectors, and the
/// teacher's vectors of one sentence of some of their abstracts.
pub struct DistillData {
    /// The papers' ids, and the papers as the student reads them.
    pub ids: Vec<String>,
    pub papers: Vec<DocText>,
    /// The teacher's unit vectors of `papers`, row-major, `dim` wide.
    pub teacher: Vec<f32>,
    pub dim: usize,
    /// Per paper, the teacher's vector of one of its abstract's sentences.
    pub queries: Vec<Option<Vec<f32>>>,
    /// Papers trained on, and papers held out (disjoint).
    pub train: Vec<usize>,
    pub val: Vec<usize>,
    /// Per paper with a query, the training papers the teacher ranks first
    /// for it (its own paper left out): the batch's hard papers.
    pub neighbours: Vec<Vec<usize>>,
}

/// Training papers the teacher's top neighbours of each query are taken from.
pub const NEIGHBOURS: usize = 4;

impl DistillData {
    /// Fills `neighbours` from the teacher's vectors (exact search among the
    /// training papers).
    pub fn find_neighbours(&mut self, threads: usize) {
        let d = self.dim;
        let train_matrix: Vec<f32> = self.train.iter().flat_map(|&p| self.teacher[p * d..(p + 1) * d].iter().copied()).collect();
        self.neighbours = vec![Vec::new(); self.papers.len()];
        for &p in &self.train {
            let Some(q) = &self.queries[p] else { continue };
            self.neighbours[p] = top_k(&train_matrix, d, q, NEIGHBOURS + 1, threads)
                .into_iter()
                .map(|(row, _)| self.train[row])
                .filter(|&n| n != p)
                .take(NEIGHBOURS)
                .collect();
        }
    }

    fn teacher_row(&self, p: usize) -> &[f32] {
        &self.teacher[p * self.dim..(p + 1) * self.dim]
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DistillOptions {
    /// Papers drawn per step (each brings one hard neighbour).
    pub batch: usize,
    pub learning_rate: f64,
    /// Softmax temperature of the ranking loss.
    pub temperature: f32,
    /// Weight of the ranking loss beside the cosine loss.
    pub rank_weight: f32,
    pub eval_every: usize,
    pub max_steps: usize,
    pub seed: u64,
    /// Stop at the first checkpoint after this many minutes of this sitting.
    pub max_minutes: Option<f64>,
}

impl Default for DistillOptions {
    fn default() -> DistillOptions {
        DistillOptions {
            batch: 48,
            learning_rate: 1e-3,
            temperature: 0.05,
            rank_weight: 1.0,
            eval_every: 250,
            max_steps: 3000,
            seed: 41,
            max_minutes: None,
        }
    }
}

/// One validation of a run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DistillCheckpoint {
    pub step: usize,
    /// Mean training loss since the previous checkpoint.
    pub loss: f32,
    /// Mean cosine between the student's and the teacher's vectors of the
    /// held-out papers.
    pub cosine: f64,
    /// Of the teacher's top 10 held-out papers for each held-out sentence,
    /// the share the student's vectors also rank in their top 10.
    pub top10_overlap: f64,
    pub seconds: f64,
    pub best: bool,
}

impl Checkpoint for DistillCheckpoint {
    /// The mean of the cosine and the top-10 overlap.
    fn score(&self) -> f64 {
        (self.cosine + self.top10_overlap) / 2.0
    }
    fn set_best(&mut self, best: bool) {
        self.best = best;
    }
}

/// The counters of the run's `train-state.json`.
pub type DistillSteps = StepCounters;

pub type DistillState = super::run::RunState<DistillSteps, DistillCheckpoint, DistillOptions>;

/// What a distillation run reports.
pub trait DistillProgress: RunProgress {
    fn checkpoint(&self, c: &DistillCheckpoint);
}

impl DistillProgress for super::Quiet {
    fn checkpoint(&self, _: &DistillCheckpoint) {}
}

/// Trains a student `config` (from `start`, safetensors bytes, else a fresh
/// initialisation) on `data`, writing into `out` (a run there resumes
/// instead); returns the history.
#[allow(clippy::too_many_arguments)]
pub fn distill_student(
    config: &HattenConfig,
    start: Option<&[u8]>,
    data: &DistillData,
    out: &Path,
    opts: &DistillOptions,
    words: &WordVectors,
    device: &Device,
    progress: &dyn DistillProgress,
) -> Result<Vec<DistillCheckpoint>> {
    if config.dim() != data.dim {
        return Err(Error::Config(format!("the student writes {}-wide vectors, the teacher {}", config.dim(), data.dim)));
    }
    if data.train.len() < 2 || data.val.len() < 2 {
        return Err(Error::Input("distillation needs papers to train and to validate on: the library has too few".into()));
    }
    let mut run = TrainingRun::<StepCounters, DistillCheckpoint, DistillOptions>::open(out, "config.json", opts.max_minutes)?;
    let ad = device.clone().autodiff();
    let model = super::steps::starting_model(&mut run, config, start, opts.seed, &ad)?;
    run.begin(opts.clone(), &config.to_string())?;
    let validator = Validator::new(data);
    let validate = |model: &Hatten, step: usize, loss: f32, t0: Instant| {
        let (cosine, top10_overlap) = validator.validate(model, config, words, device, progress);
        DistillCheckpoint { step, loss, cosine, top10_overlap, seconds: t0.elapsed().as_secs_f64(), best: false }
    };
    let plan = StepPlan { max_steps: opts.max_steps, eval_every: opts.eval_every, learning_rate: opts.learning_rate, phase: "distilling" };
    let loss_at = |model: &Hatten, step: usize| batch_loss(model, config, words, data, &draw(data, step, opts), opts, &ad);
    run_steps(run, model, &plan, &loss_at, &validate, progress, &|c| progress.checkpoint(c))
}

/// A step's papers: `drawn` (the `step`-th slice of the training papers in
/// the shuffled order of its pass, so that a resumed run draws what an
/// uninterrupted one would have), then one teacher neighbour of each drawn
/// paper that has a query.
struct DistillBatch {
    papers: Vec<usize>,
    /// Papers of `papers[..drawn]` with a query.
    with_query: Vec<usize>,
}

fn draw(data: &DistillData, step: usize, opts: &DistillOptions) -> DistillBatch {
    let n = data.train.len();
    let b = opts.batch.min(n).max(1);
    let per_pass = (n / b).max(1);
    let (pass, slot) = (step / per_pass, step % per_pass);
    let mut order = data.train.clone();
    order.shuffle(&mut StdRng::seed_from_u64(opts.seed ^ (pass as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let drawn: Vec<usize> = order[slot * b..(slot + 1) * b].to_vec();
    let mut rng = StdRng::seed_from_u64(opts.seed.wrapping_add(step as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    let with_query: Vec<usize> = drawn.iter().copied().filter(|&p| data.queries[p].is_some()).collect();
    let mut papers = drawn;
    for &p in &with_query {
        if let Some(&n) = data.neighbours[p].choose(&mut rng) {
            if !papers.contains(&n) {
                papers.push(n);
            }
        }
    }
    DistillBatch { papers, with_query }
}

fn batch_loss(
    model: &Hatten,
    config: &HattenConfig,
    words: &WordVectors,
    data: &DistillData,
    batch: &DistillBatch,
    opts: &DistillOptions,
    ad: &Device,
) -> Tensor<1> {
    let d = data.dim;
    let n = batch.papers.len();
    let texts: Vec<DocText> = batch.papers.iter().map(|&p| data.papers[p].clone()).collect();
    let student = model.encode(config, words, &texts, ad); // [n, d], unit rows
    let teacher: Vec<f32> = batch.papers.iter().flat_map(|&p| data.teacher_row(p).iter().copied()).collect();
    let teacher = Tensor::<2>::from_data(TensorData::new(teacher, [n, d]), ad);
    let cosine_loss = (student.clone() * teacher.clone()).sum_dim(1).neg().add_scalar(1.0).mean();
    if batch.with_query.is_empty() || opts.rank_weight == 0.0 {
        return cosine_loss;
    }
    let m = batch.with_query.len();
    let queries: Vec<f32> = batch.with_query.iter().flat_map(|&p| data.queries[p].as_ref().expect("a query").iter().copied()).collect();
    let queries = Tensor::<2>::from_data(TensorData::new(queries, [m, d]), ad);
    let t = opts.temperature as f64;
    let by_teacher = queries.clone().matmul(teacher.transpose()) / t;
    let target = softmax(by_teacher.clone(), 1).detach();
    let log_target = log_softmax(by_teacher, 1).detach();
    let log_student = log_softmax(queries.matmul(student.transpose()) / t, 1);
    let kl = (target * (log_target - log_student)).sum_dim(1).mean();
    cosine_loss + kl * opts.rank_weight as f64
}

/// Held-out papers and the held-out sentences among them.
struct Validator {
    papers: Vec<DocText>,
    teacher: Vec<f32>,
    queries: Vec<Vec<f32>>,
    /// Per query, the teacher's top 10 held-out papers (rows), found once.
    by_teacher: Vec<Vec<usize>>,
    dim: usize,
}

impl Validator {
    fn new(data: &DistillData) -> Validator {
        let teacher: Vec<f32> = data.val.iter().flat_map(|&p| data.teacher_row(p).iter().copied()).collect();
        let queries: Vec<Vec<f32>> = data.val.iter().filter_map(|&p| data.queries[p].clone()).collect();
        let by_teacher = queries.iter().map(|q| top_k(&teacher, data.dim, q, 10, 2).into_iter().map(|(r, _)| r).collect()).collect();
        Validator { papers: data.val.iter().map(|&p| data.papers[p].clone()).collect(), teacher, queries, by_teacher, dim: data.dim }
    }

    /// Mean cosine to the teacher, and the mean top-10 overlap.
    fn validate(
        &self,
        model: &Hatten,
        config: &HattenConfig,
        words: &WordVectors,
        device: &Device,
        progress: &dyn RunProgress,
    ) -> (f64, f64) {
        progress.phase("validating", self.papers.len() as u64);
        let d = self.dim;
        let student = embed(model, config, words, &self.papers, device, &|n| progress.advance(n, None));
        let cosine =
            (0..self.papers.len()).map(|i| dot(&student[i * d..(i + 1) * d], &self.teacher[i * d..(i + 1) * d]) as f64).sum::<f64>()
                / self.papers.len().max(1) as f64;
        let overlap = self
            .queries
            .iter()
            .zip(&self.by_teacher)
            .map(|(q, by_teacher)| {
                let by_student = top_k(&student, d, q, 10, 2);
                by_student.iter().filter(|(r, _)| by_teacher.contains(r)).count() as f64 / by_teacher.len().max(1) as f64
            })
            .sum::<f64>()
            / self.queries.len().max(1) as f64;
        (cosine, overlap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> DistillData {
        let dim = 2;
        DistillData {
            ids: (0..n).map(|i| i.to_string()).collect(),
            papers: (0..n).map(|i| DocText::paper(&format!("paper {i}"), "")).collect(),
            teacher: (0..n).flat_map(|i| [(i as f32).cos(), (i as f32).sin()]).collect(),
            dim,
            queries: (0..n).map(|i| (i % 2 == 0).then(|| vec![(i as f32).cos(), (i as f32).sin()])).collect(),
            train: (0..n - 2).collect(),
            val: vec![n - 2, n - 1],
            neighbours: Vec::new(),
        }
    }

    #[test]
    fn neighbours_are_training_papers_other_than_the_query_s_own_and_draws_repeat() {
        let mut data = data(12);
        data.find_neighbours(1);
        for p in 0..12 {
            assert_eq!(data.neighbours[p].is_empty(), !(p % 2 == 0 && p < 10), "paper {p}: {:?}", data.neighbours[p]);
            assert!(data.neighbours[p].iter().all(|&n| n != p && n < 10));
        }
        // The teacher's nearest training paper to paper 4's sentence (angle 4) is 3 or 5.
        assert!([3, 5].contains(&data.neighbours[4][0]), "{:?}", data.neighbours[4]);
        let opts = DistillOptions { batch: 4, ..DistillOptions::default() };
        for step in 0..6 {
            let b = draw(&data, step, &opts);
            assert!(b.papers[..4].iter().all(|&p| p < 10), "held-out papers are never drawn");
            assert!(b.papers.iter().all(|&p| p < 10));
            assert_eq!(b.with_query.len(), b.papers[..4].iter().filter(|&&p| p % 2 == 0).count());
            let again = draw(&data, step, &opts);
            assert_eq!((again.papers, again.with_query), (b.papers, b.with_query));
        }
    }
}
