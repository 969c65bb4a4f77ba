use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{bail, Context, Result};
use clap::Args;

use super::import::{print_evidence_summary, print_summary};
use super::progress::{count_bar, ImportBar};
use crate::eval::harness::{contexts_file, load_split, papers_file, TRAIN_SPLIT};
use crate::eval::harness::{evaluate_at, AsOf};
use crate::eval::{report, EvalReport, Plan};
use crate::index::QueryTf;
use crate::library::evidence_import::import_evidence;
use crate::library::import::{import, ImportOptions};
use crate::library::Library;
use crate::pipeline::evidence_channel::PaperOrder;
use crate::pipeline::learned_fusion;
use crate::pipeline::{ChannelId, Fusion, Models, Recommender, Settings, Stages};

#[derive(Debug, Args)]
pub struct EvalArgs {
    /// Leave the pool's citation vectors as they are (do not encode the
    /// papers that lack one): measures a pool the student's stand-ins cover
    #[arg(long)]
    pub as_encoded: bool,
    /// Benchmark directory holding papers.jsonl.gz and contexts.jsonl.gz
    #[arg(long, value_name = "DIR", required_unless_present_any = ["compare", "fit_support"])]
    pub bench: Option<PathBuf>,
    /// Which split to evaluate
    #[arg(long, default_value = "test")]
    pub split: String,
    /// Add the citing paper's title and abstract to each query
    #[arg(long)]
    pub global: bool,
    /// Rank every context against every paper of the pool, whatever its
    /// year [default: against the papers published by the citing paper's
    /// year, where the pool knows that year]
    #[arg(long)]
    pub any_year: bool,
    /// Channels to run, comma-separated [default: all]
    #[arg(long, value_delimiter = ',', value_name = "CHANNELS")]
    pub stages: Vec<String>,
    /// Papers ranked per query; recall is reported up to this cut-off (500 for the prefetch table)
    #[arg(long, default_value_t = crate::eval::harness::EVAL_DEPTH)]
    pub depth: usize,
    /// Evaluate only the first N contexts of the split
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Evaluate a random sample of N contexts (the same N always draws the same sample)
    #[arg(long, value_name = "N", conflicts_with = "limit")]
    pub sample: Option<usize>,
    /// Queries of at least N words re-rank evidence spans with the citation encoder too
    #[arg(long, value_name = "N")]
    pub semantic_min_words: Option<usize>,
    /// Fused candidates the reranker reorders (K_r); several values, comma-separated, give one table each (the first with cold latencies; the others reuse the pair scores computed before, deepest first)
    #[arg(long, value_delimiter = ',', value_name = "K")]
    pub rerank_depth: Vec<usize>,
    /// Write the results as JSON to FILE (or to stdout with no FILE)
    #[arg(long, value_name = "FILE", num_args = 0..=1, default_missing_value = "-")]
    pub json: Option<PathBuf>,
    /// Also write each context's ranked papers as a TREC run file (`id Q0
    /// paper rank score citewise`, what trec_eval reads), of the fused
    /// list or, with the rerank stage, of the final one
    #[arg(long, value_name = "FILE", conflicts_with = "check")]
    pub run: Option<PathBuf>,
    /// Library directory for the benchmark's candidate pool (never your own library)
    /// [default: a directory of its own beside the default library]
    #[arg(long, value_name = "DIR")]
    pub pool: Option<PathBuf>,
    /// Fusion settings, e.g. `evidence_weight=2,min_confidence=0.3` (for tuning on val)
    #[arg(long, value_name = "K=V,...")]
    pub fusion: Option<String>,
    /// Rank with the shipped fusion, not the evidence trust the pool (or its
    /// evidence set) learned from its own citing sentences
    #[arg(long)]
    pub shipped_fusion: bool,
    /// How the evidence channel orders papers from their spans
    #[arg(long, value_enum, default_value_t = EvidenceOrder::Votes)]
    pub evidence_order: EvidenceOrder,
    /// How a word the query repeats weighs in BM25 (`linear` is the formula
    /// as Lucene and bm25s compute it)
    #[arg(long, value_enum, default_value_t = QueryTfArg::Sqrt)]
    pub query_tf: QueryTfArg,
    /// With several channels, evaluate only the fused list (skip each channel alone)
    #[arg(long)]
    pub fused_only: bool,
    /// Also add the citing sentences of these files or directories (PDFs,
    /// LaTeX, Markdown, JSON Lines) to the evidence database, kept in an
    /// evidence set of its own beside the pool's; a query never sees
    /// evidence from its own citing paper
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub evidence: Vec<PathBuf>,
    /// Compare two JSON results instead of running
    #[arg(long, num_args = 2, value_names = ["A", "B"])]
    pub compare: Option<Vec<PathBuf>>,
    /// Measure `citewise check`'s support score instead: each context's true
    /// citation against a random library paper and a hard swap from the
    /// fused top 20 (ROC-AUC, share flagged weak); --json keeps every item
    #[arg(long)]
    pub check: bool,
    /// Fit the support model on the items of `eval --check --json` files
    /// (true against both swaps, classes weighed equally; threshold at the
    /// 4 % quantile of the true citations) and print it
    #[arg(long, value_name = "FILE", num_args = 1.., conflicts_with = "check")]
    pub fit_support: Option<Vec<PathBuf>>,
    /// With --fit-support: also show the fitted (and the shipped) model on
    /// these `eval --check --json` files, not fitted on
    #[arg(long, value_name = "FILE", num_args = 1.., requires = "fit_support")]
    pub support_on: Vec<PathBuf>,
}

/// `--evidence-order`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EvidenceOrder {
    /// Σ support / (k + span rank) over each paper's spans (the default)
    Votes,
    /// Best span rank, then total support, then recency
    BestRank,
}

/// `--query-tf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum QueryTfArg {
    /// Each distinct word once
    Once,
    /// √(times in the query) (the default)
    Sqrt,
    /// Times in the query
    Linear,
}

pub fn run(a: &EvalArgs, models: &Models) -> Result<()> {
    if let Some(files) = &a.compare {
        let load = |p: &PathBuf| -> Result<EvalReport> {
            let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
            serde_json::from_str(&text).with_context(|| format!("{}: not an eval --json result", p.display()))
        };
        let (ra, rb) = (load(&files[0])?, load(&files[1])?);
        print!("{}", report::compare(&ra, &rb, &files[0].display().to_string(), &files[1].display().to_string()));
        return Ok(());
    }
    if let Some(files) = &a.fit_support {
        return fit_support(files, &a.support_on);
    }
    let bench = a.bench.as_ref().expect("clap requires --bench");
    // The pool gets the citation channel's paper vectors whenever the
    // channel is evaluated (every channel by default): encoded once, kept.
    // `--as-encoded` measures the pool as it is: none are added, not even
    // to a store the pool has begun.
    let citation = if a.as_encoded {
        None
    } else if a.stages.is_empty() || a.stages.iter().any(|s| s == ChannelId::Citation.name()) {
        Some(super::vectors::CitationVectors::All)
    } else {
        Some(super::vectors::CitationVectors::KeepCurrent)
    };
    let pool = match a.pool.clone() {
        Some(d) => d,
        None => default_pool_dir(bench)?,
    };
    // The pool's own adapted weights (`citewise adapt --library POOL`) where it has them.
    let models = &Models::on(models.device_preference()).for_library(Some(pool.clone()));
    if let Ok(h) = models.hatten() {
        eprintln!("hatten: {}", h.source);
    }
    let mut lib = open_pool(&pool, bench, models, citation)?;
    if !a.evidence.is_empty() {
        lib = with_evidence(lib, bench, &a.evidence)?;
    }
    let lib = Arc::new(lib);
    let stages = if a.stages.is_empty() { Recommender::new(lib.clone(), models).stages() } else { Stages::parse(&a.stages)? };
    if stages.rerank {
        if let Ok(r) = models.reranker() {
            eprintln!("reranker: {}", r.source);
        }
    }
    if let (true, Ok(semantic)) = (stages.channels.contains(&ChannelId::Evidence), models.span_cosines()) {
        let spans = lib.evidence().num_spans();
        if spans > 0 {
            let bar = count_bar(spans, "encoding evidence spans");
            semantic.warm(&lib, &|done, _| bar.set_position(done as u64))?;
            bar.finish_and_clear();
        }
    }
    // An evidence set learns its trust once, as an import of those
    // documents would (`citewise import --evidence`).
    if !a.evidence.is_empty() && !a.shipped_fusion && learned_fusion::read(&lib)?.is_none() {
        super::trust::learn(&lib, models)?;
    } else if a.check && !a.evidence.is_empty() && !a.shipped_fusion && crate::check::calibration::read(&lib)?.is_none() {
        super::trust::learn_flag(&lib, models)?;
    }
    let fusion = if a.shipped_fusion { Fusion::default() } else { learned_fusion::fusion_of(&lib) };
    if fusion.evidence_trust != 1.0 {
        eprintln!("evidence trust {} (learned by the library; --shipped-fusion ranks without it)", fusion.evidence_trust);
    }
    let settings = Settings {
        fusion: match &a.fusion {
            Some(spec) => fusion.with_overrides(spec)?,
            None => fusion,
        },
        span_min_words: a.semantic_min_words.unwrap_or(Settings::default().span_min_words),
        evidence_order: match a.evidence_order {
            EvidenceOrder::Votes => PaperOrder::default(),
            EvidenceOrder::BestRank => PaperOrder::BestRank,
        },
        query_tf: match a.query_tf {
            QueryTfArg::Once => QueryTf::Once,
            QueryTfArg::Sqrt => QueryTf::Sqrt,
            QueryTfArg::Linear => QueryTf::Linear,
        },
        ..Settings::default()
    };
    let mut contexts = load_split(bench, &a.split)?;
    if let Some(n) = a.limit {
        contexts.truncate(n);
    }
    if let Some(n) = a.sample {
        contexts = crate::eval::harness::sample(contexts, n);
    }
    if a.check {
        return check_support(&lib, models, settings, &contexts, a);
    }
    // No depth given: the recommender's own (deeper when the reranker runs
    // on a GPU).
    let plan = Plan::new(&stages, &a.rerank_depth, a.fused_only);
    let report = plan
        .execute(|run| -> Result<EvalReport> {
            let rec = Recommender::open(lib.clone(), models, Some(&run.stages), Settings { rerank_depth: run.rerank_depth, ..settings })?;
            let bar = count_bar(contexts.len() as u64, &format!("evaluating {}", run.stages.names().join("+")));
            let as_of = if a.any_year { AsOf::AnyYear } else { AsOf::CitingYear };
            let report = evaluate_at(&rec, &contexts, &a.split, a.global, a.depth, as_of, &|_| bar.inc(1))?;
            bar.finish_and_clear();
            Ok(report)
        })?
        .into_report();
    let text: String = report
        .alone
        .iter()
        .chain(std::iter::once(&report))
        .chain(&report.by_rerank_depth)
        .map(report::table)
        .collect::<Vec<_>>()
        .join("\n");
    if let Some(p) = &a.run {
        crate::util::write_atomic(p, report::trec_run(&report).as_bytes())?;
        eprintln!("ranked papers written to {}", p.display());
    }
    match a.json.as_deref() {
        Some(p) if p.as_os_str() == "-" => println!("{}", serde_json::to_string_pretty(&report)?),
        Some(p) => {
            crate::util::write_atomic(p, serde_json::to_string_pretty(&report)?.as_bytes())?;
            print!("{text}");
            eprintln!("results written to {}", p.display());
        }
        None => print!("{text}"),
    }
    Ok(())
}

/// `eval --check`: the support score's AUCs on the split.
fn check_support(
    lib: &Arc<Library>,
    models: &Models,
    settings: Settings,
    contexts: &[crate::corpus::benchmark::CitationContext],
    a: &EvalArgs,
) -> Result<()> {
    use crate::eval::support_auc::evaluate_check;
    let rec = Recommender::open(lib.clone(), models, None, settings)?;
    let mut ids: Vec<String> = lib.papers().all_ids()?.into_iter().collect();
    ids.sort();
    let bar = count_bar(contexts.len() as u64, "scoring citations and swaps");
    let t = std::time::Instant::now();
    let result = evaluate_check(&rec, contexts, &ids, &|| bar.inc(1))?;
    bar.finish_and_clear();
    print!("{}", check_table(&a.split, &result));
    println!("{:.0} ms a context (three pairs and their alternatives)", t.elapsed().as_secs_f64() * 1000.0 / result.contexts.max(1) as f64);
    if let Some(p) = &a.json {
        crate::util::write_atomic(p, serde_json::to_string(&result)?.as_bytes())?;
        eprintln!("results written to {}", p.display());
    }
    Ok(())
}

fn check_table(split: &str, r: &crate::eval::support_auc::CheckEval) -> String {
    format!(
        "support score, `{split}`, {} contexts\n| AUC true vs random | AUC true vs hard | true flagged | random flagged | hard flagged |\n|---|---|---|---|---|\n| {:.3} | {:.3} | {:.1} % | {:.1} % | {:.1} % |\n",
        r.contexts,
        r.auc_random,
        r.auc_hard,
        100.0 * r.flagged_true,
        100.0 * r.flagged_random,
        100.0 * r.flagged_hard
    ) + &r.learned_threshold.map_or(String::new(), |t| format!("flagged under {t:.3}, the threshold the library learned\n"))
}

/// `eval --fit-support`: fits the full and the word-channel models on the
/// files' items (their features computed again from the signals they
/// recorded), each file a group, and shows every file (and those of
/// `--support-on`) under them and under the shipped models.
fn fit_support(files: &[PathBuf], shown: &[PathBuf]) -> Result<()> {
    use crate::check::support::{SupportModel, FEATURES, MODEL, WORDS_MODEL};
    use crate::eval::support_auc::{fit, summarise, CheckEval, CheckItem};
    let load = |f: &PathBuf| -> Result<(String, CheckEval)> {
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        let run: CheckEval = serde_json::from_str(&text).with_context(|| format!("{}: not an eval --check --json result", f.display()))?;
        Ok((f.display().to_string(), run))
    };
    let fitted_on = files.iter().map(load).collect::<Result<Vec<_>>>()?;
    let also = shown.iter().map(load).collect::<Result<Vec<_>>>()?;
    let rescored = |run: &CheckEval| -> Vec<CheckItem> { run.items.iter().cloned().map(|i| i.rescored(None)).collect() };
    let groups: Vec<Vec<CheckItem>> = fitted_on.iter().map(|(_, r)| rescored(r)).collect();
    let group_refs: Vec<&[CheckItem]> = groups.iter().map(Vec::as_slice).collect();
    let full = fit(&group_refs, &(0..FEATURES).collect::<Vec<_>>(), 0.04);
    let words = fit(&group_refs, &[0], 0.04);
    println!("fitted full model: {full:?}\nfitted words model: {words:?}");
    let show = |name: &str, model: &SupportModel, runs: &[(String, CheckEval)]| {
        for (file, run) in runs {
            let items: Vec<CheckItem> = run.items.iter().cloned().map(|i| i.rescored(Some(model))).collect();
            let r = summarise(run.contexts, items, Some(model.threshold), None);
            print!("{name} model on {file}: {}", check_table("", &r));
        }
    };
    let all: Vec<(String, CheckEval)> = fitted_on.into_iter().chain(also).collect();
    show("fitted full", &full, &all);
    show("fitted words", &words, &all);
    show("shipped full", &MODEL, &all);
    show("shipped words", &WORDS_MODEL, &all);
    Ok(())
}

/// The library holding the benchmark's candidate pool and its evidence
/// database: `--pool` when given, else a directory of its own under the data
/// dir (never the user's library). Both are built on first use (the journals
/// skip them later).
fn open_pool(
    dir: &std::path::Path,
    bench: &std::path::Path,
    models: &Models,
    citation: Option<super::vectors::CitationVectors>,
) -> Result<Library> {
    let papers = papers_file(bench);
    if !papers.exists() {
        bail!("{}: not found (is --bench the benchmark directory?)", papers.display());
    }
    let lib = Library::open_or_create(dir)?;
    let summary = import(&lib, &[papers], ImportOptions::default(), &ImportBar::new())?;
    if summary.files_unchanged == 0 {
        eprintln!("benchmark pool imported into {}", dir.display());
        print_summary(&summary, false);
    }
    // Evidence from the training split only, so that no evaluated citation is its own evidence.
    let ev = import_evidence(&lib, &[contexts_file(bench)], Some(TRAIN_SPLIT), false)?;
    if ev.files_unchanged == 0 {
        eprintln!("evidence database built from the `{TRAIN_SPLIT}` split");
        print_evidence_summary(&ev, false);
    }
    let plan = super::vectors::Plan { citation, ..super::vectors::Plan::FAST };
    super::vectors::compute(&lib, models, plan)?;
    Ok(lib)
}

/// The pool with an evidence set of its own: the `train` split's contexts
/// and the citing sentences of `paths`, kept under
/// `POOL/evidence-sets/<hash of the paths>` (built once, resumable).
fn with_evidence(pool: Library, bench: &std::path::Path, paths: &[PathBuf]) -> Result<Library> {
    let (inputs, problems) = crate::evidence::inputs::expand(paths);
    for p in &problems {
        eprintln!("skipped: {p}");
    }
    let mut key = String::new();
    for p in paths {
        key.push_str(&std::fs::canonicalize(p).unwrap_or_else(|_| p.clone()).to_string_lossy());
        key.push('\n');
    }
    let set = pool.dir().join("evidence-sets").join(format!("{:016x}", crate::util::fnv1a64(key.as_bytes())));
    std::fs::create_dir_all(&set)?;
    // The pool's span vectors are the same spans under the same encoder:
    // start from them, so only the new spans are encoded.
    let (pool_vectors, set_vectors) = (pool.span_vectors_dir(), set.join("span-vectors"));
    if pool_vectors.is_dir() && !set_vectors.exists() {
        std::fs::create_dir_all(&set_vectors)?;
        for entry in std::fs::read_dir(&pool_vectors)? {
            let entry = entry?;
            std::fs::copy(entry.path(), set_vectors.join(entry.file_name()))?;
        }
    }
    let lib = Library::open_with_evidence(pool.dir(), &set)?;
    drop(pool);
    let base = import_evidence(&lib, &[contexts_file(bench)], Some(TRAIN_SPLIT), false)?;
    let bar = count_bar(0, "reading documents");
    let options = crate::library::evidence_import::EvidenceOptions::default();
    let extra = crate::library::evidence_import::import_inputs(&lib, &inputs, &options, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    if base.files_unchanged == 0 || extra.files_unchanged < extra.files {
        eprintln!(
            "evidence set {} built from the `{TRAIN_SPLIT}` split and {}",
            set.display(),
            paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
        );
        print_evidence_summary(&extra, false);
    }
    Ok(lib)
}

/// Where the benchmark's pool lives when no `--pool` is given: a directory
/// of its own beside the default library, named after the benchmark's path.
pub fn default_pool_dir(bench: &std::path::Path) -> Result<PathBuf> {
    let name = std::fs::canonicalize(bench).unwrap_or_else(|_| bench.to_path_buf());
    let tag = format!("{:016x}", crate::util::fnv1a64(name.to_string_lossy().as_bytes()));
    Ok(Library::default_dir()?.with_file_name(format!("bench-{tag}")))
}
