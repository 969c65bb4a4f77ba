//! The local and global context of a draft, read from its prose
//! ([`super::prose`]): the sentence, paragraph or selection around the
//! cursor with `[CIT]` where the cursor is (what the editor and the
//! language server send with a request), the sentence a citation stands in
//! (what a check scores), and the draft's title and abstract.

use std::ops::Range;

use super::prose::{prose, squash, uncommented, words};
use crate::corpus::benchmark::CIT;
use crate::corpus::bibliography_names::front_matter;
use crate::corpus::citation_markup::{group_end, CiteGrammar, CiteSyntax};
use crate::evidence::sentences::split_sentences;

/// How much text around the cursor is the local context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContextMode {
    #[default]
    Sentence,
    Paragraph,
}

impl ContextMode {
    pub fn next(self) -> ContextMode {
        match self {
            ContextMode::Sentence => ContextMode::Paragraph,
            ContextMode::Paragraph => ContextMode::Sentence,
        }
    }
    pub fn label(self) -> &'static str {
        match self {
            ContextMode::Sentence => "sentence",
            ContextMode::Paragraph => "paragraph",
        }
    }
}

fn byte_of_char(s: &str, col: usize) -> usize {
    s.char_indices().nth(col).map_or(s.len(), |(b, _)| b)
}

/// The text of a selection (rows/cols in characters, end exclusive) with
/// `[CIT]` at its end.
pub fn selection_context(lines: &[String], start: (usize, usize), end: (usize, usize)) -> String {
    let mut parts = Vec::new();
    let last = end.0.min(lines.len().saturating_sub(1));
    for (row, line) in lines.iter().enumerate().take(last + 1).skip(start.0) {
        let from = if row == start.0 { byte_of_char(line, start.1) } else { 0 };
        let to = if row == end.0 { byte_of_char(line, end.1) } else { line.len() };
        parts.push(&line[from..to.max(from)]);
    }
    format!("{} {CIT}", parts.join(" ").trim_end())
}

/// The sentence or paragraph around `cursor` (row, column in characters)
/// of a draft read with `grammar`, read from its prose, with `[CIT]`
/// inserted at the cursor.
pub fn cursor_context(lines: &[String], cursor: (usize, usize), mode: ContextMode, grammar: &CiteGrammar) -> String {
    let text = lines.join("\n");
    let row = cursor.0.min(lines.len().saturating_sub(1));
    let at = lines.iter().take(row).map(|l| l.len() + 1).sum::<usize>() + lines.get(row).map_or(0, |l| byte_of_char(l, cursor.1));
    context_around(&prose(&text, grammar), at..at, mode)
}

/// The sentence or paragraph of `lines` around `cursor`, as the lines
/// read (the cursor's row: its run of lines that are not blank), with
/// `[CIT]` inserted at the cursor.
fn lines_context(lines: &[String], cursor: (usize, usize), mode: ContextMode) -> String {
    if lines.is_empty() {
        return CIT.to_string();
    }
    let row = cursor.0.min(lines.len() - 1);
    // The paragraph: the run of non-blank lines around the cursor row.
    let mut first = row;
    while first > 0 && !lines[first - 1].trim().is_empty() {
        first -= 1;
    }
    let mut last = row;
    while last + 1 < lines.len() && !lines[last + 1].trim().is_empty() {
        last += 1;
    }
    let mut text = String::new();
    for (r, line) in lines.iter().enumerate().take(last + 1).skip(first) {
        if r > first {
            text.push(' ');
        }
        if r == row {
            let b = byte_of_char(line, cursor.1);
            let before = &line[..b];
            // Right after a finished sentence, the citation belongs before its stop.
            match before.trim_end().strip_suffix(['.', '!', '?']) {
                Some(body) if !body.is_empty() => {
                    let stop = &before.trim_end()[body.len()..];
                    text.push_str(&format!("{body} {CIT}{stop}"));
                    text.push_str(&before[before.trim_end().len()..]);
                }
                _ => {
                    text.push_str(before);
                    text.push_str(CIT);
                }
            }
            text.push_str(&line[b..]);
        } else {
            text.push_str(line);
        }
    }
    let text = squash(&text);
    if mode == ContextMode::Paragraph {
        return text;
    }
    let sentences = split_sentences(&text, &[]);
    let at = text.find(CIT).unwrap_or(0);
    let idx = sentences.iter().position(|&(s, e)| at >= s && at < e.max(s + 1)).unwrap_or(sentences.len().saturating_sub(1));
    let Some(&(s, e)) = sentences.get(idx) else { return text };
    let sentence = &text[s..e];
    // "[CIT]" alone at the start of a new sentence belongs to the one before.
    if idx > 0 && sentence.trim() == CIT {
        let (ps, _) = sentences[idx - 1];
        return text[ps..e].to_string();
    }
    sentence.to_string()
}

/// How far before and after its citation a citing sentence is looked for
/// (bytes): a longer paragraph is read in part, so that each citation
/// reads a bounded part of the draft however long its paragraph.
pub const SENTENCE_REACH: usize = 2048;

/// The sentence a citation stands in, with `[CIT]` where its markup was
/// (`group`, a byte range of `prose`, removed): what a check scores the
/// cited papers against. `prose` is the draft's prose
/// ([`super::prose::read`]); a text read as it is works too.
pub fn citing_sentence(prose: &str, group: Range<usize>) -> String {
    context_around(prose, group, ContextMode::Sentence)
}

/// The sentence (or paragraph) of `prose` around `removed` (a byte range,
/// taken out), with `[CIT]` where it was; its whitespace collapsed. Only
/// the paragraph around it is read (a sentence never crosses a blank line,
/// and a heading leaves one), at most [`SENTENCE_REACH`] bytes either side.
pub fn context_around(prose: &str, removed: Range<usize>, mode: ContextMode) -> String {
    let start = floor_char_boundary(prose, removed.start.min(prose.len()));
    let end = floor_char_boundary(prose, removed.end.clamp(start, prose.len()));
    let removed = start..end;
    let (from, to) = paragraph_around(prose, &removed);
    let stripped = format!("{}{}", &prose[from..removed.start], &prose[removed.end..to]);
    let before = &stripped[..removed.start - from];
    let row = before.matches('\n').count();
    let col = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count();
    let lines: Vec<String> = stripped.lines().map(str::to_string).collect();
    lines_context(&lines, (row, col), mode)
}

/// The part of `group`'s paragraph its sentence is looked for in: from
/// the blank line before it and to the one after it (a line of nothing but
/// spaces is blank), or, past [`SENTENCE_REACH`], from the first line (else
/// word) that starts within reach and to the last that ends within it.
fn paragraph_around(text: &str, group: &Range<usize>) -> (usize, usize) {
    let lo = floor_char_boundary(text, group.start.saturating_sub(SENTENCE_REACH));
    let hi = floor_char_boundary(text, group.end.saturating_add(SENTENCE_REACH).min(text.len()));
    let before = &text[lo..group.start];
    let from = match last_blank_line(before) {
        Some(i) => lo + i,
        None if lo == 0 => 0,
        None => lo + before.find('\n').or_else(|| before.find(|c: char| c.is_ascii_whitespace())).map_or(0, |i| i + 1),
    };
    let after = &text[group.end..hi];
    let to = match first_blank_line(after) {
        Some(i) => group.end + i,
        None if hi == text.len() => text.len(),
        None => group.end + after.rfind('\n').or_else(|| after.rfind(|c: char| c.is_ascii_whitespace())).unwrap_or(after.len()),
    };
    (from, to)
}

/// Where the last whole line of `s` that is blank starts.
fn last_blank_line(s: &str) -> Option<usize> {
    let mut end = s.rfind('\n')?;
    loop {
        let start = s[..end].rfind('\n').map_or(0, |i| i + 1);
        if s[start..end].trim().is_empty() {
            return Some(start);
        }
        if start == 0 {
            return None;
        }
        end = start - 1;
    }
}

/// Where the line before the first blank line of `s` after its first line
/// ends (its line end).
fn first_blank_line(s: &str) -> Option<usize> {
    let mut start = s.find('\n')? + 1;
    loop {
        let end = s[start..].find('\n').map_or(s.len(), |i| start + i);
        if s[start..end].trim().is_empty() {
            return Some(start - 1);
        }
        if end == s.len() {
            return None;
        }
        start = end + 1;
    }
}

/// The largest character boundary of `s` at or before byte `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Title and abstract of a draft: LaTeX's `\title{…}` and `abstract`
/// environment (comments aside; their words as the prose reads them, with
/// `grammar`'s wrapper commands), or Markdown front matter's `title:` and
/// `abstract:`.
pub fn global_context(text: &str, grammar: &CiteGrammar) -> (String, String) {
    let mut title = String::new();
    let mut abstract_text = String::new();
    if text.contains('\\') {
        let latex = uncommented(text, CiteSyntax::Latex);
        let grammar = grammar.in_syntax(CiteSyntax::Latex);
        if let Some(t) = latex_title(&latex) {
            title = words(t, &grammar);
        }
        if let (Some(s), Some(e)) = (latex.find("\\begin{abstract}"), latex.find("\\end{abstract}")) {
            if s < e {
                abstract_text = words(&latex[s + "\\begin{abstract}".len()..e], &grammar);
            }
        }
    }
    if let Some(front) = front_matter(text) {
        if let Some(t) = front.first("title") {
            title = squash(t);
        }
        if let Some(a) = front.first("abstract") {
            abstract_text = squash(a);
        }
    }
    (title, abstract_text)
}

/// The argument of the first `\title` (after an optional `[…]`).
fn latex_title(latex: &str) -> Option<&str> {
    let b = latex.as_bytes();
    let mut from = 0;
    while let Some(i) = latex[from..].find("\\title").map(|i| from + i) {
        from = i + "\\title".len();
        if b.get(from).is_some_and(u8::is_ascii_alphabetic) {
            continue;
        }
        let mut k = from;
        while b.get(k).is_some_and(u8::is_ascii_whitespace) {
            k += 1;
        }
        if b.get(k) == Some(&b'[') {
            k = group_end(b, k, b'[', b']')?;
        }
        if b.get(k) == Some(&b'{') {
            let end = group_end(b, k, b'{', b'}')?;
            return Some(&latex[k + 1..end - 1]);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(t: &str) -> Vec<String> {
        t.lines().map(String::from).collect()
    }

    const LATEX: &CiteGrammar = &CiteGrammar::of(CiteSyntax::Latex);

    #[test]
    fn sentence_around_the_cursor() {
        let l = lines("Intro line.\n\nWe tag with TnT. It is fast and\naccurate on the WSJ. Next one.");
        // Cursor after "fast" on row 2 (column 27).
        assert_eq!(cursor_context(&l, (2, 27), ContextMode::Sentence, LATEX), "It is fast[CIT] and accurate on the WSJ.");
        assert_eq!(
            cursor_context(&l, (2, 27), ContextMode::Paragraph, LATEX),
            "We tag with TnT. It is fast[CIT] and accurate on the WSJ. Next one."
        );
        // Cursor at the end of a finished sentence.
        assert_eq!(cursor_context(&l, (2, 16), ContextMode::Sentence, LATEX), "We tag with TnT [CIT].");
    }

    #[test]
    fn unicode_columns_and_empty_drafts() {
        let l = lines("Müller’s café tagger");
        assert_eq!(cursor_context(&l, (0, 8), ContextMode::Sentence, LATEX), "Müller’s[CIT] café tagger");
        assert_eq!(cursor_context(&[], (0, 0), ContextMode::Sentence, LATEX), "[CIT]");
    }

    /// The editor's and the language server's query: the prose around the
    /// cursor, without the preamble, the heading above or the commands.
    #[test]
    fn the_context_at_the_cursor_is_read_from_the_prose() {
        let l = lines(
            "\\documentclass{article}\n\\title{Completion}\n\\begin{document}\n\\maketitle\n\\section{Introduction}\n\
             Query auto-completion suggests \\emph{whole} queries\\label{s}\nfor a prefix\n\\end{document}",
        );
        let row = l.iter().position(|x| x.starts_with("for")).unwrap();
        let said = "Query auto-completion suggests whole queries for a prefix[CIT]";
        assert_eq!(cursor_context(&l, (row, 12), ContextMode::Sentence, LATEX), said);
        assert_eq!(cursor_context(&l, (row, 12), ContextMode::Paragraph, LATEX), said);
        let md = lines("---\ntitle: T\n---\n# Intro\nWe tag words");
        assert_eq!(cursor_context(&md, (4, 12), ContextMode::Sentence, &CiteGrammar::of(CiteSyntax::Markdown)), "We tag words[CIT]");
    }

    #[test]
    fn the_citing_sentence_has_cit_where_the_citation_was() {
        let text = "Intro.\n\nTaggers are fast \\cite{a,b}. They are accurate \\cite{c}.\n";
        let at = text.find("\\cite{a").unwrap();
        assert_eq!(citing_sentence(text, at..at + 10), "Taggers are fast [CIT].");
        let at = text.find("\\cite{c").unwrap();
        assert_eq!(citing_sentence(text, at..at + 8), "They are accurate [CIT].");
    }

    /// A heading on the line before a citing sentence that has no blank
    /// line after it is not part of the sentence, nor is the preamble above.
    #[test]
    fn a_heading_ends_the_sentence_before_it() {
        let text = "\\documentclass{article}\n\\title{Query Completion}\n\\begin{document}\n\\maketitle\n\\section{Introduction}\n\
                    Query auto-completion ranks completions of a prefix \\cite{shokouhi2013}.\n\\bibliographystyle{plain}\n\
                    \\bibliography{refs}\n\\end{document}\n";
        let prose = super::super::prose::prose(text, LATEX);
        let at = text.find("\\cite").unwrap();
        let said = citing_sentence(&prose, at..at + "\\cite{shokouhi2013}".len());
        assert_eq!(said, "Query auto-completion ranks completions of a prefix [CIT].");
        // Read as it is, the sentence swallows the commands.
        assert!(citing_sentence(text, at..at + 19).contains("\\section{Introduction}"));
    }

    #[test]
    fn a_citing_sentence_reads_at_most_its_reach_of_a_long_paragraph() {
        // One paragraph of 100,000 citations and no full stop: the sentence
        // of each is looked for within its reach, not in the whole paragraph.
        let text = "tagging \\cite{k} ".repeat(100_000);
        let at = text.len() / 2 + text[text.len() / 2..].find("\\cite").unwrap();
        let s = citing_sentence(&text, at..at + 8);
        assert!(s.len() <= 2 * SENTENCE_REACH + 16, "{} bytes", s.len());
        assert!(s.contains("tagging [CIT] tagging"), "{s}");
        // Within reach, the whole paragraph, as before: the same sentence.
        let short = "Intro.\n\nWe tag \\cite{a}. It is\nfast \\cite{b}.\n\nNext.";
        let at = short.find("\\cite{b").unwrap();
        assert_eq!(citing_sentence(short, at..at + 8), "It is fast [CIT].");
        let long = format!("{}{short}{}", "Filler text here. ".repeat(200), " More filler.".repeat(200));
        let at = long.find("\\cite{b").unwrap();
        assert_eq!(citing_sentence(&long, at..at + 8), "It is fast [CIT].");
        // A long paragraph of lines is cut at line starts and ends: the same sentence.
        let lines =
            format!("{}Taggers are fast \\cite{{a}}.\n{}", "One sentence is here.\n".repeat(500), "Another one follows.\n".repeat(500));
        let at = lines.find("\\cite").unwrap();
        assert_eq!(citing_sentence(&lines, at..at + 8), "Taggers are fast [CIT].");
        // A line of spaces ends a paragraph as an empty one does.
        let spaced = "Heading text\n    \nWe tag \\cite{a}.";
        let at = spaced.find("\\cite").unwrap();
        assert_eq!(citing_sentence(spaced, at..at + 8), "We tag [CIT].");
    }

    #[test]
    fn selections() {
        let l = lines("alpha beta\ngamma delta");
        assert_eq!(selection_context(&l, (0, 6), (1, 5)), "beta gamma [CIT]");
    }

    #[test]
    fn global_context_from_latex_and_markdown() {
        let tex = "\\documentclass{article}\n% \\title{Old}\n\\title{Citing {TnT} \\emph{Well}}\n\
                   \\begin{abstract}\nWe study\n tagging.%note\n\\end{abstract}\nBody.";
        assert_eq!(global_context(tex, LATEX), ("Citing TnT Well".into(), "We study tagging.".into()));
        let md = "---\ntitle: \"A Markdown Draft\"\nabstract: Short.\n---\n# Intro\n";
        assert_eq!(global_context(md, LATEX), ("A Markdown Draft".into(), "Short.".into()));
        let crlf = "---\r\ntitle: Crlf\r\nabstract: |\r\n  Two\r\n  lines.\r\n---\r\nBody.";
        assert_eq!(global_context(crlf, LATEX), ("Crlf".into(), "Two lines.".into()));
        assert_eq!(global_context("plain", LATEX), (String::new(), String::new()));
    }
}
