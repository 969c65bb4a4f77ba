//! `citewise check`: a draft's citations against the bibliography LaTeX
//! will read (the files the draft names, through `draft::Document`), the
//! library and the evidence; without a library, against the bibliography
//! alone.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use crate::check::{Bibliography, Checker, Report, SupportCache};
use crate::config::Config;
use crate::corpus::citation_markup::CiteSyntax;
use crate::draft::Document;
use crate::library::Library;
use crate::pipeline::{Models, Recommender};
use crate::util::printable;

use super::style::{paint, DIM, ERROR, WARNING};

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// The draft (.tex, .md, .typ; as the editor reads them)
    #[arg(value_name = "DRAFT")]
    pub draft: PathBuf,
    /// Bibliography file [default: the one the draft names, else references.bib beside it]
    #[arg(long, value_name = "FILE")]
    pub bib: Option<PathBuf>,
    /// Every citation with its support score and findings, as JSON
    #[arg(long)]
    pub json: bool,
    /// Record checks only (unknown keys, mismatches, duplicates, retractions): no models, no support scores
    #[arg(long)]
    pub no_support: bool,
}

/// The library a check reads, or why there is none (the check then reads
/// the bibliography alone).
pub type LibraryOf = std::result::Result<Arc<Library>, String>;

/// Runs the check (keys written in the configuration's key style, as
/// export writes them; citations read with its grammar); the exit code: 0
/// clean, 1 findings at warning or above.
pub fn run(lib: &LibraryOf, a: &CheckArgs, models: &Models, config: &Config) -> Result<u8> {
    let bytes = crate::corpus::source::read_bytes(&a.draft).with_context(|| format!("reading {}", a.draft.display()))?;
    let text = crate::corpus::source::decode_text(&bytes).text;
    let doc = Document::of_file(
        &std::path::absolute(&a.draft).unwrap_or_else(|_| a.draft.clone()),
        text,
        None,
        &config.grammar(CiteSyntax::default()),
    );
    let bib = bibliography(&doc, a)?;
    let recommender = match lib {
        Ok(lib) if !a.no_support => Some(Recommender::new(lib.clone(), models)),
        _ => None,
    };
    let checker = match (&recommender, lib) {
        (Some(rec), _) => Checker::with_support(rec),
        (None, Ok(lib)) => Checker::new(lib),
        (None, Err(_)) => Checker::without_library(),
    };
    let entries = bib.path.as_deref().and_then(|f| crate::export::bibfile::entries_of(f).ok()).map(Arc::new);
    let checker = checker.keyed_by(crate::export::bibfile::export_keys(entries, config.key_style));
    let file = a.draft.display().to_string();
    let mut report = checker.check(&file, &doc.text, &doc.grammar, &bib, &mut SupportCache::default())?;
    if let Err(why) = lib {
        report.notices.push(why.clone());
    }
    if a.json {
        // Machine-readable: never through the colour adapter, which strips
        // bytes; written as it is made, not kept whole in memory first.
        let mut out = std::io::BufWriter::new(std::io::stdout().lock());
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        out.flush()?;
    } else {
        // Styled for a terminal; `anstream` drops the styles when colour is off.
        let mut out = anstream::stdout().lock();
        write_text_report(&mut out, &report)?;
        out.flush()?;
    }
    Ok(report.exit_code() as u8)
}

/// The bibliography LaTeX will read: `--bib`, else every file the draft
/// names (inside its folder), else `references.bib` beside it; a file that
/// does not exist reads as empty and is said missing.
fn bibliography(doc: &Document, a: &CheckArgs) -> Result<Bibliography> {
    let files: Vec<(String, PathBuf)> = match &a.bib {
        Some(b) if !b.is_file() => anyhow::bail!("{}: no such bibliography file", b.display()),
        Some(b) => vec![(b.file_name().map_or_else(|| b.display().to_string(), |n| n.to_string_lossy().into_owned()), b.clone())],
        None => doc
            .bibliographies()
            .into_iter()
            .map(|f| match f.path {
                Ok(path) => Ok((f.name, path)),
                Err(refused) => Err(anyhow::anyhow!("{}: {refused}; give one with --bib", a.draft.display())),
            })
            .collect::<Result<_>>()?,
    };
    Bibliography::read_files(&files).with_context(|| format!("reading the bibliography of {}", a.draft.display()))
}

/// Findings one per line (`file:line:column: severity: kind: message`),
/// each with what to do and its suggestions, then the notices and a
/// summary: written to `out` a finding at a time.
fn write_text_report(out: &mut impl Write, report: &Report) -> std::io::Result<()> {
    for f in &report.findings {
        out.write_all(finding_text(&report.file, f).as_bytes())?;
    }
    for n in &report.notices {
        writeln!(out, "note: {}", printable(n))?;
    }
    let count = |sev| report.findings.iter().filter(|f| f.severity == sev).count();
    let scored: Vec<f32> = report.citations.iter().filter_map(|c| c.support).collect();
    let support = if scored.is_empty() { String::new() } else { format!(", median support {:.2}", median(&scored)) };
    writeln!(
        out,
        "{}: {} citations of {} keys, {} errors, {} warnings{support}",
        report.file,
        report.citations.len(),
        report.citations.iter().map(|c| &c.key).collect::<std::collections::HashSet<_>>().len(),
        count(crate::check::Severity::Error),
        count(crate::check::Severity::Warning),
    )
}

/// One finding's lines: where and what, what to do, its suggestions.
fn finding_text(file: &str, f: &crate::check::Finding) -> String {
    let severity = match f.severity {
        crate::check::Severity::Error => ERROR,
        crate::check::Severity::Warning => WARNING,
        crate::check::Severity::Info => DIM,
    };
    let mut s = f.line(file, |sev| paint(severity, sev));
    s.push('\n');
    if let Some(m) = &f.best_match {
        s.push_str(&format!("  {}\n", printable(m)));
    }
    s.push_str(&format!("  fix: {}\n", printable(&f.fix)));
    for sug in &f.suggestions {
        let support = sug.support.map(|x| format!(" (support {x:.2})")).unwrap_or_default();
        let key = if sug.key.is_empty() { sug.id.as_str() } else { sug.key.as_str() };
        let title = if sug.title.is_empty() { String::new() } else { format!(" “{}”", printable(&sug.title)) };
        s.push_str(&format!("  → {key}{title}{support}: {}\n", sug.why));
        for e in &sug.evidence {
            s.push_str(&format!("      cited for: “{}”\n", printable(e)));
        }
    }
    s
}

fn median(xs: &[f32]) -> f32 {
    let mut v = xs.to_vec();
    v.sort_by(f32::total_cmp);
    v[v.len() / 2]
}
