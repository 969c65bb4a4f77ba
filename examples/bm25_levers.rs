#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Measures the BM25 channel's levers (the title's own BM25 added, pseudo-
//! relevance feedback) alone and in the fused prefetch: R@10 / MRR /
//! nDCG@10 per source, with paired bootstrap intervals of each variant's
//! fused prefetch against today's.
//!
//! cargo run --release --example bm25_levers -- BENCH POOL SPLIT [SAMPLE]

use std::collections::HashMap;
use std::sync::Arc;

use citewise::eval::harness::{AsOf, EvalQueries, EVAL_DEPTH};
use citewise::eval::metrics::{Mean, Scores};
use citewise::library::Library;
use citewise::pipeline::channel::{Bm25Channel, Feedback};
use citewise::pipeline::{Models, Recommender};

mod common;

use common::{fused, headline, paired, Scorer, Setup};

fn main() -> anyhow::Result<()> {
    let Setup { lib, contexts, models } = Setup::from_args()?;
    let fb = Feedback::default();
    let variants: Vec<(String, f32, Option<Feedback>)> = vec![
        ("today".into(), 0.0, None),
        ("title 0.5".into(), 0.5, None),
        ("title 1".into(), 1.0, None),
        ("title 2".into(), 2.0, None),
        ("feedback 10 docs, 20 terms, 0.3".into(), 0.0, Some(fb)),
        ("feedback 10 docs, 20 terms, 0.5".into(), 0.0, Some(Feedback { weight: 0.5, ..fb })),
        ("feedback 5 docs, 10 terms, 0.3".into(), 0.0, Some(Feedback { docs: 5, terms: 10, ..fb })),
        ("feedback 20 docs, 30 terms, 0.2".into(), 0.0, Some(Feedback { docs: 20, terms: 30, weight: 0.2, ..fb })),
        ("title 1 + feedback 10/20/0.3".into(), 1.0, Some(fb)),
    ];
    let others: Vec<&str> = ["evidence", "citation", "hatten"].into_iter().filter(|c| lib_has(&lib, &models, c)).collect();
    let recs: Vec<(Recommender, Recommender)> = variants
        .iter()
        .map(|(_, t, f)| {
            let ch = || Box::new(Bm25Channel::new(lib.clone()).with_title_weight(*t).with_feedback(*f));
            let fused = Recommender::with_stages(lib.clone(), &models, &others).unwrap().with_channel(ch());
            let none = citewise::pipeline::Stages { channels: Vec::new(), rerank: false };
            let alone = Recommender::open(lib.clone(), &models, Some(&none), Default::default()).unwrap().with_channel(ch());
            (fused, alone)
        })
        .collect();
    let mut queries = EvalQueries::new(&lib, false, EVAL_DEPTH, AsOf::CitingYear);
    let mut scorer = Scorer::default();
    // per variant: per source means (alone, fused), per-context fused scores
    let mut means: Vec<HashMap<String, (Mean, Mean)>> = vec![HashMap::new(); variants.len()];
    let mut per_context: Vec<Vec<Scores>> = vec![Vec::new(); variants.len()];
    for (n, c) in contexts.iter().enumerate() {
        let query = queries.query(c)?;
        for (v, (with_others, alone)) in recs.iter().enumerate() {
            let a = scorer.score(&lib, c, &fused(alone, &query)?)?;
            let f = scorer.score(&lib, c, &fused(with_others, &query)?)?;
            for src in [c.source.as_str(), "all"] {
                let e = means[v].entry(src.to_string()).or_default();
                e.0.add(&a);
                e.1.add(&f);
            }
            per_context[v].push(f);
        }
        if n % 50 == 0 {
            eprintln!("{n}");
        }
    }
    let mut sources: Vec<String> = means[0].keys().cloned().collect();
    sources.sort();
    println!("{} contexts; R@10 / MRR / nDCG@10; BM25 alone, then fused prefetch ({})", contexts.len(), others.join(" + "));
    for s in &sources {
        println!("\n{s} (n {})\n| variant | BM25 alone | fused | ΔR@10 fused | ΔMRR | ΔnDCG |\n|---|---|---|---|---|---|", means[0][s].0.n);
        for (v, (name, ..)) in variants.iter().enumerate() {
            let (a, f) = (means[v][s].0.mean(), means[v][s].1.mean());
            let mut deltas = String::new();
            if s == "all" && v > 0 {
                for p in paired(&per_context[0], &per_context[v]) {
                    deltas.push_str(&format!(" {:+.3} [{:+.3}, {:+.3}] |", p.diff, p.lo, p.hi));
                }
            } else {
                deltas.push_str(" | | |");
            }
            let ([a1, a2, a3], [f1, f2, f3]) = (headline(&a), headline(&f));
            println!("| {name} | {a1:.3} / {a2:.3} / {a3:.3} | {f1:.3} / {f2:.3} / {f3:.3} |{deltas}");
        }
    }
    Ok(())
}

fn lib_has(lib: &Arc<Library>, models: &Models, channel: &str) -> bool {
    Recommender::with_stages(lib.clone(), models, &[channel]).is_ok()
}
