//! Importing citing sentences into the library's evidence database: from
//! JSON Lines (benchmark contexts, S2ORC / unarXive full text) and from
//! documents (PDFs, LaTeX projects and bundles, Markdown). Documents are
//! read and linked on every core, in batches; each batch is committed
//! (evidence spans, citing sentences, journal) before the next, so an
//! interrupted import resumes where it stopped, and a file read again
//! replaces what it gave before instead of adding to it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rayon::prelude::*;
use serde::Serialize;

use super::journal::{IndexStamp, Journal, Stamp};
use super::Library;
use crate::corpus::citation_markup::CiteGrammar;
use crate::corpus::source::read_bytes;
use crate::error::{Error, Result};
use crate::evidence::citances::Citance;
use crate::evidence::document::LinkMethod;
use crate::evidence::document::{DocKind, DocStats, Document};
use crate::evidence::inputs::EvidenceInput;
use crate::evidence::latex::{main_files, read_latex, Files};
use crate::evidence::link::Linker;
use crate::evidence::markdown::read_markdown;
use crate::evidence::pdf::read_pdf;
use crate::evidence::record::CitingSentence;
use crate::evidence::record::{CitingPaper, EvidenceBuilder};
use crate::evidence::sources::{read_sentences, SourceReport};
use crate::evidence::spans::extract_spans;
use crate::evidence::store::EvidenceStats;
use crate::project::Project;

/// Journal tag of JSON Lines files read with citing-paper sightings and
/// citing sentences kept.
const SIGHTINGS_TAG: &str = "citing=1";

/// How to import.
#[derive(Debug, Clone, Default)]
pub struct EvidenceOptions {
    /// Benchmark contexts: keep only this split.
    pub split: Option<String>,
    /// Read files again even when unchanged.
    pub force: bool,
    /// Add the BibTeX entries a LaTeX or Markdown document cites that are
    /// not in the library yet, so its citations of them become evidence.
    pub add_cited: bool,
    /// The grammar LaTeX documents' citations are read with: the wrapper
    /// commands the user's configuration names (`import --evidence`); by
    /// default none.
    pub grammar: CiteGrammar,
}

/// Per kind of document: what was read and how much of it was linked.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KindSummary {
    pub documents: usize,
    pub unchanged: usize,
    pub skipped: usize,
    /// Documents matched to their own library record.
    pub identified: usize,
    #[serde(flatten)]
    pub stats: DocStats,
    /// References linked by DOI, arXiv id, title, or added (`--add-cited`).
    pub linked_by: BTreeMap<String, usize>,
}

impl KindSummary {
    fn add(&mut self, s: &DocStats) {
        let t = &mut self.stats;
        t.references += s.references;
        t.references_linked += s.references_linked;
        t.markers += s.markers;
        t.markers_resolved += s.markers_resolved;
        t.markers_linked += s.markers_linked;
        t.sentences += s.sentences;
    }
}

/// What an evidence import did.
#[derive(Debug, Default, Serialize)]
pub struct EvidenceImportSummary {
    pub files: usize,
    pub files_unchanged: usize,
    pub sentences: usize,
    pub spans_extracted: usize,
    /// Per JSON Lines file.
    pub reports: Vec<(PathBuf, SourceReport)>,
    /// Per kind of document (PDF, LaTeX, Markdown).
    pub kinds: BTreeMap<DocKind, KindSummary>,
    /// Files or documents skipped, as `file: reason`; and problems that did
    /// not stop a document, as `file: problem`.
    pub skipped: Vec<String>,
    pub problems: Vec<String>,
    /// Papers added with `--add-cited`.
    pub papers_added: usize,
    pub stats: EvidenceStats,
    pub seconds: f64,
}

/// Imports files of citing sentences (benchmark contexts or full text).
/// `split` keeps only that split of benchmark contexts.
pub fn import_evidence(lib: &Library, files: &[PathBuf], split: Option<&str>, force: bool) -> Result<EvidenceImportSummary> {
    for f in files {
        if !f.is_file() {
            return Err(Error::Input(format!("{}: not a file", f.display())));
        }
    }
    let inputs: Vec<EvidenceInput> =
        files.iter().map(|f| EvidenceInput::of(f).unwrap_or_else(|| EvidenceInput::Sentences(f.clone()))).collect();
    let options = EvidenceOptions { split: split.map(str::to_string), force, ..EvidenceOptions::default() };
    import_inputs(lib, &inputs, &options, &|_, _| {})
}

/// A document read and linked, ready to become evidence.
struct ReadDoc {
    /// The journal's and the citing-sentence index's name for it.
    source: String,
    journal_path: PathBuf,
    journal_tag: String,
    stamp: Stamp,
    doc: Document,
    citing: CitingPaper,
    identified: bool,
}

enum Outcome {
    Unchanged(DocKind),
    Skipped(DocKind, String),
    Read(Box<ReadDoc>, Vec<String>),
}

/// Imports every input; `progress(done, total)` after each batch of documents.
pub fn import_inputs(
    lib: &Library,
    inputs: &[EvidenceInput],
    options: &EvidenceOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<EvidenceImportSummary> {
    lib.writing().during(|| {
        let t = std::time::Instant::now();
        let journal_path = lib.evidence_root().join("evidence-journal.json");
        let mut journal = Journal::load(&journal_path)?;
        let mut summary = EvidenceImportSummary { files: inputs.len(), ..Default::default() };
        // Files listed as imported whose spans are gone (`evidence/` deleted or
        // made anew) are read again, not skipped as unchanged.
        if let Some(why) = journal.disagreement(&evidence_stamp(lib)) {
            summary.problems.push(format!(
                "{}: the evidence index holds {} spans, but {why}: the journal was discarded and every file is read again",
                journal_path.display(),
                lib.evidence().num_spans()
            ));
            journal.discard();
        }
        let years = YearCache::default();
        let linker = Linker::new(lib.papers());
        let (sentence_files, documents): (Vec<&EvidenceInput>, Vec<&EvidenceInput>) =
            inputs.iter().partition(|i| matches!(i, EvidenceInput::Sentences(_)));

        let files = JsonLines { lib, options, linker: &linker, years: &years };
        files.import(&sentence_files, &mut journal, &mut summary, progress)?;

        // Documents: read and linked in parallel, committed batch by batch.
        let total = documents.len();
        let threads = crate::util::cores();
        let batch = (total / 8).clamp(32, 256);
        let mut done = 0;
        if total > 0 {
            progress(0, total);
        }
        for chunk in documents.chunks(batch) {
            let outcomes: Vec<Vec<Outcome>> = if threads > 1 {
                chunk.par_iter().map(|i| read_input(i, &journal, options, &linker)).collect()
            } else {
                chunk.iter().map(|i| read_input(i, &journal, options, &linker)).collect()
            };
            let mut ready: Vec<ReadDoc> = Vec::new();
            for outcome in outcomes.into_iter().flatten() {
                match outcome {
                    Outcome::Unchanged(kind) => {
                        summary.files_unchanged += 1;
                        summary.kinds.entry(kind).or_default().unchanged += 1;
                    }
                    Outcome::Skipped(kind, line) => {
                        summary.skipped.push(line);
                        summary.kinds.entry(kind).or_default().skipped += 1;
                    }
                    Outcome::Read(doc, problems) => {
                        summary.problems.extend(problems);
                        ready.push(*doc);
                    }
                }
            }
            if options.add_cited {
                summary.papers_added += add_cited(lib, &mut ready)?;
            }
            let mut batch_sentences = Vec::new();
            for d in &ready {
                let k = summary.kinds.entry(d.doc.kind).or_default();
                k.documents += 1;
                k.identified += d.identified as usize;
                let sentences = d.doc.citing_sentences(&d.citing);
                let mut stats = d.doc.stats();
                stats.sentences = sentences.len();
                k.add(&stats);
                for r in &d.doc.references {
                    if let Some((_, m)) = &r.link {
                        *k.linked_by.entry(m.name().to_string()).or_default() += 1;
                    }
                }
                batch_sentences.push((d.source.clone(), kind_name(d.doc.kind), sentences));
            }
            commit_sentences(lib, &batch_sentences, &years, &mut summary)?;
            for d in &ready {
                journal.mark_done_as(&d.journal_path, &d.journal_tag, d.stamp);
            }
            save_journal(lib, &mut journal)?;
            done += chunk.len();
            progress(done, total);
        }
        summary.stats = lib.evidence().stats()?;
        summary.seconds = t.elapsed().as_secs_f64();
        Ok(summary)
    })
}

/// The JSON Lines inputs of an import: benchmark contexts read whole, one
/// file at a time, each committed on its own; full text as a [`Stream`].
struct JsonLines<'a> {
    lib: &'a Library,
    options: &'a EvidenceOptions,
    linker: &'a Linker<'a>,
    years: &'a YearCache,
}

impl JsonLines<'_> {
    fn import(
        &self,
        inputs: &[&EvidenceInput],
        journal: &mut Journal,
        summary: &mut EvidenceImportSummary,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<()> {
        let (lib, options) = (self.lib, self.options);
        // JSON Lines: one file at a time, each committed on its own. (The tag
        // names the way of reading: files imported before sightings kept their
        // citing paper are read once more, which fills it in.)
        let tag = match &options.split {
            Some(s) => format!("split={s};{SIGHTINGS_TAG}"),
            None => SIGHTINGS_TAG.to_string(),
        };
        for input in inputs {
            let file = input.path();
            match is_fulltext(file) {
                Ok(true) => {
                    let mut on_bytes = |read: u64, size: u64| progress((read >> 20) as usize, (size >> 20).max(1) as usize);
                    let stream = Stream { lib, file, force: options.force, linker: self.linker, years: self.years };
                    stream.import(journal, summary, &mut on_bytes)?;
                    continue;
                }
                Ok(false) => {}
                Err(e) => {
                    summary.skipped.push(e.to_string());
                    continue;
                }
            }
            let bytes = match read_bytes(file) {
                Ok(b) => b,
                Err(e) => {
                    summary.skipped.push(e.to_string());
                    continue;
                }
            };
            let stamp = Stamp::of(&bytes);
            if !options.force && journal.is_done_as(file, &tag, stamp) {
                summary.files_unchanged += 1;
                continue;
            }
            let (sentences, report) = match read_sentences(file, options.split.as_deref(), self.linker, &|id| self.years.get(lib, id)) {
                Ok(r) => r,
                Err(e) => {
                    summary.skipped.push(e.to_string());
                    continue;
                }
            };
            let kind = if report.cite_spans > 0 || report.bib_entries > 0 { "fulltext" } else { "contexts" };
            let source = source_name(file, &tag);
            commit_sentences(lib, &[(source, kind, sentences)], self.years, summary)?;
            summary.reports.push((file.to_path_buf(), report));
            journal.mark_done_as(file, &tag, stamp);
            save_journal(lib, journal)?;
        }
        Ok(())
    }
}

/// Lines of full text (one paper each) read and committed at a time: what
/// a stream holds in memory at once.
pub const STREAM_BATCH: u64 = 256;

/// The longest line (one paper) a stream reads; a longer one is skipped
/// with a message.
pub const STREAM_LINE: u64 = 64 << 20;

/// Journal tag of full text read as a stream (its stamp is of the file's
/// bytes on disk, not of its text).
const STREAM_TAG: &str = "stream;citing=1";

/// Whether a JSON Lines file is full text (its first record has a
/// `body_text`); such a file is read as a [`Stream`], whatever its size.
fn is_fulltext(file: &Path) -> Result<bool> {
    let mut lines = crate::corpus::source::LineStream::open(file)?;
    while let Some(line) = lines.next_line(STREAM_LINE)? {
        if let crate::corpus::source::Line::Text(t) = line {
            if !t.trim().is_empty() {
                return Ok(crate::evidence::sources::is_fulltext_line(&t));
            }
        }
    }
    Ok(false)
}

/// A full-text file (S2ORC / unarXive, one paper a line) read as a stream:
/// [`STREAM_BATCH`] lines at a time are parsed, linked and committed, each
/// batch its own source of citing sentences (`FILE#batch N`), and the
/// journal records the lines committed, so that memory stays bounded
/// whatever the file's size and an interrupted import goes on from the last
/// batch. Spans merge with those other batches and files gave (one span,
/// its support counted once per citing sentence).
struct Stream<'a> {
    lib: &'a Library,
    file: &'a Path,
    force: bool,
    linker: &'a Linker<'a>,
    years: &'a YearCache,
}

impl Stream<'_> {
    fn import(&self, journal: &mut Journal, summary: &mut EvidenceImportSummary, on_bytes: &mut dyn FnMut(u64, u64)) -> Result<()> {
        use crate::corpus::source::{stamp_of_file, Line, LineStream};
        let (size, hash) = stamp_of_file(self.file)?;
        let stamp = Stamp { size, hash };
        if !self.force && journal.is_done_as(self.file, STREAM_TAG, stamp) {
            summary.files_unchanged += 1;
            return Ok(());
        }
        let resume = if self.force { 0 } else { journal.lines_done(self.file, STREAM_TAG, stamp) };
        let mut lines = LineStream::open(self.file)?;
        let mut report = SourceReport::default();
        let (mut line_no, mut batch, mut first) = (0u64, String::new(), resume);
        loop {
            let line = lines.next_line(STREAM_LINE)?;
            let end = line.is_none();
            if let Some(line) = line {
                line_no += 1;
                if line_no > resume {
                    match line {
                        Line::Text(t) => batch.push_str(&t),
                        Line::TooLong(n) => report.problems.push(format!(
                            "{}:{line_no}: a line of more than {} MiB ({n} bytes); skipped",
                            self.file.display(),
                            STREAM_LINE >> 20
                        )),
                    }
                    batch.push('\n');
                }
            }
            if (end || line_no % STREAM_BATCH == 0) && line_no > first {
                let (sentences, part) = crate::evidence::sources::parse_fulltext(self.file, &batch, first as usize, self.linker);
                report.absorb(part);
                let source = format!("{}#batch {}", source_name(self.file, STREAM_TAG), first / STREAM_BATCH);
                let mut sources = vec![(source, "fulltext", sentences)];
                if first == 0 {
                    // What the file gave when it was read whole, before streams.
                    sources.push((source_name(self.file, SIGHTINGS_TAG), "fulltext", Vec::new()));
                    journal.forget(self.file, SIGHTINGS_TAG);
                }
                commit_sentences(self.lib, &sources, self.years, summary)?;
                journal.mark_lines_done(self.file, STREAM_TAG, stamp, line_no);
                save_journal(self.lib, journal)?;
                let (read, size) = lines.position();
                on_bytes(read, size);
                batch.clear();
                first = line_no;
            }
            if end {
                break;
            }
        }
        journal.mark_done_as(self.file, STREAM_TAG, stamp);
        save_journal(self.lib, journal)?;
        summary.reports.push((self.file.to_path_buf(), report));
        Ok(())
    }
}

fn kind_name(k: DocKind) -> &'static str {
    match k {
        DocKind::Pdf => "pdf",
        DocKind::Latex => "latex",
        DocKind::Markdown => "markdown",
    }
}

/// The name a file (and a way of reading it) has in the journal and the
/// citing-sentence index.
fn source_name(file: &Path, tag: &str) -> String {
    let path = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf()).to_string_lossy().into_owned();
    if tag.is_empty() {
        path
    } else {
        format!("{path}#{tag}")
    }
}

/// Adds the sentences of several sources to the evidence database and the
/// citing-sentence index, replacing what those sources gave before.
/// The evidence index as the journal records it.
fn evidence_stamp(lib: &Library) -> IndexStamp {
    IndexStamp { id: lib.evidence().identity(), records: lib.evidence().num_spans() }
}

/// Saves the journal with the evidence index it now describes.
fn save_journal(lib: &Library, journal: &mut Journal) -> Result<()> {
    lib.evidence().reload()?;
    journal.set_index(evidence_stamp(lib));
    journal.save()
}

fn commit_sentences(
    lib: &Library,
    sources: &[(String, &str, Vec<CitingSentence>)],
    years: &YearCache,
    summary: &mut EvidenceImportSummary,
) -> Result<()> {
    let mut builder = EvidenceBuilder::default();
    let mut retract: HashSet<u64> = HashSet::new();
    let mut writer = lib.citances().writer()?;
    let year_of = |id: &str| years.get(lib, id);
    for (source, kind, sentences) in sources {
        for old in lib.citances().from_source(source)? {
            retract.insert(old.sighting());
        }
        let mut citances = Vec::with_capacity(sentences.len());
        for s in sentences {
            let records = s.records(&year_of);
            summary.sentences += 1;
            summary.spans_extracted += records.len();
            let cited = distinct(s.markers.iter().flat_map(|m| m.cited.iter().cloned()));
            citances.push(Citance {
                citing: s.citing.clone(),
                kind: kind.to_string(),
                page: s.page,
                sentence: s.text.split_whitespace().collect::<Vec<_>>().join(" "),
                context: s.context.as_ref().map(|c| c.split_whitespace().collect::<Vec<_>>().join(" ")),
                cited,
                spans: distinct(extract_spans(&s.text, &s.markers).into_iter().map(|x| x.text)),
            });
            for r in records {
                builder.add(r);
            }
        }
        writer.replace_source(source, &citances)?;
    }
    // New sightings of an unchanged sentence are the same fingerprints, so
    // retracting the old ones first never loses them.
    for c in sources.iter().flat_map(|(_, _, s)| s) {
        retract.remove(&crate::evidence::record::sighting(&c.citing.id, &crate::evidence::spans::normalize(&c.text)));
    }
    lib.evidence().merge_and_write(builder, &retract)?;
    writer.commit()
}

/// The items in first-seen order, each once.
fn distinct(items: impl IntoIterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Reads one input into documents (a bundle may hold several).
fn read_input(input: &EvidenceInput, journal: &Journal, options: &EvidenceOptions, linker: &Linker) -> Vec<Outcome> {
    let force = options.force;
    let path = input.path();
    let shown = path.display().to_string();
    let kind = match input {
        EvidenceInput::Pdf(_) | EvidenceInput::AttachedPdf { .. } => DocKind::Pdf,
        EvidenceInput::Markdown { .. } => DocKind::Markdown,
        _ => DocKind::Latex,
    };
    let limit = if kind == DocKind::Pdf { crate::limits::PDF_FILE } else { crate::limits::TEXT_FILE };
    let bytes = match crate::limits::read_regular(path, limit) {
        Ok(b) => b,
        Err(e) => return vec![Outcome::Skipped(kind, format!("{shown}: {e}"))],
    };
    // LaTeX and Markdown depend on the files they include and cite: their
    // stamp covers what was read (below); a PDF's is its bytes.
    let skip_if_done = |stamp: Stamp, tag: &str| !force && journal.is_done_as(path, tag, stamp);
    match input {
        EvidenceInput::Pdf(_) | EvidenceInput::AttachedPdf { .. } => {
            let stamp = Stamp::of(&bytes);
            if skip_if_done(stamp, "") {
                return vec![Outcome::Unchanged(kind)];
            }
            let owner = match input {
                EvidenceInput::AttachedPdf { owner, .. } => Some(owner.as_str()),
                _ => None,
            };
            match read_pdf(path, bytes) {
                Ok(doc) => vec![finish(doc, Found { source: source_name(path, ""), path, tag: "", stamp, owner }, linker, Vec::new())],
                Err(why) => vec![Outcome::Skipped(kind, format!("{shown}: {why}"))],
            }
        }
        EvidenceInput::Markdown { project, .. } => match project_of(project).and_then(|p| read_markdown(path, &p)) {
            Ok((doc, problems)) => {
                let stamp = stamp_of_inputs(&bytes, &doc);
                if skip_if_done(stamp, "") {
                    return vec![Outcome::Unchanged(kind)];
                }
                vec![finish(
                    doc,
                    Found { source: source_name(path, ""), path, tag: "", stamp, owner: None },
                    linker,
                    prefixed(&shown, problems),
                )]
            }
            Err(e) => vec![Outcome::Skipped(kind, format!("{shown}: {e}"))],
        },
        EvidenceInput::Latex { project, .. } => {
            let project = match project_of(project) {
                Ok(p) => p,
                Err(why) => return vec![Outcome::Skipped(kind, format!("{shown}: {why}"))],
            };
            let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
            let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default();
            let files = Files::Dir { project, dir };
            latex_document(&files, &name, path, "", &bytes, journal, options, linker)
        }
        EvidenceInput::Bundle(_) => {
            let files = match Files::bundle(path) {
                Ok(f) => f,
                Err(why) => return vec![Outcome::Skipped(kind, format!("{shown}: {why}"))],
            };
            let mains = main_files(&files);
            mains.iter().flat_map(|m| latex_document(&files, m, path, m, &bytes, journal, options, linker)).collect()
        }
        EvidenceInput::Sentences(_) => Vec::new(),
    }
}

/// The project a document's paths must stay in.
fn project_of(root: &Path) -> std::result::Result<Project, String> {
    Project::new(root).map_err(|e| format!("its project folder {} cannot be read ({e})", root.display()))
}

#[allow(clippy::too_many_arguments)]
fn latex_document(
    files: &Files,
    main: &str,
    path: &Path,
    tag: &str,
    bytes: &[u8],
    journal: &Journal,
    options: &EvidenceOptions,
    linker: &Linker,
) -> Vec<Outcome> {
    let shown = if tag.is_empty() { path.display().to_string() } else { format!("{}:{tag}", path.display()) };
    match read_latex(files, main, Path::new(&shown), &options.grammar) {
        Ok((mut doc, problems)) => {
            doc.file = path.to_path_buf();
            let stamp = stamp_of_inputs(bytes, &doc);
            if !options.force && journal.is_done_as(path, tag, stamp) {
                return vec![Outcome::Unchanged(DocKind::Latex)];
            }
            vec![finish(doc, Found { source: source_name(path, tag), path, tag, stamp, owner: None }, linker, prefixed(&shown, problems))]
        }
        Err(why) => vec![Outcome::Skipped(DocKind::Latex, format!("{shown}: {why}"))],
    }
}

fn prefixed(shown: &str, problems: Vec<String>) -> Vec<String> {
    problems.into_iter().map(|p| format!("{shown}: {p}")).collect()
}

/// A stamp over a file and everything the document drew from (its
/// included files and bibliography show in its text and references).
fn stamp_of_inputs(bytes: &[u8], doc: &Document) -> Stamp {
    let mut all = bytes.to_vec();
    for p in &doc.paragraphs {
        all.extend_from_slice(p.text.as_bytes());
    }
    for r in &doc.references {
        all.extend_from_slice(r.raw.as_bytes());
        all.extend_from_slice(r.label.as_bytes());
    }
    Stamp::of(&all)
}

/// Where a document was found and what is known of it.
struct Found<'a> {
    source: String,
    path: &'a Path,
    tag: &'a str,
    stamp: Stamp,
    /// Its own library record, when known (an attached PDF's parent).
    owner: Option<&'a str>,
}

/// Links a document's references and finds its own library record.
fn finish(mut doc: Document, found: Found<'_>, linker: &Linker, problems: Vec<String>) -> Outcome {
    let Found { source, path, tag, stamp, owner } = found;
    let mut cache: HashMap<String, Option<(String, LinkMethod)>> = HashMap::new();
    let mut same: HashMap<String, Vec<String>> = HashMap::new();
    for r in &mut doc.references {
        let key = format!("{}\u{1f}{}\u{1f}{}", r.raw, r.title, r.doi);
        r.link = cache.entry(key).or_insert_with(|| linker.link_reference(r)).clone();
        if let Some((id, _)) = &r.link {
            r.also = same.entry(id.clone()).or_insert_with(|| linker.same_work(id)).clone();
        }
    }
    let me = match owner {
        Some(id) => linker.paper(id).or_else(|| linker.identify(&doc)),
        None => linker.identify(&doc),
    };
    let file = Some(doc.file.display().to_string());
    let (citing, identified) = match me {
        Some(p) => (CitingPaper { id: p.id, title: p.title, year: p.year, file }, true),
        None => {
            let title = if doc.title.trim().is_empty() {
                doc.file.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_default()
            } else {
                doc.title.clone()
            };
            (CitingPaper { id: format!("doc:{:016x}", stamp.hash), title, year: None, file }, false)
        }
    };
    // A document never cites itself as evidence.
    for r in &mut doc.references {
        if r.link.as_ref().is_some_and(|(id, _)| *id == citing.id) || r.also.contains(&citing.id) {
            r.link = None;
            r.also.clear();
        }
    }
    Outcome::Read(
        Box::new(ReadDoc { source, journal_path: path.to_path_buf(), journal_tag: tag.to_string(), stamp, doc, citing, identified }),
        problems,
    )
}

/// `--add-cited`: BibTeX entries cited by the documents and not in the
/// library are imported, and their references linked to them.
fn add_cited(lib: &Library, docs: &mut [ReadDoc]) -> Result<usize> {
    let mut added = 0;
    let mut writer: Option<crate::index::paper_index::PaperWriter> = None;
    let mut seen: HashSet<String> = HashSet::new();
    for d in docs.iter_mut() {
        for r in &mut d.doc.references {
            let Some(paper) = r.paper.as_deref() else { continue };
            if r.link.is_some() || paper.title.trim().is_empty() {
                continue;
            }
            if seen.insert(paper.id.clone()) && lib.papers().paper_by_id(&paper.id)?.is_none() {
                if writer.is_none() {
                    writer = Some(lib.papers().writer()?);
                }
                writer.as_mut().expect("the writer was opened above").upsert(paper)?;
                added += 1;
            }
            r.link = Some((paper.id.clone(), LinkMethod::Added));
        }
    }
    if let Some(w) = writer {
        w.finish()?;
        lib.papers().reload()?;
    }
    Ok(added)
}

/// Removes what documents gave the evidence database (their citing
/// sentences and the sightings of their spans) and forgets them in the
/// journal, so that a document that comes back is read again. Returns how
/// many had given something.
pub fn forget_documents(lib: &Library, files: &[PathBuf]) -> Result<usize> {
    lib.writing().during(|| {
        if files.is_empty() {
            return Ok(0);
        }
        let journal_path = lib.evidence_root().join("evidence-journal.json");
        let mut journal = Journal::load(&journal_path)?;
        let mut forgotten = 0;
        let mut sources = Vec::new();
        for f in files {
            let source = source_name(f, "");
            forgotten += usize::from(!lib.citances().from_source(&source)?.is_empty());
            journal.forget(f, "");
            sources.push((source, "pdf", Vec::new()));
        }
        let mut summary = EvidenceImportSummary::default();
        commit_sentences(lib, &sources, &YearCache::default(), &mut summary)?;
        save_journal(lib, &mut journal)?;
        Ok(forgotten)
    })
}

/// Years of cited papers, looked up once each.
#[derive(Default)]
struct YearCache(Mutex<HashMap<String, Option<i32>>>);

impl YearCache {
    fn get(&self, lib: &Library, id: &str) -> Option<i32> {
        if let Some(y) = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(id) {
            return *y;
        }
        let y = lib.papers().paper_by_id(id).ok().flatten().and_then(|p| p.year);
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(id.to_string(), y);
        y
    }
}
