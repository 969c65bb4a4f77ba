//! Citation markers in running text: the target `[CIT]`, numeric brackets
//! (`[12]`, `[3, 4–6]`, `[2,[CIT]]`), parenthetical author–year citations
//! (`(Collins, 1999; Charniak 2000a)`) and narrative ones (`Gamon (2010)`,
//! `Pak and Paroubek (2010)`, `Brill et al. (1995)`).

use std::sync::LazyLock;

use regex::Regex;

/// A marker found in a sentence, as a byte range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Marker {
    pub start: usize,
    pub end: usize,
    /// Papers this marker cites, when known (empty: an unresolved citation).
    pub cited: Vec<String>,
}

static NUMERIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\[\s*(?:(?:\d{1,4}|\[CIT\])\s*(?:[,;–-]\s*)?)+\]").expect("a valid pattern"));
static PAREN_AUTHOR_YEAR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\((?:[^()]*?[A-Z][^()]*?,?\s*(?:1[89]|20)\d\d[a-z]?\b[^()]*?)\)").expect("a valid pattern"));
static NARRATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z][\p{L}'’-]+(?:\s+(?:and|&)\s+[A-Z][\p{L}'’-]+|\s+et\s+al\.?,?)?\s*\(\s*(?:1[89]|20)\d\d[a-z]?\s*\)")
        .expect("a valid pattern")
});
static TARGET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[CIT\]").expect("a valid pattern"));

/// Finds markers in `text`. `[CIT]` markers (alone or inside a numeric
/// bracket) cite `target`; every other marker cites nothing known.
/// Overlapping matches keep the earliest, longest one.
pub fn find_markers(text: &str, target: &[String]) -> Vec<Marker> {
    let mut found: Vec<Marker> = Vec::new();
    let mut push = |start: usize, end: usize, cited: Vec<String>| found.push(Marker { start, end, cited });
    for m in NUMERIC.find_iter(text) {
        let cited = if m.as_str().contains("[CIT]") { target.to_vec() } else { Vec::new() };
        push(m.start(), m.end(), cited);
    }
    for m in TARGET.find_iter(text) {
        push(m.start(), m.end(), target.to_vec());
    }
    for m in PAREN_AUTHOR_YEAR.find_iter(text) {
        let cited = if m.as_str().contains("[CIT]") { target.to_vec() } else { Vec::new() };
        push(m.start(), m.end(), cited);
    }
    for m in NARRATIVE.find_iter(text) {
        push(m.start(), m.end(), Vec::new());
    }
    resolve_overlaps(found)
}

/// Sorts markers and drops those overlapping an earlier (or longer) one.
pub fn resolve_overlaps(mut found: Vec<Marker>) -> Vec<Marker> {
    found.sort_by(|a, b| a.start.cmp(&b.start).then(b.end.cmp(&a.end)));
    let mut out: Vec<Marker> = Vec::with_capacity(found.len());
    for m in found {
        match out.last_mut() {
            Some(last) if m.start < last.end => {
                // Nested inside (or overlapping) the previous one: merge targets.
                for c in m.cited {
                    if !last.cited.contains(&c) {
                        last.cited.push(c);
                    }
                }
                last.end = last.end.max(m.end);
            }
            _ => out.push(m),
        }
    }
    out
}

/// Removes every marker and leftover citation from `text` (used to
/// normalise spans).
pub fn strip_markers(text: &str) -> String {
    let markers = find_markers(text, &[]);
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for m in markers {
        out.push_str(&text[last..m.start]);
        out.push(' ');
        last = m.end;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spans(text: &str) -> Vec<(&str, bool)> {
        find_markers(text, &["p".to_string()]).into_iter().map(|m| (&text[m.start..m.end], !m.cited.is_empty())).collect()
    }

    #[test]
    fn finds_each_marker_style() {
        assert_eq!(spans("using TnT [CIT] trained on"), [("[CIT]", true)]);
        assert_eq!(spans("a threshold of acceptability [2,[CIT]]."), [("[2,[CIT]]", true)]);
        assert_eq!(spans("as in [12] and [3, 4–6]"), [("[12]", false), ("[3, 4–6]", false)]);
        assert_eq!(spans("PropBank (Palmer et al, 2005 ) and NomBank [CIT] projects"), [("(Palmer et al, 2005 )", false), ("[CIT]", true)]);
        assert_eq!(spans("[CIT] and Gamon (2010) used"), [("[CIT]", true), ("Gamon (2010)", false)]);
        assert_eq!(spans("Recent examples are [CIT] and Pak and Paroubek (2010)."), [("[CIT]", true), ("Pak and Paroubek (2010)", false)]);
        assert_eq!(spans("(Collins, 1999; Charniak 2000a)"), [("(Collins, 1999; Charniak 2000a)", false)]);
        assert_eq!(spans("the Duden ( [CIT] ) ."), [("[CIT]", true)]);
    }

    #[test]
    fn plain_parentheses_and_numbers_are_not_markers() {
        assert!(spans("pointwise Mutual Information ( MI ) with 3,000 verbs (see Table 2)").is_empty());
        assert!(spans("between 10 and 2,000 tokens (in 2010 numbers)").is_empty());
    }

    #[test]
    fn stripping_leaves_the_words() {
        let s = strip_markers("NomBank (Meyers et al., 2004) and Brill (1995) tag [3].");
        assert_eq!(s.split_whitespace().collect::<Vec<_>>().join(" "), "NomBank and tag .");
    }
}
