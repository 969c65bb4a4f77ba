use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde::Serialize;

use crate::library::import::{import, ImportOptions, Quiet};
use crate::library::Library;

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub what: BenchWhat,
}

#[derive(Debug, Subcommand)]
pub enum BenchWhat {
    /// Import and index files into a fresh temporary library; report seconds and peak memory
    Import {
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
}

#[derive(Serialize)]
struct ImportBench {
    papers: u64,
    imported: usize,
    skipped: usize,
    seconds: f64,
    peak_rss_mb: f64,
}

pub fn run(a: &BenchArgs) -> Result<()> {
    match &a.what {
        BenchWhat::Import { paths } => {
            let dir = tempfile_dir()?;
            let t = Instant::now();
            let lib = Library::open_or_create(&dir)?;
            let s = import(&lib, paths, ImportOptions::default(), &Quiet)?;
            let r = ImportBench {
                papers: lib.papers().num_papers(),
                imported: s.imported,
                skipped: s.skipped.len(),
                seconds: t.elapsed().as_secs_f64(),
                peak_rss_mb: crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
            };
            drop(lib);
            let _ = std::fs::remove_dir_all(&dir);
            println!("{}", serde_json::to_string(&r)?);
        }
    }
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("citewise-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
