//! `citewise distill`: trains a student of the citation encoder on a sample
//! of the library's papers, publishes it into the library and writes its
//! stand-in vectors for every paper the citation encoder has not encoded,
//! so that the citation channel covers the library in minutes.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::Args;

use super::progress::Bars;
use crate::library::student::{distillation_data, publish, remove, run_dir, student_config, SampleOptions, SampleProgress};
use crate::library::Library;
use crate::neural::backend::{select, DevicePreference};
use crate::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
use crate::neural::train::distill::{distill_student, DistillCheckpoint, DistillOptions, DistillProgress};
use crate::neural::words::WordVectors;
use crate::pipeline::Models;

#[derive(Debug, Args)]
pub struct DistillArgs {
    /// Stop after this many minutes of training (then keep the best weights
    /// and encode the library); run again to go on where it stopped
    #[arg(long, value_name = "MIN", default_value_t = 20.0)]
    pub max_minutes: f64,
    /// Training steps in all (over every sitting)
    #[arg(long, default_value_t = DistillOptions::default().max_steps)]
    pub steps: usize,
    /// Papers per step
    #[arg(long, default_value_t = DistillOptions::default().batch)]
    pub batch: usize,
    #[arg(long, default_value_t = DistillOptions::default().learning_rate)]
    pub lr: f64,
    /// Steps between validations (each one a checkpoint to resume from)
    #[arg(long, default_value_t = DistillOptions::default().eval_every)]
    pub eval_every: usize,
    /// Papers sampled from the library (their citation vectors are read
    /// where the library has them, else computed)
    #[arg(long, default_value_t = SampleOptions::default().papers)]
    pub papers: usize,
    /// Of them, held out for validation
    #[arg(long, default_value_t = SampleOptions::default().val)]
    pub val_papers: usize,
    #[arg(long, default_value_t = DistillOptions::default().seed)]
    pub seed: u64,
    /// Train and publish the student, but leave encoding the library to
    /// `citewise embed`
    #[arg(long)]
    pub no_embed: bool,
    /// Remove the student, its run and its vectors
    #[arg(long)]
    pub remove: bool,
    /// Compute device
    #[arg(long, value_enum, default_value_t = DevicePreference::Auto)]
    pub device: DevicePreference,
}

impl DistillProgress for Bars {
    fn checkpoint(&self, c: &DistillCheckpoint) {
        self.bar.suspend(|| {
            eprintln!(
                "step {:>5}: loss {:.4}, held-out cosine to the citation encoder {:.3}, top-10 overlap {:.3}, {:.0} s{}",
                c.step,
                c.loss,
                c.cosine,
                c.top10_overlap,
                c.seconds,
                if c.best { "  (best so far)" } else { "" }
            )
        });
    }
}

impl SampleProgress for Bars {
    fn phase(&self, name: &str, total: u64) {
        Bars::phase(self, name, total)
    }
    fn advance(&self, n: u64) {
        self.bar.inc(n)
    }
}

pub fn run(lib_dir: &Path, a: &DistillArgs) -> Result<()> {
    let lib = Library::open(lib_dir).with_context(|| format!("opening {}", lib_dir.display()))?;
    super::hold_for_writing(&lib)?;
    if a.remove {
        if remove(&lib)? {
            println!(
                "removed the student of {}; the citation channel covers only the papers the citation encoder encoded",
                lib_dir.display()
            );
            super::trust::relearn_if_stale(Arc::new(lib), &Models::on(a.device).for_library(Some(lib_dir.to_path_buf())))?;
        } else {
            println!("{} has no student", lib_dir.display());
        }
        return Ok(());
    }
    let t0 = Instant::now();
    let backend = select(a.device);
    eprintln!("backend: {} on {}", backend.name, backend.adapter);
    let teacher = BiEncoder::load(CITATION_ENCODER, &backend.device)?;
    let config = student_config(teacher.dim());
    let words = WordVectors::load_named(config.word_vectors_name())?;
    let threads = crate::util::cores();

    let bars = Bars::new();
    let sample = SampleOptions { papers: a.papers, val: a.val_papers, seed: a.seed };
    let (data, report) = distillation_data(&lib, &teacher, &sample, threads, &bars)?;
    bars.bar.suspend(|| {
        eprintln!(
            "{} papers ({} held out): {} citation vectors read from the library, {} encoded now; {} abstract sentences ({:.0} s)",
            data.papers.len(),
            data.val.len(),
            report.stored,
            report.encoded,
            report.sentences,
            t0.elapsed().as_secs_f64()
        )
    });
    let opts = DistillOptions {
        batch: a.batch,
        learning_rate: a.lr,
        eval_every: a.eval_every.max(1),
        max_steps: a.steps,
        max_minutes: Some(a.max_minutes),
        seed: a.seed,
        ..DistillOptions::default()
    };
    let history = distill_student(&config, None, &data, &run_dir(lib_dir), &opts, &words, &backend.device, &bars)?;
    bars.bar.finish_and_clear();
    let (Some(best), Some(last)) = (history.iter().rfind(|c| c.best), history.last()) else {
        anyhow::bail!("the run recorded no validation");
    };
    let done = if last.step >= a.steps {
        "the run is complete".to_string()
    } else {
        format!("run `citewise distill` again to go on from step {}", last.step)
    };
    if best.step == 0 {
        println!("no step improved on the initial weights; nothing published; {done}");
        return Ok(());
    }
    let dir = publish(lib_dir)?;
    println!(
        "student: {} (step {}; held-out papers: cosine to the citation encoder {:.3}, top-10 overlap {:.3}); {done}",
        dir.display(),
        best.step,
        best.cosine,
        best.top10_overlap
    );
    if !a.no_embed {
        let models = Models::on(a.device).for_library(Some(lib_dir.to_path_buf()));
        super::vectors::compute(&lib, &models, super::vectors::Plan::STAND_INS)?;
        super::trust::relearn_if_stale(Arc::new(lib), &models)?;
    }
    println!("done in {:.1} min; `citewise distill --remove` removes the student", t0.elapsed().as_secs_f64() / 60.0);
    Ok(())
}
