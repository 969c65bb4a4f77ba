//! The English analyzer shared by indexing and querying: split on
//! non-alphanumerics, lower-case, fold accents, drop stop words, stem
//! (Snowball English).

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, TokenStream,
};

/// Name under which the analyzer is registered with tantivy.
pub const EN: &str = "citewise_en";

/// Lucene's English stop words.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it", "no", "not", "of", "on", "or", "such",
    "that", "the", "their", "then", "there", "these", "they", "this", "to", "was", "will", "with",
];

/// Builds the analyzer. Single-character tokens (the "s" of "Müller's",
/// stray digits) are dropped with the stop words.
pub fn english() -> TextAnalyzer {
    let singles = ('a'..='z').chain('0'..='9').map(String::from);
    let stop = StopWordFilter::remove(STOP_WORDS.iter().map(|w| w.to_string()).chain(singles));
    TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(40))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(stop)
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Query terms beyond this many distinct ones are dropped (keeps very long
/// queries within the latency budget).
pub const MAX_QUERY_TERMS: usize = 512;

/// Distinct analyzed terms of a text in first-seen order, at most
/// [`MAX_QUERY_TERMS`].
pub fn distinct_terms(analyzer: &TextAnalyzer, text: &str) -> Vec<String> {
    counted_terms(analyzer, text).into_iter().map(|(t, _)| t).collect()
}

/// Analyzed terms of a text with how often each occurs, in first-seen
/// order, at most [`MAX_QUERY_TERMS`] distinct ones. BM25 sums a term's
/// score once per occurrence in the query, so a word a paragraph repeats
/// weighs more than one it mentions once.
pub fn counted_terms(analyzer: &TextAnalyzer, text: &str) -> Vec<(String, u32)> {
    let mut a = analyzer.clone();
    let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let mut out: Vec<(String, u32)> = Vec::new();
    for t in terms(&mut a, text) {
        match at.get(&t) {
            Some(&i) => out[i].1 += 1,
            None if out.len() < MAX_QUERY_TERMS => {
                at.insert(t.clone(), out.len());
                out.push((t, 1));
            }
            None => {}
        }
    }
    out
}

/// Lucene's BM25 idf of a term found in `df` of `n` documents.
pub fn bm25_idf(n: f32, df: f32) -> f32 {
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// Analyzes text into index terms, in order, duplicates kept.
pub fn terms(analyzer: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stream = analyzer.token_stream(text);
    while stream.advance() {
        out.push(stream.token().text.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stems_lowercases_folds_and_drops_stop_words() {
        let mut a = english();
        assert_eq!(terms(&mut a, "The Taggers are tagging Müller's corpora"), ["tagger", "tag", "muller", "corpora"]);
        assert!(terms(&mut a, "the of and").is_empty());
        // As the reference BM25 (bm25s with Snowball): hyphenated words split,
        // possessive `s` and single characters dropped, numbers of two or more
        // digits kept; LaTeX command names are words like any other.
        assert_eq!(
            terms(&mut a, "part-of-speech taggers' F1 in 2004 \\emph{CRFs}"),
            ["part", "speech", "tagger", "f1", "2004", "emph", "crfs"]
        );
    }

    #[test]
    fn counted_terms_count_repeats_in_first_seen_order() {
        let a = english();
        let counted = counted_terms(&a, "Parsing with parsers: the parser parses trees, and trees grow.");
        assert_eq!(counted, [("pars".to_string(), 2), ("parser".to_string(), 2), ("tree".to_string(), 2), ("grow".to_string(), 1)]);
        let long: String = (0..MAX_QUERY_TERMS + 10).map(|i| format!("w{i} ")).collect();
        assert_eq!(counted_terms(&a, &long).len(), MAX_QUERY_TERMS);
    }
}
