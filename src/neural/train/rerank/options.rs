//! A reranker run's settings, its checkpoints, its progress and the
//! counters of its saved state.

use serde::{Deserialize, Serialize};

use super::super::run::{Counters, RunProgress, RunState};

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
pub trait RerankProgress: RunProgress {
    fn checkpoint(&self, c: &Checkpoint);
}

/// A reranker run's saved state (`train-state.json`).
pub type RerankState = RunState<Steps, Checkpoint, RerankTrainOptions>;

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
