//! `citewise adapt`: fine-tunes the dense encoder on the library's own
//! papers (inverse cloze, no labels), publishes the weights into the library
//! and re-encodes its papers with them; `--reranker` fine-tunes the
//! cross-encoder on the library's citing sentences instead.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use super::train::Bars;
use crate::library::adapt::{
    adaptation_data, publish, publish_reranker, remove, remove_reranker, reranker_data, reranker_run_dir, run_dir, PairOptions,
};
use crate::library::Library;
use crate::neural::backend::{select, DevicePreference};
use crate::neural::encoder::Weights;
use crate::neural::models::model_dir;
use crate::neural::rerank_train::{train_reranker_from, Checkpoint, RerankTrainOptions};
use crate::neural::reranker::RerankerWeights;
use crate::neural::train::adapt::{adapt_hatten, AdaptCheckpoint, AdaptOptions, AdaptProgress, PairKind};
use crate::neural::words::WordVectors;
use crate::pipeline::Models;

#[derive(Debug, Args)]
pub struct AdaptArgs {
    /// Stop after this many minutes (then validate, keep the best weights and
    /// re-encode the library); run again to go on where it stopped
    #[arg(long, value_name = "MIN", default_value_t = 30.0)]
    pub max_minutes: f64,
    /// Adapt the cross-encoder reranker (from the one in use) on the
    /// library's citing sentences, instead of the dense encoder
    #[arg(long)]
    pub reranker: bool,
    /// Training steps in all, over every sitting [default: 2000; with --reranker 400]
    #[arg(long)]
    pub steps: Option<usize>,
    /// Pairs per step [default: 32; with --reranker 16]
    #[arg(long)]
    pub batch: Option<usize>,
    /// Learning rate [default: 5e-5; with --reranker 2e-5]
    #[arg(long)]
    pub lr: Option<f64>,
    /// Steps between validations, each one a checkpoint to resume from [default: 200; with --reranker 100]
    #[arg(long)]
    pub eval_every: Option<usize>,
    /// Training pairs made from the library's abstracts (one per paper at most)
    #[arg(long, default_value_t = PairOptions::default().train)]
    pub pairs: usize,
    /// Held-out pairs the run is validated on
    #[arg(long, default_value_t = PairOptions::default().val)]
    pub val_pairs: usize,
    #[arg(long, default_value_t = AdaptOptions::default().seed)]
    pub seed: u64,
    /// Adapt even when the library holds no citing sentences (`import
    /// --evidence`) to check citation recall against: then only the inverse
    /// cloze task trains and judges the weights, which lowered citation
    /// recall wherever it was measured
    #[arg(long)]
    pub without_citations: bool,
    /// Remove the adapted weights and the run (back to the default weights;
    /// with --reranker, the reranker's)
    #[arg(long)]
    pub remove: bool,
    /// Compute device
    #[arg(long, value_enum, default_value_t = DevicePreference::Auto)]
    pub device: DevicePreference,
}

impl AdaptProgress for Bars {
    fn checkpoint(&self, c: &AdaptCheckpoint) {
        let cited = match (c.cited_r10, c.cited_mrr) {
            (Some(r), Some(m)) => format!("; citing sentences R@10 {r:.3}, MRR {m:.3}"),
            _ => String::new(),
        };
        self.bar.suspend(|| {
            eprintln!(
                "step {:>5}: loss {:.4}, cut sentences R@10 {:.3}, MRR {:.3}{cited}, {:.0} s{}",
                c.step,
                c.loss,
                c.val_r10,
                c.val_mrr,
                c.seconds,
                if c.best { "  (best so far)" } else { "" }
            )
        });
    }
}

/// A run's first validation, its best, and what is left to do (`again`
/// is the command that goes on). `at` gives a validation's step and
/// whether it was the best so far.
fn outcome<'a, C>(history: &'a [C], at: impl Fn(&C) -> (usize, bool), max_steps: usize, again: &str) -> Result<(&'a C, &'a C, String)> {
    let (Some(start), Some(best), Some(last)) = (history.first(), history.iter().rfind(|c| at(c).1), history.last()) else {
        anyhow::bail!("the run recorded no validation");
    };
    let last = at(last).0;
    let done = if last >= max_steps { "the run is complete".to_string() } else { format!("run `{again}` again to go on from step {last}") };
    Ok((start, best, done))
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

pub fn run(lib_dir: &Path, a: &AdaptArgs) -> Result<()> {
    if a.reranker {
        return run_reranker(lib_dir, a);
    }
    if a.remove {
        if remove(lib_dir)? {
            println!("removed the adapted weights of {}; the default weights are used again", lib_dir.display());
            let models = Models::on(a.device).for_library(Some(lib_dir.to_path_buf()));
            super::import::embed_papers(&Library::open(lib_dir)?, &models)?;
        } else {
            println!("{} has no adapted weights", lib_dir.display());
        }
        return Ok(());
    }
    let t0 = Instant::now();
    let lib = Library::open(lib_dir).with_context(|| format!("opening {}", lib_dir.display()))?;
    if lib.citances().count() == 0 && !a.without_citations {
        anyhow::bail!(no_citations(lib_dir));
    }
    let backend = select(a.device);
    eprintln!("backend: {} on {}", backend.name, backend.adapter);
    // Always from the default weights: a later sitting resumes the run's own
    // checkpoints, never the published copy.
    let base = Weights::default_weights()?;
    eprintln!("starting weights: {}", base.source);
    let words = WordVectors::load_named(base.config.word_vectors_name())?;

    let bars = Bars::new();
    bars.phase("making pairs", a.pairs as u64);
    let pair_opts = PairOptions { train: a.pairs, val: a.val_pairs, seed: a.seed, ..PairOptions::default() };
    let data = adaptation_data(&lib, &pair_opts, &|done, total| {
        bars.bar.set_length(total);
        bars.bar.set_position(done);
    })?;
    let citing = data.train.iter().filter(|p| p.kind == PairKind::Citing).count();
    bars.bar.suspend(|| {
        eprintln!(
            "{} cut sentences ({} held out) and {} citing sentences ({} held out), from {} papers ({:.0} s)",
            data.train.len() - citing,
            data.val.len(),
            citing,
            data.cited_val.len(),
            data.papers.len(),
            t0.elapsed().as_secs_f64()
        )
    });
    if data.cited_val.is_empty() && !a.without_citations {
        bars.bar.finish_and_clear();
        anyhow::bail!(no_citations(lib_dir));
    }
    let defaults = AdaptOptions::default();
    let opts = AdaptOptions {
        batch: a.batch.unwrap_or(defaults.batch),
        learning_rate: a.lr.unwrap_or(defaults.learning_rate),
        eval_every: a.eval_every.unwrap_or(defaults.eval_every).max(1),
        max_steps: a.steps.unwrap_or(defaults.max_steps),
        max_minutes: Some(a.max_minutes),
        seed: a.seed,
        ..defaults
    };
    let history = adapt_hatten(&base.config, &base.bytes, &data, &run_dir(lib_dir), &opts, &words, &backend.device, &bars)?;
    bars.bar.finish_and_clear();

    let (start, best, done) = outcome(&history, |c| (c.step, c.best), opts.max_steps, "citewise adapt")?;
    let judged = if start.cited_r10.is_some() { "held-out citing sentences" } else { "held-out cut sentences" };
    let r10 = |c: &AdaptCheckpoint| c.cited_r10.unwrap_or(c.val_r10);
    let mrr = |c: &AdaptCheckpoint| c.cited_mrr.unwrap_or(c.val_mrr);
    if best.step == 0 {
        println!(
            "no step beat the starting weights on the {judged} (R@10 {:.3}, MRR {:.3}); nothing published; {done}",
            r10(start),
            mrr(start)
        );
        return Ok(());
    }
    let dir = publish(lib_dir, &base, &data.train)?;
    println!(
        "adapted weights: {} (step {}; {judged}: R@10 {:.3} → {:.3}, MRR {:.3} → {:.3}); {done}",
        dir.display(),
        best.step,
        r10(start),
        r10(best),
        mrr(start),
        mrr(best)
    );
    let models = Models::on(a.device).for_library(Some(lib_dir.to_path_buf()));
    super::import::embed_papers(&lib, &models)?;
    println!("done in {:.1} min; `citewise adapt --remove` goes back to the default weights", t0.elapsed().as_secs_f64() / 60.0);
    Ok(())
}

/// Held-out citing sentences the reranker is judged on (each one reranks
/// [`RERANK_VAL_DEPTH`] papers, about half a second on 2 CPU cores).
const RERANK_HELD_OUT: usize = 200;
const RERANK_VAL_DEPTH: usize = 20;

/// `citewise adapt --reranker`: the cross-encoder in use, fine-tuned on the
/// library's citing sentences (BM25 neighbours as the negatives), judged on
/// held-out citing documents and published only when it beats the start.
fn run_reranker(lib_dir: &Path, a: &AdaptArgs) -> Result<()> {
    if a.remove {
        if remove_reranker(lib_dir)? {
            println!("removed the adapted reranker of {}; the default one is used again", lib_dir.display());
        } else {
            println!("{} has no adapted reranker", lib_dir.display());
        }
        return Ok(());
    }
    let t0 = Instant::now();
    let lib = Library::open(lib_dir).with_context(|| format!("opening {}", lib_dir.display()))?;
    if lib.citances().count() == 0 {
        anyhow::bail!(no_citing_sentences_for_the_reranker(lib_dir));
    }
    let backend = select(a.device);
    eprintln!("backend: {} on {}", backend.name, backend.adapter);
    // Always from the default reranker: a later sitting resumes the run's
    // own checkpoints, never the published copy.
    let base = RerankerWeights::default_weights()?;
    eprintln!("starting reranker: {}", base.source);
    let base_dir = model_dir(&base.config.base)?;

    let bars = Bars::new();
    bars.phase("finding each citing sentence's neighbours", 0);
    let pair_opts = PairOptions { train: 0, val: 0, cited_val: RERANK_HELD_OUT, seed: a.seed, ..PairOptions::default() };
    let data = adaptation_data(&lib, &pair_opts, &|done, total| {
        bars.bar.set_length(total);
        bars.bar.set_position(done);
    })?;
    let data = reranker_data(&lib, data, RERANK_VAL_DEPTH)?;
    bars.bar.suspend(|| {
        eprintln!(
            "{} citing sentences to train on, {} held out, from {} papers ({:.0} s)",
            data.train.len(),
            data.val.len(),
            data.papers.len(),
            t0.elapsed().as_secs_f64()
        )
    });
    if data.train.is_empty() || data.val.is_empty() {
        bars.bar.finish_and_clear();
        anyhow::bail!(no_citing_sentences_for_the_reranker(lib_dir));
    }
    let defaults = RerankTrainOptions::default();
    let opts = RerankTrainOptions {
        batch: a.batch.unwrap_or(defaults.batch),
        learning_rate: a.lr.unwrap_or(2e-5),
        eval_every: a.eval_every.unwrap_or(100).max(1),
        rerank_depth: RERANK_VAL_DEPTH,
        max_steps: a.steps.unwrap_or(400),
        max_minutes: Some(a.max_minutes),
        seed: a.seed,
        ..defaults
    };
    let history = train_reranker_from(
        &base.config,
        &base_dir,
        Some(&base.bytes),
        &data.papers,
        &data.train,
        &data.val,
        &reranker_run_dir(lib_dir),
        &opts,
        &backend.device,
        &bars,
    )?;
    bars.bar.finish_and_clear();
    let (start, best, done) = outcome(&history, |c| (c.step, c.best), opts.max_steps, "citewise adapt --reranker")?;
    let figures = |c: &Checkpoint| format!("R@10 {:.3}, MRR {:.3}", c.r10, c.mrr);
    println!("held-out citing sentences, BM25's order: R@10 {:.3}, MRR {:.3}", start.prefetch_r10, start.prefetch_mrr);
    if best.step == 0 {
        println!("no step beat the starting reranker on them ({}); nothing published; {done}", figures(start));
        return Ok(());
    }
    let dir = publish_reranker(lib_dir, &base, &data)?;
    println!("adapted reranker: {} (step {}; reranked: {} → {}); {done}", dir.display(), best.step, figures(start), figures(best));
    println!(
        "done in {:.1} min; `citewise adapt --reranker --remove` goes back to the default reranker",
        t0.elapsed().as_secs_f64() / 60.0
    );
    Ok(())
}

/// Why a library without citing sentences gets no reranker adaptation.
fn no_citing_sentences_for_the_reranker(lib_dir: &Path) -> String {
    format!(
        "{} holds no citing sentences of its papers to adapt the reranker on (nor to check it against); import the \
         PDFs or LaTeX sources of papers in its field with `citewise import --evidence` first",
        lib_dir.display()
    )
}
