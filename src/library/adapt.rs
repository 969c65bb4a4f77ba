//! Adapting the dense encoder to a library's own papers: the inverse-cloze
//! pairs made from its abstracts (a sentence cut out is the query, the
//! paper without it the positive, the sentence's BM25 neighbours the hard
//! negatives) and the citing sentences of its evidence (the query, and the
//! papers it cites), the run directory, and publishing the best weights
//! where the library's models are looked for.
//!
//! The training itself is [`crate::neural::train::adapt`]'s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::SeedableRng;

use super::Library;
use crate::corpus::citation_markup::strip_citations;
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::evidence::sentences::split_sentences;
use crate::index::paper_index::QueryTf;
use crate::neural::encoder::{Weights, ADAPTED_DIR};
use crate::neural::field::FieldProfile;
use crate::neural::hatten::DocText;
use crate::neural::rerank_train::{RerankExample, RerankState};
use crate::neural::reranker::{RerankerWeights, ADAPTED_RERANKER_DIR};
use crate::neural::train::adapt::{cloze, query_sentences, AdaptData, AdaptState, Pair, PairKind};
use crate::util::write_atomic;

/// Where an adaptation run keeps its state and checkpoints, relative to the
/// library directory (the weights in use are published to [`ADAPTED_DIR`]).
pub const RUN_DIR: &str = "models/adapt/hatten";

/// How many pairs to make, and from what.
#[derive(Debug, Clone)]
pub struct PairOptions {
    /// Training pairs (at most one per paper).
    pub train: usize,
    /// Held-out pairs (from other papers; at most a tenth of all pairs).
    pub val: usize,
    /// Papers the held-out queries are ranked against besides their own.
    pub pool: usize,
    /// BM25 neighbours kept as each pair's hard negatives.
    pub negatives: usize,
    /// Citing sentences of the evidence trained on, at most.
    pub citing: usize,
    /// Citing sentences held out (whole citing documents), at most.
    pub cited_val: usize,
    pub seed: u64,
}

impl Default for PairOptions {
    fn default() -> PairOptions {
        PairOptions { train: 24_000, val: 500, pool: 5_000, negatives: 8, citing: 24_000, cited_val: 500, seed: 31 }
    }
}

/// A citing sentence needs this many words (markers removed) to be a query.
const MIN_CITING_WORDS: usize = 6;

/// The library's papers, its inverse-cloze pairs and its citing sentences.
/// `on_progress(done, total)` follows the BM25 searches.
pub fn adaptation_data(lib: &Library, opts: &PairOptions, on_progress: &dyn Fn(u64, u64)) -> Result<AdaptData> {
    let mut ids: Vec<String> = Vec::new();
    let mut papers: Vec<DocText> = Vec::new();
    lib.papers().for_each_paper(&mut |p| {
        ids.push(p.id);
        papers.push(DocText::paper(&p.title, &p.abstract_text));
        Ok(())
    })?;
    // Sorted by id, so that the same library gives the same pairs.
    let mut order: Vec<usize> = (0..papers.len()).collect();
    order.sort_by(|&a, &b| ids[a].cmp(&ids[b]));
    let ids: Vec<String> = order.iter().map(|&i| std::mem::take(&mut ids[i])).collect();
    let papers: Vec<DocText> = order.iter().map(|&i| std::mem::take(&mut papers[i])).collect();
    let row: HashMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();

    let mut rng = StdRng::seed_from_u64(opts.seed);
    let mut candidates: Vec<usize> = (0..papers.len()).collect();
    candidates.shuffle(&mut rng);
    let wanted = opts.train + opts.val;
    let searcher = lib.papers().searcher();
    let neighbours = |query: &str, positives: &[usize]| -> Result<Vec<usize>> {
        let hits = lib.papers().search_with(query, opts.negatives + positives.len(), QueryTf::default())?;
        Ok(lib
            .papers()
            .ids(&searcher, hits.iter().map(|h| h.doc))?
            .iter()
            .filter_map(|id| row.get(id.as_str()).copied())
            .filter(|n| !positives.contains(n))
            .take(opts.negatives)
            .collect())
    };
    let mut pairs: Vec<Pair> = Vec::with_capacity(wanted);
    for &p in &candidates {
        if pairs.len() == wanted {
            break;
        }
        let text = &papers[p].abstract_text;
        let sentences = split_sentences(text, &[]);
        let Some(&pick) = query_sentences(text, &sentences).choose(&mut rng) else { continue };
        let Some((query, positive)) = cloze(&papers[p].title, text, &sentences, pick) else { continue };
        let negatives = neighbours(&query, &[p])?;
        pairs.push(Pair { kind: PairKind::Cloze, query, paper: p, positive, also: Vec::new(), negatives });
        on_progress(pairs.len() as u64, wanted as u64);
    }
    let val: Vec<Pair> = pairs.drain(..opts.val.min(pairs.len() / 10)).collect();

    // Citing sentences; whole citing documents, in the order of a hash of
    // their id, are held out (up to `cited_val` sentences, a tenth at most).
    let mut citances: Vec<(u64, Pair)> = Vec::new();
    for c in lib.citances().all()? {
        let cited: Vec<usize> = c.cited.iter().filter_map(|id| row.get(id.as_str()).copied()).collect();
        let query = strip_citations(&c.sentence);
        if cited.is_empty() || query.split_whitespace().count() < MIN_CITING_WORDS {
            continue;
        }
        let key = crate::util::fnv1a64(format!("{}#{}", opts.seed, c.citing.id).as_bytes());
        let pair = Pair {
            kind: PairKind::Citing,
            query,
            paper: cited[0],
            positive: papers[cited[0]].clone(),
            also: cited[1..].to_vec(),
            negatives: Vec::new(),
        };
        citances.push((key, pair));
    }
    citances.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.query.cmp(&b.1.query)));
    let held = opts.cited_val.min(citances.len() / 10);
    let (mut cited_val, mut citing): (Vec<Pair>, Vec<Pair>) = (Vec::new(), Vec::new());
    let mut holding = None;
    for (key, pair) in citances {
        // Whole documents go to validation until `held` sentences are.
        if cited_val.len() < held || holding == Some(key) {
            holding = Some(key);
            cited_val.push(pair);
        } else if citing.len() < opts.citing {
            citing.push(pair);
        }
    }
    let total = (pairs.len() + citing.len()) as u64;
    for (i, c) in citing.iter_mut().enumerate() {
        let positives: Vec<usize> = std::iter::once(c.paper).chain(c.also.iter().copied()).collect();
        c.negatives = neighbours(&c.query, &positives)?;
        on_progress((pairs.len() + i + 1) as u64, total);
    }
    pairs.extend(citing);
    let held: std::collections::HashSet<usize> = val.iter().map(|v| v.paper).collect();
    let mut pool: Vec<usize> = (0..papers.len()).filter(|i| !held.contains(i)).collect();
    pool.shuffle(&mut rng);
    pool.truncate(opts.pool);
    Ok(AdaptData { ids, papers, train: pairs, val, cited_val, pool })
}

/// Where a reranker adaptation run keeps its state and checkpoints,
/// relative to the library directory (the weights in use are published to
/// [`ADAPTED_RERANKER_DIR`]).
pub const RERANKER_RUN_DIR: &str = "models/adapt/reranker";

/// What the reranker is adapted on: the library's papers (title and
/// abstract, as the reranker reads them) and its citing sentences as
/// examples.
pub struct RerankData {
    pub papers: Vec<Paper>,
    /// Training citing sentences, each with its BM25 neighbours (never a
    /// paper it cites) as the negatives.
    pub train: Vec<RerankExample>,
    /// Held-out citing sentences, each with the library's BM25 top `depth`
    /// (its cited papers included where BM25 finds them): reranking them
    /// must lift the cited papers.
    pub val: Vec<RerankExample>,
}

/// The reranker's examples from the citing sentences of `data` (the
/// inverse-cloze pairs are not used: they teach "the paper this sentence
/// came from", which lowered citation recall when HAtten was adapted on
/// them). Held-out citing sentences are prefetched by BM25 over the whole
/// library, `depth` papers each.
pub fn reranker_data(lib: &Library, data: AdaptData, depth: usize) -> Result<RerankData> {
    let example = |p: &Pair, prefetched: Vec<usize>| RerankExample {
        local: p.query.clone(),
        title: String::new(),
        abstract_text: String::new(),
        cited: std::iter::once(p.paper).chain(p.also.iter().copied()).collect(),
        prefetched,
    };
    let train = data.train.iter().filter(|p| p.kind == PairKind::Citing).map(|p| example(p, p.negatives.clone())).collect();
    let row: HashMap<&str, usize> = data.ids.iter().enumerate().map(|(i, id)| (id.as_str(), i)).collect();
    let searcher = lib.papers().searcher();
    let mut val = Vec::with_capacity(data.cited_val.len());
    for p in &data.cited_val {
        let hits = lib.papers().search_with(&p.query, depth, QueryTf::default())?;
        let ids = lib.papers().ids(&searcher, hits.iter().map(|h| h.doc))?;
        val.push(example(p, ids.iter().filter_map(|id| row.get(id.as_str()).copied()).collect()));
    }
    // The papers are moved, not copied: a library's worth of abstracts.
    let papers = data
        .ids
        .into_iter()
        .zip(data.papers)
        .map(|(id, d)| Paper { id, title: d.title, abstract_text: d.abstract_text, ..Paper::default() })
        .collect();
    Ok(RerankData { papers, train, val })
}

/// The reranker run directory of the library in `lib_dir`.
pub fn reranker_run_dir(lib_dir: &Path) -> PathBuf {
    lib_dir.join(RERANKER_RUN_DIR)
}

/// Makes the reranker run's best weights the library's: `reranker.json`
/// and `model.safetensors` copied (each written atomically, the weights
/// last) to [`ADAPTED_RERANKER_DIR`] with a `field.tsv` that knows the
/// starting reranker's field and the words of the training sentences.
pub fn publish_reranker(lib_dir: &Path, base: &RerankerWeights, data: &RerankData) -> Result<PathBuf> {
    let run = reranker_run_dir(lib_dir);
    let dir = lib_dir.join(ADAPTED_RERANKER_DIR);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut field = base.field.as_deref().cloned().unwrap_or_default();
    field.merge(&FieldProfile::from_texts(data.train.iter().map(|e| e.local.as_str())));
    field.write_beside(&dir)?;
    for name in ["reranker.json", "model.safetensors"] {
        let from = run.join(name);
        let bytes = std::fs::read(&from).map_err(|e| Error::io(&from, e))?;
        write_atomic(&dir.join(name), &bytes)?;
    }
    Ok(dir)
}

/// Removes the library's adapted reranker and its run.
pub fn remove_reranker(lib_dir: &Path) -> Result<bool> {
    crate::util::remove_dirs(&[lib_dir.join(ADAPTED_RERANKER_DIR), reranker_run_dir(lib_dir)])
}

/// The saved state of the library's reranker adaptation run, when there is one.
pub fn reranker_run_state(lib_dir: &Path) -> Result<Option<RerankState>> {
    crate::neural::training_run::RunFiles::saved(&reranker_run_dir(lib_dir))
}

/// The run directory of the library in `lib_dir`.
pub fn run_dir(lib_dir: &Path) -> PathBuf {
    lib_dir.join(RUN_DIR)
}

/// The directory of the weights in use.
pub fn adapted_dir(lib_dir: &Path) -> PathBuf {
    lib_dir.join(ADAPTED_DIR)
}

/// Makes the run's best weights the library's: `config.json` and
/// `model.safetensors` copied (each written atomically) to [`ADAPTED_DIR`]
/// with a `field.tsv` that knows the starting weights' field and the
/// words of the training queries. The weights go last, so a half-published
/// directory is never loaded.
pub fn publish(lib_dir: &Path, base: &Weights, pairs: &[Pair]) -> Result<PathBuf> {
    // (The citing sentences count too: the encoder was trained on them.)
    let run = run_dir(lib_dir);
    let dir = adapted_dir(lib_dir);
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let mut field = base.field.as_deref().cloned().unwrap_or_default();
    field.merge(&FieldProfile::from_texts(pairs.iter().map(|p| p.query.as_str())));
    field.write_beside(&dir)?;
    for name in ["config.json", "model.safetensors"] {
        let from = run.join(name);
        let bytes = std::fs::read(&from).map_err(|e| Error::io(&from, e))?;
        write_atomic(&dir.join(name), &bytes)?;
    }
    Ok(dir)
}

/// Removes the adapted weights and the run (the library goes back to the
/// default weights).
pub fn remove(lib_dir: &Path) -> Result<bool> {
    crate::util::remove_dirs(&[adapted_dir(lib_dir), run_dir(lib_dir)])
}

/// The saved state of the library's adaptation run, when there is one.
pub fn run_state(lib_dir: &Path) -> Result<Option<AdaptState>> {
    crate::neural::training_run::RunFiles::saved(&run_dir(lib_dir))
}
