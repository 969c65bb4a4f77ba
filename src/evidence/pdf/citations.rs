//! In-text citations of a PDF's running text, resolved to its reference
//! entries: numeric (`[12]`, `[3-5, 9]`, superscripts the layout turned
//! into brackets), bracketed labels (`[Kogure 90]`), and author–year,
//! parenthetical (`(Chieu and Ng, 2002; Lee 2010a)`) or narrative
//! (`Sproat et al. (1996)`, `Collins (1999, 2003)`).

use std::collections::HashMap;
use std::sync::LazyLock;

use regex::Regex;

use super::references::{ListStyle, YEAR};
use crate::corpus::work::fold;
use crate::evidence::document::{Citation, Reference};

static NUMERIC: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[\s*\d{1,3}(?:\s*[-–—,;]\s*\d{1,3})*\s*\]").expect("a valid pattern"));
static BRACKET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[([^\[\]]{1,60})\]").expect("a valid pattern"));
static PAREN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\(([^()]{0,400}?\b(?:1[89]\d\d|20\d\d)[a-z]?\b[^()]{0,200}?)\)|\[([^\[\]]{0,400}?\b(?:1[89]\d\d|20\d\d)[a-z]?\b[^\[\]]{0,200}?)\]").expect("a valid pattern")
});
/// A narrative citation: names, then years in parentheses.
static NARRATIVE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?:\b(?:[Vv]an|[Vv]on|[Dd]e|[Dd]el|[Dd]i|[Dd]u|[Ll]e)\s+)?\b\p{Lu}[\p{L}'’\-]+(?:(?:,\s*|\s+)(?:\p{Lu}[\p{L}'’\-]+,?\s+)*(?:and|&)\s+(?:[Vv]an\s+|[Dd]e\s+)?\p{Lu}[\p{L}'’\-]+|\s+et\s*al\.?,?|\s+and\s+colleagues)?\s*[(\[]\s*((?:1[89]\d\d|20\d\d)[a-z]?(?:\s*[,;]\s*(?:(?:1[89]\d\d|20\d\d)[a-z]?|\p{Lu}[^()\[\]]{0,40}?(?:1[89]\d\d|20\d\d)[a-z]?))*)\s*[)\]]",
    )
    .expect("a valid pattern")
});
static LEADING_LABEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\[([^\[\]]{1,24})\]").expect("a valid pattern"));
static NAME: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\p{Lu}[\p{L}'’\-]+").expect("a valid pattern"));

/// Words before a year that are not names.
const NOT_NAMES: &[&str] = &[
    "see",
    "e.g",
    "eg",
    "cf",
    "i.e",
    "also",
    "and",
    "et",
    "al",
    "for",
    "example",
    "instance",
    "in",
    "the",
    "by",
    "as",
    "inter",
    "alia",
    "following",
    "but",
    "like",
    "such",
    "et al",
    "this",
    "our",
    "table",
    "figure",
    "section",
    "version",
    "proc",
    "proceedings",
    "both",
    "among",
    "others",
    "especially",
    "here",
    "which",
    "work",
    "recently",
    "earlier",
    "later",
    "an",
    "a",
    "is",
    "was",
    "on",
    "at",
    "of",
    "with",
    "to",
    "from",
    "we",
    "it",
];

/// Particles of family names, left out when comparing them.
const PARTICLES: &[&str] = &["van", "von", "de", "der", "den", "del", "della", "di", "du", "da", "dos", "le", "la", "ter", "ten"];

/// The reference list, indexed for resolving citations.
pub struct RefIndex<'a> {
    refs: &'a [Reference],
    style: ListStyle,
    by_label: HashMap<String, usize>,
    by_year: HashMap<i32, Vec<usize>>,
}

impl<'a> RefIndex<'a> {
    pub fn new(refs: &'a [Reference], style: ListStyle) -> RefIndex<'a> {
        let mut by_label = HashMap::new();
        let mut by_year: HashMap<i32, Vec<usize>> = HashMap::new();
        for (i, r) in refs.iter().enumerate() {
            if !r.label.is_empty() {
                by_label.entry(label_key(&r.label)).or_insert(i);
            } else if let Some(c) = LEADING_LABEL.captures(&r.raw) {
                // "[Kogure 90] K. Kogure. ..." in a list read as author–year.
                by_label.entry(label_key(&c[1])).or_insert(i);
            }
            if let Some(y) = r.year {
                by_year.entry(y).or_default().push(i);
            }
        }
        RefIndex { refs, style, by_label, by_year }
    }

    /// The entry an author–year citation names: same year (and suffix when
    /// given), first author's family name, and the second's when named.
    /// `etal`: the citation says "et al." (three authors or more); without
    /// it, as many authors as it names are preferred ("Nivre (2008)" is
    /// Nivre's own paper of 2008, not Nivre, Boguslavsky and Iomdin's).
    fn author_year(&self, names: &[String], etal: bool, year: i32, suffix: Option<char>) -> Option<usize> {
        let first = names.first()?;
        let candidates = self.by_year.get(&year)?;
        let mut best: Option<(usize, u32)> = None;
        for &i in candidates {
            let r = &self.refs[i];
            if suffix.is_some() && r.year_suffix.is_some() && r.year_suffix != suffix {
                continue;
            }
            let Some(lead) = r.surnames.first() else { continue };
            let mut score = if name_matches(lead, first) {
                4
            } else if r.surnames.iter().skip(1).any(|s| name_matches(s, first))
                || fold(&r.raw.chars().take(40).collect::<String>()).contains(first.as_str()) && first.len() >= 4
            {
                1
            } else {
                continue;
            };
            if let Some(second) = names.get(1) {
                score += r.surnames.iter().skip(1).any(|s| name_matches(s, second)) as u32 * 2;
            }
            if suffix.is_some() && r.year_suffix == suffix {
                score += 1;
            }
            let authors = r.surnames.len();
            if etal && authors >= 3 || !etal && authors == names.len() {
                score += 2;
            }
            if best.is_none_or(|(_, s)| score > s) {
                best = Some((i, score));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Finds the citations of a paragraph.
    pub fn find(&self, text: &str) -> Vec<Citation> {
        let mut out: Vec<Citation> = Vec::new();
        if self.refs.is_empty() {
            return out;
        }
        if self.style != ListStyle::AuthorYear {
            for m in NUMERIC.find_iter(text) {
                let refs = expand_numbers(m.as_str()).into_iter().filter_map(|n| self.by_label.get(&n.to_string()).copied()).collect();
                out.push(Citation { start: m.start(), end: m.end(), refs });
            }
        }
        // Bracketed labels ("[Kogure 90]"), in any list that has them.
        if !self.by_label.is_empty() {
            for c in BRACKET.captures_iter(text) {
                let m = c.get(0).expect("group 0 is the match");
                if out.iter().any(|o| o.start <= m.start() && m.start() < o.end) {
                    continue;
                }
                let refs: Vec<usize> = c[1].split([',', ';']).filter_map(|part| self.by_label.get(&label_key(part)).copied()).collect();
                if !refs.is_empty() {
                    out.push(Citation { start: m.start(), end: m.end(), refs });
                }
            }
        }
        // Author–year citations are looked for in every style (numbered
        // lists sometimes come with them too).
        for c in PAREN.captures_iter(text) {
            let m = c.get(0).expect("group 0 is the match");
            if out.iter().any(|o| m.start() < o.end && o.start < m.end()) {
                continue;
            }
            let inner = c.get(1).or(c.get(2)).expect("one of the two groups").as_str();
            let refs = self.parenthetical(inner);
            if !refs.is_empty() || looks_like_citation(inner) {
                out.push(Citation { start: m.start(), end: m.end(), refs });
            }
        }
        for c in NARRATIVE.captures_iter(text) {
            let m = c.get(0).expect("group 0 is the match");
            if out.iter().any(|o| m.start() < o.end && o.start < m.end()) {
                continue;
            }
            let names_part = &text[m.start()..c.get(1).expect("group 1").start()];
            let names = names_of(names_part);
            let etal = says_et_al(names_part);
            let mut refs = Vec::new();
            for item in c[1].split([',', ';']) {
                if let Some(y) = YEAR.captures(item) {
                    let inner_names = names_of(&item[..y.get(0).expect("group 0 is the match").start()]);
                    let (use_names, use_etal) = if inner_names.is_empty() {
                        (&names, etal)
                    } else {
                        (&inner_names, says_et_al(&item[..y.get(0).expect("group 0 is the match").start()]))
                    };
                    let suffix = y.get(2).and_then(|s| s.as_str().chars().next());
                    if let Some(i) = y[1].parse().ok().and_then(|yr| self.author_year(use_names, use_etal, yr, suffix)) {
                        if !refs.contains(&i) {
                            refs.push(i);
                        }
                    }
                }
            }
            out.push(Citation { start: m.start(), end: m.end(), refs });
        }
        out.sort_by_key(|c| (c.start, std::cmp::Reverse(c.end)));
        let mut merged: Vec<Citation> = Vec::new();
        for c in out {
            match merged.last_mut() {
                Some(last) if c.start < last.end => {
                    for r in c.refs {
                        if !last.refs.contains(&r) {
                            last.refs.push(r);
                        }
                    }
                    last.end = last.end.max(c.end);
                }
                _ => merged.push(c),
            }
        }
        merged
    }

    /// `Chieu and Ng, 2002; Lee 2010a, 2011` → the entries named.
    fn parenthetical(&self, inner: &str) -> Vec<usize> {
        let mut refs = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let mut etal = false;
        for item in inner.split(';') {
            let mut last_end = 0;
            for y in YEAR.captures_iter(item) {
                let m = y.get(0).expect("group 0 is the match");
                let before = &item[last_end..m.start()];
                let found = names_of(before);
                if !found.is_empty() {
                    names = found;
                    etal = says_et_al(before);
                }
                last_end = m.end();
                let suffix = y.get(2).and_then(|s| s.as_str().chars().next());
                if let Some(i) = y[1].parse().ok().and_then(|yr| self.author_year(&names, etal, yr, suffix)) {
                    if !refs.contains(&i) {
                        refs.push(i);
                    }
                }
            }
        }
        refs
    }
}

/// Whether a citation's names end in "et al." (or "and colleagues").
fn says_et_al(s: &str) -> bool {
    let l = s.to_lowercase();
    l.contains("et al") || l.contains("and colleagues")
}

/// Whether a parenthesis holds a citation nobody could resolve (names and
/// a year), as opposed to "(in 2010 numbers)".
fn looks_like_citation(inner: &str) -> bool {
    inner.split(';').any(|item| YEAR.find(item).is_some_and(|y| !names_of(&item[..y.start()]).is_empty()))
}

/// Family names in the text before a year: "Chieu and Ng," → [chieu, ng];
/// "Sproat et al." → [sproat]; "van Halteren et al." → [halteren].
pub fn names_of(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for m in NAME.find_iter(s) {
        let f = fold(m.as_str());
        if f.len() < 2 || NOT_NAMES.contains(&f.as_str()) {
            continue;
        }
        // A capitalised word directly after "et al." or a sentence-like
        // word is not a name; keep only the ones before the year.
        out.push(f);
    }
    // Name particles ("Van Halteren" is filed under Halteren).
    out.retain(|n| !PARTICLES.contains(&n.as_str()));
    out
}

fn name_matches(entry: &str, cited: &str) -> bool {
    if entry == cited {
        return true;
    }
    // Compound and particle names: "vanhalteren" vs "halteren".
    if entry.len() >= 5 && cited.len() >= 5 && (entry.ends_with(cited) || cited.ends_with(entry)) {
        return true;
    }
    // OCR or hyphenation noise in a long name: one character, two in
    // longer ones ("rn" read for "m").
    let bound = if entry.len() >= 8 && cited.len() >= 8 { 2 } else { 1 };
    entry.len() >= 6 && cited.len() >= 6 && edit_distance(entry, cited, bound) <= bound
}

/// Levenshtein distance, stopping early above `bound` (returns bound + 1).
fn edit_distance(a: &str, b: &str, bound: usize) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if a.len().abs_diff(b.len()) > bound {
        return bound + 1;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            cur[j] = (prev[j - 1] + (a[i - 1] != b[j - 1]) as usize).min(prev[j] + 1).min(cur[j - 1] + 1);
        }
        if cur.iter().min().copied().unwrap_or(0) > bound {
            return bound + 1;
        }
        prev = cur;
    }
    prev[b.len()].min(bound + 1)
}

/// `[3-5, 9]` → 3, 4, 5, 9 (ranges capped at 50 numbers).
fn expand_numbers(s: &str) -> Vec<u32> {
    let inner = s.trim_matches(|c| c == '[' || c == ']');
    let mut out = Vec::new();
    for part in inner.split([',', ';']) {
        let bounds: Vec<u32> = part.split(['-', '–', '—']).filter_map(|n| n.trim().parse().ok()).collect();
        match bounds.as_slice() {
            [a] => out.push(*a),
            [a, b] if b >= a && b - a <= 50 => out.extend(*a..=*b),
            _ => {}
        }
    }
    out
}

/// Labels compare without case, spaces or punctuation.
fn label_key(s: &str) -> String {
    s.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::pdf::references::fill_fields;

    fn refs(raws: &[&str]) -> Vec<Reference> {
        raws.iter()
            .map(|r| {
                let mut x = Reference { raw: r.to_string(), ..Default::default() };
                fill_fields(&mut x);
                x
            })
            .collect()
    }

    fn found(idx: &RefIndex, text: &str) -> Vec<(String, Vec<usize>)> {
        idx.find(text).into_iter().map(|c| (text[c.start..c.end].to_string(), c.refs)).collect()
    }

    #[test]
    fn author_year_citations_resolve() {
        let r = refs(&[
            "Chieu, Hai Leong and Hwee Tou Ng. 2002. Named entity recognition: A maximum entropy approach.",
            "Chieu, Hai Leong and Hwee Tou Ng. 2003. Named entity recognition with a maximum entropy approach.",
            "Lee, K. 2010a. First. In ACL.",
            "Lee, K. 2010b. Second. In ACL.",
            "Sproat, R., C. Shih, W. Gale, and N. Chang. 1996. A stochastic finite-state word-segmentation algorithm.",
            "van Halteren, H., J. Zavrel, and W. Daelemans. 1998. Improving data driven wordclass tagging.",
            "Collins, M. 1999. Head-driven statistical models. PhD thesis.",
            "Collins, M. 2003. Head-driven statistical models for natural language parsing.",
            "Nivre, J., I. Boguslavsky, and L. Iomdin. 2008. Parsing the SynTagRus treebank.",
            "Nivre, J. 2008. Algorithms for deterministic incremental dependency parsing.",
        ]);
        let idx = RefIndex::new(&r, ListStyle::AuthorYear);
        assert_eq!(
            found(&idx, "neither global features (Chieu and Ng, 2002) nor contexts (Chieu and Ng, 2003; Lee 2010b) can help."),
            [("(Chieu and Ng, 2002)".into(), vec![0]), ("(Chieu and Ng, 2003; Lee 2010b)".into(), vec![1, 3])]
        );
        assert_eq!(found(&idx, "Sproat et al. (1996) segment words."), [("Sproat et al. (1996)".into(), vec![4])]);
        assert_eq!(found(&idx, "as in van Halteren et al. (1998)."), [("van Halteren et al. (1998)".into(), vec![5])]);
        assert_eq!(found(&idx, "Collins (1999, 2003) parses."), [("Collins (1999, 2003)".into(), vec![6, 7])]);
        assert_eq!(
            found(&idx, "as Collins [1999] and [Lee, 2010a] show"),
            [("Collins [1999]".into(), vec![6]), ("[Lee, 2010a]".into(), vec![2])]
        );
        assert_eq!(found(&idx, "(e.g., Sproat et al., 1996)"), [("(e.g., Sproat et al., 1996)".into(), vec![4])]);
        assert_eq!(found(&idx, "as noted in Nivre (2008)")[0].1, [9], "one name: the single-author paper");
        assert_eq!(found(&idx, "(Nivre et al., 2008)")[0].1, [8]);
        assert_eq!(found(&idx, "between 10 and 2,000 tokens (in 2010 numbers)"), []);
        assert_eq!(found(&idx, "a method (Unknown, 2005) here")[0].1, Vec::<usize>::new(), "found but unresolved");
    }

    #[test]
    fn numeric_and_labelled_citations_resolve() {
        let mut r = refs(&["A. One. 1990.", "B. Two. 1991.", "C. Three. 1992.", "D. Four. 1993.", "K. Kogure. 1990."]);
        for (i, x) in r.iter_mut().enumerate() {
            x.label = (i + 1).to_string();
        }
        r[4].label = "Kogure 90".into();
        let idx = RefIndex::new(&r, ListStyle::Bracketed);
        assert_eq!(found(&idx, "tagged [1-3] or untagged [4, 2] text"), [("[1-3]".into(), vec![0, 1, 2]), ("[4, 2]".into(), vec![3, 1])]);
        assert_eq!(found(&idx, "as noticed by [Kogure 90], copying"), [("[Kogure 90]".into(), vec![4])]);
        assert_eq!(found(&idx, "the set [a, b] of"), []);
    }

    #[test]
    fn ocr_noise_in_names_is_tolerated() {
        let r = refs(&["Gerdemann, D. and P. J. King. 1994. The correct and efficient implementation."]);
        let idx = RefIndex::new(&r, ListStyle::AuthorYear);
        assert_eq!(found(&idx, "(Gerdernann and King, 1994)")[0].1, [0]);
    }
}
