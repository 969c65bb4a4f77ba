//! `citewise train reranker`: fine-tunes the cross-encoder on the
//! benchmark, with negatives from the pipeline's own prefetch.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use serde::{Deserialize, Serialize};

use super::progress::{count_bar, Bars};
use crate::corpus::benchmark::{load_contexts, CitationContext};
use crate::eval::harness::{contexts_file, papers_file};
use crate::library::Library;
use crate::neural::backend::{select, DevicePreference};
use crate::neural::cross_encoder::RerankerConfig;
use crate::neural::models::model_dir;
use crate::neural::train::load_papers;
use crate::neural::train::rerank::{train_reranker, Checkpoint, RerankExample, RerankInputs, RerankProgress, RerankTrainOptions};
use crate::pipeline::{Query, Recommender};

#[derive(Debug, Args)]
pub struct RerankerArgs {
    /// Benchmark directory (papers.jsonl.gz, contexts.jsonl.gz with train and val splits)
    #[arg(long, value_name = "DIR")]
    pub bench: PathBuf,
    /// Output directory (reranker.json, model.safetensors, train-state.json); a run there resumes
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Library holding the benchmark pool, for the prefetch [default: eval's pool directory]
    #[arg(long, value_name = "DIR")]
    pub pool: Option<PathBuf>,
    /// Base model (a directory name in the models directory)
    #[arg(long, default_value = "paraphrase-minilm-l3-v2")]
    pub base: String,
    /// Top layers fine-tuned with the head
    #[arg(long, default_value_t = 1)]
    pub trained_layers: usize,
    /// Tokens per pair
    #[arg(long, default_value_t = 192)]
    pub max_len: usize,
    #[arg(long, default_value_t = RerankTrainOptions::default().batch)]
    pub batch: usize,
    #[arg(long, default_value_t = RerankTrainOptions::default().learning_rate)]
    pub lr: f64,
    #[arg(long, default_value_t = RerankTrainOptions::default().margin)]
    pub margin: f32,
    /// Negatives come from this many top prefetched non-cited papers
    #[arg(long, default_value_t = RerankTrainOptions::default().negatives_from)]
    pub negatives_from: usize,
    /// Validate (and checkpoint) every N steps
    #[arg(long, default_value_t = RerankTrainOptions::default().eval_every)]
    pub eval_every: usize,
    /// Prefetched candidates reranked in validation (K_r)
    #[arg(long, default_value_t = RerankTrainOptions::default().rerank_depth)]
    pub rerank_depth: usize,
    /// Training steps in all
    #[arg(long, default_value_t = RerankTrainOptions::default().max_steps)]
    pub steps: usize,
    /// Stop after this many minutes (then validate and save)
    #[arg(long, value_name = "MIN")]
    pub max_minutes: Option<f64>,
    /// Use N random train contexts
    #[arg(long, value_name = "N")]
    pub train_limit: Option<usize>,
    /// Validate on N random val contexts
    #[arg(long, value_name = "N", default_value_t = 300)]
    pub val_limit: usize,
    #[arg(long, default_value_t = RerankTrainOptions::default().seed)]
    pub seed: u64,
    /// Compute device
    #[arg(long, value_enum, default_value_t = DevicePreference::Auto)]
    pub device: DevicePreference,
}

impl RerankProgress for Bars {
    fn checkpoint(&self, c: &Checkpoint) {
        self.bar.suspend(|| {
            eprintln!(
                "step {:>5}: loss {:.4}, val R@10 {:.3} (prefetch {:.3}), MRR {:.3} (prefetch {:.3}), {:.0} s{}",
                c.step,
                c.loss,
                c.r10,
                c.prefetch_r10,
                c.mrr,
                c.prefetch_mrr,
                c.seconds,
                if c.best { "  (best so far)" } else { "" }
            )
        });
    }
}

/// Prefetched lists, cached in the output directory so that a resumed run
/// does not query again.
#[derive(Serialize, Deserialize)]
struct Mined {
    key: String,
    train: Vec<RerankExample>,
    val: Vec<RerankExample>,
}

pub fn run(a: &RerankerArgs, models: &crate::pipeline::Models) -> Result<()> {
    let backend = select(a.device);
    eprintln!("backend: {} on {}", backend.name, backend.adapter);
    let base_dir = model_dir(&a.base)?;
    let config = RerankerConfig::new(a.base.clone()).with_trained_layers(a.trained_layers).with_max_len(a.max_len);
    let papers = load_papers(&papers_file(&a.bench))?;
    let index: HashMap<&str, usize> = papers.iter().enumerate().map(|(i, p)| (p.id.as_str(), i)).collect();

    let depth = a.negatives_from.max(a.rerank_depth) + 10;
    let key = format!("{:?}/{}/{}/{}", a.train_limit, a.val_limit, a.seed, depth);
    let cache = a.out.join("prefetched.json");
    let mined = match std::fs::read(&cache).ok().and_then(|b| serde_json::from_slice::<Mined>(&b).ok()).filter(|m| m.key == key) {
        Some(m) => m,
        None => {
            let lib = Arc::new(
                Library::open(&pool_dir(a)?).context("open the benchmark pool (run `citewise eval --bench DIR` once, or pass --pool)")?,
            );
            let mut rec = Recommender::new(lib, models);
            rec.set_rerank(None);
            eprintln!("prefetch by {}", rec.stages().names().join(" + "));
            let contexts = contexts_file(&a.bench);
            let pick = |split: &str, n: Option<usize>| -> Result<Vec<CitationContext>> {
                let mut c = load_contexts(&contexts, Some(split))?;
                c.shuffle(&mut rand::rngs::StdRng::seed_from_u64(a.seed));
                if let Some(n) = n {
                    c.truncate(n);
                }
                Ok(c)
            };
            let train = prefetch(&rec, &pick("train", a.train_limit)?, &index, depth, true, "prefetching train")?;
            let val = prefetch(&rec, &pick("val", Some(a.val_limit))?, &index, depth, false, "prefetching val")?;
            let m = Mined { key, train, val };
            std::fs::create_dir_all(&a.out)?;
            crate::util::write_atomic(&cache, &serde_json::to_vec(&m)?)?;
            m
        }
    };
    eprintln!("{} train and {} val examples", mined.train.len(), mined.val.len());
    let opts = RerankTrainOptions {
        batch: a.batch,
        learning_rate: a.lr,
        margin: a.margin,
        negatives_from: a.negatives_from,
        eval_every: a.eval_every,
        rerank_depth: a.rerank_depth,
        max_steps: a.steps,
        max_minutes: a.max_minutes,
        seed: a.seed,
    };
    let bars = Bars::new();
    let inputs = RerankInputs { config: &config, base_dir: &base_dir, start: None, papers: &papers, train: &mined.train, val: &mined.val };
    let history = train_reranker(&inputs, &a.out, &opts, &backend.device, &bars)?;
    super::field::write_field(&a.bench, &a.out)?;
    bars.bar.finish_and_clear();
    if let Some(best) = history.iter().rfind(|c| c.best) {
        println!(
            "best: step {} (val R@10 {:.3} vs prefetch {:.3}, MRR {:.3} vs {:.3}); weights in {}",
            best.step,
            best.r10,
            best.prefetch_r10,
            best.mrr,
            best.prefetch_mrr,
            a.out.join("model.safetensors").display()
        );
    }
    Ok(())
}

fn pool_dir(a: &RerankerArgs) -> Result<PathBuf> {
    match &a.pool {
        Some(p) => Ok(p.clone()),
        None => super::eval::default_pool_dir(&a.bench),
    }
}

/// Each context with the pipeline's top `depth` papers, queried on every
/// core (the recommender is shared; the order of `contexts` is kept). With
/// `mixed`, every other example keeps the citing title and abstract (the
/// editor has them when the draft does), the rest only the local context.
fn prefetch(
    rec: &Recommender,
    contexts: &[CitationContext],
    index: &HashMap<&str, usize>,
    depth: usize,
    mixed: bool,
    label: &str,
) -> Result<Vec<RerankExample>> {
    let bar = count_bar(contexts.len() as u64, label);
    let workers = crate::util::cores().min(contexts.len().max(1));
    let one = |i: usize, c: &CitationContext| -> Result<Option<RerankExample>> {
        bar.inc(1);
        let cited: Vec<usize> = c.cited.iter().filter_map(|id| index.get(id.as_str()).copied()).collect();
        if cited.is_empty() {
            return Ok(None);
        }
        let prefetched = match rec.recommend_ids(&Query::new(c.context.clone()).with_k(depth)) {
            Ok(r) => r.candidates.iter().filter_map(|c| index.get(c.id.as_str()).copied()).collect(),
            Err(crate::error::Error::InvalidQuery(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let global = mixed && i.is_multiple_of(2);
        Ok(Some(RerankExample {
            local: crate::pipeline::query::strip_citations(&c.context, &crate::corpus::citation_markup::CiteGrammar::PLAIN),
            title: if global { c.citing_title.clone() } else { String::new() },
            abstract_text: if global { c.citing_abstract.clone().unwrap_or_default() } else { String::new() },
            cited,
            prefetched,
        }))
    };
    // Worker w takes contexts w, w + workers, w + 2·workers, ...
    let parts: Vec<Result<Vec<(usize, RerankExample)>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let one = &one;
                s.spawn(move || {
                    let mut got = Vec::new();
                    for i in (w..contexts.len()).step_by(workers) {
                        if let Some(e) = one(i, &contexts[i])? {
                            got.push((i, e));
                        }
                    }
                    Ok(got)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("prefetch worker panicked")).collect()
    });
    bar.finish_and_clear();
    let mut all = Vec::with_capacity(contexts.len());
    for part in parts {
        all.extend(part?);
    }
    all.sort_unstable_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, e)| e).collect())
}
