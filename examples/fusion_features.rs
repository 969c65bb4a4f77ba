#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Writes, per benchmark context of a split, each channel's ranked list and
//! the signals fusion can weigh (one JSON line per context), for tuning the
//! fusion offline on `val`.
//!
//! cargo run --release --example fusion_features -- BENCH POOL SPLIT OUT.jsonl [LIMIT]

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use citewise::eval::harness::{load_split, query_of};
use citewise::library::Library;
use citewise::pipeline::channel::{Bm25Channel, Channel};
use citewise::pipeline::evidence_channel::EvidenceChannel;
use citewise::pipeline::span_cosines::{SpanRanking, DEFAULT_MIN_WORDS};
use citewise::pipeline::Models;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let bench = PathBuf::from(&args[1]);
    let lib = Arc::new(Library::open(&PathBuf::from(&args[2]))?);
    let split = &args[3];
    let mut out = std::io::BufWriter::new(std::fs::File::create(&args[4])?);
    let limit: usize = args.get(5).map_or(usize::MAX, |s| s.parse().unwrap());
    let semantic = Models::installed().span_cosines()?;
    eprintln!("warming span vectors");
    semantic.warm(&lib, &|_, _| {})?;
    let bm25 = Bm25Channel::new(lib.clone());
    let evidence = EvidenceChannel::new(lib.clone()).with_reranker(Box::new(SpanRanking::new(semantic.clone(), DEFAULT_MIN_WORDS)));
    let ev = lib.evidence();
    let contexts = load_split(&bench, split)?;
    for (n, c) in contexts.iter().take(limit).enumerate() {
        let q = citewise::pipeline::Prepared::new(&query_of(c, false), &lib)?;
        let b = bm25.retrieve(&q, 100)?;
        let e = evidence.retrieve(&q, 100)?;
        let (local, terms) = (q.span_text.as_str(), q.span_terms.as_slice());
        let spans = evidence.spans(&q)?;
        let hits = ev.search(terms, 5)?;
        let idf_sum: f32 = terms.iter().map(|t| ev.idf(t)).sum();
        let top_spans = &spans[..spans.len().min(100)];
        let span_cos = semantic.similarity(local, top_spans)?;
        let cos = &span_cos[..span_cos.len().min(3)];
        let span_rows: Vec<_> = top_spans
            .iter()
            .zip(&span_cos)
            .map(|(s, c)| serde_json::json!([c, s.record.cited.iter().map(|p| (p.id.as_str(), p.support())).collect::<Vec<_>>()]))
            .collect();
        let top_cov = spans.first().map_or(0.0, |s| evidence.coverage(terms, &s.record));
        let line = serde_json::json!({
            "id": c.id,
            "source": c.source,
            "cited": c.cited,
            "words": local.split_whitespace().count(),
            "bm25": b.ranked.iter().map(|(id, s)| (id, s)).collect::<Vec<_>>(),
            "bm25_conf": b.confidence,
            "ev": e.ranked.iter().map(|(id, s)| (id, s)).collect::<Vec<_>>(),
            "ev_conf": e.confidence,
            "top_cov": top_cov,
            "vocab_cov": evidence.vocabulary_coverage(terms),
            "okapi_top": hits.okapi.first().map_or(0.0, |h| h.1),
            "idf_sum": idf_sum,
            "cos": cos,
            "top_support": spans.first().map_or(0, |s| s.record.cited.iter().map(|c| c.support()).sum::<u32>()),
            "n_spans": spans.len(),
            "spans": span_rows,
        });
        writeln!(out, "{line}")?;
        if n % 200 == 0 {
            eprintln!("{n}");
        }
    }
    Ok(())
}
