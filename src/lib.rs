//! citewise: recommends papers to cite at the cursor, with evidence.
//!
//! Layers, each depending only on those before it:
//! `corpus` (records, importers, the citation grammar, work identity) →
//! `index` (tantivy BM25, paper vectors), `evidence` (citing sentences →
//! spans), `neural` (the models on burn) → `library` (on-disk store,
//! import) → `pipeline` (query → channels → fusion → rerank) → `runtime`
//! (the latest-wins job runner), `eval` (metrics, harness), `export` (BibTeX
//! out), `draft` (what a draft says at the cursor) → `tui` (the editor),
//! `lsp` (the language server) →
//! `cli` (the `citewise` command). `error` (the library's errors), `ranking`
//! (Recall@K, reciprocal rank), `util`, `limits` (the budgets of every
//! reader of untrusted input), `project` (the one rule for the paths a
//! document names) and `dirs` (the one rule for where configuration and
//! data live) sit below every layer and serve them all. ARCHITECTURE.md
//! says more, and lists the invariants.

pub mod check;
pub mod cli;
pub mod config;
pub mod corpus;
pub mod dirs;
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
pub mod runtime;
pub mod testbed;
pub mod tui;
pub mod util;

pub use error::{Error, Result};
