#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! Measures queries split into claims: a context whose citation markers sit
//! in several sentences asks for one paper per marked sentence, so each
//! marked sentence (a claim) is also a query of its own and the fused lists
//! are merged. Prints R@10 / MRR / nDCG@10 per source for each way of
//! splitting (marked sentences, with the sentence before, every sentence,
//! the words leading to each mark) and merging (weighted reciprocal rank
//! with the whole context's list, round robin), from one retrieval per
//! (sub-)query, beside the pipeline's own claims (`Fusion::claim_weight`)
//! with paired bootstrap intervals against the whole context alone.
//!
//! cargo run --release --example claim_split -- BENCH POOL SPLIT [SAMPLE]

use std::collections::{HashMap, HashSet};

use citewise::corpus::benchmark::CIT;
use citewise::eval::harness::{AsOf, EvalQueries, EVAL_DEPTH};
use citewise::eval::metrics::{Mean, Scores};
use citewise::pipeline::{Fusion, Query, Recommender, Settings, Stages};

mod common;

use common::{fused, headline, paired, List, Scorer, Setup};

fn marked_sentences(context: &str, window: usize, all: bool) -> Vec<String> {
    let protected: Vec<(usize, usize)> = context.match_indices(CIT).map(|(i, m)| (i, i + m.len())).collect();
    let sentences: Vec<&str> =
        citewise::evidence::sentences::split_sentences(context, &protected).into_iter().map(|(s, e)| &context[s..e]).collect();
    let marked: Vec<usize> = (0..sentences.len()).filter(|&i| all || sentences[i].contains(CIT)).collect();
    if marked.len() < 2 {
        return Vec::new();
    }
    marked.iter().map(|&i| sentences[i.saturating_sub(window)..=i].join(" ")).collect()
}

/// The places `[CIT]` marks, each with the words that lead to it since
/// the last mark or sentence start (a mark with fewer than three words
/// before it takes those after it, up to the next mark).
fn clauses(context: &str) -> Vec<String> {
    let protected: Vec<(usize, usize)> = context.match_indices(CIT).map(|(i, m)| (i, i + m.len())).collect();
    let mut out: Vec<String> = Vec::new();
    for (s, e) in citewise::evidence::sentences::split_sentences(context, &protected) {
        let parts: Vec<&str> = context[s..e].split(CIT).collect();
        let n = parts.len() - 1;
        for i in 0..n {
            let before = parts[i].trim();
            let clause = if before.split_whitespace().filter(|w| w.chars().any(char::is_alphanumeric)).count() >= 3 {
                before.to_string()
            } else {
                parts[i + 1].trim().to_string()
            };
            if clause.chars().any(char::is_alphanumeric) && !out.contains(&clause) {
                out.push(clause);
            }
        }
    }
    if out.len() < 2 {
        return Vec::new();
    }
    out
}

fn rrf(lists: &[(&List, f64)], k: f64) -> List {
    let mut scores: HashMap<&str, (f64, usize, &Vec<String>)> = HashMap::new();
    let mut order = 0;
    for (list, w) in lists {
        for (r, (id, others)) in list.iter().enumerate() {
            let e = scores.entry(id.as_str()).or_insert_with(|| {
                order += 1;
                (0.0, order, others)
            });
            e.0 += w / (k + r as f64 + 1.0);
        }
    }
    let mut v: Vec<_> = scores.into_iter().collect();
    v.sort_by(|a, b| b.1 .0.total_cmp(&a.1 .0).then(a.1 .1.cmp(&b.1 .1)));
    v.into_iter().map(|(id, (_, _, o))| (id.to_string(), o.clone())).collect()
}

/// Round robin over the claims' lists (base list last in each round when given).
fn round_robin(lists: &[&List]) -> List {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    let depth = lists.iter().map(|l| l.len()).max().unwrap_or(0);
    for r in 0..depth {
        for l in lists {
            if let Some((id, o)) = l.get(r) {
                if seen.insert(id.clone()) {
                    out.push((id.clone(), o.clone()));
                }
            }
        }
    }
    out
}

fn main() -> anyhow::Result<()> {
    let Setup { lib, contexts, models } = Setup::from_args()?;
    let stages = Stages::parse(&["bm25", "evidence", "citation", "hatten"])?;
    let open = |claim_weight: f32| {
        let settings = Settings { fusion: Fusion { claim_weight, ..Fusion::default() }, ..Settings::default() };
        Recommender::open(lib.clone(), &models, Some(&stages), settings)
    };
    // The whole context alone; each claim is searched below.
    let rec = open(0.0)?;
    let shipped = open(Fusion::default().claim_weight)?;
    let (mut whole_scores, mut shipped_scores): (Vec<Scores>, Vec<Scores>) = (Vec::new(), Vec::new());
    let mut queries = EvalQueries::new(&lib, false, EVAL_DEPTH, AsOf::CitingYear);
    // variant name -> source -> mean
    let mut means: Vec<(String, HashMap<String, Mean>)> = Vec::new();
    let mut add = |name: String, source: &str, s: citewise::eval::metrics::Scores| {
        let i = match means.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                means.push((name, HashMap::new()));
                means.len() - 1
            }
        };
        for src in [source, "all"] {
            means[i].1.entry(src.to_string()).or_default().add(&s);
        }
    };
    let mut split_n = 0;
    let mut scorer = Scorer::default();
    for (n, c) in contexts.iter().enumerate() {
        let query = queries.query(c)?;
        let base = fused(&rec, &query)?;
        let mut eval = |name: &str, list: &List| -> anyhow::Result<Scores> {
            let s = scorer.score(&lib, c, list)?;
            add(name.to_string(), &c.source, s);
            Ok(s)
        };
        whole_scores.push(eval("whole context only", &base)?);
        shipped_scores.push(eval("the pipeline's claims (Fusion::claim_weight)", &fused(&shipped, &query)?)?);
        for (label, window, all) in
            [("marked", 0, false), ("marked+previous", 1, false), ("every sentence", 0, true), ("clauses", 0, false)]
        {
            let claims = if label == "clauses" { clauses(&c.context) } else { marked_sentences(&c.context, window, all) };
            if label == "marked" && !claims.is_empty() {
                split_n += 1;
            }
            let lists: Vec<List> =
                claims.iter().map(|t| fused(&rec, &Query { context: t.clone(), ..query.clone() })).collect::<anyhow::Result<_>>()?;
            let run = |f: &dyn Fn(&[&List]) -> List| if lists.is_empty() { base.clone() } else { f(&lists.iter().collect::<Vec<_>>()) };
            for k in [5.0, 20.0] {
                for wb in [0.0, 1.0, 2.0] {
                    let merged = run(&|ls: &[&List]| {
                        let mut all: Vec<(&List, f64)> = ls.iter().map(|l| (*l, 1.0)).collect();
                        all.push((&base, wb));
                        rrf(&all, k)
                    });
                    eval(&format!("{label}: rrf k {k}, whole weighs {wb}"), &merged)?;
                }
            }
            let rr = run(&|ls: &[&List]| round_robin(ls));
            eval(&format!("{label}: round robin"), &rr)?;
            let rrb = run(&|ls: &[&List]| {
                let mut v = vec![&base];
                v.extend(ls.iter().copied());
                round_robin(&v)
            });
            eval(&format!("{label}: round robin, whole first"), &rrb)?;
        }
        if n % 50 == 0 {
            eprintln!("{n}");
        }
    }
    let mut sources: Vec<String> = means[0].1.keys().cloned().collect();
    sources.sort();
    println!("{} contexts, {split_n} with markers in two or more sentences", contexts.len());
    print!("| variant |");
    for s in &sources {
        print!(" {s} (n {}) |", means[0].1[s].n);
    }
    println!();
    for (name, m) in &means {
        print!("| {name} |");
        for s in &sources {
            let [r, mrr, ndcg] = headline(&m[s].mean());
            print!(" {r:.3} / {mrr:.3} / {ndcg:.3} |");
        }
        println!();
    }
    for (p, name) in paired(&whole_scores, &shipped_scores).iter().zip(["R@10", "MRR", "nDCG@10"]) {
        println!("claims against the whole context only, all: {name} {:+.3} [{:+.3}, {:+.3}]", p.diff, p.lo, p.hi);
    }
    Ok(())
}
