//! Exporting papers to a BibTeX file: keys in the configured style,
//! duplicates (same DOI, or same key and title) not added again, the file
//! written atomically with a `.bak` of what it held before. Nothing is
//! written, the `.bak` neither, when nothing is added or the file cannot be
//! written.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::keys::{base_key, unique_key, KeyStyle};
use crate::corpus::bibtex::{map_field_values, parse_source, split_blocks, EntryOutcome};
use crate::corpus::html_text::{reduce, Unit};
use crate::corpus::source::decode_text;
use crate::corpus::work::Identity;
use crate::corpus::Paper;
use crate::error::{Error, Result};
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

/// One entry of a bibliography file: its key and what identifies its work
/// there ([`Identity`]: its DOI and its title's words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BibEntry {
    pub key: String,
    pub work: Identity,
}

/// A bibliography file as export reads it: every key it declares and the
/// entries it holds. What decides the key a paper has there or would get
/// ([`Entries::planned_keys`]), and what a key the draft cites stands for
/// ([`Entries::entry`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entries {
    /// Every key its blocks declare, in order, entries the parser rejects
    /// too: a new key is none of them.
    keys: Vec<String>,
    /// Its entries read, in order.
    entries: Vec<BibEntry>,
}

impl Entries {
    /// The entries of a BibTeX text.
    pub fn of_text(text: &str) -> Entries {
        let mut e = Entries::default();
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
                e.entries.push(BibEntry { key: p.key.clone(), work: Identity::of(&p) });
            }
        }
        e
    }

    /// Its entries read, in order.
    pub fn entries(&self) -> &[BibEntry] {
        &self.entries
    }

    /// The (first) entry under `key`.
    pub fn entry(&self, key: &str) -> Option<&BibEntry> {
        self.entries.iter().find(|e| e.key == key)
    }

    /// The keys `papers` have here or would get, exported at once in
    /// `style` (a paper already here keeps its entry's key), without
    /// writing anything.
    pub fn planned_keys<'p>(&self, papers: impl IntoIterator<Item = &'p Paper>, style: KeyStyle) -> Vec<String> {
        let mut held = self.clone();
        papers.into_iter().map(|p| held.place(p, style).key().to_string()).collect()
    }

    /// What exporting `p` in `style` does: nothing when the file holds its
    /// work already (one DOI; or the same title under its key, or a key
    /// made from it: the same paper), else it is added under a key no
    /// entry has (and is held here from then on).
    fn place(&mut self, p: &Paper, style: KeyStyle) -> Exported {
        let work = Identity::of(p);
        if let Some(e) = self.entries.iter().find(|e| e.work.same_doi(&work)) {
            return Exported::Present(e.key.clone());
        }
        let base = base_key(p, style);
        if let Some(e) = self.entries.iter().find(|e| e.work.same_title(&work) && e.key.starts_with(&base)) {
            return Exported::Present(e.key.clone());
        }
        let key = unique_key(&base, |k| self.keys.iter().any(|e| e == k));
        self.keys.push(key.clone());
        self.entries.push(BibEntry { key: key.clone(), work });
        Exported::Added(key)
    }
}

/// The BibTeX text of a paper under `key`: its original entry with the key
/// replaced and its values written as valid LaTeX ([`latex_entry`]), or one
/// generated from its fields.
pub fn entry_text(p: &Paper, key: &str) -> String {
    // An original entry that needs @string macros of its source file does not
    // stand alone; generate one then. A repair that would not parse (none is
    // known) leaves the entry as it was.
    if !p.bibtex.is_empty() && biblatex::Bibliography::parse(&p.bibtex).is_ok() {
        let repaired = latex_entry(&p.bibtex).filter(|e| biblatex::Bibliography::parse(e).is_ok());
        let text = repaired.as_deref().unwrap_or(&p.bibtex);
        if let Some(open) = text.find(['{', '(']) {
            if let Some(comma) = text[open..].find(',') {
                return format!("{}{}{}", &text[..=open], key, &text[open + comma..]);
            }
        }
    }
    generate(p, key)
}

/// Fields whose value is an address, read verbatim (as the `biblatex` crate
/// reads them): its `&`, `%`, `_` and `#` are the address's, not LaTeX's.
const VERBATIM_FIELDS: &[&str] = &["doi", "eprint", "file", "pdf", "uri", "url", "urlraw", "verba", "verbb", "verbc"];

/// Commands whose argument is an address, written as it stands.
const URL_COMMANDS: &[&str] = &["url", "href", "path", "nolinkurl"];

/// Characters that a backslash before them escapes in a value: `\&` stays
/// `\&` (never `\\&`).
const ESCAPED: &[char] = &['&', '%', '$', '#', '_', '{', '}'];

/// A value as BibTeX and LaTeX read it back as the same text: the one
/// escaping of plain text (an exported record's fields, the language
/// server's title fix).
///
/// - `& % $ # _` are escaped (`\&`); one already escaped stays as it is
///   (`\&`, not `\\&`), and so does TeX math by Pandoc's rule (`$x^2$`: a
///   `$` with no space after it, closed by one with no space before it and no
///   digit after it), which the reader keeps as written too; a lone `$` (`$5`)
///   is text.
/// - `~` and `^` are text here (`\textasciitilde{}`, `\textasciicircum{}`),
///   not a no-break space or a superscript, and a backslash is
///   `\textbackslash{}`: the text has no LaTeX commands.
/// - Braces that pair up are kept: they group (`{BERT}` keeps its capitals);
///   a brace without its pair is dropped (it would unbalance the entry).
/// - `<` and `>` stay: LaTeX prints them with the T1 encoding and in every
///   Unicode engine, as the field parser reads them.
pub fn escape(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    // Escapes and math stand as they are.
    let mut as_is = vec![false; chars.len()];
    let mut i = 0;
    while i < chars.len() {
        let end = match chars[i] {
            '\\' if chars.get(i + 1).is_some_and(|c| ESCAPED.contains(c)) => i + 2,
            '$' => math_end(&chars, i).unwrap_or(i),
            _ => i,
        };
        as_is[i..end].fill(true);
        i = end.max(i + 1);
    }
    let grouping = grouping_braces(&chars, &as_is);
    let mut out = String::with_capacity(s.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if as_is[i] || grouping[i] {
            out.push(c);
        } else {
            escape_char(c, false, &mut out);
        }
    }
    out
}

/// How a character of plain text is written in a value (`quoted`: between
/// `"`s): LaTeX's reserved characters escaped, a brace (none of a group)
/// dropped.
fn escape_char(c: char, quoted: bool, out: &mut String) {
    match c {
        '&' | '%' | '$' | '#' | '_' => {
            out.push('\\');
            out.push(c);
        }
        '~' => out.push_str("\\textasciitilde{}"),
        '^' => out.push_str("\\textasciicircum{}"),
        '\\' => out.push_str("\\textbackslash{}"),
        '{' | '}' => {}
        // The field parser ends a quoted value at the next `"`, braced or not.
        '"' if quoted => out.push_str("\\textquotedbl{}"),
        _ => out.push(c),
    }
}

/// Where the TeX math that opens at `at` (a `$`) ends (exclusive), by
/// Pandoc's rule; none when the `$` is text.
fn math_end(chars: &[char], at: usize) -> Option<usize> {
    let first = *chars.get(at + 1)?;
    if first.is_whitespace() || first == '$' {
        return None;
    }
    let close = at + 1 + chars[at + 1..].iter().position(|&c| c == '$')?;
    let before = chars[close - 1];
    let digit_after = chars.get(close + 1).is_some_and(char::is_ascii_digit);
    if before.is_whitespace() || before == '\\' || digit_after {
        return None;
    }
    // Its braces pair up, or it would unbalance the entry.
    let mut depth = 0usize;
    for &c in &chars[at + 1..close] {
        match c {
            '{' => depth += 1,
            '}' => depth = depth.checked_sub(1)?,
            _ => {}
        }
    }
    (depth == 0).then_some(close + 1)
}

/// The braces of `chars` (outside what stands as it is) that pair up.
fn grouping_braces(chars: &[char], as_is: &[bool]) -> Vec<bool> {
    let mut grouping = vec![false; chars.len()];
    let mut open = Vec::new();
    for (i, &c) in chars.iter().enumerate() {
        if as_is[i] {
            continue;
        }
        match c {
            '{' => open.push(i),
            '}' => {
                if let Some(o) = open.pop() {
                    grouping[o] = true;
                    grouping[i] = true;
                }
            }
            _ => {}
        }
    }
    grouping
}

/// An original entry with every value written as valid LaTeX, or `None`
/// when it needs no change (or its fields cannot be walked). Exporters leave
/// HTML (ACM DL: `Research &amp; Development`,
/// `X-CLE<span class="smallcaps">a</span>VER`) and bare reserved characters
/// (`70%`, `#P-hard`, `snake_case`) that break LaTeX; the rest of the entry,
/// its braces, commands, math, macros and layout, stays as it was.
///
/// HTML is read as the importer reads it ([`crate::corpus::html_text`]) and
/// what an entity stands for is escaped as [`escape`] escapes it; outside math, a
/// bare `& % # _` is escaped and a bare `^` is `\textasciicircum{}` (`~`
/// stays: in LaTeX source it is a no-break space, as its author meant).
/// Inside math, and in the argument of `\url`-like commands, nothing is
/// escaped. A verbatim field (`url`, `doi`) has its entities decoded and
/// nothing escaped. So the entry reads back as the same text.
pub fn latex_entry(entry: &str) -> Option<String> {
    let repaired = map_field_values(entry, latex_value)?;
    (repaired != entry).then_some(repaired)
}

/// A value of field `field` (LaTeX source, between `"`s when `quoted`)
/// repaired as [`latex_entry`] says; `None` when it needs no change.
fn latex_value(field: &str, value: &str, quoted: bool) -> Option<String> {
    let verbatim = VERBATIM_FIELDS.contains(&field);
    let units = reduce(value, !verbatim);
    if verbatim {
        return units.map(|u| u.iter().map(|u| u.c).collect());
    }
    if units.is_none() && !value.contains(['&', '%', '#', '_', '^']) {
        return None;
    }
    let units = units.unwrap_or_else(|| value.chars().map(|c| Unit { c, decoded: false }).collect());
    let out = latex_units(&units, quoted);
    (out != value).then_some(out)
}

/// The characters of a value, as LaTeX: what an entity stood for escaped
/// (as it is inside math), what stood in the source repaired.
fn latex_units(units: &[Unit], quoted: bool) -> String {
    let mut out = String::with_capacity(units.len() + 16);
    let mut math = false;
    let mut i = 0;
    while i < units.len() {
        let Unit { c, decoded } = units[i];
        if decoded && !math {
            escape_char(c, quoted, &mut out);
        } else if decoded || math {
            // Math runs to the next `$`, as the field parser reads it.
            math &= decoded || c != '$';
            out.push(c);
        } else {
            match c {
                '\\' => {
                    i = copy_command(units, i, &mut out);
                    continue;
                }
                '$' => {
                    math = true;
                    out.push(c);
                }
                '&' | '%' | '#' | '_' | '^' => escape_char(c, quoted, &mut out),
                _ => out.push(c),
            }
        }
        i += 1;
    }
    out
}

/// Copies the escape or command that starts at `at` (a backslash) as it
/// stands, read as the field parser reads it: `\&`, `\"`, `\^`, or a name
/// that runs to the next space or character BibTeX reserves (`\alpha`,
/// `\chi^2-Test`), with the argument of a `\url`-like command. Where the
/// copy ends.
fn copy_command(units: &[Unit], at: usize, out: &mut String) -> usize {
    let source = |i: usize| units.get(i).filter(|u| !u.decoded).map(|u| u.c);
    let mut end = at + 1;
    if let Some(first) = source(end) {
        end += 1;
        let escape = matches!(first, '{' | '}' | '\\' | '#' | '&' | '%' | '$' | '_' | ':');
        let accent = matches!(first, '"' | '´' | '`' | '\'' | '^' | '~' | '=' | '.' | '-');
        if !escape && !accent && !first.is_whitespace() {
            while source(end).is_some_and(is_command_char) {
                end += 1;
            }
            let name: String = units[at + 1..end].iter().map(|u| u.c).collect();
            if URL_COMMANDS.contains(&name.as_str()) && source(end) == Some('{') {
                end = group_end(units, end).unwrap_or(end);
            }
        }
    }
    out.extend(units[at..end].iter().map(|u| u.c));
    end
}

/// A character of a command's name as the field parser reads it: anything
/// but white space, a control character and `@{}"#'(),=%\~`.
fn is_command_char(c: char) -> bool {
    !c.is_whitespace() && !c.is_control() && !matches!(c, '@' | '{' | '}' | '"' | '#' | '\'' | '(' | ')' | ',' | '=' | '%' | '\\' | '~')
}

/// The end (exclusive) of the brace group that opens at `open`.
fn group_end(units: &[Unit], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < units.len() {
        match units[i].c {
            '\\' => i += 1,
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
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

/// The key export writes for a paper where a front end offers it (the
/// check's suggestions, an entry added from the library): its key in the
/// file whose `entries` these are (as last read), or the key it would get
/// there in `style`; no file known: the key export makes for it.
pub fn export_keys(entries: Option<std::sync::Arc<Entries>>, style: KeyStyle) -> crate::check::KeyOf {
    std::sync::Arc::new(move |p: &Paper| {
        let planned = entries.as_ref().and_then(|e| e.planned_keys([p], style).into_iter().next());
        planned.unwrap_or_else(|| base_key(p, style))
    })
}

/// The keys `papers` have or would get in `file`, without writing anything.
pub fn planned_keys(file: &Path, papers: &[Paper], style: KeyStyle) -> Result<Vec<String>> {
    Ok(entries_of(file)?.planned_keys(papers, style))
}

/// The entries of a BibTeX file (none when the file does not exist).
pub fn entries_of(file: &Path) -> Result<Entries> {
    Ok(Entries::of_text(&read_state(file)?.text))
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
    let mut held = Entries::of_text(current);
    let mut added = String::new();
    // Line ends at the end of the text so far (a `\r` before one counts for nothing).
    let mut newlines = if current.is_empty() { 2 } else { current[current.trim_end_matches(['\n', '\r']).len()..].matches('\n').count() };
    let mut entries = Vec::new();
    for p in papers {
        let placed = held.place(p, style);
        if let Exported::Added(key) = &placed {
            // A blank line before each entry.
            for _ in newlines.min(2)..2 {
                added.push('\n');
            }
            added.push_str(&entry_text(p, key).replace("\r\n", "\n"));
            added.push('\n');
            newlines = 1;
        }
        entries.push(placed);
    }
    (added, entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Paper {
        let mut ps: Vec<Paper> = parse_source(text)
            .into_iter()
            .filter_map(|o| match o {
                EntryOutcome::Paper(p) => Some(*p),
                EntryOutcome::Skipped { .. } => None,
            })
            .collect();
        assert_eq!(ps.len(), 1, "{text}");
        ps.remove(0)
    }

    /// The key a paper has in a file or would get there: an entry of its
    /// DOI keeps its key, and so does one of its title under a key made
    /// from it; a new key is none the file declares (an entry the parser
    /// rejects too) nor one planned before it.
    #[test]
    fn planned_keys_follow_the_file() {
        let held = Entries::of_text(
            "@article{mine, title = {Other title}, doi = {10.1/b}}\n\
             @article{wu1997stochastic, title = {Stochastic Inversion Transduction Grammars}, year = 1997}\n\
             @misc{zens2003, note = {no title}}\n",
        );
        assert_eq!(held.entries().iter().map(|e| e.key.as_str()).collect::<Vec<_>>(), ["mine", "wu1997stochastic"]);
        assert_eq!(held.entry("mine").map(|e| e.work.doi.as_str()), Some("10.1/b"));
        let paper = |author: &str, year: i32, title: &str, doi: &str| Paper {
            authors: vec![author.into()],
            year: Some(year),
            title: title.into(),
            doi: doi.into(),
            ..Paper::default()
        };
        let by_doi = paper("Ann Other", 2020, "Some Paper", "10.1/B");
        let by_title = paper("Dekai Wu", 1997, "Stochastic inversion-transduction grammars", "");
        let zens = [paper("Richard Zens", 2003, "A comparative study", ""), paper("Richard Zens", 2003, "Another study", "")];
        assert_eq!(held.planned_keys([&by_doi, &by_title], KeyStyle::AuthorYearFirstword), ["mine", "wu1997stochastic"]);
        assert_eq!(held.planned_keys(&zens, KeyStyle::AuthorYear), ["zens2003a", "zens2003b"]);
        assert_eq!(plan("", &zens, KeyStyle::AuthorYear).1, [Exported::Added("zens2003".into()), Exported::Added("zens2003a".into())]);
        let key_of = export_keys(Some(std::sync::Arc::new(held)), KeyStyle::AuthorYear);
        assert_eq!(((*key_of)(&by_doi), (*key_of)(&zens[0])), ("mine".to_string(), "zens2003a".to_string()));
        assert_eq!((*export_keys(None, KeyStyle::AuthorYear))(&by_doi), "other2020", "no file: the key export makes");
    }

    #[test]
    fn plain_text_is_escaped_once() {
        assert_eq!(escape("Research & Development"), "Research \\& Development");
        assert_eq!(escape("50% of C# and snake_case cost $5 or $10"), "50\\% of C\\# and snake\\_case cost \\$5 or \\$10");
        assert_eq!(escape("Already \\& escaped, \\% and \\_ too"), "Already \\& escaped, \\% and \\_ too");
        assert_eq!(escape("{BERT} and {GPT}-2 for {IR}"), "{BERT} and {GPT}-2 for {IR}");
        assert_eq!(escape("a } b { c {d}"), "a  b  c {d}");
        assert_eq!(escape("Bounds for $\\alpha_1$-trees"), "Bounds for $\\alpha_1$-trees");
        assert_eq!(escape("x^2 ~ y \\ z"), "x\\textasciicircum{}2 \\textasciitilde{} y \\textbackslash{} z");
        assert_eq!(escape("a < b > c \"q\""), "a < b > c \"q\"");
    }

    /// A generated entry reads back as the text it was made from.
    #[test]
    fn generated_entries_read_back_as_the_same_text() {
        for title in ["Research & Development: 50% of C# in snake_case", "Costs $5 and $\\alpha$-trees", "x^2 ~ y < z", "A \\ backslash"] {
            let p = Paper {
                title: title.into(),
                authors: vec!["Jörg Müller".into()],
                year: Some(2020),
                venue: "R&D #1".into(),
                entry_type: "inproceedings".into(),
                ..Paper::default()
            };
            let text = entry_text(&p, "k");
            let back = read(&text);
            assert_eq!((back.title.as_str(), back.venue.as_str(), &back.authors), (title, "R&D #1", &p.authors), "{text}");
        }
    }

    /// ACM DL's entry, HTML and bare `%`, `#`, `_`, `^` in it: valid LaTeX
    /// out, the rest of the entry as it was, and the same text read back.
    #[test]
    fn an_acm_entry_is_written_as_latex_and_reads_back_the_same() {
        let original = r#"@inproceedings{10.1145/3077136.3080758,
author = {M&uuml;ller, J\"{o}rg and Smith, Ann},
title = {X-CLE<span class="smallcaps SmallerCapital">a</span>VER: {BERT} for <i>Search</i>},
booktitle = {Proceedings of the 40th International ACM SIGIR Conference on Research &amp; Development in Information Retrieval},
abstract = {Gains (p &lt; 0.05) in 70% of #P-hard cases<p>for snake_case and $a &lt; b$, \&amp; DL-Lite^{N}, see \url{http://x.org/a_b%20c}.</p>},
url = {https://x.org/?a=1&amp;b=2},
keywords = {R&amp;D, search},
month = jun,
year = {2017}
}"#;
        let repaired = latex_entry(original).unwrap();
        assert_eq!(
            repaired,
            r#"@inproceedings{10.1145/3077136.3080758,
author = {Müller, J\"{o}rg and Smith, Ann},
title = {X-CLEaVER: {BERT} for Search},
booktitle = {Proceedings of the 40th International ACM SIGIR Conference on Research \& Development in Information Retrieval},
abstract = {Gains (p < 0.05) in 70\% of \#P-hard cases for snake\_case and $a < b$, \& DL-Lite\textasciicircum{}{N}, see \url{http://x.org/a_b%20c}. },
url = {https://x.org/?a=1&b=2},
keywords = {R\&D, search},
month = jun,
year = {2017}
}"#
        );
        let before = read(original);
        assert_eq!(before.title, "X-CLEaVER: BERT for Search");
        let exported = entry_text(&before, "mueller2017x");
        assert!(exported.starts_with("@inproceedings{mueller2017x,\nauthor = {Müller"), "{exported}");
        let after = read(&exported);
        assert_eq!(after, Paper { id: after.id.clone(), key: after.key.clone(), bibtex: after.bibtex.clone(), ..before });
    }

    #[test]
    fn escaped_and_clean_values_are_not_escaped_again() {
        assert_eq!(
            latex_entry("@misc{k, title = {Search {&} Rescue \\&amp; R\\&D}}").as_deref(),
            Some("@misc{k, title = {Search {\\&} Rescue \\& R\\&D}}")
        );
        assert_eq!(latex_entry("@misc{k, title = {Clean {BERT} \\& 50\\% Title}, url = {http://a.b/c_d%20#e}, year = 2001}"), None);
        assert_eq!(
            latex_entry("@misc{k, title = \"A &quot;B&quot; C\"}").as_deref(),
            Some("@misc{k, title = \"A \\textquotedbl{}B\\textquotedbl{} C\"}")
        );
        assert_eq!(read("@misc{k, title = \"A \\textquotedbl{}B\\textquotedbl{} C\"}").title, "A \"B\" C");
    }
}
