use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use super::progress::ImportBar;
use crate::library::evidence_import::{import_evidence, EvidenceImportSummary};
use crate::library::import::{import, ImportOptions, ImportSummary};
use crate::library::Library;

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files or directories (searched recursively for .bib, .jsonl, and their .gz)
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Re-read files that were already imported unchanged
    #[arg(long)]
    pub force: bool,
    /// List every skipped entry (default: the first 20)
    #[arg(long)]
    pub all_skips: bool,
    /// The files hold citing sentences for the evidence database (benchmark
    /// contexts.jsonl or S2ORC/unarXive-style full text), not papers
    #[arg(long)]
    pub evidence: bool,
    /// With --evidence: keep only this split of benchmark contexts
    #[arg(long, requires = "evidence")]
    pub split: Option<String>,
    /// Do not compute vectors for the new papers or evidence spans (`citewise embed` does it later)
    #[arg(long)]
    pub no_embed: bool,
}

pub fn run(dir: &Path, a: &ImportArgs) -> Result<()> {
    let t = Instant::now();
    let lib = Library::open_or_create(dir)?;
    if a.evidence {
        let files = expand_sentence_files(&a.paths)?;
        let s = import_evidence(&lib, &files, a.split.as_deref(), a.force)?;
        print_evidence_summary(&s);
        if !a.no_embed {
            encode_spans(&lib)?;
        }
        return Ok(());
    }
    let summary = import(&lib, &a.paths, ImportOptions { force: a.force }, &ImportBar::new())?;
    print_summary(&summary, a.all_skips);
    if !a.no_embed {
        embed_papers(&lib)?;
        embed_citation(&lib, CitationVectors::KeepCurrent)?;
    }
    println!(
        "library {} now holds {} papers ({:.1} s)",
        lib.dir().display(),
        lib.papers().num_papers(),
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Encodes the evidence spans that have no saved vector for the semantic
/// ranking of evidence (resumable; a notice without the citation bi-encoder).
pub fn encode_spans(lib: &Library) -> Result<()> {
    let semantic = match crate::pipeline::semantic_spans::SemanticSpans::shared() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("note: evidence span vectors not computed ({e}); evidence is ranked by its words only");
            return Ok(());
        }
    };
    let t = Instant::now();
    let bar = super::progress::count_bar(lib.evidence().num_spans(), "encoding evidence spans");
    let before = semantic.encoded();
    semantic.warm(lib, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    let n = semantic.encoded() - before;
    if n > 0 {
        println!("evidence span vectors: {n} spans encoded ({:.1} s)", t.elapsed().as_secs_f64());
    }
    Ok(())
}

/// Encodes the papers that have no current vector for the dense channel.
/// Without the encoder's files this is a notice (BM25 and evidence still
/// work).
pub fn embed_papers(lib: &Library) -> Result<()> {
    let encoder = match crate::neural::encoder::shared_encoder() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("note: dense vectors not computed ({e}); BM25 and evidence channels still work");
            return Ok(());
        }
    };
    let t = Instant::now();
    let bar = super::progress::count_bar(0, "embedding papers");
    let s = crate::library::embed::embed_library(lib, &encoder, &|n| bar.set_length(n), &|k| bar.inc(k))?;
    bar.finish_and_clear();
    if s.embedded > 0 {
        println!(
            "dense vectors: {} papers encoded, {} already current ({:.1} s, {:.0} papers/s, {})",
            s.embedded,
            s.kept,
            t.elapsed().as_secs_f64(),
            s.embedded as f64 / t.elapsed().as_secs_f64(),
            encoder.backend
        );
    }
    Ok(())
}

/// When to compute the citation channel's paper vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CitationVectors {
    /// For every paper that has none (`citewise embed`).
    All,
    /// Only in a library that has them already (an import adds the new
    /// papers'); otherwise a hint naming `citewise embed`.
    KeepCurrent,
}

/// Encodes the papers that have no current vector under the citation
/// bi-encoder (the citation channel; resumable, on every core).
pub fn embed_citation(lib: &Library, when: CitationVectors) -> Result<()> {
    if when == CitationVectors::KeepCurrent && !crate::index::vectors::VectorStore::exists(&lib.citation_vectors_dir()) {
        if lib.papers().num_papers() > 0 {
            eprintln!("note: `citewise embed` adds the citation channel (papers found by meaning); it encodes every paper once");
        }
        return Ok(());
    }
    let encoder = match crate::neural::bi_encoder::shared_citation_encoder() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("note: citation vectors not computed ({e}); BM25 and evidence channels still work");
            return Ok(());
        }
    };
    let t = Instant::now();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let bar = super::progress::count_bar(0, "encoding papers (citation channel)");
    let s = crate::library::embed::embed_citation_vectors(lib, &encoder, threads, &|n| bar.set_length(n), &|k| bar.inc(k))?;
    bar.finish_and_clear();
    if s.embedded > 0 {
        println!(
            "citation vectors: {} papers encoded, {} already current ({:.1} s, {:.1} papers/s, {threads} threads)",
            s.embedded,
            s.kept,
            t.elapsed().as_secs_f64(),
            s.embedded as f64 / t.elapsed().as_secs_f64(),
        );
    }
    Ok(())
}

pub fn print_summary(s: &ImportSummary, all_skips: bool) {
    for note in &s.notes {
        eprintln!("note: {note}");
    }
    let shown = if all_skips { s.skipped.len() } else { s.skipped.len().min(20) };
    for skip in &s.skipped[..shown] {
        eprintln!("skipped: {skip}");
    }
    if shown < s.skipped.len() {
        eprintln!("... and {} more skipped entries (--all-skips lists them)", s.skipped.len() - shown);
    }
    let mut reasons: std::collections::BTreeMap<String, usize> = Default::default();
    for skip in &s.skipped {
        *reasons.entry(reason_kind(&skip.reason)).or_default() += 1;
    }
    println!(
        "{} files ({} unchanged since the last import): {} imported, {} updated, {} skipped",
        s.files,
        s.files_unchanged,
        s.imported,
        s.updated,
        s.skipped.len()
    );
    for (reason, n) in reasons {
        println!("  skipped {n:>6} × {reason}");
    }
}

/// A skip reason without the entry-specific parts (key, macro name), for counting.
fn reason_kind(reason: &str) -> String {
    let r = reason.split(" (key `").next().unwrap_or(reason);
    match r.find(['"', '`']) {
        Some(i) if r.starts_with("unknown abbreviation") => r[..i].trim().to_string(),
        _ => r.to_string(),
    }
}

/// Files named, and the `.jsonl`/`.json` files (optionally `.gz`) inside directories.
fn expand_sentence_files(paths: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(p)?.filter_map(|e| e.ok().map(|e| e.path())).collect();
            entries.sort();
            out.extend(entries.into_iter().filter(|f| {
                let n = f.to_string_lossy().to_lowercase();
                f.is_file() && (n.ends_with(".jsonl") || n.ends_with(".jsonl.gz") || n.ends_with(".json") || n.ends_with(".json.gz"))
            }));
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

pub fn print_evidence_summary(s: &EvidenceImportSummary) {
    for (file, r) in &s.reports {
        for p in r.problems.iter().take(20) {
            eprintln!("skipped: {p}");
        }
        if r.problems.len() > 20 {
            eprintln!("... and {} more problems in {}", r.problems.len() - 20, file.display());
        }
        print!("{}: {} documents, {} citing sentences", file.display(), r.documents, r.sentences);
        if r.cite_spans > 0 {
            let rate = |a: usize, b: usize| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
            let mut by: Vec<String> = r.linked_by.iter().map(|(k, v)| format!("{k} {v}")).collect();
            by.sort();
            print!(
                "; {} of {} bibliography entries linked to library papers ({:.1}%); {} of {} citation markers linked ({:.1}%; by {})",
                r.bib_entries_linked,
                r.bib_entries,
                rate(r.bib_entries_linked, r.bib_entries),
                r.linked,
                r.cite_spans,
                rate(r.linked, r.cite_spans),
                if by.is_empty() { "none".to_string() } else { by.join(", ") }
            );
        }
        println!();
    }
    println!(
        "{} files ({} unchanged since the last import): {} sentences, {} spans extracted",
        s.files, s.files_unchanged, s.sentences, s.spans_extracted
    );
    println!(
        "evidence database: {} spans, {} papers covered, mean support {:.2} ({:.1} s)",
        s.stats.spans, s.stats.papers, s.stats.mean_support, s.seconds
    );
}
