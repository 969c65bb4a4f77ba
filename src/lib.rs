//! citewise: recommends papers to cite at the cursor, with evidence.
//!
//! Layers, each depending only on those before it:
//! `corpus` (records, importers) → `index` (tantivy BM25) → `library`
//! (on-disk store, import) → `pipeline` (query → channels → fusion) →
//! `eval` (metrics, harness) → `cli` (the `citewise` command).

pub mod cli;
pub mod corpus;
pub mod error;
pub mod eval;
pub mod evidence;
pub mod index;
pub mod library;
pub mod pipeline;
pub mod util;

pub use error::{Error, Result};
