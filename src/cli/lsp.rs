use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use crate::config::Config;
use crate::library::Library;
use crate::lsp::Options;
use crate::pipeline::Models;

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
    let config = Config::of_user(a.config.as_deref())?;
    crate::neural::parallel::use_compute_threads(config.threads, 1)?;
    let lib = Library::open(library).with_context(|| format!("opening the library at {}", library.display()))?;
    let options = Options {
        library: Arc::new(lib),
        models,
        stages: (!a.stages.is_empty()).then(|| a.stages.clone()),
        key_style: config.key_style,
        results: config.results,
        background: config.background_phases(),
        grammar: config.grammar(Default::default()),
    };
    crate::lsp::serve_stdio(options)?;
    Ok(())
}
