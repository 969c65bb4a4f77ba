use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use crate::library::Library;
use crate::lsp::Options;
use crate::pipeline::Models;
use crate::tui::config::Config;

#[derive(Debug, Args)]
pub struct LspArgs {
    /// Stages to run, comma-separated [default: every stage the library and models allow]
    #[arg(long, value_delimiter = ',', value_name = "STAGES")]
    pub stages: Vec<String>,
    /// Config file (key style, results per completion) [default: the editor's]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Speak over stdin/stdout (the only transport; accepted for clients that pass it)
    #[arg(long)]
    pub stdio: bool,
}

pub fn run(library: &std::path::Path, a: &LspArgs, models: Models) -> Result<()> {
    let config_path = a.config.clone().or_else(crate::dirs::config_file);
    let config = match &config_path {
        Some(p) => Config::load(p)?,
        None => Config::default(),
    };
    crate::neural::parallel::use_compute_threads(config.threads, 1)?;
    let lib = Library::open(library).with_context(|| format!("opening the library at {}", library.display()))?;
    let options = Options {
        library: Arc::new(lib),
        models,
        stages: (!a.stages.is_empty()).then(|| a.stages.clone()),
        key_style: config.key_style,
        results: config.results,
        background: config.background_encoding.phases(),
    };
    crate::lsp::serve_stdio(options)?;
    Ok(())
}
