//! A draft's citations as a check reads them: each key with its place, and
//! the sentence its citation stands in, read from the draft's prose
//! ([`crate::draft::prose`]: no preamble, heading or command in it; a
//! commented-out citation is none). At most
//! [`crate::limits::CHECK_CITATIONS`] of them, each sentence read from a
//! bounded part of its paragraph and each column counted on from the last
//! citation of its line: reading a draft is linear in its length.

use std::ops::Range;

use crate::corpus::citation_markup::CiteGrammar;
use crate::draft::citing_sentence;

/// One cited key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Citation {
    pub key: String,
    /// The key's byte range.
    pub range: Range<usize>,
    /// 1-based line and column (characters).
    pub line: usize,
    pub column: usize,
    /// Its sentence in [`Draft::sentences`].
    pub sentence: usize,
}

/// One citation's sentence: the text with `[CIT]` where the citation
/// stands, and the keys that citation holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitingSentence {
    pub text: String,
    pub keys: Vec<String>,
}

/// What a draft cites.
#[derive(Debug, Clone, Default)]
pub struct Draft {
    /// The grammar it was read with (its syntax, its wrapper commands):
    /// what else reads its sentences reads them with it.
    pub grammar: CiteGrammar,
    pub citations: Vec<Citation>,
    pub sentences: Vec<CitingSentence>,
    /// Citations past the budget: counted, not read.
    pub left_out: usize,
    /// Citations whose keys could not be read (a `\cite` key list never
    /// closed in its paragraph, a key too long): the line each starts on,
    /// and why.
    pub unread: Vec<(usize, String)>,
    /// Those past the ones listed in `unread`: counted.
    pub unread_over: usize,
}

impl Draft {
    /// The draft's first [`crate::limits::CHECK_CITATIONS`] citations,
    /// read with `grammar`.
    pub fn read(text: &str, grammar: &CiteGrammar) -> Draft {
        Draft::read_up_to(text, grammar, crate::limits::CHECK_CITATIONS)
    }

    /// The draft's first `max` citations (the rest counted in `left_out`).
    pub fn read_up_to(text: &str, grammar: &CiteGrammar, max: usize) -> Draft {
        let crate::draft::Reading { scan, prose } = crate::draft::read(text, grammar, max);
        let mut draft = Draft { grammar: grammar.clone(), left_out: scan.keys_over, unread_over: scan.unread_over, ..Draft::default() };
        let mut lines = LineIndex::new(text);
        for group in scan.groups {
            let sentence = draft.sentences.len();
            let keys: Vec<String> = group.keys.iter().map(|(k, _)| k.clone()).collect();
            draft.sentences.push(CitingSentence { text: citing_sentence(&prose, group.range.clone()), keys });
            for (key, range) in group.keys {
                let (line, column) = lines.line_col(text, range.start);
                draft.citations.push(Citation { key, range, line, column, sentence });
            }
        }
        draft.unread = scan.unread.into_iter().map(|u| (lines.line_of(u.at), u.why)).collect();
        draft
    }

    /// Every citation the draft holds: those read and those past the budget.
    pub fn total(&self) -> usize {
        self.citations.len() + self.left_out
    }

    /// The distinct keys, in order of first citation.
    pub fn keys(&self) -> Vec<&str> {
        let mut seen = std::collections::HashSet::new();
        self.citations.iter().map(|c| c.key.as_str()).filter(|k| seen.insert(*k)).collect()
    }
}

/// Line starts of a text, for 1-based line and column numbers.
struct LineIndex {
    starts: Vec<usize>,
    /// The last place asked for (byte, line, column): a later place on its
    /// line is counted on from it, so a line of many citations is counted
    /// once, not once for each.
    last: (usize, usize, usize),
    /// Bytes whose characters were counted, in all.
    #[cfg(test)]
    counted: usize,
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        LineIndex {
            starts: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect(),
            last: (0, 0, 0),
            #[cfg(test)]
            counted: 0,
        }
    }

    /// The 1-based line of byte `at`.
    fn line_of(&self, at: usize) -> usize {
        self.starts.partition_point(|&s| s <= at).max(1)
    }

    /// The 1-based line and column (in characters) of byte `at`.
    fn line_col(&mut self, text: &str, at: usize) -> (usize, usize) {
        let line = self.line_of(at);
        let start = self.starts[line - 1];
        let (last_at, last_line, last_column) = self.last;
        let (from, column) = if last_line == line && (start..=at).contains(&last_at) { (last_at, last_column) } else { (start, 1) };
        let column = column + text[from..at].chars().count();
        #[cfg(test)]
        {
            self.counted += at - from;
        }
        self.last = (at, line, column);
        (line, column)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_lines_columns_and_sentences() {
        let text = "\\section{Intro}\n\nTaggers are fast \\cite{a, b}.\nThey are accurate \\citep{a}.\n";
        let d = Draft::read(text, &CiteGrammar::default());
        let places: Vec<(&str, usize, usize, usize)> = d.citations.iter().map(|c| (c.key.as_str(), c.line, c.column, c.sentence)).collect();
        assert_eq!(places, [("a", 3, 24, 0), ("b", 3, 27, 0), ("a", 4, 26, 1)]);
        assert_eq!(d.sentences[0].text, "Taggers are fast [CIT].");
        assert_eq!(d.sentences[0].keys, ["a", "b"]);
        assert_eq!(d.keys(), ["a", "b"]);
        assert_eq!((d.left_out, d.unread.len()), (0, 0));
    }

    /// The sentence scored is the author's: no preamble, heading, label or
    /// bibliography command in it, and a commented-out citation is none.
    #[test]
    fn sentences_are_read_from_the_prose() {
        let text = "\\documentclass{article}\n\\begin{document}\n\\section{Introduction}\n\
                    Query auto-completion ranks completions \\cite{a}.\\label{x}\n% \\cite{gone}\n\
                    It personalises them \\cite{b}.\n\\bibliographystyle{plain}\n\\bibliography{refs}\n\\end{document}\n";
        let d = Draft::read(text, &CiteGrammar::default());
        assert_eq!(d.keys(), ["a", "b"]);
        let sentences: Vec<&str> = d.sentences.iter().map(|s| s.text.as_str()).collect();
        assert_eq!(sentences, ["Query auto-completion ranks completions [CIT].", "It personalises them [CIT]."]);
        assert_eq!((d.citations[1].line, d.citations[1].column), (6, 28), "places are the text's");
    }

    #[test]
    fn a_line_of_many_citations_is_counted_once_for_their_columns() {
        let unit = "Über taggers \\cite{a} are fast. ";
        let text = unit.repeat(20_000);
        let mut lines = LineIndex::new(&text);
        let places: Vec<(usize, usize)> = text.match_indices("\\cite").map(|(i, _)| lines.line_col(&text, i)).collect();
        // "Über taggers " is 13 characters (14 bytes).
        assert_eq!(places[0], (1, 14));
        assert_eq!(places[19_999], (1, 19_999 * unit.chars().count() + 14));
        assert!(lines.counted <= text.len(), "{} bytes counted for a line of {}", lines.counted, text.len());
        // A place before the last one is counted from its line's start.
        assert_eq!(lines.line_col(&text, 0), (1, 1));
        let two = "ab\ncd \\cite{x}";
        let mut lines = LineIndex::new(two);
        assert_eq!((lines.line_col(two, 6), lines.line_col(two, 1), lines.line_col(two, 3)), ((2, 4), (1, 2), (2, 1)));
    }

    #[test]
    fn citations_past_the_budget_are_counted_and_unread_ones_said() {
        let text = format!("A \\cite{{a,b}} and \\cite{{c}}.\n\nB \\cite{{d}}.\n\nC \\cite{{{}\n\nD.", vec!["k"; 3000].join(","));
        let d = Draft::read_up_to(&text, &CiteGrammar::default(), 3);
        assert_eq!(d.keys(), ["a", "b", "c"]);
        assert_eq!((d.left_out, d.total()), (1, 4));
        assert_eq!(d.sentences.len(), 2);
        assert_eq!(d.unread, [(5, "`\\cite{…` is not closed before its paragraph ends: its keys are not read".to_string())]);
    }
}
