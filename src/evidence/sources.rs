//! Citing sentences in: the benchmark's citation contexts and S2ORC /
//! unarXive-style full text (paragraphs with `cite_spans` and
//! `bib_entries`).

use std::collections::HashMap;
use std::path::Path;

use serde::Deserialize;
use serde_json::Value;

use super::document::LinkMethod;
use super::link::Linker;
use super::markers::{find_markers, resolve_overlaps, Marker};
use super::record::{CitingPaper, CitingSentence};
use super::sentences::split_sentences;
use crate::corpus::benchmark::CIT;
use crate::corpus::bibtex::parse_year;
use crate::corpus::source::{decode_text, read_bytes};
use crate::error::{Error, Result};

/// What a file of citing sentences held.
#[derive(Debug, Default, serde::Serialize)]
pub struct SourceReport {
    pub documents: usize,
    pub sentences: usize,
    /// Full text: citation markers seen, and how many were linked to a
    /// library paper, by method.
    pub cite_spans: usize,
    pub linked: usize,
    pub linked_by: HashMap<String, usize>,
    /// Full text: distinct bibliography entries and how many linked.
    pub bib_entries: usize,
    pub bib_entries_linked: usize,
    /// Problems, as `file:line: reason`; the sentence concerned was skipped.
    pub problems: Vec<String>,
}

/// The kind of a citing-sentence file, judged by its first record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentenceFormat {
    BenchmarkContexts,
    FullText,
}

/// Judges the format by the first line that is a JSON object (a broken line
/// before it is reported where the records are read, and skipped).
pub fn detect_format(path: &Path, text: &str) -> Result<SentenceFormat> {
    let parse = |line, reason: String| Error::Parse { path: path.into(), line, reason };
    let mut first_error = None;
    for (i, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()).take(100) {
        let v = match serde_json::from_str::<Value>(line) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => {
                first_error.get_or_insert_with(|| parse(i + 1, "not a JSON object".into()));
                continue;
            }
            Err(e) => {
                first_error.get_or_insert_with(|| parse(i + 1, format!("not JSON Lines: {e}")));
                continue;
            }
        };
        return if v.get("body_text").is_some() {
            Ok(SentenceFormat::FullText)
        } else if v.get("context").is_some() && v.get("cited").is_some() {
            Ok(SentenceFormat::BenchmarkContexts)
        } else {
            Err(parse(i + 1, "neither benchmark contexts (`context`, `cited`) nor full text (`body_text`)".into()))
        };
    }
    Err(first_error.unwrap_or_else(|| parse(1, "the file is empty: no records to import".into())))
}

/// Reads a file of citing sentences (either format). Benchmark contexts are
/// filtered to `split` when given.
pub fn read_sentences(
    path: &Path,
    split: Option<&str>,
    linker: &Linker,
    year_of: &dyn Fn(&str) -> Option<i32>,
) -> Result<(Vec<CitingSentence>, SourceReport)> {
    let text = decode_text(&read_bytes(path)?).text;
    parse_sentences(path, &text, split, linker, year_of)
}

/// [`read_sentences`] of text already read; `path` names it in messages.
pub fn parse_sentences(
    path: &Path,
    text: &str,
    split: Option<&str>,
    linker: &Linker,
    year_of: &dyn Fn(&str) -> Option<i32>,
) -> Result<(Vec<CitingSentence>, SourceReport)> {
    match detect_format(path, text)? {
        SentenceFormat::BenchmarkContexts => Ok(from_contexts(path, text, split, year_of)),
        SentenceFormat::FullText => Ok(from_fulltext(path, text, 0, linker)),
    }
}

/// Whether one line of a JSON Lines file is a full-text paper (S2ORC /
/// unarXive: a `body_text`), judged as [`detect_format`] judges a file.
pub fn is_fulltext_line(line: &str) -> bool {
    matches!(serde_json::from_str::<Value>(line), Ok(Value::Object(m)) if m.contains_key("body_text"))
}

/// Full-text papers, one per line, that a stream read from line
/// `first_line` (0-based) of `path` on: their citing sentences (messages
/// name the file's own line numbers).
pub fn parse_fulltext(path: &Path, lines: &str, first_line: usize, linker: &Linker) -> (Vec<CitingSentence>, SourceReport) {
    from_fulltext(path, lines, first_line, linker)
}

impl SourceReport {
    /// Adds what another part of the same file held.
    pub fn absorb(&mut self, other: SourceReport) {
        self.documents += other.documents;
        self.sentences += other.sentences;
        self.cite_spans += other.cite_spans;
        self.linked += other.linked;
        for (method, n) in other.linked_by {
            *self.linked_by.entry(method).or_default() += n;
        }
        self.bib_entries += other.bib_entries;
        self.bib_entries_linked += other.bib_entries_linked;
        self.problems.extend(other.problems);
    }
}

#[derive(Deserialize)]
struct ContextRow {
    #[serde(default)]
    split: String,
    #[serde(default)]
    citing_id: String,
    #[serde(default)]
    citing_title: String,
    context: String,
    cited: Vec<String>,
}

fn from_contexts(
    path: &Path,
    text: &str,
    split: Option<&str>,
    year_of: &dyn Fn(&str) -> Option<i32>,
) -> (Vec<CitingSentence>, SourceReport) {
    let mut report = SourceReport::default();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let row: ContextRow = match serde_json::from_str(line) {
            Ok(r) => r,
            Err(e) => {
                report.problems.push(format!("{}:{}: {e}", path.display(), i + 1));
                continue;
            }
        };
        if split.is_some_and(|s| s != row.split) {
            continue;
        }
        report.documents += 1;
        let citing = CitingPaper { year: year_of(&row.citing_id), id: row.citing_id, title: row.citing_title, file: None };
        for (s, e) in split_sentences(&row.context, &[]) {
            let sentence = &row.context[s..e];
            if !sentence.contains(CIT) {
                continue;
            }
            report.sentences += 1;
            out.push(CitingSentence {
                text: sentence.to_string(),
                markers: find_markers(sentence, &row.cited),
                citing: citing.clone(),
                page: None,
                context: None,
            });
        }
    }
    (out, report)
}

#[derive(Deserialize)]
struct FullTextPaper {
    #[serde(default)]
    paper_id: String,
    #[serde(default)]
    metadata: Value,
    #[serde(default)]
    body_text: Vec<Paragraph>,
    #[serde(default)]
    bib_entries: HashMap<String, Value>,
}

#[derive(Deserialize)]
struct Paragraph {
    #[serde(default)]
    text: String,
    #[serde(default)]
    cite_spans: Vec<CiteSpan>,
}

#[derive(Deserialize)]
struct CiteSpan {
    start: i64,
    end: i64,
    #[serde(default)]
    ref_id: Option<String>,
    #[serde(default)]
    text: Option<String>,
}

/// Byte offset of every character of a paragraph, and of its end: cite
/// span offsets are in characters, looked up here in constant time.
struct CharOffsets(Vec<usize>);

impl CharOffsets {
    fn of(text: &str) -> CharOffsets {
        CharOffsets(text.char_indices().map(|(b, _)| b).chain(std::iter::once(text.len())).collect())
    }

    fn byte(&self, char_index: usize) -> Option<usize> {
        self.0.get(char_index).copied()
    }

    fn chars(&self) -> usize {
        self.0.len() - 1
    }
}

/// Byte range of a cite span. Offsets are in characters (as S2ORC and
/// unarXive write them); byte offsets are accepted when the span's own
/// `text` shows that is what they are. `None` when out of range.
fn span_bytes(text: &str, offsets: &CharOffsets, cs: &CiteSpan) -> Option<(usize, usize)> {
    if cs.start < 0 || cs.end <= cs.start {
        return None;
    }
    let (start, end) = (cs.start as usize, cs.end as usize);
    let as_chars = offsets.byte(start).zip(offsets.byte(end));
    let as_bytes = (end <= text.len() && text.is_char_boundary(start) && text.is_char_boundary(end)).then_some((start, end));
    match &cs.text {
        Some(t) if !t.is_empty() => [as_chars, as_bytes].into_iter().flatten().find(|&(s, e)| &text[s..e] == t),
        _ => as_chars,
    }
}

fn from_fulltext(path: &Path, text: &str, first_line: usize, linker: &Linker) -> (Vec<CitingSentence>, SourceReport) {
    let mut report = SourceReport::default();
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let at = format!("{}:{}", path.display(), first_line + i + 1);
        let paper: FullTextPaper = match serde_json::from_str(line) {
            Ok(p) => p,
            Err(e) => {
                report.problems.push(format!("{at}: {e}"));
                continue;
            }
        };
        report.documents += 1;
        let citing = citing_paper(&paper);
        // Link each bibliography entry once.
        let mut links: HashMap<&str, Option<(String, LinkMethod)>> = HashMap::new();
        for (ref_id, entry) in &paper.bib_entries {
            let link = linker.link(entry);
            report.bib_entries += 1;
            report.bib_entries_linked += link.is_some() as usize;
            links.insert(ref_id.as_str(), link);
        }
        for (pi, para) in paper.body_text.iter().enumerate() {
            sentences_of_paragraph(&at, pi, para, &links, &citing, &mut out, &mut report);
        }
    }
    (out, report)
}

fn citing_paper(p: &FullTextPaper) -> CitingPaper {
    let m = &p.metadata;
    let title = m.get("title").and_then(Value::as_str).unwrap_or("").split_whitespace().collect::<Vec<_>>().join(" ");
    let year = m
        .get("versions")
        .and_then(|v| v.get(0))
        .and_then(|v| v.get("created"))
        .and_then(Value::as_str)
        .and_then(parse_year)
        .or_else(|| m.get("update_date").and_then(Value::as_str).and_then(parse_year));
    let id = m.get("id").and_then(Value::as_str).unwrap_or(&p.paper_id);
    CitingPaper { id: format!("arxiv:{id}"), title, year, file: None }
}

fn sentences_of_paragraph(
    at: &str,
    pi: usize,
    para: &Paragraph,
    links: &HashMap<&str, Option<(String, LinkMethod)>>,
    citing: &CitingPaper,
    out: &mut Vec<CitingSentence>,
    report: &mut SourceReport,
) {
    let text = &para.text;
    let offsets = CharOffsets::of(text);
    // Validate spans; remember where the bad ones sit so their sentences are skipped.
    let mut good: Vec<(usize, usize, Vec<String>)> = Vec::new();
    let mut poisoned: Vec<usize> = Vec::new();
    for cs in &para.cite_spans {
        report.cite_spans += 1;
        let Some((s, e)) = span_bytes(text, &offsets, cs) else {
            report.problems.push(format!(
                "{at}: paragraph {pi}: cite span {}..{} is out of range or does not match its text (paragraph has {} characters); sentence skipped",
                cs.start,
                cs.end,
                offsets.chars()
            ));
            // Its own marker text, when it is in the paragraph, shows which sentence to skip.
            if let Some(at) = cs.text.as_deref().filter(|t| !t.is_empty()).and_then(|t| text.find(t)) {
                poisoned.push(at);
            }
            continue;
        };
        let ref_id = cs.ref_id.as_deref().unwrap_or("");
        match links.get(ref_id) {
            None => {
                report
                    .problems
                    .push(format!("{at}: paragraph {pi}: cite span {s}..{e} refers to missing bib entry `{ref_id}`; sentence skipped"));
                poisoned.push(s);
            }
            Some(link) => {
                let cited = link.iter().map(|(id, _)| id.clone()).collect();
                if let Some((_, method)) = link {
                    report.linked += 1;
                    *report.linked_by.entry(method.name().to_string()).or_default() += 1;
                }
                good.push((s, e, cited));
            }
        }
    }
    if good.iter().all(|(_, _, c)| c.is_empty()) {
        return;
    }
    // Sorted, so each sentence finds its spans by binary search.
    good.sort_by_key(|&(s, e, _)| (s, e));
    poisoned.sort_unstable();
    let protected: Vec<(usize, usize)> = good.iter().map(|&(s, e, _)| (s, e)).collect();
    for (ss, se) in split_sentences(text, &protected) {
        let in_sentence = |start: usize| start >= ss && start < se;
        if poisoned.get(poisoned.partition_point(|&p| p < ss)).is_some_and(|&p| in_sentence(p)) {
            continue;
        }
        let first = good.partition_point(|(s, _, _)| *s < ss);
        let inside: Vec<&(usize, usize, Vec<String>)> = good[first..].iter().take_while(|(s, _, _)| in_sentence(*s)).collect();
        if inside.iter().all(|(_, _, c)| c.is_empty()) {
            continue;
        }
        let sentence = &text[ss..se];
        let mut markers: Vec<Marker> =
            inside.iter().map(|(s, e, c)| Marker { start: s - ss, end: (*e).min(se) - ss, cited: c.clone() }).collect();
        markers.extend(find_markers(sentence, &[]));
        report.sentences += 1;
        out.push(CitingSentence {
            text: sentence.to_string(),
            markers: resolve_overlaps(markers),
            citing: citing.clone(),
            page: None,
            context: None,
        });
    }
}
