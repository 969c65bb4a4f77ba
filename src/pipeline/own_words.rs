//! What a paper says itself, for when nothing in the evidence database
//! cites it: the sentences of its abstract that hold the most query terms.

use tantivy::tokenizer::TextAnalyzer;

use crate::evidence::sentences::split_sentences;
use crate::index::analyzer;

/// Abstract sentences kept per paper.
pub const OWN_SENTENCES: usize = 2;

/// The `n` sentences of `text` that hold the most of the (analyzed) query
/// `terms`, in their order in the text (the first ones when none holds any).
pub fn best_sentences(analyzer: &mut TextAnalyzer, text: &str, terms: &[String], n: usize) -> Vec<String> {
    let sentences: Vec<&str> = split_sentences(text, &[]).into_iter().map(|(s, e)| text[s..e].trim()).filter(|s| !s.is_empty()).collect();
    let mut scored: Vec<(usize, usize)> = sentences
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let found = analyzer::terms(analyzer, s);
            (i, terms.iter().filter(|t| found.contains(t)).count())
        })
        .collect();
    scored.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let mut keep: Vec<usize> = scored.into_iter().take(n).map(|(i, _)| i).collect();
    keep.sort_unstable();
    keep.into_iter().map(|i| sentences[i].to_string()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn abstract_sentences_that_match_the_query_come_first_in_text_order() {
        let mut a = analyzer::english();
        let text = "We present a tagger. It uses trigram statistics of tags. Parsing is not covered. Smoothing of trigram counts matters.";
        let terms: Vec<String> = ["trigram", "smooth", "count"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            best_sentences(&mut a, text, &terms, 2),
            ["It uses trigram statistics of tags.", "Smoothing of trigram counts matters."]
        );
        assert_eq!(best_sentences(&mut a, text, &[], 1), ["We present a tagger."]);
        assert!(best_sentences(&mut a, "", &terms, 2).is_empty());
    }
}
