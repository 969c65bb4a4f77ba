//! citewise: recommends papers to cite at the cursor, with evidence.
//!
//! Layers, each depending only on those before it:
//! `corpus` (records, importers) → `index` (tantivy BM25), `evidence`
//! (citing sentences → spans) → `library` (on-disk store, import) →
//! `pipeline` (query → channels → fusion, worker) →
//! `eval` (metrics, harness), `export` (BibTeX, citations) → `tui` (the
//! editor) → `cli` (the `citewise` command). `ranking` (Recall@K, reciprocal
//! rank), `util`, `limits` (the budgets of every reader of untrusted input)
//! and `project` (the one rule for the paths a document names) sit below
//! every layer and serve them all.

pub mod cli;
pub mod corpus;
pub mod draft;
pub mod error;
pub mod eval;
pub mod evidence;
pub mod export;
pub mod index;
pub mod library;
pub mod limits;
pub mod lsp;
pub mod neural;
pub mod pipeline;
pub mod project;
pub mod ranking;
pub mod tui;
pub mod util;

pub use error::{Error, Result};
