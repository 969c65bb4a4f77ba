use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::import::print_summary;
use super::progress::{count_bar, ImportBar};
use crate::eval::harness::{load_split, papers_file};
use crate::eval::{evaluate, report, EvalReport};
use crate::library::import::{import, ImportOptions};
use crate::library::Library;
use crate::pipeline::channel::ALL_CHANNELS;
use crate::pipeline::Recommender;

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Benchmark directory holding papers.jsonl.gz and contexts.jsonl.gz
    #[arg(long, value_name = "DIR", required_unless_present = "compare")]
    pub bench: Option<PathBuf>,
    /// Which split to evaluate
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Add the citing paper's title and abstract to each query
    #[arg(long)]
    pub global: bool,
    /// Channels to run, comma-separated [default: all]
    #[arg(long, value_delimiter = ',', value_name = "CHANNELS")]
    pub stages: Vec<String>,
    /// Evaluate only the first N contexts of the split
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Write the results as JSON to FILE (or to stdout with no FILE)
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Library directory for the benchmark's candidate pool (never your own library)
    /// [default: a directory of its own beside the default library]
    #[arg(long, value_name = "DIR")]
    pub pool: Option<PathBuf>,
    /// Compare two JSON results instead of running
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub compare: Option<Vec<PathBuf>>,
}

pub fn run(a: &EvalArgs) -> Result<()> {
    if let Some(files) = &a.compare {
        let load = |p: &PathBuf| -> Result<EvalReport> {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            serde_json::from_str(&text).with_context(|| format!("{}: not an eval --json result", p.display()))
        };
        let (ra, rb) = (load(&files[0])?, load(&files[1])?);
        print!("{}", report::compare(&ra, &rb, &files[0].display().to_string(), &files[1].display().to_string()));
        return Ok(());
    }
    let bench = a.bench.as_ref().expect("clap requires --bench");
    let lib = Arc::new(open_pool(a.pool.clone(), bench)?);
    let stages: Vec<&str> = if a.stages.is_empty() { ALL_CHANNELS.to_vec() } else { a.stages.iter().map(String::as_str).collect() };
    let rec = Recommender::with_channels(lib, &stages)?;
    let mut contexts = load_split(bench, &a.split)?;
    if let Some(n) = a.limit {
        contexts.truncate(n);
    }
    let bar = count_bar(contexts.len() as u64, "evaluating");
    let report = evaluate(&rec, &contexts, &a.split, a.global, &|_| bar.inc(1))?;
    bar.finish_and_clear();
    match a.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => println!("{}", serde_json::to_string_pretty(&report)?),
        Some(p) => {
            crate::util::write_atomic(p, serde_json::to_string_pretty(&report)?.as_bytes())?;
            print!("{}", report::table(&report));
            eprintln!("results written to {}", p.display());
        }
        None => print!("{}", report::table(&report)),
    }
    Ok(())
}

/// The library holding the benchmark's candidate pool: `--pool` when
/// given, else a directory of its own under the data dir (never the user's
/// library). The pool is imported on first use (the journal skips it later).
fn open_pool(pool: Option<PathBuf>, bench: &std::path::Path) -> Result<Library> {
    let papers = papers_file(bench);
    if !papers.exists() {
        bail!("{}: not found (is --bench the benchmark directory?)", papers.display());
    }
    let dir = match pool {
        Some(d) => d,
        None => {
            let name = std::fs::canonicalize(bench).unwrap_or_else(|_| bench.to_path_buf());
            let tag = format!("{:016x}", crate::util::fnv1a64(name.to_string_lossy().as_bytes()));
            Library::default_dir()?.with_file_name(format!("bench-{tag}"))
        }
    };
    let lib = Library::open_or_create(&dir)?;
    let summary = import(&lib, &[papers], ImportOptions::default(), &ImportBar::new())?;
    if summary.files_unchanged == 0 {
        eprintln!("benchmark pool imported into {}", dir.display());
        print_summary(&summary, false);
    }
    Ok(lib)
}
