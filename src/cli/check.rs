//! `citewise check`: a draft's citations against its bibliography, the
//! library and the evidence.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Args;

use crate::check::{Bibliography, Checker, Report, SupportCache};
use crate::corpus::citation_markup::CiteSyntax;
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

/// Runs the check; the exit code: 0 clean, 1 findings at warning or above.
pub fn run(lib: &Arc<Library>, a: &CheckArgs, models: &Models) -> Result<u8> {
    let bytes = crate::corpus::source::read_bytes(&a.draft).with_context(|| format!("reading {}", a.draft.display()))?;
    let text = crate::corpus::source::decode_text(&bytes).text;
    let syntax = CiteSyntax::for_file(&a.draft);
    let bib_path = match &a.bib {
        Some(b) if !b.is_file() => anyhow::bail!("{}: no such bibliography file", b.display()),
        Some(b) => b.clone(),
        None => named_bibliography(&a.draft, &text)?,
    };
    let bib = Bibliography::read(&bib_path).with_context(|| format!("reading {}", bib_path.display()))?;
    let recommender = (!a.no_support).then(|| Recommender::new(lib.clone(), models));
    let checker = match &recommender {
        Some(rec) => Checker::with_support(rec),
        None => Checker::new(lib),
    };
    let file = a.draft.display().to_string();
    let report = checker.check(&file, &text, syntax, &bib, &mut SupportCache::default())?;
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

/// The bibliography the draft names (inside its folder), else
/// `references.bib` beside it.
fn named_bibliography(draft: &std::path::Path, text: &str) -> Result<PathBuf> {
    let abs = std::path::absolute(draft).with_context(|| format!("{}: no such path", draft.display()))?;
    let url = lsp_types::Url::from_file_path(&abs).map_err(|()| anyhow::anyhow!("{}: not a file path", abs.display()))?;
    let doc = crate::lsp::documents::Document::new(url, "", text.to_string(), 0);
    doc.bibliography().map_err(|refused| anyhow::anyhow!("{}: {refused}; give one with --bib", draft.display()))
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
