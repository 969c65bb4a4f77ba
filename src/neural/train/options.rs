//! The options of a HAtten training run, what each epoch reports, and the
//! progress callbacks.

use serde::{Deserialize, Serialize};

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

/// Progress of a HAtten training run, with its epochs (the CLI draws bars).
pub trait TrainProgress: super::run::RunProgress {
    fn epoch(&self, report: &EpochReport);
}

/// No output (tests).
pub struct Quiet;
impl super::run::RunProgress for Quiet {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64, _: Option<f32>) {}
}
impl TrainProgress for Quiet {
    fn epoch(&self, _: &EpochReport) {}
}
impl super::adapt::AdaptProgress for Quiet {
    fn checkpoint(&self, _: &super::adapt::AdaptCheckpoint) {}
}
impl super::rerank::RerankProgress for Quiet {
    fn checkpoint(&self, _: &super::rerank::Checkpoint) {}
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
