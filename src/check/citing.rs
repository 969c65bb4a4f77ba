//! A draft's citations as a check reads them: each key with its place, and
//! the sentence its citation stands in.

use std::ops::Range;

use crate::corpus::citation_markup::{citation_groups, CiteSyntax};
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
    pub citations: Vec<Citation>,
    pub sentences: Vec<CitingSentence>,
}

impl Draft {
    pub fn read(text: &str, syntax: CiteSyntax) -> Draft {
        let mut draft = Draft::default();
        let mut lines = LineIndex::new(text);
        for group in citation_groups(text, syntax) {
            let sentence = draft.sentences.len();
            let keys: Vec<String> = group.keys.iter().map(|(k, _)| k.clone()).collect();
            draft.sentences.push(CitingSentence { text: citing_sentence(text, group.range.clone()), keys });
            for (key, range) in group.keys {
                let (line, column) = lines.line_col(text, range.start);
                draft.citations.push(Citation { key, range, line, column, sentence });
            }
        }
        draft
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
}

impl LineIndex {
    fn new(text: &str) -> LineIndex {
        LineIndex { starts: std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect() }
    }

    fn line_col(&mut self, text: &str, at: usize) -> (usize, usize) {
        let line = self.starts.partition_point(|&s| s <= at).max(1);
        let start = self.starts[line - 1];
        (line, text[start..at].chars().count() + 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_have_lines_columns_and_sentences() {
        let text = "\\section{Intro}\n\nTaggers are fast \\cite{a, b}.\nThey are accurate \\citep{a}.\n";
        let d = Draft::read(text, CiteSyntax::Latex);
        let places: Vec<(&str, usize, usize, usize)> = d.citations.iter().map(|c| (c.key.as_str(), c.line, c.column, c.sentence)).collect();
        assert_eq!(places, [("a", 3, 24, 0), ("b", 3, 27, 0), ("a", 4, 26, 1)]);
        assert_eq!(d.sentences[0].text, "Taggers are fast [CIT].");
        assert_eq!(d.sentences[0].keys, ["a", "b"]);
        assert_eq!(d.keys(), ["a", "b"]);
    }
}
