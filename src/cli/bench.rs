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
    /// Input-to-render latency of the editor while recommendations run in the background
    Keys {
        /// Library to recommend from [default: the --library / default library]
        #[arg(long, value_name = "DIR")]
        library: Option<PathBuf>,
        /// Keystrokes to time
        #[arg(long, default_value_t = 2000)]
        keys: usize,
        /// Pause between keystrokes, in milliseconds (a fast typist: 30)
        #[arg(long, default_value_t = 30)]
        gap_ms: u64,
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
        BenchWhat::Keys { library, keys, gap_ms } => {
            let dir = match library {
                Some(d) => d.clone(),
                None => std::env::var_os(crate::library::LIBRARY_ENV).map(PathBuf::from).map_or_else(Library::default_dir, Ok)?,
            };
            let lib = std::sync::Arc::new(Library::open(&dir)?);
            let papers = lib.papers().num_papers();
            let ms = crate::tui::latency::input_latency(lib, *keys, std::time::Duration::from_millis(*gap_ms))?;
            let q = |p| crate::eval::metrics::quantile(&ms, p);
            println!(
                "{}",
                serde_json::json!({"papers": papers, "keys": ms.len(), "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": q(1.0)})
            );
        }
    }
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("citewise-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}
