//! What HAtten trains on: a benchmark's papers, its `train` and `val`
//! queries, and the pool of papers that mining and validation rank.

use std::collections::HashMap;
use std::path::Path;

use burn::tensor::Device;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;

use super::super::hatten::{DocText, Hatten, HattenConfig};
use super::super::words::WordVectors;
use super::TrainOptions;
use crate::corpus::benchmark::{load_contexts, CitationContext};
use crate::corpus::citation_markup::strip_citations;
use crate::corpus::jsonl::parse_line;
use crate::corpus::source::read_bytes;
use crate::corpus::Paper;
use crate::error::{Error, Result};

/// Papers embedded per inference batch.
pub const EMBED_BATCH: usize = 128;

/// Loads the papers of a benchmark.
pub fn load_papers(path: &Path) -> Result<Vec<Paper>> {
    let bytes = read_bytes(path)?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(parse_line(line).map_err(|reason| Error::Parse { path: path.into(), line: i + 1, reason })?);
    }
    Ok(out)
}

/// The query text of a benchmark context (local + global context).
pub fn query_text(c: &CitationContext) -> DocText {
    DocText {
        context: strip_citations(&c.context, &crate::corpus::citation_markup::CiteGrammar::PLAIN),
        title: c.citing_title.clone(),
        abstract_text: c.citing_abstract.clone().unwrap_or_default(),
    }
}

/// Encodes texts in batches with a model, on its device, without gradients.
pub fn embed(
    model: &Hatten,
    config: &HattenConfig,
    words: &WordVectors,
    texts: &[DocText],
    device: &Device,
    on_batch: &dyn Fn(u64),
) -> Vec<f32> {
    let mut out = Vec::with_capacity(texts.len() * config.dim());
    for chunk in texts.chunks(EMBED_BATCH) {
        let v = model.encode(config, words, chunk, device);
        out.extend(v.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 tensor"));
        on_batch(chunk.len() as u64);
    }
    out
}

/// A training or validation query: its text and the indices (into the
/// papers) of its cited papers.
pub(super) struct Example {
    pub text: DocText,
    pub cited: Vec<usize>,
}

fn examples(contexts: &[CitationContext], index: &HashMap<&str, usize>) -> Vec<Example> {
    contexts
        .iter()
        .filter_map(|c| {
            let cited: Vec<usize> = c.cited.iter().filter_map(|id| index.get(id.as_str()).copied()).collect();
            (!cited.is_empty()).then(|| Example { text: query_text(c), cited })
        })
        .collect()
}

/// A benchmark prepared for a run.
pub(super) struct TrainingData {
    pub papers: Vec<Paper>,
    /// Shuffled, then cut to `train_limit` / `val_limit`.
    pub train: Vec<Example>,
    pub val: Vec<Example>,
    /// The mining and validation pool, indices into the papers in
    /// ascending order: every cited paper of `train` and `val` and random
    /// others, `mining_pool` in all (or just the cited ones when they are
    /// more).
    pub pool: Vec<usize>,
    /// The pool papers' texts, in the pool's order.
    pub pool_texts: Vec<DocText>,
}

impl TrainingData {
    /// Reads `bench`'s papers and its `train` and `val` contexts; draws the
    /// shuffles and the pool from `rng`.
    pub fn load(bench: &Path, opts: &TrainOptions, rng: &mut StdRng) -> Result<TrainingData> {
        let papers = load_papers(&bench.join("papers.jsonl.gz"))?;
        let index: HashMap<&str, usize> = papers.iter().enumerate().map(|(i, p)| (p.id.as_str(), i)).collect();
        let contexts_path = bench.join("contexts.jsonl.gz");
        let mut train = examples(&load_contexts(&contexts_path, Some("train"))?, &index);
        let mut val = examples(&load_contexts(&contexts_path, Some("val"))?, &index);
        if train.is_empty() || val.is_empty() {
            return Err(Error::Input(format!(
                "{}: the train and val splits need contexts whose cited papers are in the pool",
                bench.display()
            )));
        }
        train.shuffle(rng);
        val.shuffle(rng);
        if let Some(n) = opts.train_limit {
            train.truncate(n);
        }
        if let Some(n) = opts.val_limit {
            val.truncate(n);
        }

        // Every cited paper plus random others.
        let mut in_pool = vec![false; papers.len()];
        let mut pool: Vec<usize> = Vec::new();
        for e in train.iter().chain(&val) {
            for &c in &e.cited {
                if !in_pool[c] {
                    in_pool[c] = true;
                    pool.push(c);
                }
            }
        }
        let mut others: Vec<usize> = (0..papers.len()).filter(|i| !in_pool[*i]).collect();
        others.shuffle(rng);
        pool.extend(others.into_iter().take(opts.mining_pool.saturating_sub(pool.len())));
        pool.sort_unstable();
        let pool_texts = pool.iter().map(|&i| DocText::paper(&papers[i].title, &papers[i].abstract_text)).collect();
        Ok(TrainingData { papers, train, val, pool, pool_texts })
    }

    /// The text of paper `p` as a document.
    pub fn paper_text(&self, p: usize) -> DocText {
        DocText::paper(&self.papers[p].title, &self.papers[p].abstract_text)
    }
}
