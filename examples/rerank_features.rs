#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Writes, per benchmark context, what the rerank stage decides from (one
//! JSON line per context), for tuning it offline on `val` and on held-out
//! fields: every channel's list (ids and scores, in the order the
//! recommender fuses them) and confidence, the fused top `DEPTH` (the
//! recommender's fusion, one entry per work: each entry's records, channel
//! ranks and the fields of its record that `already_cited` reads), and the
//! stage's three signals for each of them — the cross-encoder's score, the
//! citation encoder's cosine, the best cosine of a span citing the paper —
//! and how well the reranker's field covers the query; every record of
//! each cited paper's work, as `eval` counts them; the passage and the
//! papers of the fused top that it already cites (`already_cited`; the top
//! is written as fused, before the recommender moves them last, so that the
//! analysis can replay it with and without); and the fusion settings used.
//! Queries are made as `eval` makes them (as of the citing year).
//! `examples/rerank_ablation.rs` replays fusion and the rerank stage from
//! these lines with each stage on and off.
//!
//! cargo run --release --example rerank_features -- BENCH POOL SPLIT OUT.jsonl [N] [DEPTH]
//!
//! N: a sample of that many contexts (default: the whole split); DEPTH: 30.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use citewise::eval::harness::{load_split, sample, AsOf, EvalQueries, EVAL_DEPTH};
use citewise::library::Library;
use citewise::pipeline::already_cited::AlreadyCited;
use citewise::pipeline::fusion::fuse;
use citewise::pipeline::same_work;
use citewise::pipeline::{Models, Recommender};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let bench = PathBuf::from(&args[1]);
    let lib = Arc::new(Library::open(&PathBuf::from(&args[2]))?);
    let split = &args[3];
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[4])?);
    let n: usize = args.get(5).map_or(usize::MAX, |s| s.parse().unwrap());
    let depth: usize = args.get(6).map_or(30, |s| s.parse().unwrap());
    let models = Models::installed().for_library(Some(PathBuf::from(&args[2])));
    models.span_cosines()?.warm(&lib, &|_, _| {})?;
    let rec = Recommender::new(lib.clone(), &models);
    let stage = rec.rerank_stage().ok_or_else(|| anyhow::anyhow!("no rerank stage: {:?}", rec.stages()))?;
    // Every channel the library can run (a pool without citing documents
    // has no evidence channel; the replay fuses what was recorded).
    let needed = [citewise::pipeline::ChannelId::Bm25, citewise::pipeline::ChannelId::Citation];
    anyhow::ensure!(
        needed.iter().all(|c| rec.stages().channels.contains(c)),
        "BM25 and the citation channel are needed: {:?}",
        rec.stages()
    );
    let mut queries = EvalQueries::new(&lib, false, EVAL_DEPTH, AsOf::CitingYear);
    for (done, c) in sample(load_split(&bench, split)?, n).iter().enumerate() {
        let q = queries.query(c)?;
        let lists = match rec.channel_lists(&q) {
            Ok(lists) => lists,
            Err(citewise::error::Error::InvalidQuery(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let prepared = rec.prepare(&q)?;
        // As the recommender does: each work once, with its record read.
        let mut top = fuse(&lists, &rec.fusion());
        same_work::collapse(&mut top, lib.papers(), depth)?;
        let signals = stage.score(&lib, &prepared, &top, true, true)?;
        let named = AlreadyCited::in_text(&prepared.query.context, &prepared.query.grammar);
        let already_cited: Vec<&str> =
            top.iter().filter(|t| t.paper.as_ref().is_some_and(|p| named.cites(p, None))).map(|t| t.id.as_str()).collect();
        let coverage = stage.reranker().field.as_ref().map_or(1.0, |f| f.coverage_of(lib.papers(), &prepared.full_terms));
        let channels: serde_json::Map<String, serde_json::Value> = lists
            .iter()
            .map(|(id, o)| {
                let ranked: Vec<&str> = o.ranked.iter().map(|(id, _)| id.as_str()).collect();
                let scores: Vec<f32> = o.ranked.iter().map(|(_, s)| *s).collect();
                (id.name().to_string(), serde_json::json!({ "conf": o.confidence, "ranked": ranked, "scores": scores }))
            })
            .collect();
        let channel_order: Vec<&str> = lists.iter().map(|(id, _)| id.name()).collect();
        // The fused top as the rerank stage receives it: each entry's
        // records, its channels' ranks, and what `already_cited` reads of
        // its record (key, authors, year).
        let candidates: Vec<serde_json::Value> = top
            .iter()
            .map(|t| {
                let paper = t.paper.as_ref().map(|p| serde_json::json!({ "key": p.key, "authors": p.authors, "year": p.year }));
                serde_json::json!({ "id": t.id, "same_work": t.same_work, "channels": t.channels, "paper": paper })
            })
            .collect();
        // Each cited paper's records: a result that is any of them finds it.
        let cited_works = c.cited.iter().map(|id| same_work::records_of(lib.papers(), id)).collect::<Result<Vec<_>, _>>()?;
        let line = serde_json::json!({
            "id": c.id, "source": c.source, "cited": c.cited, "cited_works": cited_works, "year": q.written_in,
            "context": prepared.query.context, "fusion": rec.fusion(),
            "channels": channels, "channel_order": channel_order, "coverage": coverage,
            "top": top.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(), "candidates": candidates, "already_cited": already_cited,
            "ce": signals.rerank, "cos": signals.citation, "cited_for": signals.cited_for,
        });
        writeln!(out, "{line}")?;
        out.flush()?;
        if done % 50 == 0 {
            eprintln!("{done}");
        }
    }
    Ok(())
}
