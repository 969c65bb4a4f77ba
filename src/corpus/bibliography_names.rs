//! The bibliography files a document names, read once for every reader:
//! LaTeX's `\bibliography{a,b}` (BibTeX adds `.bib`) and natbib's
//! `\nobibliography{…}`, biblatex's `\addbibresource{a.bib}` and
//! `\addglobalbib{…}`, Pandoc Markdown's front matter `bibliography:` (one
//! name, a `[a.bib, b.bib]` list, on one line or more, or a `- a.bib`
//! list), Typst's `#bibliography("x.bib")` and
//! `#bibliography(("a.bib", "b.bib"))`. Also the YAML front matter of a
//! Markdown document, as far as citewise reads it (`title`, `abstract`,
//! `bibliography`).
//!
//! A name is only a name here: [`crate::project::Project::resolve`] decides
//! which file it stands for. The draft model (`draft::Document`: the
//! language server, `check`, the editor) and the evidence readers
//! (`evidence::latex`, `evidence::markdown`) all take their names from
//! [`bibliography_names`]; no other module parses them.
//!
//! Every read is linear in the text: a command's argument is looked for
//! only up to the next brace, backslash or line end, within a bound.

use std::ops::Range;

use super::citation_markup::{skip_argument_space, CiteSyntax};

/// One bibliography file a document names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BibliographyName {
    /// As the document writes it (`refs`, `my refs.bib`).
    pub written: String,
    /// The file it stands for (`refs.bib` for `\bibliography{refs}`).
    pub file: String,
    /// The byte range of `written` in the text.
    pub range: Range<usize>,
}

/// The longest argument of a bibliography command read (bytes).
const MAX_ARGUMENT: usize = 4096;

/// The LaTeX commands that name bibliography files, and whether the name
/// gets `.bib` the way BibTeX adds it (always, unless it ends so) rather
/// than biblatex's way (the name is the file; `.bib` added only to a name
/// without any extension).
const LATEX_COMMANDS: &[(&str, bool)] =
    &[("bibliography", true), ("nobibliography", true), ("addbibresource", false), ("addglobalbib", false)];

/// The bibliography files `text` (written in `syntax`) names, in order:
/// LaTeX commands outside comments, Markdown front matter, Typst calls
/// outside comments. Remote resources (`http://…`) and empty names are
/// left out.
pub fn bibliography_names(text: &str, syntax: CiteSyntax) -> Vec<BibliographyName> {
    let mut names = match syntax {
        CiteSyntax::Latex => latex_names(text),
        CiteSyntax::Markdown => markdown_names(text),
        CiteSyntax::Typst => typst_names(text),
    };
    names.retain(|n| !n.file.is_empty() && !n.written.contains("://"));
    names
}

/// `.bib` added as the command adds it.
fn file_of(written: &str, bibtex: bool) -> String {
    let lower = written.to_ascii_lowercase();
    let last = written.rsplit(['/', '\\']).next().unwrap_or(written);
    if (bibtex && !lower.ends_with(".bib")) || (!bibtex && !last.contains('.')) {
        format!("{written}.bib")
    } else {
        written.to_string()
    }
}

/// The names of LaTeX's bibliography commands, read in one pass that
/// skips `%` comments (a `\%` is no comment) and escaped backslashes.
fn latex_names(text: &str) -> Vec<BibliographyName> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut comment = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => {
                comment = false;
                i += 1;
            }
            b'%' => {
                comment = true;
                i += 1;
            }
            b'\\' if !comment => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                if j == i + 1 {
                    // `\\`, `\%`, …: the escaped byte is not read again.
                    i += 2;
                    continue;
                }
                let name = &text[i + 1..j];
                let Some(&(_, bibtex)) = LATEX_COMMANDS.iter().find(|(n, _)| *n == name) else {
                    i = j;
                    continue;
                };
                match latex_argument(b, j) {
                    Some(arg) => {
                        out.extend(list_items(text, arg.clone(), ',').into_iter().map(|range| BibliographyName {
                            written: text[range.clone()].to_string(),
                            file: file_of(&text[range.clone()], bibtex),
                            range,
                        }));
                        i = arg.end + 1;
                    }
                    None => i = j,
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The inside of the braced argument of a command whose name ends at
/// `at`: after spaces, one line end and an optional `[…]` argument; it
/// holds no brace, backslash or `%`, and ends within [`MAX_ARGUMENT`].
fn latex_argument(b: &[u8], at: usize) -> Option<Range<usize>> {
    let mut k = skip_argument_space(b, at);
    if b.get(k) == Some(&b'[') {
        k = skip_argument_space(b, scan_to(b, k + 1, b']', b"[{}\\\n")? + 1);
    }
    if b.get(k) != Some(&b'{') {
        return None;
    }
    let close = scan_to(b, k + 1, b'}', b"{\\%")?;
    Some(k + 1..close)
}

/// The first `close` from `from`, before any byte of `stops` and within
/// [`MAX_ARGUMENT`] bytes.
fn scan_to(b: &[u8], from: usize, close: u8, stops: &[u8]) -> Option<usize> {
    let end = b.len().min(from.saturating_add(MAX_ARGUMENT));
    for (k, &c) in b.iter().enumerate().take(end).skip(from) {
        if c == close {
            return Some(k);
        }
        if stops.contains(&c) {
            return None;
        }
    }
    None
}

/// The items of a list (the bytes of `range` of `text`, split at `sep`
/// outside quotes), each trimmed of spaces and line ends and unquoted.
fn list_items(text: &str, range: Range<usize>, sep: char) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = range.start;
    let mut quote: Option<char> = None;
    for (k, c) in text[range.clone()].char_indices() {
        let at = range.start + k;
        match c {
            '"' | '\'' if quote == Some(c) => quote = None,
            '"' | '\'' if quote.is_none() && text[start..at].trim().is_empty() => quote = Some(c),
            c if c == sep && quote.is_none() => {
                out.push(unquoted(text, start..at));
                start = at + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(unquoted(text, start..range.end));
    out.retain(|r| !r.is_empty());
    out
}

/// `range` of `text` without the spaces around it and one pair of quotes.
fn unquoted(text: &str, range: Range<usize>) -> Range<usize> {
    let s = &text[range.clone()];
    let lead = s.len() - s.trim_start().len();
    let t = s.trim();
    let start = range.start + lead;
    for q in ['"', '\''] {
        if t.len() >= 2 && t.starts_with(q) && t.ends_with(q) {
            return start + 1..start + t.len() - 1;
        }
    }
    start..start + t.len()
}

/// The YAML front matter of a Markdown document, as far as citewise reads
/// it: each top-level key's values (a scalar: one; a `[…]` list, on one
/// line or several, or a `- item` list: each item; a `|` or `>` block: its
/// lines joined), with their byte ranges in the text.
/// A front matter key's values, each with its byte range in the text.
pub type Values = Vec<(String, Range<usize>)>;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FrontMatter {
    /// In the order written; a key given twice keeps its first values.
    pub entries: Vec<(String, Values)>,
    /// Where the body starts: after the closing `---` or `...` line.
    pub end: usize,
}

impl FrontMatter {
    /// The values of `key` (none: not there).
    pub fn values(&self, key: &str) -> Option<&[(String, Range<usize>)]> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_slice())
    }

    /// The first value of `key`.
    pub fn first(&self, key: &str) -> Option<&str> {
        self.values(key).and_then(|v| v.first()).map(|(s, _)| s.as_str())
    }
}

/// The lines of `text` from byte `from`: (start, the line without its line end).
fn lines_from(text: &str, from: usize) -> impl Iterator<Item = (usize, &str)> + '_ {
    let mut at = from;
    text[from..].split_inclusive('\n').map(move |line| {
        let start = at;
        at += line.len();
        (start, line.trim_end_matches(['\n', '\r']))
    })
}

/// The front matter at the start of `text` (a byte-order mark aside):
/// a `---` line, YAML, a `---` or `...` line; none when it is not there or
/// never closed.
pub fn front_matter(text: &str) -> Option<FrontMatter> {
    let from = if text.starts_with('\u{feff}') { '\u{feff}'.len_utf8() } else { 0 };
    let mut lines = lines_from(text, from);
    let (_, open) = lines.next()?;
    if open.trim_end() != "---" {
        return None;
    }
    let body: Vec<(usize, &str)> = lines.collect();
    let close = body.iter().position(|(_, l)| matches!(l.trim_end(), "---" | "..."))?;
    let end = body.get(close + 1).map_or(text.len(), |(s, _)| *s);
    let mut fm = FrontMatter { entries: Vec::new(), end };
    let yaml = &body[..close];
    let mut n = 0;
    while n < yaml.len() {
        let (start, line) = yaml[n];
        n += 1;
        if line.starts_with([' ', '\t', '-', '#']) || line.trim().is_empty() {
            continue;
        }
        let Some((key, _)) = line.split_once(':') else { continue };
        let value_at = start + key.len() + 1;
        let key = key.trim().to_string();
        let value = line[key_len(line) + 1..].trim();
        let values = if value.starts_with('[') {
            flow_list(text, value_at, yaml, &mut n)
        } else if matches!(value, "|" | ">" | "|-" | ">-" | "|+" | ">+") {
            block_scalar(yaml, &mut n)
        } else if value.is_empty() || value.starts_with('#') {
            block_list(text, yaml, &mut n)
        } else {
            let range = unquoted(text, value_at..start + line.len());
            vec![(text[range.clone()].to_string(), range)]
        };
        if fm.values(&key).is_none() {
            fm.entries.push((key, values));
        }
    }
    Some(fm)
}

/// The bytes of a `key:` line before its colon.
fn key_len(line: &str) -> usize {
    line.find(':').unwrap_or(line.len())
}

/// A `[a, b]` list that starts at or after `from` and may go on over the
/// next lines of `yaml` (taken from `n` on).
fn flow_list(text: &str, from: usize, yaml: &[(usize, &str)], n: &mut usize) -> Vec<(String, Range<usize>)> {
    let Some(open) = text[from..].find('[').map(|i| from + i) else { return Vec::new() };
    let mut last_end = yaml.get(n.wrapping_sub(1)).map_or(text.len(), |(s, l)| s + l.len());
    let mut close = text[open..last_end].find(']').map(|i| open + i);
    // A list never closed ends where the next key begins (`title: [unclosed`
    // does not swallow the `bibliography:` line after it).
    while close.is_none() && *n < yaml.len() && !is_key_line(yaml[*n].1) {
        let (s, l) = yaml[*n];
        *n += 1;
        last_end = s + l.len();
        close = text[s..last_end].find(']').map(|i| s + i);
    }
    let end = close.unwrap_or(last_end);
    list_items(text, open + 1..end, ',').into_iter().map(|r| (text[r.clone()].to_string(), r)).collect()
}

/// Whether `line` begins a top-level `key:` (at its first column).
fn is_key_line(line: &str) -> bool {
    let Some((key, _)) = line.split_once(':') else { return false };
    !key.is_empty()
        && key.chars().next().is_some_and(|c| c.is_alphanumeric() || c == '_')
        && key.chars().all(|c| c.is_alphanumeric() || "_- ".contains(c))
}

/// The `- item` lines that follow a `key:` with no value.
fn block_list(text: &str, yaml: &[(usize, &str)], n: &mut usize) -> Vec<(String, Range<usize>)> {
    let mut out = Vec::new();
    while let Some(&(start, line)) = yaml.get(*n) {
        let trimmed = line.trim_start();
        let Some(item) = trimmed.strip_prefix('-') else { break };
        if !(item.is_empty() || item.starts_with([' ', '\t'])) {
            break;
        }
        *n += 1;
        let at = start + (line.len() - trimmed.len()) + 1;
        let range = unquoted(text, at..start + line.len());
        if !range.is_empty() {
            out.push((text[range.clone()].to_string(), range));
        }
    }
    out
}

/// The indented lines of a `|` or `>` block, joined by spaces, as one value
/// (its range: from the first line's text to the last's end).
fn block_scalar(yaml: &[(usize, &str)], n: &mut usize) -> Vec<(String, Range<usize>)> {
    let mut parts = Vec::new();
    let mut range: Option<Range<usize>> = None;
    while let Some(&(start, line)) = yaml.get(*n) {
        if !(line.starts_with([' ', '\t']) || line.trim().is_empty()) {
            break;
        }
        *n += 1;
        if line.trim().is_empty() {
            continue;
        }
        parts.push(line.trim());
        let lead = line.len() - line.trim_start().len();
        let r = range.get_or_insert(start + lead..start + line.len());
        r.end = start + line.len();
    }
    range.map(|r| vec![(parts.join(" "), r)]).unwrap_or_default()
}

/// The front matter's `bibliography:` names.
fn markdown_names(text: &str) -> Vec<BibliographyName> {
    let Some(fm) = front_matter(text) else { return Vec::new() };
    fm.values("bibliography")
        .unwrap_or_default()
        .iter()
        .map(|(name, range)| BibliographyName { written: name.clone(), file: name.clone(), range: range.clone() })
        .collect()
}

/// The names of Typst's `#bibliography(…)` calls outside `//` and `/* */`
/// comments: a string, or a tuple of strings.
fn typst_names(text: &str) -> Vec<BibliographyName> {
    const CALL: &str = "#bibliography(";
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") && (i == 0 || b[i - 1] != b':') {
            i = text[i..].find('\n').map_or(b.len(), |k| i + k + 1);
        } else if b[i..].starts_with(b"/*") {
            i = text[i + 2..].find("*/").map_or(b.len(), |k| i + 2 + k + 2);
        } else if b[i..].starts_with(CALL.as_bytes()) {
            i += CALL.len();
            let mut k = skip_spaces(b, i);
            let tuple = b.get(k) == Some(&b'(');
            if tuple {
                k += 1;
            }
            loop {
                k = skip_spaces(b, k);
                if b.get(k) != Some(&b'"') {
                    break;
                }
                let Some(close) = scan_to(b, k + 1, b'"', b"\n") else { break };
                let range = k + 1..close;
                out.push(BibliographyName { written: text[range.clone()].to_string(), file: text[range.clone()].to_string(), range });
                k = skip_spaces(b, close + 1);
                if !tuple || b.get(k) != Some(&b',') {
                    break;
                }
                k += 1;
            }
            i = k.max(i);
        } else {
            i += 1;
        }
    }
    out
}

fn skip_spaces(b: &[u8], mut k: usize) -> usize {
    while b.get(k).is_some_and(|c| c.is_ascii_whitespace()) {
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(text: &str, syntax: CiteSyntax) -> Vec<String> {
        bibliography_names(text, syntax).into_iter().map(|n| n.file).collect()
    }

    #[test]
    fn latex_commands_name_every_file_outside_comments() {
        let text = "\\documentclass{article}\n\\addbibresource[label=x]{lib/x.bib}\n% \\bibliography{commented}\n\\addglobalbib{global}\n\
                    Text 50\\% done \\bibliography{refs, more.bib,\n  third}\n\\bibliographystyle{plain}\n\\\\bibliography{notacommand}";
        assert_eq!(files(text, CiteSyntax::Latex), ["lib/x.bib", "global.bib", "refs.bib", "more.bib", "third.bib"]);
        let names = bibliography_names(text, CiteSyntax::Latex);
        for n in &names {
            assert_eq!(&text[n.range.clone()], n.written, "{n:?}");
        }
        assert_eq!(files("\\addbibresource{notes.txt} \\bibliography{my.refs}", CiteSyntax::Latex), ["notes.txt", "my.refs.bib"]);
        assert_eq!(files("\\addbibresource[location=remote]{http://x.org/a.bib}\\bibliography{}", CiteSyntax::Latex), Vec::<String>::new());
        // Never closed, or a command in the way: no name, and no long read.
        let open = "\\bibliography{".repeat(100_000);
        assert!(files(&open, CiteSyntax::Latex).is_empty());
    }

    #[test]
    fn front_matter_names_a_file_or_a_list_of_them() {
        let scalar = "---\ntitle: \"A draft\"\nbibliography: \"my refs.bib\"\n---\nBody";
        assert_eq!(files(scalar, CiteSyntax::Markdown), ["my refs.bib"]);
        let flow = "---\nbibliography: [a.bib, \"b, c.bib\"]\n---\n";
        assert_eq!(files(flow, CiteSyntax::Markdown), ["a.bib", "b, c.bib"]);
        let lines = "---\r\nbibliography: [a.bib,\r\n   b.bib]\r\ntitle: T\r\n...\r\nBody";
        assert_eq!(files(lines, CiteSyntax::Markdown), ["a.bib", "b.bib"]);
        let dashes = "\u{feff}---\nbibliography:\n  - a.bib\n- 'b.bib'\nabstract: |\n  One\n  two.\n---\n";
        assert_eq!(files(dashes, CiteSyntax::Markdown), ["a.bib", "b.bib"]);
        let fm = front_matter(dashes).unwrap();
        assert_eq!(fm.first("abstract"), Some("One two."));
        assert_eq!(fm.end, dashes.len());
        for n in bibliography_names(dashes, CiteSyntax::Markdown) {
            assert_eq!(&dashes[n.range.clone()], n.written);
        }
        assert!(front_matter("---\nbibliography: a.bib\nnever closed").is_none());
        // A list never closed ends where the next key begins.
        let unclosed = "---\ntitle: [unclosed\nbibliography: missing.bib\n---\n";
        assert_eq!(files(unclosed, CiteSyntax::Markdown), ["missing.bib"]);
        assert!(files("no front matter\nbibliography: a.bib", CiteSyntax::Markdown).is_empty());
    }

    #[test]
    fn typst_calls_name_a_file_or_a_tuple() {
        assert_eq!(files("#bibliography(\"works.bib\", style: \"apa\")", CiteSyntax::Typst), ["works.bib"]);
        assert_eq!(files("// #bibliography(\"no.bib\")\n#bibliography((\"a.bib\", \"b.yml\"))", CiteSyntax::Typst), ["a.bib", "b.yml"]);
        assert_eq!(files("see https://x.org #bibliography(\"c.bib\")", CiteSyntax::Typst), ["c.bib"]);
    }
}
