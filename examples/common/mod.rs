//! What the diagnostic examples share: their arguments (`BENCH POOL SPLIT
//! [SAMPLE]`), a recommender's fused list for a query, and a ranked list
//! scored against a context as `citewise eval` scores it (each result
//! standing for the cited paper's work).
#![allow(dead_code)] // each example uses what it needs

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use citewise::corpus::benchmark::CitationContext;
use citewise::eval::harness::{by_work, load_split, sample};
use citewise::eval::metrics::{score, Mean, Scores};
use citewise::library::Library;
use citewise::pipeline::{same_work, Models, Prepared, Query, Recommender};

/// A ranked list: each paper with the other records of its work.
pub type List = Vec<(String, Vec<String>)>;

/// The benchmark's contexts of a split (a sample of them when asked) and
/// the library they are ranked in.
pub struct Setup {
    pub lib: Arc<Library>,
    pub contexts: Vec<CitationContext>,
    pub models: Models,
}

impl Setup {
    /// From the command line: `BENCH POOL SPLIT [SAMPLE]`.
    pub fn from_args() -> anyhow::Result<Setup> {
        let args: Vec<String> = std::env::args().collect();
        let bench = PathBuf::from(&args[1]);
        let lib = Arc::new(Library::open(&PathBuf::from(&args[2]))?);
        let mut contexts = load_split(&bench, &args[3])?;
        if let Some(n) = args.get(4) {
            contexts = sample(contexts, n.parse()?);
        }
        Ok(Setup { lib, contexts, models: Models::installed() })
    }
}

/// The fused list `rec` gives a prepared query (empty for a query with no
/// usable words: a miss, as in `eval`).
pub fn fused_prepared(rec: &Recommender, prepared: &citewise::error::Result<Prepared>) -> anyhow::Result<List> {
    match prepared {
        Ok(p) => Ok(rec.fused(p)?.into_iter().map(|c| (c.id, c.same_work)).collect()),
        Err(citewise::error::Error::InvalidQuery(_)) => Ok(Vec::new()),
        Err(e) => Err(anyhow::anyhow!("{e}")),
    }
}

/// The fused list `rec` gives `query`.
pub fn fused(rec: &Recommender, query: &Query) -> anyhow::Result<List> {
    fused_prepared(rec, &rec.prepare(query))
}

/// Scores lists against contexts, looking each cited paper's records up once.
#[derive(Default)]
pub struct Scorer {
    records: HashMap<String, Vec<String>>,
}

impl Scorer {
    pub fn score(&mut self, lib: &Library, c: &CitationContext, list: &List) -> anyhow::Result<Scores> {
        for id in &c.cited {
            if !self.records.contains_key(id) {
                self.records.insert(id.clone(), same_work::records_of(lib.papers(), id)?);
            }
        }
        let works: Vec<&Vec<String>> = c.cited.iter().map(|id| &self.records[id]).collect();
        let relevant: HashSet<String> = c.cited.iter().cloned().collect();
        Ok(score(&by_work(list, &works), &relevant))
    }
}

/// R@10, MRR and nDCG@10 of a list's scores.
pub fn headline(s: &Scores) -> [f64; 3] {
    let at10 = citewise::eval::metrics::RECALL_AT.iter().position(|&k| k == 10).expect("R@10 is reported");
    [s.recall[at10], s.mrr, s.ndcg10]
}

/// The change of R@10, MRR and nDCG@10 from `base` to `this` (the same
/// contexts, in order) with paired bootstrap intervals (2,000 resamples, 95 %).
pub fn paired(base: &[Scores], this: &[Scores]) -> [citewise::eval::metrics::Paired; 3] {
    let column = |s: &[Scores], m: usize| s.iter().map(|x| headline(x)[m]).collect::<Vec<_>>();
    [0, 1, 2].map(|m| citewise::eval::metrics::paired_bootstrap(&column(base, m), &column(this, m), 2000, 0.95))
}

/// Each setting's scores, by source (and `all`) and context by context,
/// for the examples that compare settings against the first one.
pub struct Settings {
    means: Vec<HashMap<String, Mean>>,
    per: Vec<Vec<Scores>>,
}

impl Settings {
    pub fn new(count: usize) -> Settings {
        Settings { means: vec![HashMap::new(); count], per: vec![Vec::new(); count] }
    }

    /// Scores each setting's list (`lists[i]` for setting i) against `c`.
    pub fn record(&mut self, scorer: &mut Scorer, lib: &Library, c: &CitationContext, lists: &[List]) -> anyhow::Result<()> {
        for (i, l) in lists.iter().enumerate() {
            let s = scorer.score(lib, c, l)?;
            for src in [c.source.as_str(), "all"] {
                self.means[i].entry(src.to_string()).or_default().add(&s);
            }
            self.per[i].push(s);
        }
        Ok(())
    }

    /// Prints a table per source (and `all`) of each setting's R@10 / MRR /
    /// nDCG@10, the change of each against the first setting with its
    /// paired bootstrap interval on `all`.
    pub fn print(&self, names: &[String]) {
        let (means, per) = (&self.means, &self.per);
        let mut sources: Vec<String> = means[0].keys().cloned().collect();
        sources.sort();
        for s in &sources {
            println!("\n{s} (n {})\n| setting | R@10 / MRR / nDCG@10 | ΔR@10 | ΔMRR | ΔnDCG |\n|---|---|---|---|---|", means[0][s].n);
            for (i, name) in names.iter().enumerate() {
                let [r, mrr, ndcg] = headline(&means[i][s].mean());
                let mut d = String::new();
                if s == "all" && i > 0 {
                    for p in paired(&per[0], &per[i]) {
                        d.push_str(&format!(" {:+.3} [{:+.3}, {:+.3}] |", p.diff, p.lo, p.hi));
                    }
                } else {
                    d.push_str(" | | |");
                }
                println!("| {name} | {r:.3} / {mrr:.3} / {ndcg:.3} |{d}");
            }
        }
    }
}
