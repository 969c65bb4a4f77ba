//! Pipeline: query → channels → fusion (one entry per work, papers the
//! passage already cites last) → rerank stage → ranked, explained
//! candidates, over the models of a [`Models`] value.

pub mod already_cited;
pub mod answer;
pub mod background;
pub mod channel;
pub mod citation_channel;
pub mod cited_for;
pub mod claims;
pub mod dense_channel;
pub mod evidence_channel;
pub mod fusion;
pub mod fusion_learning;
pub mod learned_fusion;
pub mod models;
pub mod own_words;
pub mod paper_cosines;
pub mod query;
pub mod recommender;
pub mod rerank;
pub mod same_work;
pub mod span_cosines;
pub mod stage;

pub use answer::{Candidate, ChannelScore, Recommendations, SignalScore};
pub use channel::ChannelId;
pub use fusion::Fusion;
pub use models::Models;
pub use query::{ContextUsed, Prepared, Query};
pub use recommender::{Recommender, Settings, Stages};
pub use stage::Stage;
