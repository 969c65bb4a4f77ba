//! Exporting papers to a BibTeX file: keys in the configured style,
//! duplicates (same DOI, or same key and title) not added again, the file
//! written atomically with a `.bak` of what it held before. Nothing is
//! written, the `.bak` neither, when nothing is added or the file cannot be
//! written.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::keys::{base_key, unique_key, KeyStyle};
use crate::corpus::bibtex::{parse_source, split_blocks, EntryOutcome};
use crate::corpus::source::decode_text;
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::evidence::link::normalize_title;
use crate::util::{replace_with, write_target, write_temp};

use super::encoding::Layout;

/// What happened to one paper of an export.
#[derive(Debug, Clone, PartialEq)]
pub enum Exported {
    /// Appended under this key.
    Added(String),
    /// Already in the file under this key.
    Present(String),
}

impl Exported {
    pub fn key(&self) -> &str {
        match self {
            Exported::Added(k) | Exported::Present(k) => k,
        }
    }
}

/// The outcome of an export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportReport {
    pub file: PathBuf,
    /// In the order the papers were given.
    pub entries: Vec<Exported>,
    /// Where the previous content was saved (none for a new file).
    pub backup: Option<PathBuf>,
}

impl ExportReport {
    pub fn keys(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.key().to_string()).collect()
    }
    pub fn added(&self) -> usize {
        self.entries.iter().filter(|e| matches!(e, Exported::Added(_))).count()
    }
}

/// Keys, DOIs and titles of the entries a BibTeX text holds.
struct Existing {
    keys: Vec<String>,
    /// (doi, key)
    dois: Vec<(String, String)>,
    /// (normalised title, key)
    titles: Vec<(String, String)>,
}

fn existing(text: &str) -> Existing {
    let mut e = Existing { keys: Vec::new(), dois: Vec::new(), titles: Vec::new() };
    // Keys straight from the block headers, so entries the parser rejects still count.
    for block in split_blocks(text).into_iter().flatten() {
        if matches!(block.kind.as_str(), "string" | "comment" | "preamble") {
            continue;
        }
        let after = &block.text[block.text.find(['{', '(']).map_or(0, |i| i + 1)..];
        let key = after.split(',').next().unwrap_or("").trim();
        if !key.is_empty() {
            e.keys.push(key.to_string());
        }
    }
    for outcome in parse_source(text) {
        if let EntryOutcome::Paper(p) = outcome {
            if !p.doi.is_empty() {
                e.dois.push((p.doi.clone(), p.key.clone()));
            }
            e.titles.push((normalize_title(&p.title), p.key.clone()));
        }
    }
    e
}

/// The BibTeX text of a paper under `key`: its original entry with the key
/// replaced, or one generated from its fields.
pub fn entry_text(p: &Paper, key: &str) -> String {
    // An original entry that needs @string macros of its source file does not
    // stand alone; generate one then.
    if !p.bibtex.is_empty() && biblatex::Bibliography::parse(&p.bibtex).is_ok() {
        if let Some(open) = p.bibtex.find(['{', '(']) {
            if let Some(comma) = p.bibtex[open..].find(',') {
                return format!("{}{}{}", &p.bibtex[..=open], key, &p.bibtex[open + comma..]);
            }
        }
    }
    generate(p, key)
}

/// A value as BibTeX reads it back: LaTeX's special characters escaped,
/// braces dropped (they would unbalance the entry).
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' | '%' | '$' | '#' | '_' => {
                out.push('\\');
                out.push(c);
            }
            '{' | '}' => {}
            _ => out.push(c),
        }
    }
    out
}

fn generate(p: &Paper, key: &str) -> String {
    let kind = if p.entry_type.is_empty() { "article" } else { p.entry_type.as_str() };
    let mut fields: Vec<(&str, String)> = vec![("title", format!("{{{}}}", escape(&p.title)))];
    if !p.authors.is_empty() {
        fields.push(("author", p.authors.iter().map(|a| escape(a)).collect::<Vec<_>>().join(" and ")));
    }
    if let Some(y) = p.year {
        fields.push(("year", y.to_string()));
    }
    if !p.venue.is_empty() {
        let f = if kind == "inproceedings" { "booktitle" } else { "journal" };
        fields.push((f, escape(&p.venue)));
    }
    if !p.doi.is_empty() {
        fields.push(("doi", p.doi.clone()));
    }
    if !p.url.is_empty() {
        fields.push(("url", p.url.clone()));
    }
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("  {k} = {{{v}}}")).collect();
    format!("@{kind}{{{key},\n{}\n}}", body.join(",\n"))
}

/// Where the backup of `file` goes: `references.bib.bak`.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    name.push(".bak");
    file.with_file_name(name)
}

/// Exports papers to `file` with real file I/O.
pub fn export(file: &Path, papers: &[Paper], style: KeyStyle) -> Result<ExportReport> {
    export_with(file, papers, style, &mut |f| Box::new(f))
}

/// Exports papers to `file`; `wrap` wraps the temporary file's writer (tests
/// inject failures through it). The file is re-read right before writing so
/// edits made meanwhile by other programs are kept; if it changes while the
/// new content is written, the export starts over (up to three times).
///
/// The new entries are appended to the file's bytes as they are: entries
/// already there are never rewritten. They take the file's line ends (LF or
/// CRLF) and its encoding: UTF-8, or for a file that is not UTF-8,
/// Windows-1252 (Latin-1), with letters it has no byte for written as LaTeX
/// accents (`{\v{c}}`). A symbolic link is written through: the file it
/// points to is replaced (atomically, keeping its permissions) and backed
/// up beside itself.
///
/// The `.bak` is written only with the file: when every paper is already
/// there, or the file cannot be replaced, neither is touched and an error
/// says "nothing was written" truthfully (see [`replace_and_back_up`]).
pub fn export_with(
    file: &Path,
    papers: &[Paper],
    style: KeyStyle,
    wrap: &mut dyn FnMut(std::fs::File) -> Box<dyn Write>,
) -> Result<ExportReport> {
    let target = write_target(file)?;
    for _ in 0..3 {
        let before = read_state(&target)?;
        if let Some(meta) = &before.meta {
            if meta.permissions().readonly() {
                return Err(Error::Input(format!("{} is read-only; nothing was written", file.display())));
            }
        }
        let (added, entries) = plan(&before.text, papers, style);
        if entries.iter().all(|e| matches!(e, Exported::Present(_))) {
            return Ok(ExportReport { file: file.to_path_buf(), entries, backup: None });
        }
        let layout = Layout::of(&before.bytes);
        let mut content = before.bytes.clone();
        content.extend(layout.encode(&added).map_err(|e| Error::Input(format!("{}: {e}; nothing was written", file.display())))?);
        let tmp = write_temp(&target, &content, wrap)?;
        // Someone else wrote the file meanwhile: plan again from their version.
        let now = read_state(&target);
        if !now.as_ref().is_ok_and(|n| n.bytes == before.bytes) {
            let _ = std::fs::remove_file(&tmp);
            now?;
            continue;
        }
        let backup = replace_and_back_up(&tmp, &target, &before)?;
        return Ok(ExportReport { file: file.to_path_buf(), entries, backup });
    }
    Err(Error::Input(format!("{} kept changing while exporting; nothing was written", file.display())))
}

/// Puts the new content (`tmp`) in `target`'s place and what the file held
/// (`before`) in its backup; where the backup went (none for a new file).
///
/// The backup is written to a temporary file of its own first (with the
/// file's permissions: it holds the same text), and takes the `.bak` name
/// only once the file has been replaced: a failure leaves the file, any
/// older `.bak`, and no temporary file, as they were. The `.bak` name is
/// replaced, never written through: a `.bak` that is a symbolic link stays
/// where it points. Should only that last rename fail, the file is written
/// and its backup is the temporary file, which the report names.
fn replace_and_back_up(tmp: &Path, target: &Path, before: &FileState) -> Result<Option<PathBuf>> {
    let Some(meta) = &before.meta else {
        replace_with(tmp, target)?;
        return Ok(None);
    };
    let backup = backup_path(target);
    let saved = match write_temp(&backup, &before.bytes, &mut |f| Box::new(f)) {
        Ok(saved) => saved,
        Err(e) => {
            let _ = std::fs::remove_file(tmp);
            return Err(e);
        }
    };
    if let Err(e) = std::fs::set_permissions(&saved, meta.permissions()) {
        let _ = std::fs::remove_file(&saved);
        let _ = std::fs::remove_file(tmp);
        return Err(Error::io(&backup, e));
    }
    if let Err(e) = replace_with(tmp, target) {
        let _ = std::fs::remove_file(&saved);
        return Err(e);
    }
    match std::fs::rename(&saved, &backup) {
        Ok(()) => Ok(Some(backup)),
        Err(_) => Ok(Some(saved)),
    }
}

/// The keys `papers` have or would get in `file`, without writing anything.
pub fn planned_keys(file: &Path, papers: &[Paper], style: KeyStyle) -> Result<Vec<String>> {
    let state = read_state(file)?;
    Ok(plan(&state.text, papers, style).1.iter().map(|e| e.key().to_string()).collect())
}

/// (key, DOI, normalised title) of every entry of a BibTeX file (empty when
/// the file does not exist).
pub fn entries_of(file: &Path) -> Result<Vec<(String, String, String)>> {
    let state = read_state(file)?;
    Ok(parse_source(&state.text)
        .into_iter()
        .filter_map(|o| match o {
            EntryOutcome::Paper(p) => Some((p.key.clone(), p.doi.clone(), normalize_title(&p.title))),
            EntryOutcome::Skipped { .. } => None,
        })
        .collect())
}

struct FileState {
    bytes: Vec<u8>,
    text: String,
    meta: Option<std::fs::Metadata>,
}

/// The file as it is now (none yet: empty); a file over the one-file
/// budget is refused before it is read (a document may name any file).
fn read_state(file: &Path) -> Result<FileState> {
    match crate::limits::read_regular(file, crate::limits::TEXT_FILE) {
        Ok(bytes) => {
            Ok(FileState { text: decode_text(&bytes).text, meta: Some(std::fs::metadata(file).map_err(|e| Error::io(file, e))?), bytes })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(FileState { bytes: Vec::new(), text: String::new(), meta: None }),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => Err(Error::Input(format!("{}: {e}", file.display()))),
        Err(e) => Err(Error::io(file, e)),
    }
}

/// The text to append to `current` (with `\n` line ends) and what happens
/// to each paper.
fn plan(current: &str, papers: &[Paper], style: KeyStyle) -> (String, Vec<Exported>) {
    let mut ex = existing(current);
    let mut added = String::new();
    // Line ends at the end of the text so far (a `\r` before one counts for nothing).
    let mut newlines = if current.is_empty() { 2 } else { current[current.trim_end_matches(['\n', '\r']).len()..].matches('\n').count() };
    let mut entries = Vec::new();
    for p in papers {
        let title = normalize_title(&p.title);
        if let Some((_, k)) = ex.dois.iter().find(|(d, _)| !p.doi.is_empty() && *d == p.doi) {
            entries.push(Exported::Present(k.clone()));
            continue;
        }
        let base = base_key(p, style);
        // The same key with the same title is the same paper.
        let same = ex.titles.iter().find(|(t, k)| *t == title && (k == &base || k.starts_with(&base)));
        if let Some((_, k)) = same {
            entries.push(Exported::Present(k.clone()));
            continue;
        }
        let key = unique_key(&base, |k| ex.keys.iter().any(|e| e == k));
        // A blank line before each entry.
        for _ in newlines.min(2)..2 {
            added.push('\n');
        }
        added.push_str(&entry_text(p, &key).replace("\r\n", "\n"));
        added.push('\n');
        newlines = 1;
        ex.keys.push(key.clone());
        if !p.doi.is_empty() {
            ex.dois.push((p.doi.clone(), key.clone()));
        }
        ex.titles.push((title, key.clone()));
        entries.push(Exported::Added(key));
    }
    (added, entries)
}
