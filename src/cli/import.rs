use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Result;
use clap::Args;

use super::progress::ImportBar;
use crate::evidence::inputs;
use crate::library::evidence_import::{import_inputs, EvidenceImportSummary, EvidenceOptions};
use crate::library::import::{import, ImportOptions, ImportSummary};
use crate::library::zotero::{ZoteroOptions, ZoteroSummary};
use crate::library::Library;
use crate::pipeline::Models;
use crate::util::{counted, printable};

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Files or directories (searched recursively for .bib, .jsonl, and their .gz)
    #[arg(required_unless_present = "zotero", value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// Import a Zotero library: every item, its citation key and its PDFs
    /// (as evidence). DIR is Zotero's data directory (zotero.sqlite and
    /// storage/); without DIR, the one Zotero uses (~/Zotero, or the one its
    /// settings name). Zotero's files are read, never written; run it again
    /// to bring in what changed
    // Without DIR the value is empty (clap's path parser refuses an empty
    // value, so the parser here is the plain one).
    #[arg(long, value_name = "DIR", num_args = 0..=1, default_missing_value = "",
          value_parser = clap::builder::TypedValueParser::map(clap::builder::OsStringValueParser::new(), PathBuf::from),
          conflicts_with_all = ["evidence", "paths"])]
    pub zotero: Option<PathBuf>,
    /// With --zotero: only this collection (by name or Parent/Child path) and its sub-collections
    #[arg(long, requires = "zotero")]
    pub collection: Option<String>,
    /// With --zotero: do not read PDF attachments
    #[arg(long, requires = "zotero")]
    pub no_pdfs: bool,
    /// With --zotero: the folder of linked attachments (Zotero's "Linked
    /// Attachment Base Directory"; default: the one Zotero's settings name).
    /// Linked PDFs are read only inside it or inside the data directory
    #[arg(long, value_name = "DIR", requires = "zotero")]
    pub attachment_base: Option<PathBuf>,
    /// Re-read files that were already imported unchanged
    #[arg(long)]
    pub force: bool,
    /// List every skipped entry (default: the first 20)
    #[arg(long)]
    pub all_skips: bool,
    /// The paths hold citing sentences for the evidence database, not papers:
    /// PDFs, LaTeX (.tex, project directories, .tar.gz source bundles),
    /// Markdown with pandoc citations, benchmark contexts.jsonl or
    /// S2ORC/unarXive-style full text
    #[arg(long)]
    pub evidence: bool,
    /// With --evidence: keep only this split of benchmark contexts
    #[arg(long, requires = "evidence")]
    pub split: Option<String>,
    /// With --evidence: add the BibTeX entries that LaTeX / Markdown documents cite and the library lacks
    #[arg(long, requires = "evidence")]
    pub add_cited: bool,
    /// Do not compute vectors for the new papers or evidence spans (`citewise embed` does it later)
    #[arg(long)]
    pub no_embed: bool,
}

pub fn run(dir: &Path, a: &ImportArgs, models: &Models) -> Result<()> {
    let t = Instant::now();
    // No library is made until a paper is: one this run makes and leaves
    // empty (a path with a typo, no Zotero) is taken away when it ends.
    let _unmade = crate::library::Unmade::at(dir)
        .telling(|dir| eprintln!("note: no paper was imported, so no library was made at {}", dir.display()));
    let lib = Library::open_or_create(dir)?;
    super::hold_for_writing(&lib)?;
    if let Some(zotero) = &a.zotero {
        return import_zotero(lib, zotero, a, models);
    }
    if a.evidence {
        // The citation wrappers the editor's configuration names count here too.
        let config = crate::config::Config::of_user(None)?;
        let (found, problems) = inputs::expand(&a.paths);
        for p in &problems {
            eprintln!("skipped: {}", printable(&p.to_string()));
        }
        if found.is_empty() {
            anyhow::bail!(
                "no file to read citing sentences from (PDF, LaTeX, Markdown, JSON Lines) in {}",
                a.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            );
        }
        let options =
            EvidenceOptions { split: a.split.clone(), force: a.force, add_cited: a.add_cited, grammar: config.grammar(Default::default()) };
        let bar = super::progress::count_bar(0, "reading (documents, or MiB of full text)");
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        let s = import_inputs(&lib, &found, &options, &|done, total| {
            if done == 0 {
                bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
            }
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })?;
        bar.finish_and_clear();
        print_evidence_summary(&s, a.all_skips);
        if !a.no_embed {
            super::vectors::compute(&lib, models, super::vectors::Plan::SPANS)?;
            // New citing sentences: what the library's evidence is worth
            // for its own drafts is learned again from them.
            if s.files_unchanged < s.files {
                super::trust::learn_unless_off(&std::sync::Arc::new(lib), models)?;
            }
        }
        return Ok(());
    }
    let summary = import(&lib, &a.paths, ImportOptions { force: a.force }, &ImportBar::new())?;
    print_summary(&summary, a.all_skips);
    if !a.no_embed {
        super::vectors::compute(&lib, models, super::vectors::Plan::IMPORT)?;
    }
    println!(
        "library {} now holds {} ({:.1} s)",
        lib.dir().display(),
        counted(lib.papers().num_papers(), "paper"),
        t.elapsed().as_secs_f64()
    );
    if !a.no_embed {
        if let Some(line) = readiness(&lib, models)? {
            println!("{line}");
        }
    }
    Ok(())
}

/// `import --zotero`: the sync, its summary, then vectors for what is new
/// and, when PDFs brought or took citing sentences, the evidence trust
/// learned again (as `import --evidence` does).
fn import_zotero(lib: Library, dir: &Path, a: &ImportArgs, models: &Models) -> Result<()> {
    let t = Instant::now();
    let dir = if dir.as_os_str().is_empty() {
        let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf()).unwrap_or_default();
        crate::corpus::zotero::default_data_dir(&home).ok_or_else(|| {
            anyhow::anyhow!("no Zotero data directory found (~/Zotero, or the one Zotero's settings name): pass it, `--zotero DIR`")
        })?
    } else {
        dir.to_path_buf()
    };
    let config = crate::config::Config::of_user(None)?;
    let options =
        ZoteroOptions { collection: a.collection.clone(), force: a.force, no_pdfs: a.no_pdfs, attachment_base: a.attachment_base.clone() };
    let make_key = crate::export::keys::make_key(config.key_style);
    eprintln!("reading Zotero's database in {} (a copy; Zotero's files are never written)", dir.display());
    let s = crate::library::zotero::sync(&lib, &dir, &options, &make_key)?;
    print_zotero_summary(&s, a.all_skips);
    if !a.no_embed {
        let papers = if s.added + s.updated > 0 { super::vectors::Plan::IMPORT } else { super::vectors::Plan::NONE };
        let spans = if s.pdfs_read > 0 { super::vectors::Plan::SPANS } else { super::vectors::Plan::NONE };
        super::vectors::compute(&lib, models, papers.and(spans))?;
    }
    println!(
        "library {} now holds {} ({:.1} s)",
        lib.dir().display(),
        counted(lib.papers().num_papers(), "paper"),
        t.elapsed().as_secs_f64()
    );
    if !a.no_embed && s.pdfs_read + s.pdfs_removed > 0 {
        super::trust::learn_unless_off(&std::sync::Arc::new(lib), models)?;
    }
    Ok(())
}

fn print_zotero_summary(s: &ZoteroSummary, all: bool) {
    let era = s.era.map_or("", |e| e.name());
    println!(
        "Zotero ({era}): {} items; {} added, {} updated, {} unchanged, {} removed",
        s.items, s.added, s.updated, s.unchanged, s.removed
    );
    let sources: Vec<String> = s.key_sources.iter().map(|(k, n)| format!("{n} {k}")).collect();
    if !sources.is_empty() {
        println!("citation keys: {}", sources.join(", "));
    }
    for (old, new) in &s.renamed {
        println!("key changed: {old} → {new} (drafts citing {old} are told)");
    }
    if s.pdfs_read + s.pdfs_removed > 0 || !s.pdfs_missing.is_empty() {
        println!("PDFs: {} read, {} removed, {} not read", s.pdfs_read, s.pdfs_removed, s.pdfs_missing.len());
    }
    if let Some(e) = &s.evidence {
        print_evidence_summary(e, all);
    }
    let shown = if all { s.pdfs_missing.len() } else { s.pdfs_missing.len().min(20) };
    for m in &s.pdfs_missing[..shown] {
        eprintln!("not read: {}", printable(m));
    }
    for n in &s.notes {
        eprintln!("note: {}", printable(n));
    }
}

/// Papers per second the citation encoder encodes on one core (47 on 2).
const CITATION_PAPERS_PER_CORE: f64 = 23.5;

/// What the citation channel covers now, and how long the citation
/// encoder's own vectors for the rest would take (none: no channel).
fn readiness(lib: &Library, models: &Models) -> Result<Option<String>> {
    let Ok(encoder) = models.citation_encoder() else { return Ok(None) };
    let Some(v) = crate::pipeline::citation_channel::open_citation_vectors(lib, &encoder)? else { return Ok(None) };
    let papers = lib.papers().num_papers() as usize;
    let (own, stand_ins) = (v.primary_len(), v.fallback_len());
    let mut line = format!(
        "ready: the citation channel covers {} of {papers} papers ({own} with the citation encoder's own vectors, {stand_ins} with its student's stand-ins)",
        own + stand_ins
    );
    let rest = papers.saturating_sub(own);
    if rest > 0 {
        let cores = crate::util::cores() as f64;
        let minutes = rest as f64 / (CITATION_PAPERS_PER_CORE * cores) / 60.0;
        line.push_str(&format!("; `citewise embed` computes the encoder's own for the other {rest} in about {minutes:.0} min"));
    }
    Ok(Some(line))
}

pub fn print_summary(s: &ImportSummary, all_skips: bool) {
    for note in &s.notes {
        eprintln!("note: {}", printable(&note.to_string()));
    }
    let shown = if all_skips { s.skipped.len() } else { s.skipped.len().min(20) };
    for skip in &s.skipped[..shown] {
        eprintln!("skipped: {}", printable(&skip.to_string()));
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
        println!("  skipped {n:>6} × {}", printable(&reason));
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

pub fn print_evidence_summary(s: &EvidenceImportSummary, all: bool) {
    let rate = |a: usize, b: usize| if b == 0 { 0.0 } else { 100.0 * a as f64 / b as f64 };
    let shown = |n: usize| if all { n } else { n.min(20) };
    for line in &s.skipped[..shown(s.skipped.len())] {
        eprintln!("skipped: {}", printable(&line.to_string()));
    }
    if shown(s.skipped.len()) < s.skipped.len() {
        eprintln!("... and {} more skipped (--all-skips lists them)", s.skipped.len() - 20);
    }
    for line in &s.problems[..shown(s.problems.len())] {
        eprintln!("note: {}", printable(&line.to_string()));
    }
    if shown(s.problems.len()) < s.problems.len() {
        eprintln!("... and {} more notes (--all-skips lists them)", s.problems.len() - 20);
    }
    for (file, r) in &s.reports {
        for p in r.problems.iter().take(20) {
            eprintln!("skipped: {}", printable(&p.to_string()));
        }
        if r.problems.len() > 20 {
            eprintln!("... and {} more problems in {}", r.problems.len() - 20, file.display());
        }
        print!("{}: {} documents, {} citing sentences", file.display(), r.documents, r.sentences);
        if r.cite_spans > 0 {
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
    for (kind, k) in &s.kinds {
        let t = &k.stats;
        let by: Vec<String> = k.linked_by.iter().map(|(m, n)| format!("{m} {n}")).collect();
        println!(
            "{}: {} documents read ({} unchanged, {} skipped), {} matched to their library record; {} citing sentences",
            kind.name(),
            k.documents,
            k.unchanged,
            k.skipped,
            k.identified,
            t.sentences
        );
        println!(
            "  references: {} of {} linked to library papers ({:.1}%{}); citation markers: {} of {} resolved to a reference ({:.1}%), {} to a library paper ({:.1}%)",
            t.references_linked,
            t.references,
            rate(t.references_linked, t.references),
            if by.is_empty() { String::new() } else { format!("; by {}", by.join(", ")) },
            t.markers_resolved,
            t.markers,
            rate(t.markers_resolved, t.markers),
            t.markers_linked,
            rate(t.markers_linked, t.markers),
        );
    }
    if s.papers_added > 0 {
        println!("{} cited papers added to the library (--add-cited)", s.papers_added);
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
