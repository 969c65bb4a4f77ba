#![allow(clippy::unwrap_used)] // a diagnostic tool, run by hand
//! Counts, per source, the contexts of a benchmark split that the pipeline
//! searches claim by claim (`Query::claims`: `[CIT]` in two or more
//! sentences).
//!
//! cargo run --release --example claim_count -- BENCH SPLIT

use std::collections::BTreeMap;

use citewise::eval::harness::load_split;
use citewise::pipeline::Query;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let contexts = load_split(std::path::Path::new(&args[1]), &args[2])?;
    let mut by_source: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    for c in &contexts {
        let claims = Query::new(c.context.clone()).claims().len();
        let e = by_source.entry(c.source.as_str()).or_default();
        e.0 += 1;
        if claims > 0 {
            e.1 += 1;
            e.2 += claims;
        }
    }
    for (source, (n, split, claims)) in by_source {
        println!("{source}: {n} contexts, {split} searched claim by claim ({claims} claims)");
    }
    Ok(())
}
