//! Evaluation: Recall@K, MRR and nDCG@10 of held-out citations, per source.

pub mod harness;
pub mod metrics;
pub mod report;
pub mod scale;

pub use harness::{evaluate, EvalReport};
