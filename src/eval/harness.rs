//! Runs held-out citation contexts through the recommender and aggregates
//! metrics per source.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::metrics::{quantile, score, Mean, Scores};
use crate::corpus::benchmark::{load_contexts, CitationContext};
use crate::error::{Error, Result};
use crate::evidence::link::Linker;
use crate::library::Library;
use crate::pipeline::{same_work, Query, Recommender};

/// The split the evidence database of an evaluation is built from.
pub const TRAIN_SPLIT: &str = "train";

/// How many papers are ranked per query (the deepest cut-off reported).
pub const EVAL_DEPTH: usize = 100;

/// The benchmark's files inside its directory.
pub fn papers_file(bench: &Path) -> PathBuf {
    bench.join("papers.jsonl.gz")
}
pub fn contexts_file(bench: &Path) -> PathBuf {
    bench.join("contexts.jsonl.gz")
}

/// Loads a split's contexts, failing clearly on a wrong directory.
pub fn load_split(bench: &Path, split: &str) -> Result<Vec<CitationContext>> {
    let path = contexts_file(bench);
    if !path.exists() {
        return Err(Error::Input(format!("{}: not found (is --bench the benchmark directory?)", path.display())));
    }
    let contexts = load_contexts(&path, Some(split))?;
    if contexts.is_empty() {
        return Err(Error::Input(format!("{}: no contexts in split `{split}`", path.display())));
    }
    Ok(contexts)
}

/// The query the benchmark context stands for.
pub fn query_of(c: &CitationContext, global: bool) -> Query {
    query_at(c, global, EVAL_DEPTH)
}

/// The query of a context, ranking `depth` papers.
pub fn query_at(c: &CitationContext, global: bool, depth: usize) -> Query {
    let mut q = Query::new(c.context.clone()).with_k(depth);
    // Leakage guard: the citing paper's own sentences are never its evidence.
    if !c.citing_id.is_empty() {
        q = q.citing(vec![c.citing_id.clone()]);
    }
    if global {
        q.with_global(c.citing_title.clone(), c.citing_abstract.clone().unwrap_or_default())
    } else {
        q
    }
}

/// A random sample of `n` contexts, in their original order; the same `n`
/// draws the same sample.
pub fn sample(contexts: Vec<CitationContext>, n: usize) -> Vec<CitationContext> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    if n >= contexts.len() {
        return contexts;
    }
    let mut idx: Vec<usize> = (0..contexts.len()).collect();
    idx.shuffle(&mut rand::rngs::StdRng::seed_from_u64(0x5eed));
    let mut keep = vec![false; contexts.len()];
    for &i in &idx[..n] {
        keep[i] = true;
    }
    contexts.into_iter().zip(keep).filter_map(|(c, k)| k.then_some(c)).collect()
}

/// Metrics of one source (or `all`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SourceResult {
    pub source: String,
    pub n: usize,
    pub scores: Scores,
}

/// Query latency in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub mean_ms: f64,
}

/// What was run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvalConfig {
    pub split: String,
    pub global: bool,
    pub stages: Vec<String>,
    pub papers: u64,
    pub version: String,
    /// Papers ranked per query (recall is reported up to this cut-off).
    #[serde(default = "default_depth")]
    pub depth: usize,
    /// Queries that carried the citing paper's title, and its abstract
    /// (with `global`; contexts lack them where the benchmark does).
    #[serde(default)]
    pub with_title: usize,
    #[serde(default)]
    pub with_abstract: usize,
    /// Under [`AsOf::CitingYear`], the queries whose citing paper's year
    /// the library knows (ranked against the papers of that year and
    /// before); `None`: every query ranked against every paper.
    #[serde(default)]
    pub as_of_citing_year: Option<usize>,
}

impl EvalConfig {
    /// The context the queries carried, in words.
    pub fn context(&self, n: usize) -> String {
        if !self.global {
            return "local".into();
        }
        format!("local + citing title ({} of {n}) + abstract ({} of {n})", self.with_title, self.with_abstract)
    }

    /// Which papers the queries were ranked against, in words.
    pub fn as_of(&self, n: usize) -> String {
        match self.as_of_citing_year {
            Some(dated) => format!("citing-year ({dated} of {n})"),
            None => "any-year".into(),
        }
    }
}

fn default_depth() -> usize {
    EVAL_DEPTH
}

/// A whole evaluation, as printed and as written by `--json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EvalReport {
    pub config: EvalConfig,
    /// `all` first, then sources by descending size.
    pub sources: Vec<SourceResult>,
    pub latency: Latency,
    /// Latency of each stage (channels, fusion, rerank), in pipeline order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stage_latency: Vec<(String, Latency)>,
    /// Fused candidates reranked per query (0: no rerank stage).
    #[serde(default)]
    pub rerank_depth: usize,
    /// The same pipeline at other rerank depths (`eval --rerank-depth a,b,..`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_rerank_depth: Vec<EvalReport>,
    /// Each channel evaluated alone, when several were fused.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub alone: Vec<EvalReport>,
    /// Share of the top-10 results that show evidence (a citing sentence
    /// from the evidence database, never one of the query's own paper).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub with_evidence_at10: Option<f64>,
    /// The same queries counted by record: only the cited record itself is
    /// a hit, not another record of the same work (`sources` counts those).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by_record: Vec<SourceResult>,
    /// Each context's own scores (counted by work, as `sources`), in the
    /// order evaluated: what a paired comparison of two runs on the same
    /// contexts resamples (`ranking::paired_bootstrap`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contexts: Vec<ContextScores>,
}

/// One context's scores in an [`EvalReport`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextScores {
    pub id: String,
    pub source: String,
    pub recall10: f64,
    pub mrr: f64,
    pub ndcg10: f64,
    /// The papers ranked, best first (what `eval --run` writes; not kept
    /// in the JSON result).
    #[serde(skip)]
    pub ranked: Vec<String>,
}

/// Evaluates the recommender on `contexts`. `on_query` is called after each
/// query (for progress).
pub fn evaluate(
    rec: &Recommender,
    contexts: &[CitationContext],
    split: &str,
    global: bool,
    on_query: &dyn Fn(usize),
) -> Result<EvalReport> {
    evaluate_at(rec, contexts, split, global, EVAL_DEPTH, AsOf::CitingYear, on_query)
}

/// Which papers a context is ranked against. Whatever the choice, the
/// citing paper itself is never a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AsOf {
    /// The papers that existed when the citing paper was written: none
    /// published after its year, where the library knows that year (the
    /// library its author would have had).
    #[default]
    CitingYear,
    /// Every paper of the pool, whatever its year.
    AnyYear,
}

/// Makes the queries of an evaluation: each context's words, ranked as of
/// its citing paper's year (under [`AsOf::CitingYear`], where the library
/// knows that year), never offered its citing paper under any of the ids
/// the library has for it (leakage guard). Both lookups are cached per
/// citing paper.
pub struct EvalQueries<'a> {
    library: &'a Library,
    global: bool,
    depth: usize,
    as_of: AsOf,
    linker: Linker<'a>,
    citing_ids: HashMap<String, Vec<String>>,
    citing_years: HashMap<String, Option<i32>>,
    /// Queries given a year so far.
    pub dated: usize,
}

impl<'a> EvalQueries<'a> {
    pub fn new(library: &'a Library, global: bool, depth: usize, as_of: AsOf) -> EvalQueries<'a> {
        let linker = Linker::new(library.papers());
        EvalQueries { library, global, depth, as_of, linker, citing_ids: HashMap::new(), citing_years: HashMap::new(), dated: 0 }
    }

    /// The query of context `c`.
    pub fn query(&mut self, c: &CitationContext) -> Result<Query> {
        let mut query = query_at(c, self.global, self.depth);
        if c.citing_id.is_empty() {
            return Ok(query);
        }
        if self.as_of == AsOf::CitingYear {
            let year = match self.citing_years.get(&c.citing_id) {
                Some(y) => *y,
                None => {
                    let y = self.library.papers().years(&[c.citing_id.as_str()])?[0];
                    self.citing_years.insert(c.citing_id.clone(), y);
                    y
                }
            };
            self.dated += year.is_some() as usize;
            query = query.written_in(year);
        }
        if self.library.evidence().num_spans() > 0 {
            let linker = &self.linker;
            query.citing = self.citing_ids.entry(c.citing_id.clone()).or_insert_with(|| linker.same_work_loose(&c.citing_id)).clone();
        }
        Ok(query)
    }
}

/// [`evaluate`] ranking `depth` papers per query.
pub fn evaluate_at(
    rec: &Recommender,
    contexts: &[CitationContext],
    split: &str,
    global: bool,
    depth: usize,
    as_of: AsOf,
    on_query: &dyn Fn(usize),
) -> Result<EvalReport> {
    let mut per_source: BTreeMap<String, Mean> = BTreeMap::new();
    let mut all = Mean::default();
    let (mut per_source_by_record, mut all_by_record): (BTreeMap<String, Mean>, Mean) = Default::default();
    let mut latencies = Vec::with_capacity(contexts.len());
    let mut per_context = Vec::with_capacity(contexts.len());
    let mut stage_ms: Vec<(String, Vec<f64>)> = Vec::new();
    let evidence = rec.library().evidence();
    let count_evidence = evidence.num_spans() > 0;
    let mut queries = EvalQueries::new(rec.library(), global, depth, as_of);
    // Every record of each cited paper's work, looked up once.
    let mut cited_records: HashMap<String, Vec<String>> = HashMap::new();
    let (mut shown, mut with_evidence) = (0usize, 0usize);
    let (mut with_title, mut with_abstract) = (0usize, 0usize);
    for (i, c) in contexts.iter().enumerate() {
        let query = queries.query(c)?;
        let used = query.context_used();
        with_title += used.title as usize;
        with_abstract += used.abstract_text as usize;
        let t = Instant::now();
        // Each result with the library's other records of its work.
        let ranked: Vec<(String, Vec<String>)> = match rec.recommend_ids(&query) {
            Ok(r) => {
                for (stage, d) in &r.timings {
                    let ms = d.as_secs_f64() * 1000.0;
                    match stage_ms.iter_mut().find(|(s, _)| s == stage.name()) {
                        Some((_, v)) => v.push(ms),
                        None => stage_ms.push((stage.name().to_string(), vec![ms])),
                    }
                }
                r.candidates.into_iter().map(|c| (c.id, c.same_work)).collect()
            }
            // A context with no usable words ranks nothing: it counts as a miss.
            Err(Error::InvalidQuery(_)) => Vec::new(),
            Err(e) => return Err(e),
        };
        latencies.push(t.elapsed().as_secs_f64() * 1000.0);
        if count_evidence {
            for (id, others) in ranked.iter().take(10) {
                shown += 1;
                let mut cited = false;
                for id in std::iter::once(id).chain(others) {
                    cited = cited || !evidence.spans_citing(id, &[], 1, &query.citing_keys())?.is_empty();
                }
                with_evidence += cited as usize;
            }
        }
        let relevant: HashSet<String> = c.cited.iter().cloned().collect();
        for id in &c.cited {
            if !cited_records.contains_key(id) {
                cited_records.insert(id.clone(), same_work::records_of(rec.library().papers(), id)?);
            }
        }
        let works: Vec<&Vec<String>> = c.cited.iter().map(|id| &cited_records[id]).collect();
        let s = score(&by_work(&ranked, &works), &relevant);
        per_source.entry(c.source.clone()).or_default().add(&s);
        all.add(&s);
        let records: Vec<String> = ranked.into_iter().map(|(id, _)| id).collect();
        let by_record = score(&records, &relevant);
        per_source_by_record.entry(c.source.clone()).or_default().add(&by_record);
        all_by_record.add(&by_record);
        per_context.push(ContextScores {
            id: c.id.clone(),
            source: c.source.clone(),
            recall10: s.recall[2],
            mrr: s.mrr,
            ndcg10: s.ndcg10,
            ranked: records,
        });
        on_query(i + 1);
    }
    let sources = source_results(per_source, all);
    let by_record = source_results(per_source_by_record, all_by_record);
    Ok(EvalReport {
        config: EvalConfig {
            split: split.into(),
            global,
            stages: rec.stages().names().iter().map(|s| s.to_string()).collect(),
            papers: rec.library().papers().num_papers(),
            version: env!("CARGO_PKG_VERSION").into(),
            depth,
            with_title,
            with_abstract,
            as_of_citing_year: (as_of == AsOf::CitingYear).then_some(queries.dated),
        },
        sources,
        latency: latency_of(&latencies),
        stage_latency: stage_ms.iter().map(|(s, v)| (s.clone(), latency_of(v))).collect(),
        rerank_depth: if rec.reranker().is_some() { rec.rerank_depth() } else { 0 },
        by_rerank_depth: Vec::new(),
        alone: Vec::new(),
        with_evidence_at10: count_evidence.then(|| with_evidence as f64 / shown.max(1) as f64),
        by_record,
        contexts: per_context,
    })
}

/// `all` first, then each source by descending size.
fn source_results(per_source: BTreeMap<String, Mean>, all: Mean) -> Vec<SourceResult> {
    let mut sources: Vec<SourceResult> =
        per_source.into_iter().map(|(source, m)| SourceResult { source, n: m.n, scores: m.mean() }).collect();
    sources.sort_by(|a, b| b.n.cmp(&a.n).then(a.source.cmp(&b.source)));
    sources.insert(0, SourceResult { source: "all".into(), n: all.n, scores: all.mean() });
    sources
}

/// The ranked ids as the cited papers are counted: a result that is a
/// record of a cited paper's work (`works`: each cited paper's records, its
/// own id first), or holds one folded into it, stands for that cited paper,
/// at its first place only; a later record of it counts for nothing (an
/// empty id). The pipeline shows each work once, so that should not happen.
pub fn by_work(ranked: &[(String, Vec<String>)], works: &[&Vec<String>]) -> Vec<String> {
    let mut found = vec![false; works.len()];
    ranked
        .iter()
        .map(|(id, others)| {
            let hit = works.iter().position(|w| std::iter::once(id).chain(others).any(|r| w.contains(r)));
            match hit {
                Some(i) if !found[i] => {
                    found[i] = true;
                    works[i][0].clone()
                }
                Some(_) => String::new(),
                None => id.clone(),
            }
        })
        .collect()
}

fn latency_of(ms: &[f64]) -> Latency {
    let mean = ms.iter().sum::<f64>() / ms.len().max(1) as f64;
    Latency { p50_ms: quantile(ms, 0.5), p95_ms: quantile(ms, 0.95), mean_ms: mean }
}

#[cfg(test)]
mod tests {
    use super::by_work;

    fn ranked(rows: &[(&str, &[&str])]) -> Vec<(String, Vec<String>)> {
        rows.iter().map(|(id, others)| (id.to_string(), others.iter().map(|o| o.to_string()).collect())).collect()
    }

    #[test]
    fn a_result_counts_as_the_cited_paper_when_it_is_any_record_of_its_work_once() {
        // The context cites the bare record; the library also holds the full one.
        let church = vec!["aclarc:36a0398dfc65".to_string(), "acl:A88-1019".to_string()];
        let other = vec!["acl:Z".to_string()];
        let works = [&church, &other];
        // The full record alone was found: the bare one was in no channel's list.
        let ids = by_work(&ranked(&[("acl:X", &[]), ("acl:A88-1019", &[]), ("acl:Y", &[])]), &works);
        assert_eq!(ids, ["acl:X", "aclarc:36a0398dfc65", "acl:Y"]);
        // Folded into another entry, and a second entry of the same work counts no more.
        let ids = by_work(&ranked(&[("acl:A88-1019", &["aclarc:36a0398dfc65"]), ("aclarc:36a0398dfc65", &[]), ("acl:Z", &[])]), &works);
        assert_eq!(ids, ["aclarc:36a0398dfc65", "", "acl:Z"]);
    }
}
