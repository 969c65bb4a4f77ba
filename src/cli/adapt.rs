//! `citewise adapt`: fine-tunes the dense encoder on the library's own
//! papers (inverse cloze, no labels), publishes the weights into the library
//! and re-encodes its papers with them; `--reranker` fine-tunes the
//! cross-encoder on the library's citing sentences instead. What a run does
//! is [`crate::library::adapt`]'s ([`hatten`], [`reranker`]); this command
//! reads the flags, reports and re-encodes.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use super::progress::Bars;
use crate::library::adapt::{
    hatten, remove, remove_reranker, reranker, Examples, HattenOptions, HeldOut, Outcome, Progress, RerankerOptions, DEFAULT_MINUTES,
};
use crate::library::Library;
use crate::neural::backend::{Backend, DevicePreference};
use crate::neural::train::adapt::{AdaptCheckpoint, AdaptProgress};
use crate::neural::train::rerank::{Checkpoint, RerankProgress};
use crate::neural::train::run::RunProgress;
use crate::pipeline::Models;

#[derive(Debug, Args)]
pub struct AdaptArgs {
    /// Stop after this many minutes (then validate, keep the best weights and
    /// re-encode the library); run again to go on where it stopped
    #[arg(long, value_name = "MIN", default_value_t = DEFAULT_MINUTES)]
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
    #[arg(long, default_value_t = HattenOptions::default().pairs)]
    pub pairs: usize,
    /// Held-out pairs the run is validated on
    #[arg(long, default_value_t = HattenOptions::default().val_pairs)]
    pub val_pairs: usize,
    #[arg(long, default_value_t = HattenOptions::default().seed)]
    pub seed: u64,
    /// Adapt even when the library holds no citing sentences (`import
    /// --evidence`) to check citation recall against: then only the inverse
    /// cloze task trains and judges the weights, which lowered citation
    /// recall wherever it was measured
    #[arg(long)]
    pub without_citations: bool,
    /// Learn how far to trust the library's evidence from its own citing
    /// sentences (each searched with its own document's evidence set aside),
    /// instead of training a model; `import --evidence` does it by itself
    #[arg(long, conflicts_with = "reranker")]
    pub fusion: bool,
    /// Remove the adapted weights and the run (back to the default weights;
    /// with --reranker, the reranker's; with --fusion, the learned trust)
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

/// A sitting's bars and what it says before it trains (the examples' line
/// counts the seconds since the command started).
struct Sitting {
    bars: Bars,
    started: Instant,
    reranker: bool,
}

impl Sitting {
    fn new(started: Instant, reranker: bool) -> Sitting {
        Sitting { bars: Bars::new(), started, reranker }
    }
}

impl RunProgress for Sitting {
    fn phase(&self, name: &str, len: u64) {
        self.bars.phase(name, len)
    }
    fn advance(&self, n: u64, loss: Option<f32>) {
        self.bars.advance(n, loss)
    }
}

impl AdaptProgress for Sitting {
    fn checkpoint(&self, c: &AdaptCheckpoint) {
        AdaptProgress::checkpoint(&self.bars, c)
    }
}

impl RerankProgress for Sitting {
    fn checkpoint(&self, c: &Checkpoint) {
        RerankProgress::checkpoint(&self.bars, c)
    }
}

impl Progress for Sitting {
    fn backend(&self, backend: &Backend) {
        eprintln!("backend: {} on {}", backend.name, backend.adapter);
    }
    fn starting_weights(&self, source: &str) {
        if self.reranker {
            eprintln!("starting reranker: {source}");
        } else {
            eprintln!("starting weights: {source}");
        }
    }
    fn making_examples(&self, done: u64, total: u64) {
        self.bars.bar.set_length(total);
        self.bars.bar.set_position(done);
    }
    fn examples(&self, made: &Examples) {
        let seconds = self.started.elapsed().as_secs_f64();
        self.bars.bar.suspend(|| {
            if self.reranker {
                eprintln!(
                    "{} citing sentences to train on, {} held out, from {} papers ({seconds:.0} s)",
                    made.citing, made.citing_held_out, made.papers
                )
            } else {
                eprintln!(
                    "{} cut sentences ({} held out) and {} citing sentences ({} held out), from {} papers ({seconds:.0} s)",
                    made.cut, made.cut_held_out, made.citing, made.citing_held_out, made.papers
                )
            }
        });
    }
}

/// What is left to do after a run (`again` is the command that goes on).
fn left_to_do(o: &Outcome, again: &str) -> String {
    if o.complete() {
        "the run is complete".to_string()
    } else {
        format!("run `{again}` again to go on from step {}", o.last_step)
    }
}

/// The flags as HAtten's options (a flag not given: the library's default).
fn hatten_options(a: &AdaptArgs) -> HattenOptions {
    let d = HattenOptions::default();
    HattenOptions {
        steps: a.steps.unwrap_or(d.steps),
        batch: a.batch.unwrap_or(d.batch),
        learning_rate: a.lr.unwrap_or(d.learning_rate),
        eval_every: a.eval_every.unwrap_or(d.eval_every),
        max_minutes: Some(a.max_minutes),
        pairs: a.pairs,
        val_pairs: a.val_pairs,
        seed: a.seed,
        without_citations: a.without_citations,
        device: a.device,
    }
}

/// The flags as the reranker's options (`--pairs`, `--val-pairs` and
/// `--without-citations` do not apply).
fn reranker_options(a: &AdaptArgs) -> RerankerOptions {
    let d = RerankerOptions::default();
    RerankerOptions {
        steps: a.steps.unwrap_or(d.steps),
        batch: a.batch.unwrap_or(d.batch),
        learning_rate: a.lr.unwrap_or(d.learning_rate),
        eval_every: a.eval_every.unwrap_or(d.eval_every),
        max_minutes: Some(a.max_minutes),
        seed: a.seed,
        device: a.device,
        ..d
    }
}

pub fn run(lib_dir: &Path, a: &AdaptArgs) -> Result<()> {
    if a.fusion {
        return run_fusion(lib_dir, a);
    }
    if a.reranker {
        return run_reranker(lib_dir, a);
    }
    if a.remove {
        if remove(lib_dir)? {
            println!("removed the adapted weights of {}; the default weights are used again", lib_dir.display());
            let models = Models::on(a.device).for_library(Some(lib_dir.to_path_buf()));
            let lib = Library::open(lib_dir)?;
            super::vectors::compute(&lib, &models, super::vectors::Plan::DENSE)?;
            super::trust::relearn_if_stale(Arc::new(lib), &models)?;
        } else {
            println!("{} has no adapted weights", lib_dir.display());
        }
        return Ok(());
    }
    let t0 = Instant::now();
    let lib = Library::open(lib_dir).with_context(|| format!("opening {}", lib_dir.display()))?;
    super::hold_for_writing(&lib)?;
    let sitting = Sitting::new(t0, false);
    let outcome = hatten(&lib, &hatten_options(a), &sitting);
    sitting.bars.bar.finish_and_clear();
    let o = outcome?;

    let done = left_to_do(&o, "citewise adapt");
    let judged = match o.held_out {
        HeldOut::CitingSentences => "held-out citing sentences",
        HeldOut::CutSentences => "held-out cut sentences",
    };
    let Some(dir) = &o.published else {
        println!(
            "no step beat the starting weights on the {judged} (R@10 {:.3}, MRR {:.3}); nothing published; {done}",
            o.start.r10, o.start.mrr
        );
        return Ok(());
    };
    println!(
        "adapted weights: {} (step {}; {judged}: R@10 {:.3} → {:.3}, MRR {:.3} → {:.3}); {done}",
        dir.display(),
        o.best_step,
        o.start.r10,
        o.best.r10,
        o.start.mrr,
        o.best.mrr
    );
    let models = Models::on(a.device).for_library(Some(lib_dir.to_path_buf()));
    super::vectors::compute(&lib, &models, super::vectors::Plan::DENSE)?;
    super::trust::relearn_if_stale(Arc::new(lib), &models)?;
    println!("done in {:.1} min; `citewise adapt --remove` goes back to the default weights", t0.elapsed().as_secs_f64() / 60.0);
    Ok(())
}

/// `citewise adapt --reranker`: the cross-encoder in use, fine-tuned on the
/// library's citing sentences (BM25 neighbours as the negatives), judged on
/// held-out citing documents and published only when it beats the start.
fn run_reranker(lib_dir: &Path, a: &AdaptArgs) -> Result<()> {
    if a.remove {
        if remove_reranker(lib_dir)? {
            println!("removed the adapted reranker of {}; the default one is used again", lib_dir.display());
            relearn_with_library_models(Library::open(lib_dir)?, lib_dir, a)?;
        } else {
            println!("{} has no adapted reranker", lib_dir.display());
        }
        return Ok(());
    }
    let t0 = Instant::now();
    let lib = Library::open(lib_dir).with_context(|| format!("opening {}", lib_dir.display()))?;
    super::hold_for_writing(&lib)?;
    let sitting = Sitting::new(t0, true);
    let outcome = reranker(&lib, &reranker_options(a), &sitting);
    sitting.bars.bar.finish_and_clear();
    let o = outcome?;

    let done = left_to_do(&o, "citewise adapt --reranker");
    let figures = |r10: f64, mrr: f64| format!("R@10 {r10:.3}, MRR {mrr:.3}");
    if let Some(bm25) = o.unreranked {
        println!("held-out citing sentences, BM25's order: R@10 {:.3}, MRR {:.3}", bm25.r10, bm25.mrr);
    }
    let Some(dir) = &o.published else {
        println!("no step beat the starting reranker on them ({}); nothing published; {done}", figures(o.start.r10, o.start.mrr));
        return Ok(());
    };
    println!(
        "adapted reranker: {} (step {}; reranked: {} → {}); {done}",
        dir.display(),
        o.best_step,
        figures(o.start.r10, o.start.mrr),
        figures(o.best.r10, o.best.mrr)
    );
    relearn_with_library_models(lib, lib_dir, a)?;
    println!(
        "done in {:.1} min; `citewise adapt --reranker --remove` goes back to the default reranker",
        t0.elapsed().as_secs_f64() / 60.0
    );
    Ok(())
}

/// After an adaptation was published or removed: what the library learned
/// about itself with its models (the evidence trust and the rerank gate,
/// `check`'s flag) is learned again with the ones it now has, when it had
/// learned any and its learning is not turned off.
fn relearn_with_library_models(lib: Library, lib_dir: &Path, a: &AdaptArgs) -> Result<()> {
    let models = Models::on(a.device).for_library(Some(lib_dir.to_path_buf()));
    super::trust::relearn_if_stale(Arc::new(lib), &models)
}

/// `adapt --fusion`: the evidence trust learned (or, with --remove,
/// forgotten) by hand.
fn run_fusion(lib_dir: &Path, a: &AdaptArgs) -> Result<()> {
    let lib = Library::open(lib_dir).with_context(|| format!("opening {}", lib_dir.display()))?;
    super::hold_for_writing(&lib)?;
    if a.remove {
        let had = crate::pipeline::learned_fusion::turn_off(&lib)?;
        println!(
            "{} {}; it is not learned again by itself (`citewise adapt --fusion` learns it and turns that on again)",
            if had { "removed the learned evidence trust of" } else { "no learned evidence trust in" },
            lib_dir.display()
        );
        if had {
            println!("the shipped fusion is used again");
        }
        if crate::check::calibration::remove(&lib)? {
            println!("removed the flag `check` learned from the library's citations: it flags as shipped again");
        }
        return Ok(());
    }
    crate::pipeline::learned_fusion::turn_on(&lib)?;
    let models = Models::on(a.device).for_library(Some(lib_dir.to_path_buf()));
    super::trust::learn(&Arc::new(lib), &models)?;
    Ok(())
}
