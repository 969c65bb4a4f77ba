//! The `citewise` command line (the binary's edge: errors become `anyhow`).

mod bench;
mod eval;
mod import;
mod progress;
mod recommend;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};

use crate::library::{Library, LIBRARY_ENV};

/// citewise: find the papers worth citing at your cursor, with the evidence
/// of other authors who cited them for similar claims.
#[derive(Debug, Parser)]
#[command(name = "citewise", version, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Library directory [default: the platform data dir, e.g. ~/.local/share/citewise/library]
    #[arg(long, global = true, env = LIBRARY_ENV, value_name = "DIR")]
    pub library: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import BibTeX (.bib) or papers JSONL (.jsonl) files or directories; .gz is read transparently
    Import(import::ImportArgs),
    /// Recommend papers to cite for a piece of text
    Recommend(recommend::RecommendArgs),
    /// Measure recommendation quality on a citation benchmark
    Eval(eval::EvalArgs),
    /// Measure import/index speed and memory
    Bench(bench::BenchArgs),
    /// Show where the library is and what it holds
    Info,
}

/// Parses the command line and runs it.
pub fn main() -> Result<()> {
    let cli = Cli::parse();
    match &cli.command {
        Command::Import(a) => import::run(&library_dir(&cli)?, a),
        Command::Recommend(a) => recommend::run(&open_library(&cli)?, a),
        Command::Eval(a) => eval::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Info => info(&cli),
    }
}

fn library_dir(cli: &Cli) -> Result<PathBuf> {
    match &cli.library {
        Some(d) => Ok(d.clone()),
        None => Ok(Library::default_dir()?),
    }
}

fn open_library(cli: &Cli) -> Result<Arc<Library>> {
    let dir = library_dir(cli)?;
    Ok(Arc::new(Library::open(&dir)?))
}

fn info(cli: &Cli) -> Result<()> {
    let dir = library_dir(cli)?;
    let lib = Library::open(&dir).with_context(|| format!("opening {}", dir.display()))?;
    println!("library: {}", lib.dir().display());
    println!("papers:  {}", lib.papers().num_papers());
    println!("format:  {}", crate::library::FORMAT);
    Ok(())
}
