//! `citewise train hatten`: trains the dense prefetch encoder.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::field::write_field;
use super::progress::Bars;
use crate::neural::backend::{select, DevicePreference};
use crate::neural::hatten::HattenConfig;
use crate::neural::train::{train, EpochReport, TrainOptions, TrainProgress};
use crate::neural::words::WordVectors;

#[derive(Debug, Args)]
pub struct TrainArgs {
    #[command(subcommand)]
    pub model: TrainModel,
}

#[derive(Debug, Subcommand)]
pub enum TrainModel {
    /// The HAtten dense prefetch encoder (triplet loss, mined hard negatives)
    Hatten(HattenArgs),
    /// The cross-encoder reranker (triplet loss on the pipeline's prefetched negatives)
    Reranker(super::train_reranker::RerankerArgs),
    /// Only the field profile (field.tsv) of a benchmark's training queries,
    /// which `train hatten` and `train reranker` write beside their weights
    Field(FieldArgs),
}

#[derive(Debug, Args)]
pub struct FieldArgs {
    /// Benchmark directory (contexts.jsonl.gz)
    #[arg(long, value_name = "DIR")]
    pub bench: PathBuf,
    /// Directory to write field.tsv in
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Debug, Args)]
pub struct HattenArgs {
    /// Benchmark directory (papers.jsonl.gz, contexts.jsonl.gz with train and val splits)
    #[arg(long, value_name = "DIR")]
    pub bench: PathBuf,
    /// Output directory (config.json, model.safetensors, train-state.json); a run there resumes
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[arg(long, default_value_t = TrainOptions::default().epochs)]
    pub epochs: usize,
    #[arg(long, default_value_t = TrainOptions::default().batch)]
    pub batch: usize,
    #[arg(long, default_value_t = TrainOptions::default().learning_rate)]
    pub lr: f64,
    /// Learning-rate schedule over the run's epochs
    #[arg(long, value_enum, default_value_t = TrainOptions::default().lr_schedule)]
    pub lr_schedule: crate::neural::train::LrSchedule,
    #[arg(long, default_value_t = TrainOptions::default().margin)]
    pub margin: f32,
    /// Papers in the mining and validation pool
    #[arg(long, default_value_t = TrainOptions::default().mining_pool)]
    pub mining_pool: usize,
    /// Use only the first N train contexts
    #[arg(long, value_name = "N")]
    pub train_limit: Option<usize>,
    /// Use only the first N val contexts
    #[arg(long, value_name = "N")]
    pub val_limit: Option<usize>,
    /// Stop after this many minutes (then validate and save)
    #[arg(long, value_name = "MIN")]
    pub max_minutes: Option<f64>,
    /// Width of the encoder
    #[arg(long, default_value_t = 128)]
    pub width: usize,
    /// Words kept from an abstract
    #[arg(long, default_value_t = 128)]
    pub abstract_words: usize,
    /// Frozen word vectors: a BERT model directory whose WordPiece
    /// embeddings are read (`minilm-citation-v4`), or `glove-6b-50d`
    #[arg(long, default_value = crate::neural::words::BERT_WORDS_DIR, value_name = "NAME")]
    pub word_vectors: String,
    /// Share of training queries that lose the citing title and abstract
    #[arg(long, default_value_t = TrainOptions::default().global_dropout)]
    pub global_dropout: f32,
    /// How the triplets with the batch's other papers are averaged
    #[arg(long, value_enum, default_value_t = TrainOptions::default().batch_negatives)]
    pub batch_negatives: crate::neural::train::BatchNegatives,
    /// Objective: margin triplets, or the same triplets under a softmax
    #[arg(long, value_enum, default_value_t = TrainOptions::default().loss)]
    pub loss: crate::neural::train::Loss,
    /// Softmax temperature (`--loss softmax`)
    #[arg(long, default_value_t = TrainOptions::default().temperature)]
    pub temperature: f32,
    #[arg(long, default_value_t = TrainOptions::default().seed)]
    pub seed: u64,
    /// Compute device
    #[arg(long, value_enum, default_value_t = DevicePreference::Auto)]
    pub device: DevicePreference,
}

impl TrainProgress for Bars {
    fn epoch(&self, r: &EpochReport) {
        self.bar.suspend(|| {
            eprintln!(
                "epoch {:>2}: {} steps, loss {:.4}, val R@10 {:.3}, R@100 {:.3} (local context only: {:.3}, {:.3}), {:.0} s{}",
                r.epoch,
                r.steps,
                r.loss,
                r.val_r10,
                r.val_r100,
                r.val_local_r10,
                r.val_local_r100,
                r.seconds,
                if r.best { "  (best so far)" } else { "" }
            )
        });
    }
}

pub fn run(a: &TrainArgs, models: &crate::pipeline::Models) -> Result<()> {
    match &a.model {
        TrainModel::Hatten(h) => hatten(h),
        TrainModel::Reranker(r) => super::train_reranker::run(r, models),
        TrainModel::Field(f) => write_field(&f.bench, &f.out),
    }
}

fn hatten(a: &HattenArgs) -> Result<()> {
    let backend = select(a.device);
    eprintln!("backend: {} on {}", backend.name, backend.adapter);
    let words = WordVectors::load_named(&a.word_vectors)?;
    eprintln!("word vectors: {} ({} rows, {}-d)", a.word_vectors, words.len(), words.dim());
    let config = HattenConfig::new()
        .with_d_model(a.width)
        .with_max_abstract_words(a.abstract_words)
        .with_word_dim(words.dim())
        .with_word_vectors(Some(a.word_vectors.clone()));
    let opts = TrainOptions {
        epochs: a.epochs,
        batch: a.batch,
        learning_rate: a.lr,
        margin: a.margin,
        mining_pool: a.mining_pool,
        train_limit: a.train_limit,
        val_limit: a.val_limit,
        max_minutes: a.max_minutes,
        global_dropout: a.global_dropout,
        batch_negatives: a.batch_negatives,
        loss: a.loss,
        temperature: a.temperature,
        lr_schedule: a.lr_schedule,
        seed: a.seed,
        ..TrainOptions::default()
    };
    let bars = Bars::new();
    let history = train(&a.bench, &a.out, &config, &opts, &words, &backend.device, &bars)?;
    bars.bar.finish_and_clear();
    write_field(&a.bench, &a.out)?;
    if let Some(best) = history.iter().rfind(|r| r.best) {
        println!(
            "best: epoch {} (val R@10 {:.3}, R@100 {:.3}); weights in {}",
            best.epoch,
            best.val_r10,
            best.val_r100,
            a.out.join("model.safetensors").display()
        );
    }
    Ok(())
}
