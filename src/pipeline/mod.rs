//! Pipeline: query → channels → fusion → ranked, explained candidates.

pub mod channel;
pub mod citation_channel;
pub mod cited_for;
pub mod dense_channel;
pub mod evidence_channel;
pub mod own_words;
pub mod paper_similarity;
pub mod query;
pub mod recommender;
pub mod semantic_spans;
pub mod worker;

pub use query::Query;
pub use recommender::{Candidate, ChannelScore, Fusion, Recommendations, Recommender};
