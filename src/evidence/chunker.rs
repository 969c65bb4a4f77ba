//! A small rule-based chunker for the entity mention a citation attaches to:
//! "using TnT [CIT] trained on" → "TnT"; "focused on extractive
//! summarization [CIT]" → "extractive summarization"; "the Penn Treebank
//! [CIT]" → "Penn Treebank".
//!
//! It walks left from the citation over at most [`MAX_WORDS`] words and stops
//! at punctuation, function words, verbs recognisable by their ending, and
//! numbers.

/// The longest mention kept.
pub const MAX_WORDS: usize = 4;

/// Words that never belong to a mention (determiners, prepositions,
/// pronouns, auxiliaries, common citing verbs and adverbs).
const STOP: &[&str] = &[
    "a",
    "an",
    "the",
    "this",
    "that",
    "these",
    "those",
    "its",
    "their",
    "our",
    "his",
    "her",
    "my",
    "your",
    "of",
    "in",
    "on",
    "at",
    "by",
    "for",
    "with",
    "from",
    "to",
    "into",
    "onto",
    "over",
    "under",
    "via",
    "per",
    "as",
    "than",
    "like",
    "about",
    "between",
    "through",
    "within",
    "without",
    "across",
    "after",
    "before",
    "and",
    "or",
    "but",
    "nor",
    "both",
    "either",
    "neither",
    "not",
    "no",
    "also",
    "only",
    "even",
    "then",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "has",
    "have",
    "had",
    "do",
    "does",
    "did",
    "can",
    "could",
    "may",
    "might",
    "will",
    "would",
    "shall",
    "should",
    "must",
    "we",
    "i",
    "you",
    "he",
    "she",
    "it",
    "they",
    "them",
    "us",
    "which",
    "who",
    "whom",
    "whose",
    "where",
    "when",
    "use",
    "uses",
    "using",
    "used",
    "see",
    "cf",
    "e.g",
    "i.e",
    "eg",
    "ie",
    "etc",
    "al",
    "et",
    "following",
    "follow",
    "follows",
    "proposed",
    "propose",
    "proposes",
    "introduced",
    "introduce",
    "introduces",
    "described",
    "describe",
    "describes",
    "based",
    "such",
    "other",
    "others",
    "previous",
    "prior",
    "recent",
    "recently",
    "earlier",
    "work",
    "works",
    "study",
    "studies",
    "paper",
    "papers",
    "approach",
    "approaches",
    "method",
    "methods",
    "some",
    "many",
    "most",
    "several",
    "various",
    "all",
    "each",
    "more",
    "less",
    "well",
    "known",
    "called",
    "named",
    "so",
    "here",
    "there",
    "however",
    "thus",
    "therefore",
    "instead",
    "available",
    "existing",
    "popular",
    "original",
    "same",
    "similar",
    "new",
    "novel",
    "first",
    "state-of-the-art",
    "well-known",
    "off-the-shelf",
    "widely-used",
];

/// The mention that ends right before byte `end` of `text`, if any.
pub fn mention_before(text: &str, end: usize) -> Option<String> {
    let left = text[..end].trim_end();
    let mut words: Vec<&str> = Vec::new();
    for raw in left.rsplit(char::is_whitespace) {
        if raw.is_empty() {
            continue;
        }
        // A word ending in punctuation closes the mention (it belongs to a
        // previous clause); so does one that starts with an opening bracket.
        let ends_clause = raw.ends_with([',', ';', ':', '.', '!', '?', ')', ']', '"', '”']);
        if ends_clause && !words.is_empty() || (ends_clause && words.is_empty() && !raw.ends_with([')', ']'])) {
            break;
        }
        let w = raw.trim_matches(|c: char| !c.is_alphanumeric() && c != '-' && c != '+');
        if w.is_empty() || is_boundary(w) {
            break;
        }
        words.push(w);
        if raw.starts_with(['(', '[', '"', '“']) || words.len() == MAX_WORDS {
            break;
        }
    }
    words.reverse();
    (!words.is_empty()).then(|| words.join(" "))
}

fn is_boundary(word: &str) -> bool {
    let lower = word.to_lowercase();
    if STOP.contains(&lower.as_str()) || word.chars().all(|c| c.is_ascii_digit() || c == '.' || c == ',') {
        return true;
    }
    // Verb forms and adverbs, by ending, unless capitalised (names such as
    // "WordNet" or "Tagged" in a title-cased resource name stay in).
    let capitalised = word.chars().next().is_some_and(char::is_uppercase);
    !capitalised && lower.len() > 4 && (lower.ends_with("ed") || lower.ends_with("ly"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_cit(s: &str) -> Option<String> {
        mention_before(s, s.find("[CIT]").unwrap())
    }

    #[test]
    fn mentions() {
        assert_eq!(at_cit("using TnT [CIT] trained on WSJ").as_deref(), Some("TnT"));
        assert_eq!(at_cit("Earlier work focused on extractive summarization [CIT].").as_deref(), Some("extractive summarization"));
        assert_eq!(at_cit("trained on the Penn Treebank [CIT]").as_deref(), Some("Penn Treebank"));
        assert_eq!(at_cit("the rule-based tagger of Brill [CIT].").as_deref(), Some("Brill"));
        assert_eq!(at_cit("conditional random fields (CRFs) [CIT] are").as_deref(), Some("CRFs"));
        assert_eq!(at_cit("The PropBank and NomBank [CIT] projects").as_deref(), Some("NomBank"));
        assert_eq!(at_cit("We use a maximum entropy model [CIT]").as_deref(), Some("maximum entropy model"));
    }

    #[test]
    fn no_mention_after_function_words_or_punctuation() {
        assert_eq!(at_cit("as described in [CIT]"), None);
        assert_eq!(at_cit("[CIT] argues that"), None);
        assert_eq!(at_cit("as shown previously, [CIT]"), None);
        assert_eq!(at_cit("was recently proposed [CIT]"), None);
    }

    #[test]
    fn long_chunks_are_capped() {
        assert_eq!(at_cit("a very large scale neural language model toolkit [CIT]").as_deref(), Some("neural language model toolkit"));
    }
}
