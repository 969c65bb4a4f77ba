use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use super::progress::ImportBar;
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
}

pub fn run(dir: &Path, a: &ImportArgs) -> Result<()> {
    let t = Instant::now();
    let lib = Library::open_or_create(dir)?;
    let summary = import(&lib, &a.paths, ImportOptions { force: a.force }, &ImportBar::new())?;
    print_summary(&summary, a.all_skips);
    println!(
        "library {} now holds {} papers ({:.1} s)",
        lib.dir().display(),
        lib.papers().num_papers(),
        t.elapsed().as_secs_f64()
    );
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
