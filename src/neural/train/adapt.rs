//! Adapting a trained HAtten to a library: the inverse cloze task on its
//! papers, mixed with the citing sentences its evidence holds. A sentence cut
//! out of a paper's abstract is a query, that paper without the sentence its
//! positive; a citing sentence is a query, the paper it cites its positive.
//! BM25 neighbours of the query are its hard negatives, and the batch's other
//! papers further negatives (the softmax objective of
//! [`super::Loss::Softmax`]).
//!
//! The inverse cloze task alone teaches the encoder to find the paper a
//! sentence came from, which is not the paper a sentence cites: on its own
//! it lowers citation recall. So the run is judged on held-out citing
//! sentences when there are any (R@10 and MRR of the cited papers among a
//! pool of the library's papers), else on held-out cut sentences. It starts
//! from given weights (the shipped or installed encoder), validates before
//! its first step so that the starting weights are the first "best",
//! validates every `eval_every` steps, keeps the best weights and resumes
//! from its last checkpoint ([`super::run`]). Building the
//! pairs from a library (sentences, BM25, evidence) is the caller's.

use std::path::Path;
use std::time::Instant;

use burn::tensor::Device;
use rand::rngs::StdRng;
use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::super::hatten::{DocText, Hatten, HattenConfig};
use super::super::words::WordVectors;
use super::batch::Batch;
use super::data::embed;
use super::run::{RunProgress, TrainingRun};
use super::steps::{run_steps, Checkpoint, StepCounters, StepPlan};
use super::{loss, Loss, TrainOptions};
use crate::error::{Error, Result};
use crate::index::vectors::top_k;
use crate::ranking::{recall_at, reciprocal_rank};

/// An abstract must have this many sentences to give a query (one) and
/// keep enough of itself (the rest) to be found by.
pub const MIN_SENTENCES: usize = 3;

/// A query sentence has at least this many words.
pub const MIN_QUERY_WORDS: usize = 6;

/// Where a pair comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PairKind {
    /// A sentence cut out of an abstract.
    Cloze,
    /// A citing sentence of the library's evidence.
    Citing,
}

/// One training or validation pair: an inverse-cloze pair or a citing
/// sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    pub kind: PairKind,
    /// The sentence cut out of the abstract, or the citing sentence.
    pub query: String,
    /// The paper it was cut from, or the (first) paper it cites (an index
    /// into [`AdaptData::papers`]).
    pub paper: usize,
    /// That paper's title and its abstract without the sentence; the cited
    /// paper's title and abstract.
    pub positive: DocText,
    /// Further papers the sentence cites (never its negatives).
    pub also: Vec<usize>,
    /// BM25 neighbours of the sentence, never a positive, best first.
    pub negatives: Vec<usize>,
}

impl Pair {
    fn is_positive(&self, paper: usize) -> bool {
        paper == self.paper || self.also.contains(&paper)
    }
}

/// Cuts sentence `pick` out of an abstract whose sentences are the byte
/// ranges `sentences`: (the sentence, the paper without it). `None` when the
/// abstract is too short or the sentence too short to be a query.
pub fn cloze(title: &str, abstract_text: &str, sentences: &[(usize, usize)], pick: usize) -> Option<(String, DocText)> {
    if sentences.len() < MIN_SENTENCES || pick >= sentences.len() {
        return None;
    }
    let (s, e) = sentences[pick];
    let query = abstract_text[s..e].trim();
    if query.split_whitespace().count() < MIN_QUERY_WORDS {
        return None;
    }
    let rest: Vec<&str> = sentences
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != pick)
        .map(|(_, &(s, e))| abstract_text[s..e].trim())
        .filter(|t| !t.is_empty())
        .collect();
    Some((query.to_string(), DocText::paper(title, &rest.join(" "))))
}

/// The sentences of an abstract that [`cloze`] accepts as queries.
pub fn query_sentences(abstract_text: &str, sentences: &[(usize, usize)]) -> Vec<usize> {
    if sentences.len() < MIN_SENTENCES {
        return Vec::new();
    }
    (0..sentences.len())
        .filter(|&i| {
            let (s, e) = sentences[i];
            abstract_text[s..e].split_whitespace().count() >= MIN_QUERY_WORDS
        })
        .collect()
}

/// What a run trains and validates on.
pub struct AdaptData {
    /// The library's paper ids, in the order of `papers`.
    pub ids: Vec<String>,
    /// The library's papers as the encoder reads them.
    pub papers: Vec<DocText>,
    /// Inverse-cloze pairs, then citing sentences.
    pub train: Vec<Pair>,
    /// Held-out inverse-cloze pairs: each query must find its cut paper
    /// among `pool`.
    pub val: Vec<Pair>,
    /// Held-out citing sentences (from citing documents none of the
    /// training sentences comes from): each must find the papers it cites
    /// among them and `pool`.
    pub cited_val: Vec<Pair>,
    /// Papers the validation queries are ranked against besides their own;
    /// none of them is an inverse-cloze validation pair's paper.
    pub pool: Vec<usize>,
    /// The citing documents (their ids) whose sentences are in `train`:
    /// kept with published weights, so that the library does not judge
    /// them on sentences they have seen.
    pub trained_documents: std::collections::BTreeSet<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdaptOptions {
    pub batch: usize,
    pub learning_rate: f64,
    pub temperature: f32,
    /// Steps between validations (and checkpoints).
    pub eval_every: usize,
    pub max_steps: usize,
    pub max_minutes: Option<f64>,
    pub seed: u64,
}

impl Default for AdaptOptions {
    fn default() -> AdaptOptions {
        AdaptOptions { batch: 32, learning_rate: 2e-4, temperature: 0.05, eval_every: 200, max_steps: 2000, max_minutes: None, seed: 29 }
    }
}

/// A validation during adaptation.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AdaptCheckpoint {
    pub step: usize,
    /// Mean loss over the steps since the previous checkpoint (0 before the
    /// first step).
    pub loss: f32,
    /// Held-out inverse-cloze pairs: R@10 and MRR of the cut paper in the pool.
    pub val_r10: f64,
    pub val_mrr: f64,
    /// Held-out citing sentences: R@10 and MRR of the cited papers in the
    /// pool (none when the library has no citing sentences).
    #[serde(default)]
    pub cited_r10: Option<f64>,
    #[serde(default)]
    pub cited_mrr: Option<f64>,
    pub seconds: f64,
    pub best: bool,
}

/// Progress of an adaptation run, with its checkpoints.
pub trait AdaptProgress: RunProgress {
    fn checkpoint(&self, c: &AdaptCheckpoint);
}

/// The counters of the run's `train-state.json`.
pub type AdaptSteps = StepCounters;

/// The saved state of an adaptation run.
pub type AdaptState = super::run::RunState<AdaptSteps, AdaptCheckpoint, AdaptOptions>;

/// Adapts the encoder `config` + `base` (safetensors bytes) on `data`,
/// writing into `out` (a run there resumes instead); returns the history.
#[allow(clippy::too_many_arguments)]
pub fn adapt_hatten(
    config: &HattenConfig,
    base: &[u8],
    data: &AdaptData,
    out: &Path,
    opts: &AdaptOptions,
    words: &WordVectors,
    device: &Device,
    progress: &dyn AdaptProgress,
) -> Result<Vec<AdaptCheckpoint>> {
    if data.train.is_empty() || data.val.is_empty() {
        return Err(Error::Input("adaptation needs pairs to train and to validate on: the library has too few abstracts".into()));
    }
    let mut run = TrainingRun::<StepCounters, AdaptCheckpoint, AdaptOptions>::open(out, "config.json", opts.max_minutes)?;
    let ad = device.clone().autodiff();
    let model = super::steps::starting_model(&mut run, config, Some(base), opts.seed, &ad)?;
    run.begin(opts.clone(), &config.to_string())?;
    let train_opts = TrainOptions { loss: Loss::Softmax, temperature: opts.temperature, ..TrainOptions::default() };
    let cloze_check = Validator::cloze(data);
    let cited_check = (!data.cited_val.is_empty()).then(|| Validator::cited(data));
    let pool_texts: Vec<DocText> = data.pool.iter().map(|&i| data.papers[i].clone()).collect();
    let validate = |model: &Hatten, step: usize, loss: f32, t0: Instant| {
        // The pool is encoded once for both checks.
        progress.phase("encoding the validation pool", pool_texts.len() as u64);
        let pool_vecs = embed(model, config, words, &pool_texts, device, &|n| progress.advance(n, None));
        let check = |v: &Validator| v.validate(model, config, words, device, &pool_vecs, progress);
        let (val_r10, val_mrr) = check(&cloze_check);
        let cited = cited_check.as_ref().map(check);
        AdaptCheckpoint {
            step,
            loss,
            val_r10,
            val_mrr,
            cited_r10: cited.map(|c| c.0),
            cited_mrr: cited.map(|c| c.1),
            seconds: t0.elapsed().as_secs_f64(),
            best: false,
        }
    };

    let plan = StepPlan { max_steps: opts.max_steps, eval_every: opts.eval_every, learning_rate: opts.learning_rate, phase: "adapting" };
    let loss_at = |model: &Hatten, step: usize| loss::batch_loss(model, config, words, draw(data, step, opts), &train_opts, &ad);
    run_steps(run, model, &plan, &loss_at, &validate, progress, &|c| progress.checkpoint(c))
}

impl Checkpoint for AdaptCheckpoint {
    fn score(&self) -> f64 {
        AdaptCheckpoint::score(self)
    }
    fn set_best(&mut self, best: bool) {
        self.best = best;
    }
}

impl AdaptCheckpoint {
    /// What the best checkpoint is chosen by: the mean of R@10 and MRR on
    /// the held-out citing sentences, else on the inverse-cloze pairs.
    pub fn score(&self) -> f64 {
        match (self.cited_r10, self.cited_mrr) {
            (Some(r), Some(m)) => (r + m) / 2.0,
            _ => (self.val_r10 + self.val_mrr) / 2.0,
        }
    }
}

/// The pairs of step `step`: the `step`-th slice of the training pairs in
/// the shuffled order of its pass over them, so that a resumed run draws
/// what an uninterrupted one would have.
fn draw(data: &AdaptData, step: usize, opts: &AdaptOptions) -> Batch {
    let n = data.train.len();
    let b = opts.batch.min(n).max(1);
    let per_pass = n / b;
    let (pass, slot) = (step / per_pass.max(1), step % per_pass.max(1));
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut StdRng::seed_from_u64(opts.seed ^ (pass as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)));
    let chosen = &order[slot * b..(slot + 1) * b];
    let mut rng = StdRng::seed_from_u64(opts.seed.wrapping_add(step as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
    batch_of(data, chosen, &mut rng)
}

/// A batch of the pairs `chosen`: positives first, then each pair's hard
/// negative (one of its BM25 neighbours, or a random paper when it has
/// none). A paper is never a negative of a query cut from it.
fn batch_of(data: &AdaptData, chosen: &[usize], rng: &mut StdRng) -> Batch {
    let b = chosen.len();
    let pairs: Vec<&Pair> = chosen.iter().map(|&i| &data.train[i]).collect();
    let negatives: Vec<usize> = pairs
        .iter()
        .map(|p| match p.negatives.choose(rng) {
            Some(&n) => n,
            None => loop {
                let n = rng.random_range(0..data.papers.len());
                if !p.is_positive(n) || data.papers.len() <= 1 + p.also.len() {
                    break n;
                }
            },
        })
        .collect();
    let doc_papers: Vec<usize> = pairs.iter().map(|p| p.paper).chain(negatives.iter().copied()).collect();
    let docs: Vec<DocText> = pairs.iter().map(|p| p.positive.clone()).chain(negatives.iter().map(|&n| data.papers[n].clone())).collect();
    let queries: Vec<DocText> = pairs.iter().map(|p| DocText { context: p.query.clone(), ..DocText::default() }).collect();
    let mut valid = vec![0f32; b * 2 * b];
    let mut pos_hot = vec![0f32; b * 2 * b];
    let mut neg_hot = vec![0f32; b * 2 * b];
    for (i, p) in pairs.iter().enumerate() {
        pos_hot[i * 2 * b + i] = 1.0;
        neg_hot[i * 2 * b + b + i] = 1.0;
        for (j, &d) in doc_papers.iter().enumerate() {
            if !p.is_positive(d) {
                valid[i * 2 * b + j] = 1.0;
            }
        }
    }
    Batch { queries, docs, valid, pos_hot, neg_hot }
}

/// Validation: held-out queries ranked against the pool
/// ([`AdaptData::pool`], rows `0..pool.len()`) and papers of their own
/// (the rows after it).
struct Validator {
    queries: Vec<DocText>,
    /// Papers ranked besides the pool.
    own: Vec<DocText>,
    /// Per query, the rows it must find.
    targets: Vec<Vec<usize>>,
}

impl Validator {
    /// The inverse-cloze pairs: each query against its own cut paper (none
    /// of them is in the pool) and the pool.
    fn cloze(data: &AdaptData) -> Validator {
        let queries = data.val.iter().map(|p| DocText { context: p.query.clone(), ..DocText::default() }).collect();
        let own = data.val.iter().map(|p| p.positive.clone()).collect();
        Validator { queries, own, targets: (0..data.val.len()).map(|i| vec![data.pool.len() + i]).collect() }
    }

    /// The citing sentences: each against the pool and the papers they cite
    /// that it lacks.
    fn cited(data: &AdaptData) -> Validator {
        let mut rows: std::collections::HashMap<usize, usize> = data.pool.iter().enumerate().map(|(row, &p)| (p, row)).collect();
        let mut own: Vec<DocText> = Vec::new();
        let mut row_of = |p: usize| {
            *rows.entry(p).or_insert_with(|| {
                own.push(data.papers[p].clone());
                data.pool.len() + own.len() - 1
            })
        };
        let targets: Vec<Vec<usize>> =
            data.cited_val.iter().map(|c| std::iter::once(c.paper).chain(c.also.iter().copied()).map(&mut row_of).collect()).collect();
        let queries = data.cited_val.iter().map(|p| DocText { context: p.query.clone(), ..DocText::default() }).collect();
        Validator { queries, own, targets }
    }

    /// Mean R@10 and MRR of the targets; `pool_vecs` are the pool's vectors
    /// under `model`.
    fn validate(
        &self,
        model: &Hatten,
        config: &HattenConfig,
        words: &WordVectors,
        device: &Device,
        pool_vecs: &[f32],
        progress: &dyn RunProgress,
    ) -> (f64, f64) {
        progress.phase("validating", (self.own.len() + self.queries.len()) as u64);
        let d = config.dim();
        let mut doc_vecs = pool_vecs.to_vec();
        doc_vecs.extend(embed(model, config, words, &self.own, device, &|n| progress.advance(n, None)));
        let query_vecs = embed(model, config, words, &self.queries, device, &|n| progress.advance(n, None));
        let (mut r10, mut mrr) = (0f64, 0f64);
        for (qi, targets) in self.targets.iter().enumerate() {
            let ranked: Vec<usize> = top_k(&doc_vecs, d, &query_vecs[qi * d..(qi + 1) * d], 100, 2).into_iter().map(|(r, _)| r).collect();
            r10 += recall_at(&ranked, targets, 10);
            mrr += reciprocal_rank(&ranked, |r| targets.contains(r));
        }
        let n = self.queries.len().max(1) as f64;
        (r10 / n, mrr / n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A real abstract's sentence ranges, split by hand at ". ".
    fn ranges(text: &str) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut start = 0;
        for (i, _) in text.match_indices(". ") {
            out.push((start, i + 1));
            start = i + 2;
        }
        out.push((start, text.len()));
        out
    }

    const ABSTRACT: &str = "We present a method for recommending citations from the local context of a draft. \
        Candidates are fetched by BM25 and a dense encoder. A cross-encoder reorders the top candidates by their abstracts. \
        On three benchmarks the method improves recall.";

    #[test]
    fn the_cut_sentence_is_the_query_and_the_rest_of_the_paper_its_positive() {
        let s = ranges(ABSTRACT);
        assert_eq!(s.len(), 4);
        let (q, pos) = cloze("Citation recommendation", ABSTRACT, &s, 2).expect("a long enough sentence");
        assert_eq!(q, "A cross-encoder reorders the top candidates by their abstracts.");
        assert_eq!(pos.title, "Citation recommendation");
        assert!(!pos.abstract_text.contains("cross-encoder"), "{}", pos.abstract_text);
        assert!(pos.abstract_text.starts_with("We present a method") && pos.abstract_text.ends_with("improves recall."));
        assert_eq!(pos.context, "");
        // "Candidates are fetched by BM25 and a dense encoder." has 9 words; all four qualify
        // but none shorter than six words would.
        assert_eq!(query_sentences(ABSTRACT, &s), vec![0, 1, 2, 3]);
        let short = "A method. It works well. We show it.";
        assert!(query_sentences(short, &ranges(short)).is_empty());
        assert_eq!(cloze("t", short, &ranges(short), 1), None);
        // Too few sentences to keep a positive worth finding.
        let two = "We present a method for recommending citations. It is evaluated on three benchmarks with recall.";
        assert_eq!(cloze("t", two, &ranges(two), 0), None);
        assert!(query_sentences(two, &ranges(two)).is_empty());
    }

    fn pair(paper: usize, negatives: Vec<usize>) -> Pair {
        Pair {
            kind: PairKind::Cloze,
            query: format!("query {paper}"),
            paper,
            positive: DocText::paper(&format!("cut {paper}"), ""),
            also: vec![],
            negatives,
        }
    }

    #[test]
    fn a_paper_is_never_a_negative_of_its_own_query_and_draws_repeat_after_a_restart() {
        let papers: Vec<DocText> = (0..6).map(|i| DocText::paper(&format!("paper {i}"), "")).collect();
        // Pairs 0 and 1 are cut from the same paper; pair 2's only neighbour is paper 0.
        // Pair 3 cites papers 2 and 5: paper 5 is never its negative either.
        let cites = Pair { kind: PairKind::Citing, also: vec![5], ..pair(2, vec![]) };
        let data = AdaptData {
            ids: Vec::new(),
            papers,
            train: vec![pair(0, vec![3]), pair(0, vec![4]), pair(1, vec![0]), cites],
            val: vec![],
            cited_val: vec![],
            pool: vec![],
            trained_documents: Default::default(),
        };
        let opts = AdaptOptions { batch: 4, ..AdaptOptions::default() };
        for step in 0..5 {
            let b = draw(&data, step, &opts);
            assert_eq!(b.len(), 4);
            assert_eq!((b.docs.len(), b.valid.len()), (8, 32));
            for i in 0..4 {
                let row = &b.valid[i * 8..(i + 1) * 8];
                assert_eq!(b.pos_hot[i * 8 + i], 1.0);
                assert_eq!(b.neg_hot[i * 8 + 4 + i], 1.0);
                // Its own positive is never "valid" as a negative, and the other
                // positive cut from paper 0 is masked for both paper-0 queries.
                assert_eq!(row[i], 0.0);
                let own = b.queries[i].context.clone();
                if own == "query 0" {
                    let masked = (0..4).filter(|&j| row[j] == 0.0).count();
                    assert_eq!(masked, 2, "both cuts of paper 0 are its positives: {row:?}");
                }
                if own == "query 2" {
                    assert_ne!(b.docs[4 + i].title, "paper 2");
                    assert_ne!(b.docs[4 + i].title, "paper 5", "a cited paper is not drawn as its random negative");
                }
            }
            // Same step, same draw (a resumed run repeats it).
            let again = draw(&data, step, &opts);
            assert_eq!((again.queries, again.docs), (b.queries.clone(), b.docs.clone()));
        }
    }
}
