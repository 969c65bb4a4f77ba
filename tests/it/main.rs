#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The integration tests, one crate (one binary to link): each module is
//! what was once a test file of its own. Three stay apart: `background`
//! (it times key latency with no other test on the cores), `panic_safety`
//! (its panic hook is process-wide) and `fuzz` (its memory ceiling is the
//! whole process's).

#[path = "../common/mod.rs"]
mod common;

mod adapt;
mod architecture;
mod bert_parity;
mod check;
mod cli;
mod damage;
mod distill;
mod docs;
mod documents;
mod evidence;
mod export;
mod hatten;
mod learned_flag;
mod learned_fusion;
mod library;
mod lsp;
mod malformed;
mod nvim_lsp;
mod real_data;
mod reranker;
mod tmux_e2e;
mod tui_snapshots;
mod worker;
mod zotero;
