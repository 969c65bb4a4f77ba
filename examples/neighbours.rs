#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Measures Citeomatic's neighbour expansion over the library's citation
//! graph (the evidence database's sightings: which citing paper cited
//! which papers): the fused prefetch's top candidates widened by the papers
//! they cite and the papers cited beside them, merged with the fused list
//! by weighted reciprocal rank. The query's own citing paper's sightings
//! are left out (as the evidence channel leaves them out). R@10 / MRR /
//! nDCG@10 per source for each setting, with paired bootstrap intervals
//! against the fused prefetch.
//!
//! cargo run --release --example neighbours -- BENCH POOL SPLIT [SAMPLE]

use std::collections::{HashMap, HashSet};

use citewise::eval::harness::{AsOf, EvalQueries, EVAL_DEPTH};
use citewise::evidence::record::citing_key;
use citewise::library::Library;
use citewise::pipeline::Recommender;

mod common;

use common::{List, Scorer, Settings, Setup};

/// The citation graph: what each citing paper cites, and who cites each paper.
struct Graph {
    cites: HashMap<u64, HashSet<String>>,
    cited_by: HashMap<String, HashSet<u64>>,
}

impl Graph {
    fn of(lib: &Library) -> anyhow::Result<Graph> {
        let mut cites: HashMap<u64, HashSet<String>> = HashMap::new();
        let mut cited_by: HashMap<String, HashSet<u64>> = HashMap::new();
        for r in lib.evidence().all_records()? {
            for c in &r.cited {
                for &by in c.by.iter().filter(|&&b| b != 0) {
                    cites.entry(by).or_default().insert(c.id.clone());
                    cited_by.entry(c.id.clone()).or_default().insert(by);
                }
            }
        }
        Ok(Graph { cites, cited_by })
    }

    /// Papers `id` cites and papers cited beside it, each with how often,
    /// never through a citing paper in `exclude`.
    fn neighbours(&self, id: &str, exclude: &[u64], co_cited: bool) -> HashMap<String, f64> {
        let mut out: HashMap<String, f64> = HashMap::new();
        let own = citing_key(id);
        if !exclude.contains(&own) {
            for c in self.cites.get(&own).into_iter().flatten() {
                *out.entry(c.clone()).or_default() += 1.0;
            }
        }
        if co_cited {
            for by in self.cited_by.get(id).into_iter().flatten().filter(|b| !exclude.contains(b)) {
                for c in self.cites.get(by).into_iter().flatten().filter(|c| c.as_str() != id) {
                    *out.entry(c.clone()).or_default() += 1.0;
                }
            }
        }
        out
    }
}

fn main() -> anyhow::Result<()> {
    let Setup { lib, contexts, models } = Setup::from_args()?;
    let graph = Graph::of(&lib)?;
    eprintln!("graph: {} citing papers, {} cited", graph.cites.len(), graph.cited_by.len());
    let rec = Recommender::with_stages(lib.clone(), &models, &["bm25", "evidence", "citation", "hatten"])?;
    let mut queries = EvalQueries::new(&lib, false, EVAL_DEPTH, AsOf::CitingYear);
    let settings: Vec<(usize, f64, bool)> =
        vec![(5, 0.25, false), (5, 0.5, true), (10, 0.25, true), (10, 0.5, true), (10, 1.0, true), (20, 0.5, true), (10, 0.5, false)];
    let names: Vec<String> = std::iter::once("fused prefetch".to_string())
        .chain(settings.iter().map(|(m, w, co)| format!("top {m}, weight {w}{}", if *co { ", cites + co-cited" } else { ", cites only" })))
        .collect();
    let mut results = Settings::new(names.len());
    let mut scorer = Scorer::default();
    let (mut reached, mut added) = (0usize, 0usize);
    for (n, c) in contexts.iter().enumerate() {
        let query = queries.query(c)?;
        let prepared = match rec.prepare(&query) {
            Ok(p) => p,
            Err(citewise::error::Error::InvalidQuery(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let fused: List = rec.fused(&prepared)?.into_iter().map(|c| (c.id, c.same_work)).collect();
        let relevant: HashSet<String> = c.cited.iter().cloned().collect();
        let mut lists: Vec<List> = vec![fused.clone()];
        for &(m, w, co) in &settings {
            let mut neighbour: HashMap<String, f64> = HashMap::new();
            for (rank, (id, others)) in fused.iter().take(m).enumerate() {
                for rec_id in std::iter::once(id).chain(others) {
                    for (nb, count) in graph.neighbours(rec_id, &prepared.citing_keys, co) {
                        *neighbour.entry(nb).or_default() += count / (5.0 + rank as f64 + 1.0);
                    }
                }
            }
            // Papers the draft could not cite stay out (its own records, later papers).
            if let Some(year) = query.written_in {
                let ids: Vec<String> = neighbour.keys().cloned().collect();
                let ys = lib.papers().years(&ids.iter().map(String::as_str).collect::<Vec<_>>())?;
                for (id, y) in ids.iter().zip(ys) {
                    if y.is_some_and(|y| y > year) {
                        neighbour.remove(id);
                    }
                }
            }
            for own in &query.citing {
                neighbour.remove(own);
            }
            let mut nb: Vec<(String, f64)> = neighbour.into_iter().collect();
            nb.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            if m == 10 && w == 0.5 && co {
                reached += nb.iter().take(100).any(|(id, _)| relevant.contains(id)) as usize;
                added += nb.iter().take(100).filter(|(id, _)| relevant.contains(id) && !fused.iter().any(|(f, _)| f == id)).count();
            }
            // Weighted RRF of the fused list (1) and the neighbours (w).
            let mut merged: HashMap<String, (f64, Vec<String>)> = HashMap::new();
            for (r, (id, o)) in fused.iter().enumerate() {
                merged.entry(id.clone()).or_insert((0.0, o.clone())).0 += 1.0 / (5.0 + r as f64 + 1.0);
            }
            for (r, (id, _)) in nb.iter().take(100).enumerate() {
                merged.entry(id.clone()).or_insert((0.0, Vec::new())).0 += w / (5.0 + r as f64 + 1.0);
            }
            let mut v: Vec<(String, (f64, Vec<String>))> = merged.into_iter().collect();
            v.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.0.cmp(&b.0)));
            lists.push(v.into_iter().map(|(id, (_, o))| (id, o)).collect());
        }
        results.record(&mut scorer, &lib, c, &lists)?;
        if n % 50 == 0 {
            eprintln!("{n}");
        }
    }
    println!(
        "{} contexts; a cited paper among the neighbours (top 10, co-cited): {reached}; cited papers the fused top 100 lacked: {added}",
        contexts.len()
    );
    results.print(&names);
    Ok(())
}
