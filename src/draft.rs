//! What a draft says around a citation, for every front end (the editor,
//! the language server): the local context sent with a request (the
//! sentence, paragraph or selection around the cursor, with `[CIT]` where
//! the cursor is) and the global context (the draft's title and abstract).

use crate::corpus::benchmark::CIT;
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
/// with `[CIT]` inserted at the cursor.
pub fn cursor_context(lines: &[String], cursor: (usize, usize), mode: ContextMode) -> String {
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
    let text = text.trim().to_string();
    if mode == ContextMode::Paragraph {
        return text;
    }
    let sentences = split_sentences(&text, &[]);
    let at = text.find(CIT).unwrap_or(0);
    let idx = sentences.iter().position(|&(s, e)| at >= s && at < e.max(s + 1)).unwrap_or(sentences.len().saturating_sub(1));
    let (s, e) = sentences[idx];
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
/// (`group`, a byte range of `text`, removed): what a check scores the
/// cited papers against.
pub fn citing_sentence(text: &str, group: std::ops::Range<usize>) -> String {
    // Only the paragraph around it is read (a sentence never crosses a blank line).
    let (from, to) = paragraph_around(text, &group);
    let stripped = format!("{}{}", &text[from..group.start], &text[group.end..to]);
    let before = &stripped[..group.start - from];
    let row = before.matches('\n').count();
    let col = before[before.rfind('\n').map_or(0, |i| i + 1)..].chars().count();
    let lines: Vec<String> = stripped.lines().map(str::to_string).collect();
    cursor_context(&lines, (row, col), ContextMode::Sentence)
}

/// The part of `group`'s paragraph its sentence is looked for in: from
/// the blank line before it and to the one after it, or, past
/// [`SENTENCE_REACH`], from the first line (else word) that starts within
/// reach and to the last that ends within it.
fn paragraph_around(text: &str, group: &std::ops::Range<usize>) -> (usize, usize) {
    let lo = floor_char_boundary(text, group.start.saturating_sub(SENTENCE_REACH));
    let hi = floor_char_boundary(text, group.end.saturating_add(SENTENCE_REACH).min(text.len()));
    let before = &text[lo..group.start];
    let from = match before.rfind("\n\n") {
        Some(i) => lo + i + 1,
        None if lo == 0 => 0,
        None => lo + before.find('\n').or_else(|| before.find(|c: char| c.is_ascii_whitespace())).map_or(0, |i| i + 1),
    };
    let after = &text[group.end..hi];
    let to = match after.find("\n\n") {
        Some(i) => group.end + i,
        None if hi == text.len() => text.len(),
        None => group.end + after.rfind('\n').or_else(|| after.rfind(|c: char| c.is_ascii_whitespace())).unwrap_or(after.len()),
    };
    (from, to)
}

/// The largest character boundary of `s` at or before byte `i`.
fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Title and abstract of a draft (LaTeX or Markdown front matter).
pub fn global_context(text: &str) -> (String, String) {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut title = String::new();
    let mut abstract_text = String::new();
    if let Some(i) = text.find("\\title{") {
        let rest = &text[i + 7..];
        let mut depth = 1;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(rest.len(), |(j, _)| j);
        title = squash(&rest[..end]);
    }
    if let (Some(s), Some(e)) = (text.find("\\begin{abstract}"), text.find("\\end{abstract}")) {
        if s < e {
            abstract_text = squash(&text[s + 16..e]);
        }
    }
    if let Some(front) = text.strip_prefix("---\n").and_then(|r| r.split("\n---").next()) {
        for line in front.lines() {
            if let Some(v) = line.strip_prefix("title:") {
                title = v.trim().trim_matches('"').to_string();
            } else if let Some(v) = line.strip_prefix("abstract:") {
                abstract_text = v.trim().trim_matches('"').to_string();
            }
        }
    }
    (title, abstract_text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(t: &str) -> Vec<String> {
        t.lines().map(String::from).collect()
    }

    #[test]
    fn sentence_around_the_cursor() {
        let l = lines("Intro line.\n\nWe tag with TnT. It is fast and\naccurate on the WSJ. Next one.");
        // Cursor after "fast" on row 2 (column 27).
        assert_eq!(cursor_context(&l, (2, 27), ContextMode::Sentence), "It is fast[CIT] and accurate on the WSJ.");
        assert_eq!(
            cursor_context(&l, (2, 27), ContextMode::Paragraph),
            "We tag with TnT. It is fast[CIT] and accurate on the WSJ. Next one."
        );
        // Cursor at the end of a finished sentence.
        assert_eq!(cursor_context(&l, (2, 16), ContextMode::Sentence), "We tag with TnT [CIT].");
    }

    #[test]
    fn unicode_columns_and_empty_drafts() {
        let l = lines("Müller’s café tagger");
        assert_eq!(cursor_context(&l, (0, 8), ContextMode::Sentence), "Müller’s[CIT] café tagger");
        assert_eq!(cursor_context(&[], (0, 0), ContextMode::Sentence), "[CIT]");
    }

    #[test]
    fn the_citing_sentence_has_cit_where_the_citation_was() {
        let text = "Intro.\n\nTaggers are fast \\cite{a,b}. They are accurate \\cite{c}.\n";
        let at = text.find("\\cite{a").unwrap();
        assert_eq!(citing_sentence(text, at..at + 10), "Taggers are fast [CIT].");
        let at = text.find("\\cite{c").unwrap();
        assert_eq!(citing_sentence(text, at..at + 8), "They are accurate [CIT].");
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
    }

    #[test]
    fn selections() {
        let l = lines("alpha beta\ngamma delta");
        assert_eq!(selection_context(&l, (0, 6), (1, 5)), "beta gamma [CIT]");
    }

    #[test]
    fn global_context_from_latex_and_markdown() {
        let tex = "\\documentclass{article}\n\\title{Citing {TnT} Well}\n\\begin{abstract}\nWe study\n tagging.\n\\end{abstract}\nBody.";
        assert_eq!(global_context(tex), ("Citing {TnT} Well".into(), "We study tagging.".into()));
        let md = "---\ntitle: \"A Markdown Draft\"\nabstract: Short.\n---\n# Intro\n";
        assert_eq!(global_context(md), ("A Markdown Draft".into(), "Short.".into()));
        assert_eq!(global_context("plain"), (String::new(), String::new()));
    }
}
