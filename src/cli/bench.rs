use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::{Args, Subcommand};

use crate::corpus::citation_markup::CiteGrammar;
use serde::Serialize;

use crate::library::import::{import, ImportOptions, Quiet};
use crate::library::Library;
use crate::pipeline::{Models, Stage};

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
    /// Read documents (PDFs, LaTeX, Markdown) into a fresh evidence database
    /// beside a library's papers; report documents per second and peak memory
    Evidence {
        /// Library whose papers the references are linked to [default: the --library / default library]
        #[arg(long, value_name = "DIR")]
        library: Option<PathBuf>,
        #[arg(required = true, value_name = "PATH")]
        paths: Vec<PathBuf>,
    },
    /// Exact top-100 cosine search over synthetic unit vectors, CPU scan
    /// and the burn backend (GPU when there is one)
    Vectors {
        /// Rows to search, comma-separated
        #[arg(long, value_delimiter = ',', default_value = "120000,1000000")]
        rows: Vec<usize>,
        #[arg(long, default_value_t = 128)]
        dim: usize,
        /// Queries timed per size
        #[arg(long, default_value_t = 50)]
        queries: usize,
        /// CPU threads for the scan [default: the threads for model work]
        #[arg(long)]
        threads: Option<usize>,
        /// Search this library's own stores instead (HAtten's, and the
        /// citation channel's with its stand-ins), with stored vectors of
        /// its real papers as queries
        #[arg(long, value_name = "DIR")]
        library: Option<PathBuf>,
    },
    /// Synthetic records made from a library's papers (marked as such),
    /// with vectors mixed from theirs, for a library of any size: writes
    /// them to a JSON Lines file for `citewise import` and their vectors
    /// into the library's stores ahead of the import
    Scale {
        /// The library (encoded: `citewise embed --fast`)
        #[arg(long, value_name = "DIR")]
        library: PathBuf,
        /// Synthetic records to make
        #[arg(long)]
        records: usize,
        #[arg(long, value_name = "FILE.jsonl")]
        out: PathBuf,
        #[arg(long, default_value_t = 47)]
        seed: u64,
    },
    /// HAtten encoding throughput on the first N papers of a papers JSONL file
    Embed {
        #[arg(value_name = "PAPERS.jsonl[.gz]")]
        papers: PathBuf,
        #[arg(long, default_value_t = 5000)]
        n: usize,
        /// Compute device
        #[arg(long, value_enum, default_value_t = crate::neural::backend::DevicePreference::Auto)]
        device: crate::neural::backend::DevicePreference,
    },
    /// Rerank stage speed (the cross-encoder, then the citation
    /// bi-encoder with an empty cache): papers of a JSONL file scored
    /// against queries made of other papers' titles and abstracts
    Rerank {
        #[arg(value_name = "PAPERS.jsonl[.gz]")]
        papers: PathBuf,
        /// Candidates scored per query (K_r)
        #[arg(long, value_delimiter = ',', default_value = "20,50,100")]
        depth: Vec<usize>,
        /// Queries timed per depth
        #[arg(long, default_value_t = 5)]
        queries: usize,
        /// Base model; the fine-tuned reranker is used when none is given
        #[arg(long)]
        base: Option<String>,
        /// Tokens per pair (with --base)
        #[arg(long, default_value_t = 192)]
        max_len: usize,
        /// Compute device
        #[arg(long, value_enum, default_value_t = crate::neural::backend::DevicePreference::Auto)]
        device: crate::neural::backend::DevicePreference,
        /// Threads for model work, comma-separated: one run each, timed
        /// on a pool of that many threads, with each run's parallel
        /// efficiency against the first (t_first · n_first / (n · t_n))
        /// [default: the threads for model work]
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
    },
    /// Completion latency of the language server: contexts of a benchmark
    /// split asked at `\cite{` (first answer, the same again, and when the
    /// recommender had the fused and the reranked list), and peak memory
    Lsp {
        #[command(flatten)]
        contexts: TimedContexts,
    },
    /// The language server (`citewise lsp`, a process of its own) under a
    /// storm of edits, as an editor sends them: full texts of a large
    /// LaTeX document citing the library's keys, as fast as the server
    /// takes them, a completion every so many; then shutdown and exit.
    /// Reports the server's peak memory, its threads, the time to shutdown
    /// and to exit, and completion latency during the storm
    LspStorm(LspStormArgs),
    /// The whole pipeline's latency on contexts of a benchmark split, as
    /// the editor gets it: the first list shown (after the first channel),
    /// the fused list, and the final reranked answer; per K_r, and peak
    /// memory
    Pipeline {
        #[command(flatten)]
        contexts: TimedContexts,
        /// Candidates reranked (K_r), comma-separated: one run each, with
        /// models loaded afresh (no pair scores carried over)
        #[arg(long, value_delimiter = ',', default_value = "20,50")]
        rerank_depth: Vec<usize>,
        /// Threads for model work, comma-separated: one run each, timed
        /// on a pool of that many threads, with each run's parallel
        /// efficiency against the first (t_first · n_first / (n · t_n))
        /// [default: the threads for model work]
        #[arg(long, value_delimiter = ',')]
        threads: Vec<usize>,
    },
    /// Zotero import speed: a synthetic Zotero 7 database of the first N
    /// papers of a papers JSONL file (one journal article each), imported
    /// into a fresh library without PDFs or vectors; the first import, one
    /// with nothing changed, and one after one item changed, with peak memory
    Zotero {
        #[arg(long, value_name = "PAPERS.jsonl[.gz]")]
        papers: PathBuf,
        /// Items in the Zotero database
        #[arg(long, default_value_t = 20000)]
        items: usize,
        /// Give every item one first author, year and first title word, so
        /// that the keys made for them all collide (smith2020study,
        /// smith2020studya, …)
        #[arg(long)]
        colliding: bool,
    },
    /// `citewise check` on a draft made of a benchmark split's contexts
    /// (each context's sentence citing its paper by the library's key, with
    /// uncited sentences between, about 40 KB: ten pages): from scratch,
    /// again unchanged, and after one sentence changed (as the language
    /// server checks), with peak memory
    Check {
        #[command(flatten)]
        contexts: TimedContexts,
    },
    /// `check`'s record checks of generated drafts of each size, as its
    /// cost grows with the citations: one paragraph with a citation on
    /// each line, of keys a generated bibliography declares (each cited
    /// twice, one in a hundred unknown), in a fresh empty library. Seconds,
    /// milliseconds per thousand citations (flat when the check is linear)
    /// and peak memory
    CheckScale {
        /// Citations of each draft, comma-separated
        #[arg(long, value_delimiter = ',', default_value = "2500,5000,10000,20000")]
        citations: Vec<usize>,
    },
    /// F5 answers (through the editor's worker, a pause between them) with
    /// nothing in the background, then while the library's evidence trust
    /// is learned in the background: p50 / p95 of each
    Answers {
        #[command(flatten)]
        contexts: TimedContexts,
        /// Answers timed with nothing in the background
        #[arg(long, default_value_t = 30)]
        idle: usize,
        /// The user's pause between answers, in milliseconds
        #[arg(long, default_value_t = 2000)]
        gap_ms: u64,
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
        /// Meanwhile encode the library's missing vectors in the background,
        /// as the editor does (`all`, `fast`: stand-ins and HAtten's only)
        #[arg(long, value_name = "WHAT")]
        encode: Option<KeysEncoding>,
    },
}

/// What `bench lsp-storm` sends.
#[derive(Debug, Args)]
pub struct LspStormArgs {
    /// Library the server recommends from [default: the --library / default library]
    #[arg(long, value_name = "DIR")]
    library: Option<PathBuf>,
    /// Full-text changes sent
    #[arg(long, default_value_t = 3000)]
    changes: usize,
    /// The document's size, in KiB
    #[arg(long, default_value_t = 1024)]
    kib: usize,
    /// A completion after every this many changes (0: none)
    #[arg(long, default_value_t = 100)]
    completion_every: usize,
    /// Stages the server runs (its --stages) [default: every stage the library and models allow]
    #[arg(long, value_delimiter = ',', value_name = "STAGES")]
    stages: Vec<String>,
    /// The server's config file (its --config) [default: the editor's]
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// The citewise binary whose `lsp` is stormed (another build, to compare) [default: this one]
    #[arg(long, value_name = "BIN")]
    server: Option<PathBuf>,
}

/// The library and the benchmark contexts a latency bench times.
#[derive(Debug, Args)]
pub struct TimedContexts {
    /// Library to recommend from [default: the --library / default library]
    #[arg(long, value_name = "DIR")]
    library: Option<PathBuf>,
    /// Benchmark directory (contexts.jsonl.gz)
    #[arg(long, value_name = "DIR")]
    bench: PathBuf,
    #[arg(long, default_value = "test")]
    split: String,
    /// Contexts timed (a fixed random sample)
    #[arg(long, default_value_t = 100)]
    queries: usize,
}

/// What `bench keys --encode` encodes meanwhile.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum KeysEncoding {
    All,
    Fast,
}

impl KeysEncoding {
    fn phases(self) -> Vec<crate::pipeline::background::Phase> {
        match self {
            KeysEncoding::All => crate::config::BackgroundEncodingSetting::All.phases(),
            KeysEncoding::Fast => crate::config::BackgroundEncodingSetting::Fast.phases(),
        }
    }
}

#[derive(Serialize)]
struct ImportBench {
    papers: u64,
    imported: usize,
    skipped: usize,
    seconds: f64,
    peak_rss_mb: f64,
}

pub fn run(a: &BenchArgs, models: &Models) -> Result<()> {
    match &a.what {
        BenchWhat::Vectors { rows, dim, queries, threads, library: None } => {
            bench_vectors(rows, *dim, *queries, threads.unwrap_or_else(crate::neural::parallel::threads_here))?
        }
        BenchWhat::Vectors { queries, threads, library: Some(dir), .. } => {
            bench_library_vectors(dir, *queries, threads.unwrap_or_else(crate::neural::parallel::threads_here))?
        }
        BenchWhat::Scale { library, records, out, seed } => bench_scale(library, *records, out, *seed)?,
        BenchWhat::Embed { papers, n, device } => bench_embed(papers, *n, *device)?,
        BenchWhat::Rerank { papers, depth, queries, base, max_len, device, threads } => {
            on_threads(threads, &|| bench_rerank(papers, depth, *queries, base.as_deref(), *max_len, *device))?
        }
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
        BenchWhat::Evidence { library, paths } => bench_evidence(library.as_deref(), paths)?,
        BenchWhat::Zotero { papers, items, colliding } => bench_zotero(papers, *items, *colliding)?,
        BenchWhat::Check { contexts: c } => bench_check(c.library.as_deref(), &c.bench, &c.split, c.queries, models)?,
        BenchWhat::CheckScale { citations } => bench_check_scale(citations)?,
        BenchWhat::Lsp { contexts: c } => bench_lsp(c.library.as_deref(), &c.bench, &c.split, c.queries)?,
        BenchWhat::LspStorm(a) => bench_lsp_storm(a)?,
        BenchWhat::Pipeline { contexts: c, rerank_depth, threads } => on_threads(threads, &|| {
            bench_pipeline(c.library.as_deref(), &c.bench, &c.split, c.queries, rerank_depth, models.device_preference())
        })?,
        BenchWhat::Answers { contexts: c, idle, gap_ms } => bench_answers(c, *idle, *gap_ms, models)?,
        BenchWhat::Keys { library, keys, gap_ms, encode } => {
            let dir = library_dir(library.as_deref())?;
            let lib = std::sync::Arc::new(Library::open(&dir)?);
            let papers = lib.papers().num_papers();
            let models = std::sync::Arc::new(Models::on(models.device_preference()).for_library(Some(dir)));
            let encoding = encode.map(|e| crate::pipeline::background::EncodingOptions { phases: e.phases(), ..Default::default() });
            let threads = encoding.as_ref().map_or(0, |o| o.threads);
            let t = Instant::now();
            let run =
                crate::testbed::editor_latency::input_latency(lib, models, *keys, std::time::Duration::from_millis(*gap_ms), encoding)?;
            let q = |p| crate::eval::metrics::quantile(&run.ms, p);
            let mut out =
                serde_json::json!({"papers": papers, "keys": run.ms.len(), "p50_ms": q(0.5), "p99_ms": q(0.99), "max_ms": q(1.0)});
            if encode.is_some() {
                out["encoding"] = serde_json::json!({
                    "threads": threads,
                    "seconds": t.elapsed().as_secs_f64(),
                    "encoded": run.encoded.iter().map(|(p, n)| (p.to_string(), serde_json::json!(n))).collect::<serde_json::Map<_, _>>(),
                    "covered": run.covered,
                    "frames_with_progress": run.frames_with_progress,
                    "last_status": run.last_status,
                });
            }
            println!("{out}");
        }
    }
    Ok(())
}

/// `bench answers`: F5's answer time idle and while the trust is learned.
fn bench_answers(c: &TimedContexts, idle: usize, gap_ms: u64, models: &Models) -> Result<()> {
    let dir = library_dir(c.library.as_deref())?;
    let lib = std::sync::Arc::new(Library::open(&dir)?);
    let models = std::sync::Arc::new(Models::on(models.device_preference()).for_library(Some(dir)));
    let contexts = crate::eval::harness::sample(crate::eval::harness::load_split(&c.bench, &c.split)?, c.queries);
    let queries: Vec<crate::pipeline::Query> = contexts.iter().map(|c| crate::eval::harness::query_of(c, false)).collect();
    let gap = std::time::Duration::from_millis(gap_ms);
    let run = crate::testbed::answer_latency::answer_latency(lib.clone(), models, &queries, idle, gap)?;
    let stat = |v: &[f64]| {
        let q = |p| crate::eval::metrics::quantile(v, p);
        serde_json::json!({"answers": v.len(), "p50_ms": q(0.5), "p95_ms": q(0.95), "max_ms": q(1.0)})
    };
    let out = serde_json::json!({
        "papers": lib.papers().num_papers(),
        "gap_ms": gap_ms,
        "idle": stat(&run.idle_ms),
        "learning": stat(&run.learning_ms),
        "learning_seconds": run.learning_seconds,
        "progress_events": run.progress_events,
        "learned": run.learned,
    });
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}

/// `bench check`: a ten-page draft of `citations` contexts checked three
/// times with one cache (from scratch, unchanged, one sentence changed).
fn bench_check(library: Option<&std::path::Path>, bench: &std::path::Path, split: &str, citations: usize, models: &Models) -> Result<()> {
    use crate::check::{Bibliography, Checker, SupportCache};
    use crate::corpus::benchmark::CIT;
    let dir = library_dir(library)?;
    let lib = std::sync::Arc::new(Library::open(&dir)?);
    let models = Models::on(models.device_preference()).for_library(Some(dir));
    let papers = lib.papers();
    let mut cited = Vec::new();
    let mut filler = Vec::new();
    for c in crate::eval::harness::sample(crate::eval::harness::load_split(bench, split)?, citations * 4) {
        let key = c.cited.first().and_then(|id| papers.paper_by_id(id).ok().flatten()).map(|p| p.key).filter(|k| !k.is_empty());
        match key {
            Some(key) if cited.len() < citations && c.context.contains(CIT) => {
                cited.push(c.context.replacen(CIT, &format!("\\cite{{{key}}}"), 1))
            }
            _ => filler.push(crate::corpus::citation_markup::strip_citations(&c.context, &CiteGrammar::PLAIN)),
        }
    }
    let mut text = String::from("\\title{A draft}\n");
    let mut fill = filler.iter().cycle();
    for (i, sentence) in cited.iter().enumerate() {
        text.push_str(sentence.trim());
        text.push(' ');
        // Uncited sentences between, to about ten pages (40 KB).
        while text.len() < (i + 1) * 40_000 / cited.len().max(1) {
            text.push_str(fill.next().map_or("More text.", |s| s.as_str()));
            text.push(' ');
        }
        text.push_str("\n\n");
    }
    let rec = crate::pipeline::Recommender::new(lib.clone(), &models);
    let checker = Checker::with_support(&rec);
    let bib = Bibliography::default();
    let mut cache = SupportCache::default();
    // The models load on the first sentence checked: timed apart.
    let t = Instant::now();
    checker.check("warm.tex", "Models load here \\cite{x}.", &CiteGrammar::PLAIN, &bib, &mut SupportCache::default())?;
    let mut times = vec![("models loaded", t.elapsed().as_secs_f64())];
    let mut report = None;
    let changed =
        text.replacen(cited.first().map_or("", |s| s.as_str()), &format!("In short, {}", cited.first().map_or("", |s| s.as_str())), 1);
    for (what, draft) in [("from scratch", &text), ("unchanged", &text), ("one sentence changed", &changed)] {
        let t = Instant::now();
        report = Some(checker.check("bench.tex", draft, &CiteGrammar::PLAIN, &bib, &mut cache)?);
        times.push((what, t.elapsed().as_secs_f64()));
    }
    let report = report.unwrap_or_default();
    let weak = report.findings.iter().filter(|f| f.kind == crate::check::Kind::WeakSupport).count();
    let out = serde_json::json!({
        "papers": papers.num_papers(),
        "draft_bytes": text.len(),
        "citations": report.citations.len(),
        "scored": report.citations.iter().filter(|c| c.support.is_some()).count(),
        "weak": weak,
        "reranker": rec.reranker().map(|r| r.source.clone()),
        "seconds": times.iter().map(|(w, s)| (w.to_string(), serde_json::json!(s))).collect::<serde_json::Map<_, _>>(),
        "peak_rss_mb": crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
    });
    println!("{out}");
    Ok(())
}

/// `bench check-scale`: record checks of generated drafts of `sizes`
/// citations each, one line of JSON for each size.
fn bench_check_scale(sizes: &[usize]) -> Result<()> {
    use crate::check::{Bibliography, Checker, SupportCache};
    let dir = tempfile::tempdir()?;
    let lib = Library::open_or_create(dir.path())?;
    for &n in sizes {
        let keys = n / 2 + 1;
        let mut bib = String::new();
        for k in 0..keys {
            bib.push_str(&format!(
                "@article{{key{k},\n  title = {{Generated Paper {k} on Tagging Parts of Speech}},\n  year = {{2020}}\n}}\n"
            ));
        }
        let mut text = String::from("\\section{Generated}\n");
        for i in 0..n {
            let key = if i % 100 == 99 { format!("kye{}", i % keys) } else { format!("key{}", i % keys) };
            text.push_str(&format!("Sentence {i} of the draft says something \\cite{{{key}}}.\n"));
        }
        let bib = Bibliography::parse(&bib);
        let t = Instant::now();
        let report = Checker::new(&lib).check("bench.tex", &text, &CiteGrammar::PLAIN, &bib, &mut SupportCache::default())?;
        let seconds = t.elapsed().as_secs_f64();
        let out = serde_json::json!({
            "citations": n,
            "checked": report.citations.len(),
            "findings": report.findings.len(),
            "draft_bytes": text.len(),
            "seconds": seconds,
            "ms_per_1000_citations": seconds * 1e6 / n.max(1) as f64,
            "peak_rss_mb": crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
        });
        println!("{out}");
    }
    Ok(())
}

/// Times of one request through the pipeline, in ms from the request.
struct PipelineTimes {
    first: f64,
    fused: f64,
    last: f64,
    stages: Vec<(Stage, f64)>,
}

/// Runs `bench` (which prints its rows as JSON, with `p50_ms`) on a pool of
/// each of `threads` threads (none: the threads for model work), each row
/// with its `threads` and, from the second count on, its `efficiency`
/// against the row of the same place in the first run.
fn on_threads(threads: &[usize], bench: &(dyn Fn() -> Result<Vec<serde_json::Value>> + Sync)) -> Result<()> {
    let counts = if threads.is_empty() { vec![crate::neural::parallel::threads_here()] } else { threads.to_vec() };
    let mut first: Option<(usize, Vec<serde_json::Value>)> = None;
    for &n in &counts {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(n.max(1)).build()?;
        let rows = pool.install(bench)?;
        for (i, row) in rows.iter().enumerate() {
            let mut row = row.clone();
            row["threads"] = n.into();
            if let Some((n1, base)) = &first {
                let p50 =
                    |r: &serde_json::Value| r.pointer("/final/p50_ms").or_else(|| r.get("p50_ms")).and_then(serde_json::Value::as_f64);
                if let (Some(t1), Some(tn)) = (base.get(i).and_then(p50), p50(&row)) {
                    row["efficiency"] = ((t1 * *n1 as f64) / (n as f64 * tn)).into();
                }
            }
            println!("{row}");
        }
        if first.is_none() {
            first = Some((n, rows));
        }
    }
    Ok(())
}

fn bench_pipeline(
    library: Option<&std::path::Path>,
    bench: &std::path::Path,
    split: &str,
    n: usize,
    depths: &[usize],
    device: crate::neural::backend::DevicePreference,
) -> Result<Vec<serde_json::Value>> {
    let mut rows = Vec::new();
    use crate::pipeline::Recommender;
    let dir = library_dir(library)?;
    let lib = std::sync::Arc::new(Library::open(&dir)?);
    let papers = lib.papers().num_papers();
    let contexts = crate::eval::harness::sample(crate::eval::harness::load_split(bench, split)?, n);
    let mut queries: Vec<crate::pipeline::Query> = contexts.iter().map(|c| crate::eval::harness::query_of(c, false)).collect();
    for q in &mut queries {
        q.k = 20;
    }
    let stat = |v: &[f64]| {
        let q = |p| crate::eval::metrics::quantile(v, p);
        serde_json::json!({"p50_ms": q(0.5), "p95_ms": q(0.95)})
    };
    for &depth in depths {
        // Models afresh for every depth: no pair score is reused.
        let models = Models::on(device).for_library(Some(dir.clone()));
        let mut rec = Recommender::new(lib.clone(), &models);
        rec.set_rerank_depth(depth);
        // Loads the models (not timed).
        rec.recommend(&queries[0])?;
        let mut times = Vec::with_capacity(queries.len());
        for q in queries.iter().skip(1) {
            let t = Instant::now();
            let mut seen: Vec<(f64, bool)> = Vec::new();
            let mut stages = Vec::new();
            rec.recommend_streaming(q, &mut |r| {
                seen.push((t.elapsed().as_secs_f64() * 1000.0, r.complete));
                if r.complete {
                    stages = r.timings.iter().map(|(n, d)| (*n, d.as_secs_f64() * 1000.0)).collect();
                }
                true
            })?;
            let Some(&(last, _)) = seen.last() else { continue };
            // The fused list: the last early answer (all channels, before reranking).
            let fused = seen.iter().rev().find(|s| !s.1).map_or(last, |s| s.0);
            times.push(PipelineTimes { first: seen[0].0, fused, last, stages });
        }
        let col = |f: &dyn Fn(&PipelineTimes) -> f64| times.iter().map(f).collect::<Vec<f64>>();
        let mut names: Vec<Stage> = Vec::new();
        for t in &times {
            for (s, _) in &t.stages {
                if !names.contains(s) {
                    names.push(*s);
                }
            }
        }
        let per_stage: serde_json::Map<String, serde_json::Value> = names
            .iter()
            .map(|s| {
                (
                    s.name().to_string(),
                    stat(&times.iter().flat_map(|t| t.stages.iter().filter(|(n, _)| n == s).map(|(_, ms)| *ms)).collect::<Vec<_>>()),
                )
            })
            .collect();
        rows.push(serde_json::json!({
                "papers": papers, "queries": times.len(), "rerank_depth": rec.rerank_depth(),
                "first_results": stat(&col(&|t| t.first)),
                "fused": stat(&col(&|t| t.fused)),
                "final": stat(&col(&|t| t.last)),
                "stages": per_stage,
                "peak_rss_mb": crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
        }));
    }
    Ok(rows)
}

fn bench_lsp(library: Option<&std::path::Path>, bench: &std::path::Path, split: &str, n: usize) -> Result<()> {
    let lib = std::sync::Arc::new(Library::open(&library_dir(library)?)?);
    let papers = lib.papers().num_papers();
    let contexts = crate::eval::harness::sample(crate::eval::harness::load_split(bench, split)?, n);
    let texts: Vec<String> = contexts.iter().map(|c| crate::eval::harness::query_of(c, false).context).collect();
    let config = crate::config::Config::default();
    // The server owns its models, as under `citewise lsp`.
    let options = crate::lsp::Options {
        library: lib,
        models: Models::installed(),
        stages: None,
        key_style: config.key_style,
        results: config.results,
        // Latency as the server answers, with nothing encoded meanwhile.
        background: Vec::new(),
        grammar: config.grammar(Default::default()),
    };
    let t = crate::testbed::server_latency::completion_latency(options, &texts)?;
    let stat = |v: Vec<f64>| {
        let q = |p| crate::eval::metrics::quantile(&v, p);
        serde_json::json!({"p50_ms": q(0.5), "p95_ms": q(0.95)})
    };
    let mut stages: Vec<Stage> = Vec::new();
    for x in &t {
        for (stage, _) in &x.stages {
            if !stages.contains(stage) {
                stages.push(*stage);
            }
        }
    }
    let per_stage: serde_json::Map<String, serde_json::Value> = stages
        .iter()
        .map(|s| (s.name().to_string(), stat(t.iter().flat_map(|x| x.stages.iter().filter(|(n, _)| n == s).map(|(_, ms)| *ms)).collect())))
        .collect();
    println!(
        "{}",
        serde_json::json!({
            "papers": papers, "queries": t.len(),
            "first_answer": stat(t.iter().map(|x| x.first_ms).collect()),
            "first_answer_early_share": t.iter().filter(|x| x.early).count() as f64 / t.len().max(1) as f64,
            "same_request_again": stat(t.iter().map(|x| x.again_ms).collect()),
            "stages": per_stage,
            "peak_rss_mb": crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
        })
    );
    Ok(())
}

/// `bench lsp-storm`: a `citewise lsp` process of this binary (or of
/// `--server`), stormed
/// ([`crate::testbed::server_latency::storm`]).
fn bench_lsp_storm(a: &LspStormArgs) -> Result<()> {
    let dir = library_dir(a.library.as_deref())?;
    let (papers, keys) = {
        let lib = Library::open(&dir)?;
        let keys: Vec<String> = lib.papers().keys(50)?.into_iter().filter(|k| !k.is_empty()).collect();
        (lib.papers().num_papers(), keys)
    };
    let mut server = std::process::Command::new(match &a.server {
        Some(bin) => bin.clone(),
        None => std::env::current_exe()?,
    });
    server.arg("--library").arg(&dir).arg("lsp");
    if !a.stages.is_empty() {
        server.arg("--stages").arg(a.stages.join(","));
    }
    if let Some(config) = &a.config {
        server.arg("--config").arg(config);
    }
    let storm =
        crate::testbed::server_latency::Storm { changes: a.changes, bytes: a.kib << 10, completion_every: a.completion_every, keys };
    let f = crate::testbed::server_latency::storm(server, &storm)?;
    let q = |p| crate::eval::metrics::quantile(&f.completion_ms, p);
    println!(
        "{}",
        serde_json::json!({
            "papers": papers, "changes": f.changes, "document_kib": f.document_bytes >> 10, "sent_s": f.sent_s,
            "completions": f.completion_ms.len(), "completions_cancelled": f.cancelled, "completions_unanswered": f.unanswered,
            "completion_p50_ms": q(0.5), "completion_p95_ms": q(0.95), "completion_max_ms": q(1.0),
            "shutdown_s": f.shutdown_s, "exit_s": f.exit_s,
            "peak_rss_mb": f.peak_rss_bytes.map(|b| b as f64 / 1048576.0), "threads": f.threads, "exit_code": f.exit_code,
        })
    );
    Ok(())
}

fn library_dir(given: Option<&std::path::Path>) -> Result<PathBuf> {
    match given {
        Some(d) => Ok(d.to_path_buf()),
        None => Ok(crate::dirs::env_path(crate::library::LIBRARY_ENV).map_or_else(Library::default_dir, Ok)?),
    }
}

/// Evidence import speed: a library's papers with an evidence database of
/// its own in a temporary directory (the library itself is not changed).
fn bench_evidence(library: Option<&std::path::Path>, paths: &[PathBuf]) -> Result<()> {
    let dir = library_dir(library)?;
    let scratch = tempfile_dir()?;
    let lib = Library::open_with_evidence(&dir, &scratch)?;
    let (inputs, problems) = crate::evidence::inputs::expand(paths);
    let t = Instant::now();
    let s = crate::library::evidence_import::import_inputs(&lib, &inputs, &Default::default(), &|_, _| {})?;
    let seconds = t.elapsed().as_secs_f64();
    let documents: usize = s.kinds.values().map(|k| k.documents + k.skipped).sum();
    let pdfs = s.kinds.get(&crate::evidence::document::DocKind::Pdf).map_or(0, |k| k.documents + k.skipped);
    let r = serde_json::json!({
        "papers": lib.papers().num_papers(),
        "documents": documents,
        "pdfs": pdfs,
        "skipped": s.skipped.len() + problems.len(),
        "citing_sentences": s.sentences,
        "spans": s.stats.spans,
        "seconds": seconds,
        "documents_per_s": documents as f64 / seconds.max(1e-9),
        "threads": crate::util::cores(),
        "peak_rss_mb": crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
    });
    drop(lib);
    let _ = std::fs::remove_dir_all(&scratch);
    println!("{r}");
    Ok(())
}

/// Zotero import speed on a synthetic Zotero 7 database (the time to
/// write it is its own figure): the first import, the same again with
/// nothing changed, and again after one item's title changed.
fn bench_zotero(path: &std::path::Path, n: usize, colliding: bool) -> Result<()> {
    use crate::library::zotero::{sync, ZoteroOptions};
    use crate::testbed::zotero_db::{synthetic, Era};
    anyhow::ensure!(n > 0, "--items must be at least 1");
    let mut papers = first_papers(path, n)?;
    if colliding {
        for p in &mut papers {
            p.authors = vec!["Ann Smith".into()];
            p.year = Some(2020);
            p.title = format!("Study: {}", p.title);
        }
    }
    anyhow::ensure!(!papers.is_empty(), "{}: no papers", path.display());
    let zotero_dir = tempfile::tempdir()?;
    let lib_dir = tempfile::tempdir()?;
    let t = Instant::now();
    let mut db = synthetic(zotero_dir.path(), Era::Zotero7, &papers)?;
    let write_seconds = t.elapsed().as_secs_f64();
    let items = papers.len();
    drop(papers);
    let lib = Library::open_or_create(lib_dir.path())?;
    let options = ZoteroOptions { no_pdfs: true, ..Default::default() };
    let make_key = crate::export::keys::make_key(crate::export::keys::KeyStyle::AuthorYearFirstword);
    let timed = || -> Result<serde_json::Value> {
        let t = Instant::now();
        let s = sync(&lib, zotero_dir.path(), &options, &make_key)?;
        Ok(serde_json::json!({
            "seconds": t.elapsed().as_secs_f64(),
            "added": s.added, "updated": s.updated, "unchanged": s.unchanged, "removed": s.removed,
            "summary": s.line(),
        }))
    };
    let first = timed()?;
    let again = timed()?;
    // Keys `synthetic` writes: "P0000001", ...
    let item = db.item_id("P0000001")?;
    db.set_field(item, "title", "A title changed in Zotero", "2030-01-01 00:00:00")?;
    let one_changed = timed()?;
    let key_sources = crate::library::zotero::ZoteroState::load(lib.dir())?.map(|s| s.key_sources()).unwrap_or_default();
    let r = serde_json::json!({
        "items": items,
        "colliding": colliding,
        "write_db_seconds": write_seconds,
        "first_import": first,
        "no_change": again,
        "one_changed": one_changed,
        "papers": lib.papers().num_papers(),
        "keys": key_sources,
        "peak_rss_mb": crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
    });
    drop(lib);
    drop(db);
    println!("{r}");
    Ok(())
}

/// The first `n` papers of a papers JSONL file (gzipped when its name ends
/// in `.gz`), read as far as needed.
fn first_papers(path: &std::path::Path, n: usize) -> Result<Vec<crate::corpus::Paper>> {
    use std::io::BufRead;
    let file = std::fs::File::open(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let reader: Box<dyn BufRead> = if path.extension().is_some_and(|e| e == "gz") {
        Box::new(std::io::BufReader::new(flate2::read::MultiGzDecoder::new(std::io::BufReader::new(file))))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    let mut out = Vec::with_capacity(n.min(1 << 20));
    for (i, line) in reader.lines().enumerate() {
        if out.len() == n {
            break;
        }
        let line = line.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        if line.trim().is_empty() {
            continue;
        }
        out.push(crate::corpus::jsonl::parse_line(&line).map_err(|reason| anyhow::anyhow!("{}:{}: {reason}", path.display(), i + 1))?);
    }
    Ok(out)
}

fn tempfile_dir() -> Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("citewise-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

#[derive(Serialize)]
struct VectorBench {
    rows: usize,
    dim: usize,
    backend: String,
    p50_ms: f64,
    p95_ms: f64,
    matrix_mb: f64,
}

fn bench_vectors(sizes: &[usize], dim: usize, queries: usize, threads: usize) -> Result<()> {
    use burn::tensor::{Tensor, TensorData};
    let backend = crate::neural::backend::select(crate::neural::backend::DevicePreference::Auto);
    for &n in sizes {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(n as u64);
        let mut matrix: Vec<f32> = (0..n * dim).map(|_| rng.random::<f32>() - 0.5).collect();
        for row in matrix.chunks_mut(dim) {
            let norm = row.iter().map(|x| x * x).sum::<f32>().sqrt();
            row.iter_mut().for_each(|x| *x /= norm);
        }
        let qs: Vec<Vec<f32>> = (0..queries).map(|i| matrix[(i * 7919 % n) * dim..(i * 7919 % n + 1) * dim].to_vec()).collect();
        let mut times = Vec::new();
        for q in &qs {
            let t = Instant::now();
            let hits = crate::index::vectors::top_k(&matrix, dim, q, 100, threads);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(hits.len(), 100.min(n));
        }
        report_vectors(n, dim, &format!("cpu scan, {}", crate::util::counted(threads, "thread")), &times);
        if backend.name != "flex" {
            let device = &backend.device;
            let m = Tensor::<2>::from_data(TensorData::new(matrix.clone(), [n, dim]), device);
            let mut times = Vec::new();
            for q in &qs {
                let t = Instant::now();
                let qt = Tensor::<2>::from_data(TensorData::new(q.clone(), [dim, 1]), device);
                let scores = m.clone().matmul(qt).reshape([n]);
                let (_values, idx) = scores.topk_with_indices(100, 0);
                let _ = idx.into_data();
                times.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            report_vectors(n, dim, &format!("burn {} on {}", backend.name, backend.adapter), &times);
        }
    }
    Ok(())
}

/// Top-100 search over a library's own stores, queried with the stored
/// vectors of real (not synthetic) papers.
fn bench_library_vectors(dir: &std::path::Path, queries: usize, threads: usize) -> Result<()> {
    let lib = Library::open(dir)?;
    let models = Models::installed().for_library(Some(dir.to_path_buf()));
    let hatten = models.hatten()?;
    let dense = crate::index::vectors::VectorStore::open_read(&lib.vectors_dir(), hatten.dim(), hatten.fingerprint())?;
    let encoder = models.citation_encoder()?;
    let citation = crate::pipeline::citation_channel::open_citation_vectors(&lib, &encoder)?
        .ok_or_else(|| anyhow::anyhow!("the library has no citation vectors"))?;
    // Query ids: every n-th real paper.
    let mut ids = Vec::new();
    lib.papers().for_each_paper(&mut |p| {
        if !p.id.starts_with(crate::eval::scale::SYNTHETIC_PREFIX) {
            ids.push(p.id);
        }
        Ok(())
    })?;
    let step = (ids.len() / queries.max(1)).max(1);
    let ids: Vec<String> = ids.into_iter().step_by(step).take(queries).collect();
    // Per query: the time of the search as the channels run it, of the
    // exact scan, and the share of the exact top 100 the first found.
    type Search<'a> = &'a dyn Fn(&[f32]) -> Vec<crate::index::vectors::VectorHit>;
    let measure = |name: &str, rows: usize, dim: usize, vector: &dyn Fn(&str) -> Option<Vec<f32>>, search: Search, exact: Search| {
        let (mut fast, mut slow, mut recall) = (Vec::new(), Vec::new(), Vec::new());
        for q in ids.iter().filter_map(|id| vector(id)) {
            let t = Instant::now();
            let found = search(&q);
            fast.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            let truth = exact(&q);
            slow.push(t.elapsed().as_secs_f64() * 1000.0);
            let hit = truth.iter().filter(|h| found.iter().any(|f| f.id == h.id)).count();
            recall.push(hit as f64 / truth.len().max(1) as f64);
        }
        let q = |v: &[f64], p| crate::eval::metrics::quantile(v, p);
        println!(
            "{}",
            serde_json::json!({
                "store": name, "rows": rows, "dim": dim, "threads": threads, "queries": fast.len(),
                "top100_p50_ms": q(&fast, 0.5), "top100_p95_ms": q(&fast, 0.95),
                "exact_p50_ms": q(&slow, 0.5), "exact_p95_ms": q(&slow, 0.95),
                "recall_at_100_vs_exact": recall.iter().sum::<f64>() / recall.len().max(1) as f64,
            })
        );
    };
    measure("hatten", dense.rows(), dense.dim(), &|id| dense.vector(id).map(<[f32]>::to_vec), &|q| dense.search(q, 100, threads), &|q| {
        dense.search_exact(q, 100, threads, None)
    });
    measure(
        "citation (own vectors and stand-ins)",
        citation.primary_len() + citation.fallback_len(),
        citation.dim(),
        &|id| citation.vector(id).map(<[f32]>::to_vec),
        &|q| citation.search(q, 100, threads),
        &|q| citation.search_exact(q, 100, threads),
    );
    println!("{}", serde_json::json!({"peak_rss_mb": crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0}));
    Ok(())
}

/// Writes synthetic records made from a library's papers, and their vectors.
fn bench_scale(dir: &std::path::Path, records: usize, out: &std::path::Path, seed: u64) -> Result<()> {
    use crate::index::vectors::VectorStore;
    let t = Instant::now();
    let lib = Library::open(dir)?;
    let models = Models::installed().for_library(Some(dir.to_path_buf()));
    let hatten = models.hatten()?;
    let encoder = models.citation_encoder()?;
    let mut dense = VectorStore::open(&lib.vectors_dir(), hatten.dim(), hatten.fingerprint())?;
    let citation = crate::pipeline::citation_channel::open_citation_vectors(&lib, &encoder)?
        .ok_or_else(|| anyhow::anyhow!("the library has no citation vectors: run `citewise embed --fast`"))?;
    let student = crate::library::student::student_fingerprint(dir)?;
    let fingerprint = crate::library::embed::student_vectors_fingerprint(&student, &encoder.fingerprint());
    let mut stand_ins = VectorStore::open(&lib.student_vectors_dir(), encoder.dim(), &fingerprint)?;
    let s = crate::eval::scale::synthesize(&lib, &mut dense, &citation, &mut stand_ins, out, records, seed)?;
    println!(
        "{}",
        serde_json::json!({"sources": s.sources, "records": s.records, "out": out.display().to_string(), "seconds": t.elapsed().as_secs_f64()})
    );
    Ok(())
}

fn report_vectors(rows: usize, dim: usize, backend: &str, times: &[f64]) {
    let r = VectorBench {
        rows,
        dim,
        backend: backend.into(),
        p50_ms: crate::eval::metrics::quantile(times, 0.5),
        p95_ms: crate::eval::metrics::quantile(times, 0.95),
        matrix_mb: (rows * dim * 4) as f64 / 1048576.0,
    };
    println!("{}", serde_json::to_string(&r).expect("serializes"));
}

#[derive(Serialize)]
struct EmbedBench {
    papers: usize,
    backend: String,
    seconds: f64,
    papers_per_s: f64,
    peak_rss_mb: f64,
}

fn bench_embed(path: &std::path::Path, n: usize, device: crate::neural::backend::DevicePreference) -> Result<()> {
    use crate::neural::hatten::DocText;
    let backend = crate::neural::backend::select(device);
    let encoder = crate::neural::encoder::HattenEncoder::load_default(&backend.device)?;
    let mut papers = crate::neural::train::load_papers(path)?;
    papers.truncate(n);
    let texts: Vec<DocText> = papers.iter().map(|p| DocText::paper(&p.title, &p.abstract_text)).collect();
    let _ = encoder.encode(&texts[..texts.len().min(64)]); // warm-up
    let t = Instant::now();
    let v = encoder.encode(&texts);
    let seconds = t.elapsed().as_secs_f64();
    assert_eq!(v.len(), texts.len() * encoder.dim());
    let r = EmbedBench {
        papers: texts.len(),
        backend: format!("{} on {}", backend.name, backend.adapter),
        seconds,
        papers_per_s: texts.len() as f64 / seconds,
        peak_rss_mb: crate::util::peak_rss_bytes().unwrap_or(0) as f64 / 1048576.0,
    };
    println!("{}", serde_json::to_string(&r)?);
    Ok(())
}

fn bench_rerank(
    path: &std::path::Path,
    depths: &[usize],
    queries: usize,
    base: Option<&str>,
    max_len: usize,
    device: crate::neural::backend::DevicePreference,
) -> Result<Vec<serde_json::Value>> {
    let mut rows = Vec::new();
    use crate::neural::cross_encoder::{logits, split_base, PairEncoder, RerankerConfig};
    let backend = crate::neural::backend::select(device);
    let name = format!("{} on {}", backend.name, backend.adapter);
    let max_depth = depths.iter().copied().max().unwrap_or(20);
    let mut papers = crate::neural::train::load_papers(path)?;
    papers.retain(|p| !p.abstract_text.is_empty());
    papers.truncate(max_depth + queries);
    anyhow::ensure!(papers.len() >= max_depth + queries, "{}: needs {} papers with an abstract", path.display(), max_depth + queries);
    // With --base: the base model with an untrained head (speed only);
    // otherwise the installed fine-tuned reranker.
    let (config, bottom, top) = match base {
        Some(b) => {
            let config = RerankerConfig::new(b.to_string()).with_max_len(max_len);
            let (bottom, top) = split_base(&config, &crate::neural::models::model_dir(b)?, &backend.device)?;
            (config, bottom, top)
        }
        None => {
            let r = crate::neural::reranker::Reranker::load_default(&backend.device)?;
            let (config, bottom, top) = r.into_parts();
            (config, bottom, top)
        }
    };
    let pairs = PairEncoder::new(
        &crate::neural::models::model_dir(&config.base)?.join("tokenizer.json"),
        config.max_len,
        config.max_candidate_tokens,
    )?;
    let cands: Vec<Vec<u32>> =
        papers[queries..].iter().map(|p| pairs.candidate(&p.title, &p.abstract_text)).collect::<crate::error::Result<_>>()?;
    let qs: Vec<_> = papers[..queries].iter().map(|p| pairs.query(&p.abstract_text, &p.title, "")).collect::<crate::error::Result<_>>()?;
    let warm: Vec<_> = cands.iter().take(16).map(|c| pairs.pair(&qs[0], c)).collect();
    let _ = logits(&bottom, &top, &warm, &backend.device);
    for &d in depths {
        let mut times = Vec::new();
        for q in &qs {
            let t = Instant::now();
            let batch: Vec<_> = cands[..d].iter().map(|c| pairs.pair(q, c)).collect();
            let s = logits(&bottom, &top, &batch, &backend.device);
            assert_eq!(s.len(), d);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let q = |p| crate::eval::metrics::quantile(&times, p);
        rows.push(serde_json::json!({"base": config.base, "layers_fine_tuned": config.trained_layers, "max_len": config.max_len,
                "backend": name, "depth": d, "p50_ms": q(0.5), "p95_ms": q(0.95), "ms_per_candidate": q(0.5) / d as f64}));
    }
    // The rerank stage's second signal: the citation encoder's cosine,
    // each query with an empty cache (every paper encoded).
    use crate::pipeline::paper_cosines::{PaperCosines, PaperText};
    let encoder =
        std::sync::Arc::new(crate::neural::bi_encoder::BiEncoder::load(crate::neural::bi_encoder::CITATION_ENCODER, &backend.device)?);
    let texts: Vec<PaperText> =
        papers[queries..].iter().map(|p| PaperText { id: &p.id, title: &p.title, abstract_text: &p.abstract_text }).collect();
    for &d in depths {
        let mut times = Vec::new();
        for p in &papers[..queries] {
            let sim = PaperCosines::new(encoder.clone());
            let t = Instant::now();
            let cos = sim.cosines(&p.abstract_text, &texts[..d], None)?;
            assert_eq!(cos.len(), d);
            times.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let q = |p| crate::eval::metrics::quantile(&times, p);
        rows.push(serde_json::json!({"base": crate::neural::bi_encoder::CITATION_ENCODER, "bi_encoder": true, "max_len": crate::neural::bi_encoder::MAX_TOKENS,
                "backend": name, "depth": d, "p50_ms": q(0.5), "p95_ms": q(0.95), "ms_per_candidate": q(0.5) / d as f64}));
    }
    Ok(rows)
}
