#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! For each line of a `rerank_features` dump, the best cosine (citation
//! encoder) between the context's local text and the evidence spans that
//! cite each candidate (`CitedFor`; null when no span does), for tuning the
//! rerank stage offline on `val`.
//!
//! cargo run --release --example evidence_cos -- BENCH POOL SPLIT IN.jsonl OUT.jsonl

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::PathBuf;

use citewise::eval::harness::{load_split, query_at};
use citewise::library::Library;
use citewise::pipeline::cited_for::CitedFor;
use citewise::pipeline::Models;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let bench = PathBuf::from(&args[1]);
    let lib = Library::open(&PathBuf::from(&args[2]))?;
    let contexts: HashMap<String, _> = load_split(&bench, &args[3])?.into_iter().map(|c| (c.id.clone(), c)).collect();
    let input = std::io::BufReader::new(std::fs::File::open(&args[4])?);
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[5])?);
    let spans = Models::installed().span_cosines()?;
    spans.warm(&lib, &|_, _| {})?;
    let cited_for = CitedFor::new(spans);
    for line in input.lines() {
        let row: serde_json::Value = serde_json::from_str(&line?)?;
        let id = row["id"].as_str().unwrap_or_default();
        let Some(c) = contexts.get(id) else { continue };
        let ids: Vec<&str> = row["ids"].as_array().into_iter().flatten().filter_map(|v| v.as_str()).collect();
        let best = cited_for.best_cosines(&lib, &query_at(c, false, 10).local_text(), &ids, &[])?;
        writeln!(out, "{}", serde_json::json!({ "id": id, "ev_cos": best }))?;
    }
    Ok(())
}
