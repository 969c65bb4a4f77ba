//! The `citewise` command line (the binary's edge: errors become `anyhow`).

mod adapt;
mod bench;
mod check;
mod distill;
mod doctor;
mod eval;
mod evidence;
mod field;
mod import;
mod lsp;
mod progress;
mod recommend;
pub mod style;
mod train;
mod train_reranker;
mod trust;
mod vectors;

use std::path::PathBuf;
use std::sync::Arc;

use crate::pipeline::Models;

use anyhow::{Context, Result};
use clap::{CommandFactory, Parser, Subcommand};

use crate::library::{Library, LIBRARY_ENV};

/// citewise: find the papers worth citing at your cursor, with the evidence
/// of other authors who cited them for similar claims.
#[derive(Debug, Parser)]
#[command(
    name = "citewise",
    version,
    about,
    long_about = None,
    propagate_version = true,
    after_help = "With no command, opens FILE (a .tex or .md draft) in the editor."
)]
pub struct Cli {
    /// Library directory [default: $CITEWISE_LIBRARY, else library/ in the data directory,
    /// ~/.local/share/citewise/library unless $CITEWISE_DATA_DIR or $XDG_DATA_HOME names another]
    #[arg(long, global = true, value_name = "DIR")]
    pub library: Option<PathBuf>,

    /// The draft to open in the editor (created on save if it does not exist)
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,

    /// Open the editor on a small built-in library and draft
    #[arg(long)]
    pub demo: bool,

    /// Bibliography file that exports go to [default: references.bib beside the draft]
    #[arg(long, value_name = "FILE")]
    pub bib: Option<PathBuf>,

    /// Configuration file [default: config.toml in the configuration directory, ~/.config/citewise
    /// unless $CITEWISE_CONFIG_DIR or $XDG_CONFIG_HOME names another]
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,

    /// When the plain commands colour their output (the editor keeps its theme): auto is on a
    /// terminal unless NO_COLOR is set
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = style::ColorWhen::Auto)]
    pub color: style::ColorWhen,

    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import BibTeX (.bib) or papers JSONL (.jsonl) files or directories (.gz read transparently);
    /// with --evidence, citing sentences for the evidence database
    Import(import::ImportArgs),
    /// Recommend papers to cite for a piece of text
    Recommend(recommend::RecommendArgs),
    /// Check a draft's citations: unknown keys, mismatched entries, duplicates, retracted papers and weak support
    /// (exit code 1 on a warning or above)
    Check(check::CheckArgs),
    /// List the citing sentences in the evidence database that cite a paper
    Evidence(evidence::EvidenceArgs),
    /// Measure recommendation quality on a citation benchmark
    Eval(eval::EvalArgs),
    /// Measure import/index speed and memory
    Bench(bench::BenchArgs),
    /// Show where the library is and what it holds
    Info(InfoArgs),
    /// Check the library, the model weights and the compute backend
    Doctor(doctor::DoctorArgs),
    /// Compute the vectors of evidence spans and papers that have none: span vectors, HAtten vectors, the student's stand-in citation vectors (fast), citation-channel vectors (resumes; import keeps them current)
    Embed(EmbedArgs),
    /// Train a model on a citation benchmark
    Train(train::TrainArgs),
    /// Adapt the dense encoder (or, with --reranker, the reranker) to the library's own papers and citing sentences, without labels (resumable, bounded by --max-minutes)
    Adapt(adapt::AdaptArgs),
    /// Distil the citation encoder into a fast student on the library's papers, so that the citation channel covers the library in minutes (resumable, bounded by --max-minutes)
    Distill(distill::DistillArgs),
    /// Serve citations to any editor over the Language Server Protocol (stdio)
    Lsp(lsp::LspArgs),
    /// Print a shell completion script (e.g. `citewise completions bash > ~/.local/share/bash-completion/completions/citewise`)
    Completions(CompletionsArgs),
    /// Print the man page, or with --out write one page per command into a directory
    Man(ManArgs),
}

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete in
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write citewise.1 and one citewise-COMMAND.1 per command here (made if missing) instead of
    /// printing citewise.1
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
pub struct EmbedArgs {
    /// Only the fast encoders: HAtten and the student's stand-ins for the
    /// citation channel (minutes for a large library); the citation
    /// encoder's own vectors and the span vectors are left for a later
    /// `citewise embed`
    #[arg(long)]
    pub fast: bool,
}

/// Parses the command line and runs it.
pub fn main() -> Result<std::process::ExitCode> {
    // The colour choice is made before parsing, so that clap's help and
    // errors follow `--color` as the commands' output does.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    style::ColorWhen::from_args(&args).unwrap_or_default().apply();
    let cli = Cli::parse_from(args);
    cli.color.apply();
    match &cli.command {
        Some(Command::Completions(a)) => return completions(a).map(|()| std::process::ExitCode::SUCCESS),
        Some(Command::Man(a)) => return man(a).map(|()| std::process::ExitCode::SUCCESS),
        _ => {}
    }
    // The editor and the language server size the threads for model work
    // once their config is read (a core kept for their own loop).
    if !matches!(cli.command, None | Some(Command::Lsp(_))) {
        crate::neural::parallel::use_compute_threads(None, 0)?;
    }
    if let Some(Command::Check(a)) = &cli.command {
        let models = Models::installed().for_library(library_dir(&cli).ok());
        // No library: the draft is checked against its bibliography alone.
        let library = match library_dir(&cli).map(|dir| Library::open(&dir)) {
            Ok(Ok(lib)) => Ok(Arc::new(lib)),
            Ok(Err(crate::error::Error::Missing(why))) => Err(why),
            Ok(Err(e)) => return Err(e.into()),
            Err(e) => Err(e.to_string()),
        };
        let config = crate::config::Config::of_user(cli.config.as_deref())?;
        return Ok(check::run(&library, a, &models, &config)?.into());
    }
    run(&cli).map(|()| std::process::ExitCode::SUCCESS)
}

fn run(cli: &Cli) -> Result<()> {
    // The models of this process: loaded on first use, shared by every
    // recommender the command makes.
    let models = Models::installed().for_library(library_dir(cli).ok());
    match &cli.command {
        Some(Command::Import(a)) => import::run(&library_dir(cli)?, a, &models),
        Some(Command::Recommend(a)) => recommend::run(&open_library(cli)?, a, &models),
        Some(Command::Check(_) | Command::Completions(_) | Command::Man(_)) => unreachable!("answered above"),
        Some(Command::Eval(a)) => eval::run(a, &models),
        Some(Command::Evidence(a)) => evidence::run(&library_dir(cli)?, a),
        Some(Command::Bench(a)) => bench::run(a, &models),
        Some(Command::Info(a)) => info(cli, a),
        Some(Command::Doctor(a)) => doctor::run(&library_dir(cli)?, a, &models),
        Some(Command::Train(a)) => train::run(a, &models),
        Some(Command::Adapt(a)) => adapt::run(&library_dir(cli)?, a),
        Some(Command::Distill(a)) => distill::run(&library_dir(cli)?, a),
        Some(Command::Lsp(a)) => lsp::run(&library_dir(cli)?, a, models),
        Some(Command::Embed(a)) => {
            let lib = open_library(cli)?;
            hold_for_writing(&lib)?;
            vectors::compute(&lib, &models, if a.fast { vectors::Plan::FAST } else { vectors::Plan::EMBED })?;
            trust::relearn_if_stale(lib, &models)
        }
        None => editor(cli, models),
    }
}

/// `name` in the data directory (`demo`, `autosave`).
fn data_path(name: &str) -> Result<PathBuf> {
    crate::dirs::data_path(name).with_context(|| format!("no home directory to keep the {name} in: set {}", crate::dirs::DATA_DIR_ENV))
}

fn editor(cli: &Cli, mut models: Models) -> Result<()> {
    use std::io::IsTerminal;
    let (library, draft) = if cli.demo {
        let (lib, draft) = crate::tui::demo::prepare(&data_path("demo")?)?;
        models = Models::installed().for_library(Some(lib.clone()));
        (lib, Some(draft))
    } else {
        if cli.file.is_none() {
            return first_steps(cli);
        }
        (library_dir(cli)?, cli.file.clone())
    };
    if !std::io::stdout().is_terminal() {
        anyhow::bail!("the editor needs a terminal; for scripts use `citewise recommend`");
    }
    let session = crate::tui::prepare(crate::tui::Options {
        draft,
        bib: cli.bib.clone(),
        library,
        config: cli.config.clone(),
        autosave_dir: data_path("autosave")?,
        models,
    })?;
    crate::tui::run(session)?;
    Ok(())
}

/// `citewise` with no file: on a first run (no library yet, or one that
/// holds no paper), what to do next; otherwise the help.
fn first_steps(cli: &Cli) -> Result<()> {
    let dir = library_dir(cli)?;
    let welcome = match Library::open(&dir) {
        Err(crate::Error::Missing(_)) => Some(first_run_message(&dir)),
        Ok(lib) if lib.papers().num_papers() == 0 => Some(welcome_message(&dir, true)),
        _ => None,
    };
    match welcome {
        Some(message) => print!("{message}"),
        None => {
            Cli::command().print_help()?;
            println!();
        }
    }
    Ok(())
}

/// The few lines a first run prints: where the library will be, and the
/// commands that fill it and open a draft.
pub fn first_run_message(library: &std::path::Path) -> String {
    welcome_message(library, false)
}

/// The first run's lines, for a library that is not there yet or (`made`)
/// one that holds no paper yet.
fn welcome_message(library: &std::path::Path, made: bool) -> String {
    let cmd = |args: &str| crate::util::citewise_command(library, args);
    let steps = [
        (cmd("import refs.bib"), "import a BibTeX file (or a folder of them)"),
        (cmd("import --zotero"), "or your Zotero library"),
        (cmd("import --evidence ~/papers"), "add your PDFs and LaTeX sources as evidence"),
        (cmd("draft.tex"), "open a draft; F5 at the citation point"),
        ("citewise --demo".to_string(), "or try it now on a small built-in library"),
    ];
    let width = steps.iter().map(|(c, _)| c.chars().count()).max().unwrap_or(0);
    let mut s = if made {
        format!("Welcome to citewise. The library at {} holds no papers yet.\n\nTo begin:\n", library.display())
    } else {
        format!("Welcome to citewise. There is no library yet (it will be {}).\n\nTo begin:\n", library.display())
    };
    for (c, what) in &steps {
        s.push_str(&format!("  {c:<width$}  {what}\n"));
    }
    s.push_str("\n`citewise --help` lists every command; `citewise doctor` checks the set-up.\n");
    s
}

/// `citewise completions SHELL`: the script, on standard output.
fn completions(a: &CompletionsArgs) -> Result<()> {
    // Into a buffer first: clap_complete panics when its writer fails (a
    // reader such as `head` that went away).
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut Cli::command(), "citewise", &mut script);
    match std::io::Write::write_all(&mut std::io::stdout().lock(), &script) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// `citewise man [--out DIR]`.
fn man(a: &ManArgs) -> Result<()> {
    match &a.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot make the directory", dir.display()))?;
            clap_mangen::generate_to(Cli::command(), dir).with_context(|| format!("{}: cannot write the man pages", dir.display()))?;
            eprintln!("man pages written to {}", dir.display());
        }
        None => {
            let mut out = std::io::stdout().lock();
            clap_mangen::Man::new(Cli::command()).render(&mut out)?;
            std::io::Write::flush(&mut out)?;
        }
    }
    Ok(())
}

/// `--library`, else `$CITEWISE_LIBRARY` (read here rather than by clap,
/// which refuses an empty variable), else the data directory's.
fn library_dir(cli: &Cli) -> Result<PathBuf> {
    match cli.library.clone().or_else(|| crate::dirs::env_path(LIBRARY_ENV)) {
        Some(d) => Ok(d),
        None => Ok(Library::default_dir()?),
    }
}

/// Makes this command the one writer of `lib` for the rest of its run
/// ([`crate::library::lock`]): while another process writes to it (an
/// import, an editor's commit), it waits, saying for whom.
pub fn hold_for_writing(lib: &Library) -> Result<()> {
    let dir = lib.dir().display().to_string();
    lib.writing().tell_waits(move |holder| {
        eprintln!("waiting: {holder} is writing to the library at {dir}; this command goes on once it is done");
    });
    lib.writing().hold().with_context(|| format!("taking the write lock of the library at {}", lib.dir().display()))
}

fn open_library(cli: &Cli) -> Result<Arc<Library>> {
    let dir = library_dir(cli)?;
    Ok(Arc::new(Library::open(&dir)?))
}

#[derive(Debug, clap::Args)]
pub struct InfoArgs {
    /// Also print N evidence spans drawn at random (with what they cite and where they come from)
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub sample_spans: usize,
    /// Seed for --sample-spans
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

fn info(cli: &Cli, a: &InfoArgs) -> Result<()> {
    let dir = library_dir(cli)?;
    let lib = Library::open(&dir).with_context(|| format!("opening {}", dir.display()))?;
    println!("library: {}", lib.dir().display());
    println!("papers:  {}", lib.papers().num_papers());
    let ev = lib.evidence().stats()?;
    println!("evidence: {} spans covering {} papers (mean support {:.2})", ev.spans, ev.papers, ev.mean_support);
    println!("format:  {}", crate::library::FORMAT);
    if let Some(p) = crate::library::health::journal_problem_of(&lib) {
        eprintln!("warning: {}\n  repair: {}", p.what, p.repair);
    }
    if a.sample_spans > 0 {
        let records = lib.evidence().all_records()?;
        let mut state = a.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        for _ in 0..a.sample_spans.min(records.len()) {
            // xorshift64: a reproducible draw without a dependency.
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let r = &records[(state % records.len() as u64) as usize];
            let kinds: Vec<String> = r.kinds.iter().map(|k| format!("{k:?}").to_lowercase()).collect();
            let cited: Vec<String> = r.cited.iter().map(|c| format!("{} (support {})", c.id, c.support())).collect();
            println!("\n[{}] {:?}\n  cites: {}", kinds.join("+"), r.text, cited.join(", "));
            if let Some(src) = r.sources.first() {
                println!("  from:  {:?}", src.sentence);
            }
        }
    }
    Ok(())
}
