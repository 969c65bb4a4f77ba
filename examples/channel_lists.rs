#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Writes, per benchmark context of a split, every channel's own ranked list
//! and confidence, the weight the shipped fusion gives each list and the
//! fused order it makes of them (one JSON line per context), for studying
//! fusion and per-query gating offline on `val` and on held-out fields: a
//! script reads the fusion from here, it never re-implements it. Queries
//! are made as `eval` makes them (as of the citing year).
//!
//! cargo run --release --example channel_lists -- BENCH POOL SPLIT OUT.jsonl [LIMIT]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use citewise::eval::harness::{load_split, AsOf, EvalQueries, EVAL_DEPTH};
use citewise::library::Library;
use citewise::pipeline::channel::ChannelId;
use citewise::pipeline::fusion::{fuse, Fusion};
use citewise::pipeline::{Models, Recommender};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let bench = PathBuf::from(&args[1]);
    let lib = Arc::new(Library::open(&PathBuf::from(&args[2]))?);
    let split = &args[3];
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[4])?);
    let limit: usize = args.get(5).map_or(usize::MAX, |s| s.parse().unwrap());
    let models = Models::installed();
    models.span_cosines()?.warm(&lib, &|_, _| {})?;
    let rec = Recommender::with_stages(lib.clone(), &models, &["bm25", "evidence", "citation", "hatten"])?;
    let mut queries = EvalQueries::new(&lib, false, EVAL_DEPTH, AsOf::CitingYear);
    for (n, c) in load_split(&bench, split)?.iter().take(limit).enumerate() {
        let lists = match rec.channel_lists(&queries.query(c)?) {
            Ok(lists) => lists,
            // A context with no usable words ranks nothing (a miss, as in `eval`).
            Err(citewise::error::Error::InvalidQuery(_)) => Vec::new(),
            Err(e) => return Err(e.into()),
        };
        let fusion = Fusion::default();
        let evidence = lists.iter().find(|(id, _)| *id == ChannelId::Evidence).map_or(0.0, |(_, o)| o.confidence);
        let channels: serde_json::Map<String, serde_json::Value> = lists
            .iter()
            .map(|(id, o)| {
                let weight = fusion.weight(*id, o.confidence, evidence);
                // Its weight were the evidence list left out (a library without citing sentences of the claim).
                let without_evidence = fusion.weight(*id, o.confidence, 0.0);
                let list = serde_json::json!({ "conf": o.confidence, "weight": weight, "weight_without_evidence": without_evidence, "ranked": o.ranked });
                (id.name().to_string(), list)
            })
            .collect();
        let fused: Vec<String> = fuse(&lists, &fusion).into_iter().map(|c| c.id).collect();
        let line = serde_json::json!({ "id": c.id, "source": c.source, "cited": c.cited, "channels": channels, "fused": fused });
        writeln!(out, "{line}")?;
        if n % 200 == 0 {
            eprintln!("{n}");
        }
    }
    Ok(())
}
