//! Adapting the dense encoder to a library's own papers: the inverse-cloze
//! pairs made from its abstracts (a sentence cut out is the query, the
//! paper without it the positive, the sentence's BM25 neighbours the hard
//! negatives) and the citing sentences of its evidence (the query, and the
//! papers it cites), the run directory, and publishing the best weights
//! where the library's models are looked for.
//!
//! The training itself is [`crate::neural::train::adapt`]'s (HAtten) and
//! [`crate::neural::train::rerank`]'s (the reranker); [`hatten`] and
//! [`reranker`] hold the policy of `citewise adapt`: the defaults, the
//! starting weights, the examples, the refusals, and publishing only what
//! beat the start.

use std::collections::{BTreeSet, HashMap, HashSet};
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
use crate::neural::backend::{select, Backend, DevicePreference};
use crate::neural::encoder::{Weights, ADAPTED_DIR};
use crate::neural::field::FieldProfile;
use crate::neural::hatten::DocText;
use crate::neural::models::model_dir;
use crate::neural::reranker::{RerankerWeights, ADAPTED_RERANKER_DIR};
use crate::neural::train::adapt::{
    adapt_hatten, cloze, query_sentences, AdaptCheckpoint, AdaptData, AdaptOptions, AdaptProgress, AdaptState, Pair, PairKind,
};
use crate::neural::train::rerank::{
    train_reranker, Checkpoint, RerankExample, RerankInputs, RerankProgress, RerankState, RerankTrainOptions,
};
use crate::neural::train::run::RunFiles;
use crate::neural::words::WordVectors;
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
    let mut citances: Vec<(u64, Pair, String)> = Vec::new();
    for c in lib.citances().all()? {
        let cited: Vec<usize> = c.cited.iter().filter_map(|id| row.get(id.as_str()).copied()).collect();
        let query = strip_citations(&c.sentence, &crate::corpus::citation_markup::CiteGrammar::PLAIN);
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
        citances.push((key, pair, c.citing.id));
    }
    citances.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.query.cmp(&b.1.query)));
    let held = opts.cited_val.min(citances.len() / 10);
    let (mut cited_val, mut citing): (Vec<Pair>, Vec<Pair>) = (Vec::new(), Vec::new());
    let mut trained_documents = BTreeSet::new();
    let mut holding = None;
    for (key, pair, document) in citances {
        // Whole documents go to validation until `held` sentences are.
        if cited_val.len() < held || holding == Some(key) {
            holding = Some(key);
            cited_val.push(pair);
        } else if citing.len() < opts.citing {
            citing.push(pair);
            trained_documents.insert(document);
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
    Ok(AdaptData { ids, papers, train: pairs, val, cited_val, pool, trained_documents })
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
    /// The citing documents `train` comes from (see
    /// [`trained_documents`]).
    pub trained_documents: BTreeSet<String>,
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
    Ok(RerankData { papers, train, val, trained_documents: data.trained_documents })
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
    super::lock::Writing::of_library(lib_dir).during(|| {
        let run = reranker_run_dir(lib_dir);
        let dir = lib_dir.join(ADAPTED_RERANKER_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut field = base.field.as_deref().cloned().unwrap_or_default();
        field.merge(&FieldProfile::from_texts(data.train.iter().map(|e| e.local.as_str())));
        field.write_beside(&dir)?;
        write_trained_on(&dir, &data.trained_documents)?;
        for name in ["reranker.json", "model.safetensors"] {
            let from = run.join(name);
            let bytes = std::fs::read(&from).map_err(|e| Error::io(&from, e))?;
            write_atomic(&dir.join(name), &bytes)?;
        }
        Ok(dir)
    })
}

/// Beside published weights: the citing documents they were trained on
/// (written before the weights, which go last).
pub const TRAINED_ON: &str = "trained-on.json";

fn write_trained_on(dir: &Path, documents: &BTreeSet<String>) -> Result<()> {
    let json = serde_json::to_vec(documents).map_err(|e| Error::Input(e.to_string()))?;
    write_atomic(&dir.join(TRAINED_ON), &json)
}

/// The citing documents the library's published adaptations (HAtten's,
/// the reranker's) were trained on: what the library learns about itself
/// is judged without them where it has enough others
/// (`pipeline::fusion_learning::probes`). Weights published before this
/// was kept name none.
/// Read as the library's other kept files ([`super::kept::read`]: a
/// regular file within a settings file's budget).
pub fn trained_documents(lib_dir: &Path) -> Result<HashSet<String>> {
    let mut all = HashSet::new();
    for dir in [adapted_dir(lib_dir), lib_dir.join(ADAPTED_RERANKER_DIR)] {
        all.extend(super::kept::read::<Vec<String>>(&dir.join(TRAINED_ON))?.unwrap_or_default());
    }
    Ok(all)
}

/// The library's published adaptations, one line each (`hatten …`,
/// `reranker …`, `student …` for `citewise distill`'s: the published
/// weights' size and the time they were written, which every publishing
/// changes), none for the default models.
/// What the library learned about itself with its models (the evidence
/// trust and rerank gate, `check`'s flag) keeps these, and is learned again
/// when they differ: a reranker published after the gate was learned would
/// otherwise be judged by what its predecessor did.
pub fn published(lib_dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    let stages = [
        ("hatten", adapted_dir(lib_dir)),
        ("reranker", lib_dir.join(ADAPTED_RERANKER_DIR)),
        ("student", super::student::student_dir(lib_dir)),
    ];
    for (name, dir) in stages {
        // As the models are looked for (`HattenEncoder::for_library`,
        // `Reranker::for_library`, `student::student_weights`): the weights
        // file there.
        let Ok(meta) = std::fs::metadata(dir.join("model.safetensors")) else { continue };
        let written = meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
        all.push(format!("{name} {} bytes written at {written}", meta.len()));
    }
    all
}

/// Removes the library's adapted reranker and its run.
pub fn remove_reranker(lib_dir: &Path) -> Result<bool> {
    super::lock::Writing::of_library(lib_dir)
        .during(|| crate::util::remove_dirs(&[lib_dir.join(ADAPTED_RERANKER_DIR), reranker_run_dir(lib_dir)]))
}

/// The saved state of the library's reranker adaptation run, when there is one.
pub fn reranker_run_state(lib_dir: &Path) -> Result<Option<RerankState>> {
    RunFiles::saved(&reranker_run_dir(lib_dir))
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
pub fn publish(lib_dir: &Path, base: &Weights, pairs: &[Pair], trained_documents: &BTreeSet<String>) -> Result<PathBuf> {
    super::lock::Writing::of_library(lib_dir).during(|| {
        // (The citing sentences count too: the encoder was trained on them.)
        let run = run_dir(lib_dir);
        let dir = adapted_dir(lib_dir);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        let mut field = base.field.as_deref().cloned().unwrap_or_default();
        field.merge(&FieldProfile::from_texts(pairs.iter().map(|p| p.query.as_str())));
        field.write_beside(&dir)?;
        write_trained_on(&dir, trained_documents)?;
        for name in ["config.json", "model.safetensors"] {
            let from = run.join(name);
            let bytes = std::fs::read(&from).map_err(|e| Error::io(&from, e))?;
            write_atomic(&dir.join(name), &bytes)?;
        }
        Ok(dir)
    })
}

/// Removes the adapted weights and the run (the library goes back to the
/// default weights).
pub fn remove(lib_dir: &Path) -> Result<bool> {
    super::lock::Writing::of_library(lib_dir).during(|| crate::util::remove_dirs(&[adapted_dir(lib_dir), run_dir(lib_dir)]))
}

/// The saved state of the library's adaptation run, when there is one.
pub fn run_state(lib_dir: &Path) -> Result<Option<AdaptState>> {
    RunFiles::saved(&run_dir(lib_dir))
}

/// A sitting's time limit unless told otherwise (`citewise adapt
/// --max-minutes`); run again to go on where it stopped.
pub const DEFAULT_MINUTES: f64 = 30.0;

/// `citewise adapt`: how HAtten is adapted. The defaults are the flags'.
#[derive(Debug, Clone)]
pub struct HattenOptions {
    /// Training steps in all, over every sitting.
    pub steps: usize,
    /// Pairs per step.
    pub batch: usize,
    pub learning_rate: f64,
    /// Steps between validations, each one a checkpoint to resume from (0
    /// counts as 1).
    pub eval_every: usize,
    /// This sitting's time limit (then the run validates and keeps its best
    /// weights); none: no limit.
    pub max_minutes: Option<f64>,
    /// Training pairs made from the library's abstracts (one per paper at most).
    pub pairs: usize,
    /// Held-out pairs the run is validated on.
    pub val_pairs: usize,
    /// The seed of the pairs and of the training.
    pub seed: u64,
    /// Adapt even when the library holds no citing sentences to check
    /// citation recall against: then only the inverse cloze task trains and
    /// judges the weights (which lowered citation recall wherever it was
    /// measured).
    pub without_citations: bool,
    pub device: DevicePreference,
}

impl Default for HattenOptions {
    fn default() -> HattenOptions {
        let training = AdaptOptions::default();
        let pairs = PairOptions::default();
        HattenOptions {
            steps: training.max_steps,
            batch: training.batch,
            learning_rate: training.learning_rate,
            eval_every: training.eval_every,
            max_minutes: Some(DEFAULT_MINUTES),
            pairs: pairs.train,
            val_pairs: pairs.val,
            seed: training.seed,
            without_citations: false,
            device: DevicePreference::Auto,
        }
    }
}

impl HattenOptions {
    fn pair_options(&self) -> PairOptions {
        PairOptions { train: self.pairs, val: self.val_pairs, seed: self.seed, ..PairOptions::default() }
    }

    fn training(&self) -> AdaptOptions {
        AdaptOptions {
            batch: self.batch,
            learning_rate: self.learning_rate,
            eval_every: self.eval_every.max(1),
            max_steps: self.steps,
            max_minutes: self.max_minutes,
            seed: self.seed,
            ..AdaptOptions::default()
        }
    }
}

/// `citewise adapt --reranker`: how the reranker is adapted. The defaults
/// are the flags'.
#[derive(Debug, Clone)]
pub struct RerankerOptions {
    /// Training steps in all, over every sitting.
    pub steps: usize,
    /// Triplets per step.
    pub batch: usize,
    pub learning_rate: f64,
    /// Steps between validations, each one a checkpoint to resume from (0
    /// counts as 1).
    pub eval_every: usize,
    /// This sitting's time limit; none: no limit.
    pub max_minutes: Option<f64>,
    /// Held-out citing sentences the reranker is judged on (each one
    /// reranks `depth` papers, about half a second on 2 CPU cores).
    pub held_out: usize,
    /// Papers of BM25's list each held-out sentence reranks.
    pub depth: usize,
    /// The seed of the held-out choice and of the training.
    pub seed: u64,
    pub device: DevicePreference,
}

impl Default for RerankerOptions {
    fn default() -> RerankerOptions {
        RerankerOptions {
            steps: 400,
            batch: RerankTrainOptions::default().batch,
            learning_rate: 2e-5,
            eval_every: 100,
            max_minutes: Some(DEFAULT_MINUTES),
            held_out: 200,
            depth: 20,
            // `--seed` has one default for both kinds.
            seed: AdaptOptions::default().seed,
            device: DevicePreference::Auto,
        }
    }
}

impl RerankerOptions {
    fn training(&self) -> RerankTrainOptions {
        RerankTrainOptions {
            batch: self.batch,
            learning_rate: self.learning_rate,
            eval_every: self.eval_every.max(1),
            rerank_depth: self.depth,
            max_steps: self.steps,
            max_minutes: self.max_minutes,
            seed: self.seed,
            ..RerankTrainOptions::default()
        }
    }
}

/// What an adaptation made to train and validate on, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Examples {
    /// Inverse-cloze pairs (sentences cut out of abstracts) to train on, and
    /// held out (none for the reranker).
    pub cut: usize,
    pub cut_held_out: usize,
    /// Citing sentences to train on, and held out.
    pub citing: usize,
    pub citing_held_out: usize,
    /// The library's papers.
    pub papers: usize,
}

/// What an adaptation reports before it trains; the training itself
/// reports through its trainer's progress ([`AdaptProgress`],
/// [`RerankProgress`]).
pub trait Progress {
    /// The device the run trains on.
    fn backend(&self, backend: &Backend);
    /// Where the starting weights come from.
    fn starting_weights(&self, source: &str);
    /// Making the examples: `done` of `total` (the BM25 searches).
    fn making_examples(&self, done: u64, total: u64);
    /// The examples are made.
    fn examples(&self, made: &Examples);
}

/// The progress of [`hatten`].
pub trait HattenProgress: Progress + AdaptProgress {}
impl<T: Progress + AdaptProgress> HattenProgress for T {}

/// The progress of [`reranker`].
pub trait RerankerProgress: Progress + RerankProgress {}
impl<T: Progress + RerankProgress> RerankerProgress for T {}

/// R@10 and MRR of the held-out queries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Figures {
    pub r10: f64,
    pub mrr: f64,
}

/// What an adaptation is judged on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeldOut {
    /// Held-out citing sentences (the papers they cite).
    CitingSentences,
    /// Held-out cut sentences (the papers they were cut from): a library
    /// without citing sentences, adapted `without_citations`.
    CutSentences,
}

/// What an adaptation did.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// What the figures are measured on.
    pub held_out: HeldOut,
    /// The starting weights' figures (the run's first validation).
    pub start: Figures,
    /// The best validation's step (0: the starting weights) and figures.
    pub best_step: usize,
    pub best: Figures,
    /// The held-out lists' own order, before reranking (BM25's; the
    /// reranker only).
    pub unreranked: Option<Figures>,
    /// Where the best weights were published; none when no step beat the
    /// starting weights (then nothing was).
    pub published: Option<PathBuf>,
    /// The step of the run's last validation, and its steps in all.
    pub last_step: usize,
    pub max_steps: usize,
}

impl Outcome {
    /// Whether the run did all its steps; else a later sitting goes on
    /// from `last_step`.
    pub fn complete(&self) -> bool {
        self.last_step >= self.max_steps
    }
}

/// Adapts the dense encoder to the library: always from the default
/// weights (a later sitting resumes the run's own checkpoints, never the
/// published copy), on its inverse-cloze pairs and citing sentences,
/// judged on held-out citing sentences (cut sentences `without_citations`),
/// and published only when a step beat the starting weights. Encoding the
/// library's papers with the published weights is the caller's.
pub fn hatten(lib: &Library, opts: &HattenOptions, progress: &dyn HattenProgress) -> Result<Outcome> {
    let lib_dir = lib.dir();
    if lib.citances().count() == 0 && !opts.without_citations {
        return Err(Error::Missing(no_citations(lib_dir)));
    }
    let backend = select(opts.device);
    progress.backend(&backend);
    let base = Weights::default_weights()?;
    progress.starting_weights(&base.source);
    let words = WordVectors::load_named(base.config.word_vectors_name())?;

    progress.phase("making pairs", opts.pairs as u64);
    let data = adaptation_data(lib, &opts.pair_options(), &|done, total| progress.making_examples(done, total))?;
    let citing = data.train.iter().filter(|p| p.kind == PairKind::Citing).count();
    progress.examples(&Examples {
        cut: data.train.len() - citing,
        cut_held_out: data.val.len(),
        citing,
        citing_held_out: data.cited_val.len(),
        papers: data.papers.len(),
    });
    if data.cited_val.is_empty() && !opts.without_citations {
        return Err(Error::Missing(no_citations(lib_dir)));
    }
    let training = opts.training();
    let history = adapt_hatten(&base.config, &base.bytes, &data, &run_dir(lib_dir), &training, &words, &backend.device, progress)?;
    let (start, best, last) = ends(&history, |c| c.best)?;
    let figures = |c: &AdaptCheckpoint| Figures { r10: c.cited_r10.unwrap_or(c.val_r10), mrr: c.cited_mrr.unwrap_or(c.val_mrr) };
    let published = if best.step == 0 { None } else { Some(publish(lib_dir, &base, &data.train, &data.trained_documents)?) };
    Ok(Outcome {
        held_out: if start.cited_r10.is_some() { HeldOut::CitingSentences } else { HeldOut::CutSentences },
        start: figures(start),
        best_step: best.step,
        best: figures(best),
        unreranked: None,
        published,
        last_step: last.step,
        max_steps: training.max_steps,
    })
}

/// Adapts the cross-encoder reranker to the library: always from the
/// default reranker (a later sitting resumes the run's own checkpoints,
/// never the published copy), on its citing sentences with their BM25
/// neighbours as the negatives, judged on held-out citing documents, and
/// published only when a step beat the starting reranker.
pub fn reranker(lib: &Library, opts: &RerankerOptions, progress: &dyn RerankerProgress) -> Result<Outcome> {
    let lib_dir = lib.dir();
    if lib.citances().count() == 0 {
        return Err(Error::Missing(no_citing_sentences_for_the_reranker(lib_dir)));
    }
    let backend = select(opts.device);
    progress.backend(&backend);
    let base = RerankerWeights::default_weights()?;
    progress.starting_weights(&base.source);
    let base_dir = model_dir(&base.config.base)?;

    progress.phase("finding each citing sentence's neighbours", 0);
    let pair_opts = PairOptions { train: 0, val: 0, cited_val: opts.held_out, seed: opts.seed, ..PairOptions::default() };
    let data = adaptation_data(lib, &pair_opts, &|done, total| progress.making_examples(done, total))?;
    let data = reranker_data(lib, data, opts.depth)?;
    progress.examples(&Examples {
        cut: 0,
        cut_held_out: 0,
        citing: data.train.len(),
        citing_held_out: data.val.len(),
        papers: data.papers.len(),
    });
    if data.train.is_empty() || data.val.is_empty() {
        return Err(Error::Missing(no_citing_sentences_for_the_reranker(lib_dir)));
    }
    let training = opts.training();
    let inputs = RerankInputs {
        config: &base.config,
        base_dir: &base_dir,
        start: Some(&base.bytes),
        papers: &data.papers,
        train: &data.train,
        val: &data.val,
    };
    let history = train_reranker(&inputs, &reranker_run_dir(lib_dir), &training, &backend.device, progress)?;
    let (start, best, last) = ends(&history, |c| c.best)?;
    let figures = |c: &Checkpoint| Figures { r10: c.r10, mrr: c.mrr };
    let published = if best.step == 0 { None } else { Some(publish_reranker(lib_dir, &base, &data)?) };
    Ok(Outcome {
        held_out: HeldOut::CitingSentences,
        start: figures(start),
        best_step: best.step,
        best: figures(best),
        unreranked: Some(Figures { r10: start.prefetch_r10, mrr: start.prefetch_mrr }),
        published,
        last_step: last.step,
        max_steps: training.max_steps,
    })
}

/// A run's first validation, its best (the last marked best) and its last.
fn ends<C>(history: &[C], is_best: impl Fn(&C) -> bool) -> Result<(&C, &C, &C)> {
    match (history.first(), history.iter().rfind(|c| is_best(c)), history.last()) {
        (Some(first), Some(best), Some(last)) => Ok((first, best, last)),
        _ => Err(Error::Missing("the run recorded no validation".into())),
    }
}

/// Why a library without citing sentences is not adapted.
fn no_citations(lib_dir: &Path) -> String {
    format!(
        "{} holds no citing sentences of its papers to check the adaptation against; import the PDFs or LaTeX \
         sources of papers in its field with `citewise import --evidence` first (or pass --without-citations: \
         the inverse cloze task alone lowered citation recall wherever it was measured)",
        lib_dir.display()
    )
}

/// Why a library without citing sentences gets no reranker adaptation.
fn no_citing_sentences_for_the_reranker(lib_dir: &Path) -> String {
    format!(
        "{} holds no citing sentences of its papers to adapt the reranker on (nor to check it against); import the \
         PDFs or LaTeX sources of papers in its field with `citewise import --evidence` first",
        lib_dir.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_carry_the_defaults_of_citewise_adapt() {
        let h = HattenOptions::default().training();
        let d = AdaptOptions::default();
        assert_eq!((h.batch, h.learning_rate, h.eval_every, h.max_steps, h.seed), (32, d.learning_rate, 200, 2000, 29));
        assert_eq!((h.temperature, h.max_minutes), (d.temperature, Some(30.0)));
        let p = HattenOptions::default().pair_options();
        assert_eq!((p.train, p.val, p.seed, p.pool, p.negatives, p.citing, p.cited_val), (24_000, 500, 29, 5_000, 8, 24_000, 500));

        let r = RerankerOptions::default();
        assert_eq!((r.held_out, r.depth), (200, 20));
        let t = r.training();
        assert_eq!((t.batch, t.learning_rate, t.eval_every, t.rerank_depth, t.max_steps, t.seed), (16, 2e-5, 100, 20, 400, 29));
        let d = RerankTrainOptions::default();
        assert_eq!((t.margin, t.negatives_from, t.max_minutes), (d.margin, d.negatives_from, Some(30.0)));
        // An interval of 0 validates every step.
        assert_eq!(RerankerOptions { eval_every: 0, ..r }.training().eval_every, 1);
    }

    #[test]
    fn an_outcome_is_complete_once_the_last_validation_reached_the_steps() {
        let f = Figures { r10: 0.5, mrr: 0.25 };
        let o = Outcome {
            held_out: HeldOut::CitingSentences,
            start: f,
            best_step: 0,
            best: f,
            unreranked: None,
            published: None,
            last_step: 200,
            max_steps: 400,
        };
        assert!(!o.complete());
        assert!(Outcome { last_step: 400, ..o }.complete());
    }
}
