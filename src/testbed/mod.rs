//! What tests and `citewise bench` build and drive, never the product:
//! Zotero databases of every schema era ([`zotero_db`]), the editor's
//! input-latency rig ([`editor_latency`]), its answer latency while the
//! trust is learned in the background ([`answer_latency`]) and the language
//! server's latency and flood rig ([`server_latency`]).
//!
//! It sits above the front ends it drives and below `cli`; only
//! `cli::bench` and the tests name it (`tests/it/architecture.rs`).

pub mod answer_latency;
pub mod editor_latency;
pub mod server_latency;
pub mod zotero_db;
