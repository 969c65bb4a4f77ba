//! Evaluation: Recall@K, MRR and nDCG@10 of held-out citations, per source;
//! the plan of an evaluation's runs (`plan`).

pub mod harness;
pub mod metrics;
pub mod plan;
pub mod report;
pub mod scale;
pub mod support_auc;

pub use harness::{evaluate, EvalReport};
pub use plan::Plan;
