//! `citewise adapt`: fine-tunes the dense encoder on the library's own
//! papers (inverse cloze, no labels), publishes the weights into the library
//! and re-encodes its papers with them.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use super::train::Bars;
use crate::library::adapt::{adaptation_data, publish, remove, run_dir, PairOptions};
use crate::library::Library;
use crate::neural::backend::{select, DevicePreference};
use crate::neural::encoder::Weights;
use crate::neural::train::adapt::{adapt_hatten, AdaptCheckpoint, AdaptOptions, AdaptProgress, PairKind};
use crate::neural::words::WordVectors;
use crate::pipeline::Models;

#[derive(Debug, Args)]
pub struct AdaptArgs {
    /// Stop after this many minutes (then validate, keep the best weights and
    /// re-encode the library); run again to go on where it stopped
    #[arg(long, value_name = "MIN", default_value_t = 30.0)]
    pub max_minutes: f64,
    /// Training steps in all (over every sitting)
    #[arg(long, default_value_t = AdaptOptions::default().max_steps)]
    pub steps: usize,
    /// Pairs per step
    #[arg(long, default_value_t = AdaptOptions::default().batch)]
    pub batch: usize,
    #[arg(long, default_value_t = AdaptOptions::default().learning_rate)]
    pub lr: f64,
    /// Steps between validations (each one a checkpoint to resume from)
    #[arg(long, default_value_t = AdaptOptions::default().eval_every)]
    pub eval_every: usize,
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
    /// Remove the adapted weights and the run (back to the default weights)
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
    let opts = AdaptOptions {
        batch: a.batch,
        learning_rate: a.lr,
        eval_every: a.eval_every.max(1),
        max_steps: a.steps,
        max_minutes: Some(a.max_minutes),
        seed: a.seed,
        ..AdaptOptions::default()
    };
    let history = adapt_hatten(&base.config, &base.bytes, &data, &run_dir(lib_dir), &opts, &words, &backend.device, &bars)?;
    bars.bar.finish_and_clear();

    let (Some(start), Some(best), Some(last)) = (history.first(), history.iter().rfind(|c| c.best), history.last()) else {
        anyhow::bail!("the run recorded no validation");
    };
    let done = if last.step >= a.steps {
        "the run is complete".to_string()
    } else {
        format!("run `citewise adapt` again to go on from step {}", last.step)
    };
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
