//! Index: the tantivy BM25 index over the library's papers.

pub mod analyzer;
pub mod health;
pub mod identity;
pub mod layered;
pub mod paper_index;
pub mod quantized;
pub mod schema;
pub mod vectors;

pub use paper_index::{Hit, PaperIndex, PaperWriter, QueryTf};
