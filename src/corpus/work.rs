//! Work identity: when two records are one work. A library can hold one
//! paper under two records: the same paper imported from two sources, or a
//! reference list's bare record beside the full one (the benchmark pool
//! holds 921 titles twice). The evidence linker (the records a reference's
//! paper also has), the fused list (one entry per work), an evaluation (what
//! counts as finding the cited paper) and its leakage guard (the citing
//! paper's own records) all ask this one rule.
//!
//! Two records are one work when their titles are the same, letters and
//! digits compared (so "noun-phrase" and "nounphrase" agree), at least
//! [`MIN_TITLE_CHARS`] of them, their years are no more than one apart (or
//! one is unknown), and they do not carry two different DOIs: two DOIs are
//! two publications, even under one title (a paper in Findings and again in
//! a workshop; ACM's "Session details: Keynote address" of each conference).
//! [`Strictness::Loose`] also takes a title a letter or two in twenty-five
//! off (a typo, a lost hyphen) and ignores DOIs: what a guard leaves out,
//! erring on the side of more. [`Strictness::Title`] is a reference's own
//! title against the records a search found: the same words, however
//! short, years agreeing.
//!
//! Inside one bibliography file a key already ties an entry to its work:
//! there an entry and a record are one work when they carry one DOI or the
//! same title's words ([`Identity::is`]): what export takes for an entry
//! already there and what the front ends take for a paper the draft cites.
//!
//! Titles are compared through the normalisers here alone: [`title_key`]
//! (letters and digits), [`title_words`] (the same, word by word) and
//! [`fold`] (accents folded too).
//!
//! **Invariant:** no other module compares two records' titles, years or
//! DOIs to decide they are one work, or normalises a title of its own.

use super::Paper;

/// Titles shorter than this (letters and digits) are too generic
/// ("Introduction") to say two records are one work.
pub const MIN_TITLE_CHARS: usize = 20;

/// How close two records must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// The same title (letters and digits), years at most one apart, not
    /// two DOIs.
    Exact,
    /// A title a letter or two in twenty-five off, years at most one apart,
    /// DOIs not compared.
    Loose,
    /// The same title's words ([`title_words`]), however short, years at
    /// most one apart, DOIs not compared: a reference's own title (a
    /// BibTeX entry's) against the records a search for it found, its DOI
    /// having been looked up first.
    Title,
}

impl Strictness {
    /// Whether `title` can identify a work at this strictness (long
    /// enough: a record with a shorter one is one work with no other).
    pub fn identifies(self, title: &str) -> bool {
        match self {
            Strictness::Exact => title_key(title).chars().count() >= MIN_TITLE_CHARS,
            Strictness::Loose => fold(title).chars().count() >= MIN_TITLE_CHARS,
            Strictness::Title => true,
        }
    }
}

/// Whether records `a` and `b` are one work.
pub fn same_work(a: &Paper, b: &Paper, strictness: Strictness) -> bool {
    if !years_agree(a.year, b.year) {
        return false;
    }
    match strictness {
        Strictness::Exact => {
            let t = title_key(&a.title);
            t.chars().count() >= MIN_TITLE_CHARS && t == title_key(&b.title) && !two_dois(a, b)
        }
        Strictness::Loose => titles_close(&a.title, &b.title),
        Strictness::Title => title_words(&a.title) == title_words(&b.title),
    }
}

/// Whether a title can identify a work at all (long enough, letters and
/// digits counted): [`Strictness::Exact`]'s bound.
pub fn identifying_title(title: &str) -> bool {
    Strictness::Exact.identifies(title)
}

/// A title's letters and digits, in lower case: what two records of one
/// work share.
pub fn title_key(title: &str) -> String {
    title.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

/// A title's words (its runs of letters and digits), in lower case, one
/// space between them: [`title_key`] that keeps where words end ("noun
/// phrase" is not "nounphrase"), for finding a title among the words of a
/// reference and for [`Strictness::Title`] and [`Identity`].
pub fn title_words(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    for w in title.split(|c: char| !c.is_alphanumeric()) {
        if w.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&w.to_lowercase());
    }
    out
}

/// Whether two DOIs are one: both given, equal but for case.
pub fn same_doi(a: &str, b: &str) -> bool {
    !a.is_empty() && !b.is_empty() && a.eq_ignore_ascii_case(b)
}

/// What a bibliography file identifies an entry's work by: its DOI and its
/// title's words. Inside one bibliography the entry's key already ties it
/// to its work, so a title counts however short and years are not
/// compared ([`Identity::is`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub doi: String,
    /// [`title_words`] of its title.
    pub title: String,
}

impl Identity {
    pub fn of(p: &Paper) -> Identity {
        Identity { doi: p.doi.clone(), title: title_words(&p.title) }
    }

    /// Both carry one DOI ([`same_doi`]).
    pub fn same_doi(&self, other: &Identity) -> bool {
        same_doi(&self.doi, &other.doi)
    }

    /// Their titles have the same words.
    pub fn same_title(&self, other: &Identity) -> bool {
        self.title == other.title
    }

    /// One work, as a bibliography holds it: one DOI, or the same title.
    pub fn is(&self, other: &Identity) -> bool {
        self.same_doi(other) || self.same_title(other)
    }
}

/// Years at most one apart (a preprint and its publication; a conference
/// dated by submission), or either unknown.
pub fn years_agree(a: Option<i32>, b: Option<i32>) -> bool {
    a.zip(b).is_none_or(|(x, y)| (x - y).abs() <= 1)
}

/// Both records carry a DOI, and not the same one.
fn two_dois(a: &Paper, b: &Paper) -> bool {
    !a.doi.is_empty() && !b.doi.is_empty() && !same_doi(&a.doi, &b.doi)
}

/// The family name of a display name: "Dekai Wu" → "Wu", "Wu, Dekai" →
/// "Wu", "Gertjan van Noord" → "Noord" (as "van Noord (1997)" is read).
pub fn family_name(author: &str) -> &str {
    match author.split_once(',') {
        Some((family, _)) => family.split_whitespace().last().unwrap_or(""),
        None => author.split_whitespace().last().unwrap_or(""),
    }
}

/// Whether the first authors of `a` and `b` are one person as far as the
/// records say (family names compared folded; an unknown first author
/// agrees with anyone).
pub fn first_authors_agree(a: &Paper, b: &Paper) -> bool {
    match (a.authors.first(), b.authors.first()) {
        (Some(x), Some(y)) => {
            let (x, y) = (fold(family_name(x)), fold(family_name(y)));
            x.is_empty() || y.is_empty() || x == y
        }
        _ => true,
    }
}

/// Whether two titles name one work: the same letters and digits, or
/// [`titles_close`].
pub fn titles_agree(a: &str, b: &str) -> bool {
    title_key(a) == title_key(b) || titles_close(a, b)
}

/// Two titles long enough to identify a work, a letter or two in
/// twenty-five apart (a typo, a lost hyphen): [`Strictness::Loose`]'s rule.
pub fn titles_close(a: &str, b: &str) -> bool {
    let (ta, tb): (Vec<char>, Vec<char>) = (fold(a).chars().collect(), fold(b).chars().collect());
    ta.len() >= MIN_TITLE_CHARS
        && tb.len().abs_diff(ta.len()) <= ta.len() / 25 + 1
        && approx_find(&tb, &ta, (ta.len() / 25).max(1)).is_some()
}

/// Whether a record is a preprint: an arXiv, bioRxiv/medRxiv, SSRN or
/// Research Square DOI, or a venue that names a preprint server (CoRR is
/// arXiv's name in DBLP).
pub fn is_preprint(p: &Paper) -> bool {
    const DOI_PREFIXES: [&str; 4] = ["10.48550/", "10.1101/", "10.2139/ssrn", "10.21203/rs."];
    let doi = p.doi.to_ascii_lowercase();
    if DOI_PREFIXES.iter().any(|d| doi.starts_with(d)) {
        return true;
    }
    let venue = fold(&p.venue);
    venue == "corr"
        || ["arxiv", "biorxiv", "medrxiv", "ssrn"].iter().any(|v| venue.starts_with(v))
        || venue.contains("preprint")
        || p.entry_type == "unpublished"
}

/// Lower case, accents folded, letters and digits only: for comparing
/// names and titles that may differ in accents and punctuation.
pub fn fold(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars().flat_map(char::to_lowercase) {
        let base = match c {
            'á' | 'à' | 'â' | 'ä' | 'ã' | 'å' | 'ā' => 'a',
            'é' | 'è' | 'ê' | 'ë' | 'ē' | 'ė' => 'e',
            'í' | 'ì' | 'î' | 'ï' | 'ı' => 'i',
            'ó' | 'ò' | 'ô' | 'ö' | 'õ' | 'ø' | 'ō' => 'o',
            'ú' | 'ù' | 'û' | 'ü' | 'ū' => 'u',
            'ç' | 'ć' | 'č' => 'c',
            'ñ' | 'ń' => 'n',
            'š' | 'ś' => 's',
            'ž' | 'ź' | 'ż' => 'z',
            'ý' | 'ÿ' => 'y',
            c if c.is_alphanumeric() => c,
            _ => continue,
        };
        out.push(base);
    }
    out
}

/// The fewest edits with which `pattern` occurs somewhere in `text`, if at
/// most `k` (Sellers' approximate substring search).
pub fn approx_find(text: &[char], pattern: &[char], k: usize) -> Option<usize> {
    let m = pattern.len();
    if m == 0 {
        return Some(0);
    }
    let mut col: Vec<usize> = (0..=m).collect();
    let mut best = col[m];
    for &tc in text {
        let mut diag = col[0];
        col[0] = 0;
        for i in 1..=m {
            let up = col[i];
            col[i] = (diag + (pattern[i - 1] != tc) as usize).min(up + 1).min(col[i - 1] + 1);
            diag = up;
        }
        best = best.min(col[m]);
    }
    (best <= k).then_some(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper(title: &str, year: Option<i32>, doi: &str) -> Paper {
        Paper { title: title.into(), year, doi: doi.into(), ..Paper::default() }
    }

    #[test]
    fn one_work_by_title_year_and_doi() {
        let a = paper("Noun-phrase chunking with transformation-based learning", Some(1995), "");
        let exact = |b: &Paper| same_work(&a, b, Strictness::Exact);
        assert!(exact(&paper("Noun phrase chunking with transformation based learning", Some(1996), "")));
        assert!(exact(&paper("NOUN-PHRASE CHUNKING WITH TRANSFORMATION-BASED LEARNING", None, "10.1/x")));
        assert!(!exact(&paper("Noun-phrase chunking with transformation-based learning", Some(1997), "")), "two years apart");
        let with_doi = paper(&a.title, Some(1995), "10.1/x");
        assert!(!same_work(&with_doi, &paper(&a.title, Some(1995), "10.1/y"), Strictness::Exact), "two DOIs");
        assert!(same_work(&with_doi, &paper(&a.title, Some(1995), "10.1/X"), Strictness::Exact), "DOIs ignore case");
        assert!(!exact(&paper("Noun-phrase chunking with transformation-based learnin", Some(1995), "")), "a letter off");
        assert!(same_work(&a, &paper("Noun-phrase chunking with transformation-based learnin", Some(1995), ""), Strictness::Loose));
        assert!(same_work(&with_doi, &paper(&a.title, Some(1995), "10.1/y"), Strictness::Loose), "a guard ignores DOIs");
        let short = paper("Introduction", Some(2000), "");
        assert!(!same_work(&short, &short.clone(), Strictness::Exact), "too short to identify");
        assert!(!same_work(&short, &short.clone(), Strictness::Loose));
        assert!(years_agree(None, Some(1)) && years_agree(Some(2000), Some(2001)) && !years_agree(Some(2000), Some(2002)));
    }

    /// A reference's own title: the same words, however short, years
    /// agreeing; word ends count ("noun phrase" is not "nounphrase").
    #[test]
    fn a_title_as_a_reference_gives_it() {
        let tnt = paper("TnT -- A Statistical Part-of-Speech Tagger.", Some(2000), "");
        let title = |t: &str, year: Option<i32>| same_work(&tnt, &paper(t, year, ""), Strictness::Title);
        assert!(title("TnT: a statistical part of speech tagger", None));
        assert!(title("TNT - A STATISTICAL PART-OF-SPEECH TAGGER", Some(2001)));
        assert!(!title("TnT: a statistical part of speech tagger", Some(2002)), "two years apart");
        assert!(!title("TnT: a statistical partof speech tagger", Some(2000)), "words end where they end");
        assert!(same_work(&paper("Introduction", None, ""), &paper("introduction", Some(2000), ""), Strictness::Title), "however short");
        assert!(Strictness::Title.identifies("Intro") && !Strictness::Exact.identifies("Introduction"));
        assert!(Strictness::Loose.identifies("A stochastic parts program") && identifying_title("A stochastic parts program"));
    }

    /// The three normalisers: letters and digits, word by word, and with
    /// accents folded.
    #[test]
    fn titles_normalise() {
        assert_eq!(title_words("TnT -- A Statistical Part-of-Speech Tagger."), "tnt a statistical part of speech tagger");
        assert_eq!(title_key("TnT -- A Statistical Part-of-Speech Tagger."), "tntastatisticalpartofspeechtagger");
        assert_eq!(title_words("Café, Schrödinger"), "café schrödinger");
        assert_eq!(title_key("Café"), "café");
        assert_eq!(fold("Café"), "cafe");
    }

    /// Inside a bibliography: one DOI (whatever the title), or the same
    /// title's words (whatever the DOIs and years, however short).
    #[test]
    fn an_entry_is_its_work_by_doi_or_title() {
        let entry = Identity::of(&paper("Other title", Some(1990), "10.1/b"));
        assert!(entry.is(&Identity::of(&paper("Some Paper", Some(2020), "10.1/B"))), "one DOI");
        assert!(entry.is(&Identity::of(&paper("other TITLE.", Some(2020), "10.1/c"))), "one title");
        assert!(!entry.is(&Identity::of(&paper("Some Paper", Some(1990), ""))));
        assert!(!Identity::of(&paper("A", None, "")).same_doi(&Identity::of(&paper("B", None, ""))), "no DOI is no DOI in common");
        assert!(same_doi("10.1/X", "10.1/x") && !same_doi("", "") && !same_doi("10.1/x", "10.1/y"));
    }

    #[test]
    fn folding_and_approximate_search() {
        assert_eq!(fold("Schrödinger's Café, 2nd"), "schrodingerscafe2nd");
        let t: Vec<char> = "xxlatentdirichletalocationyy".chars().collect();
        let p: Vec<char> = "latentdirichletallocation".chars().collect();
        assert_eq!(approx_find(&t, &p, 1), Some(1));
        assert_eq!(approx_find(&t, &p, 0), None);
    }
}
