//! The field a model was trained in, kept as the words of its training
//! queries, and how far a query falls inside it.
//!
//! A trained model knows the field of its training data. Out of it (a
//! library in another discipline) its ranking can be worse than none, so
//! the pipeline weighs its signal by [`FieldProfile::coverage`]: the share
//! of the query's words, weighted by their rarity in the library, that the
//! training queries used at least [`MIN_CONTEXTS`] times. A profile is a
//! `field.tsv` beside the weights (`term<TAB>contexts` lines, analyzed as
//! BM25 analyzes), written by `citewise train`.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, LazyLock};

use crate::error::{Error, Result};
use crate::index::{analyzer, PaperIndex};

/// The profile's file name beside a model's weights.
pub const FIELD_FILE: &str = "field.tsv";

/// A term counts as known when this many training queries hold it.
pub const MIN_CONTEXTS: u32 = 3;

/// The profile of the shipped HAtten and reranker (both trained on the
/// benchmark's `train` split; see `assets/README.md`).
const SHIPPED: &str = include_str!("../../assets/field.tsv");

/// Terms of a model's training queries with the number of queries holding
/// each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FieldProfile {
    contexts: HashMap<String, u32>,
}

impl FieldProfile {
    /// Counts, for each analyzed term, the texts that hold it.
    pub fn from_texts<'a>(texts: impl IntoIterator<Item = &'a str>) -> FieldProfile {
        let en = analyzer::english();
        let mut contexts: HashMap<String, u32> = HashMap::new();
        for text in texts {
            for (term, _) in analyzer::counted_terms(&en, text) {
                *contexts.entry(term).or_default() += 1;
            }
        }
        FieldProfile { contexts }
    }

    /// Adds `other`'s counts to this profile's (a model trained further on
    /// more queries knows the terms of both).
    pub fn merge(&mut self, other: &FieldProfile) {
        for (term, n) in &other.contexts {
            *self.contexts.entry(term.clone()).or_default() += n;
        }
    }

    /// The profile shipped with the default models (parsed once, shared).
    pub fn shipped() -> Arc<FieldProfile> {
        static PROFILE: LazyLock<Arc<FieldProfile>> = LazyLock::new(|| {
            Arc::new(FieldProfile::parse(SHIPPED, Path::new("assets/field.tsv")).expect("the shipped field profile parses"))
        });
        PROFILE.clone()
    }

    /// Reads `field.tsv` in `dir`; none when the model has no profile.
    pub fn load_beside(dir: &Path) -> Result<Option<FieldProfile>> {
        let path = dir.join(FIELD_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => FieldProfile::parse(&text, &path).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(&path, e)),
        }
    }

    /// Parses `term<TAB>count` lines (`#` starts a comment line).
    pub fn parse(text: &str, path: &Path) -> Result<FieldProfile> {
        let mut contexts = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |reason: &str| Error::Parse { path: path.to_path_buf(), line: i + 1, reason: reason.into() };
            let (term, count) = line.split_once('\t').ok_or_else(|| bad("expected `term<TAB>count`"))?;
            let count: u32 = count.trim().parse().map_err(|_| bad("the count is not a whole number"))?;
            contexts.insert(term.to_string(), count);
        }
        Ok(FieldProfile { contexts })
    }

    /// The profile as `field.tsv` text: terms held by at least
    /// [`MIN_CONTEXTS`] queries, most frequent first.
    pub fn to_tsv(&self) -> String {
        let mut rows: Vec<(&String, &u32)> = self.contexts.iter().filter(|(_, n)| **n >= MIN_CONTEXTS).collect();
        rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let mut out = String::from("# citewise training field: analyzed term, number of training queries holding it\n");
        for (term, n) in rows {
            out.push_str(&format!("{term}\t{n}\n"));
        }
        out
    }

    /// Writes the profile beside a model's weights.
    pub fn write_beside(&self, dir: &Path) -> Result<()> {
        crate::util::write_atomic(&dir.join(FIELD_FILE), self.to_tsv().as_bytes())
    }

    /// The coverage of a query text in a library: its analyzed terms, each
    /// weighted by its idf among the library's papers.
    pub fn coverage_in(&self, papers: &PaperIndex, text: &str) -> f32 {
        self.coverage_of(papers, &papers.query_terms(text))
    }

    /// The coverage of terms the paper index analysed, each weighted by its
    /// idf among the library's papers.
    pub fn coverage_of(&self, papers: &PaperIndex, terms: &[String]) -> f32 {
        let searcher = papers.searcher();
        self.coverage(terms, |t| papers.idf(&searcher, t))
    }

    /// Whether the training queries used `term` often enough to know it.
    pub fn knows(&self, term: &str) -> bool {
        self.contexts.get(term).is_some_and(|n| *n >= MIN_CONTEXTS)
    }

    /// The terms known.
    pub fn iter_known(&self) -> impl Iterator<Item = &str> {
        self.contexts.iter().filter(|(_, n)| **n >= MIN_CONTEXTS).map(|(t, _)| t.as_str())
    }

    /// Terms known.
    pub fn len(&self) -> usize {
        self.contexts.values().filter(|n| **n >= MIN_CONTEXTS).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The share of `terms` (distinct, each weighted by `idf`, its rarity in
    /// the library) that the model knows: 1 for a query in its field, near
    /// 0 for one in a field it never saw, 0 for no terms.
    pub fn coverage(&self, terms: &[String], idf: impl Fn(&str) -> f32) -> f32 {
        let (mut known, mut all) = (0.0f32, 0.0f32);
        let mut seen = std::collections::HashSet::new();
        for t in terms.iter().filter(|t| seen.insert(t.as_str())) {
            let w = idf(t).max(0.0);
            all += w;
            if self.knows(t) {
                known += w;
            }
        }
        if all > 0.0 {
            known / all
        } else {
            0.0
        }
    }
}

/// How a stage's weight follows the field coverage of the query: none at
/// or below `lo`, all of it from `hi` on, linear between.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldGate {
    pub lo: f32,
    pub hi: f32,
}

impl FieldGate {
    pub fn weight(self, coverage: f32) -> f32 {
        ((coverage - self.lo) / (self.hi - self.lo).max(1e-6)).clamp(0.0, 1.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_queries_not_occurrences_and_round_trips() {
        let p = FieldProfile::from_texts(["Parsing parsers parse.", "a parser", "parsing again", "parse trees", "trees"]);
        assert!(p.knows("pars"), "three texts hold `pars` (parsing, parse), the first twice");
        assert!(!p.knows("parser") && !p.knows("tree"), "two texts are not enough");
        let text = p.to_tsv();
        assert!(text.lines().any(|l| l == "pars\t3"), "{text}");
        let back = FieldProfile::parse(&text, Path::new("field.tsv")).unwrap();
        assert!(back.knows("pars") && !back.knows("parser") && !back.knows("again"));
        assert_eq!(back.len(), 1);
    }

    #[test]
    fn a_merged_profile_knows_what_either_knew_and_sums_the_counts() {
        let mut p = FieldProfile::parse("pars\t10\ntag\t2\n", Path::new("f")).unwrap();
        assert!(!p.knows("tag"));
        p.merge(&FieldProfile::from_texts(["tagging", "retrieval"]));
        assert!(p.knows("pars") && p.knows("tag"), "2 + 1 queries hold `tag`");
        assert!(!p.knows("retriev"), "one query is not enough");
        assert!(p.to_tsv().lines().any(|l| l == "tag\t3"));
    }

    #[test]
    fn coverage_weighs_rare_words_and_ignores_repeats() {
        let p = FieldProfile::parse("pars\t10\ntag\t5\n", Path::new("f")).unwrap();
        let terms = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let idf = |t: &str| if t == "protein" { 3.0 } else { 1.0 };
        assert_eq!(p.coverage(&terms("pars tag"), idf), 1.0);
        assert_eq!(p.coverage(&terms("pars protein"), idf), 0.25, "the rare unknown word weighs three times");
        assert_eq!(p.coverage(&terms("pars pars pars protein"), idf), 0.25, "a repeated term counts once");
        assert_eq!(p.coverage(&[], idf), 0.0);
    }

    #[test]
    fn bad_lines_name_the_file_and_line() {
        let e = FieldProfile::parse("# header\npars\t10\ntag five\n", Path::new("m/field.tsv")).unwrap_err().to_string();
        assert!(e.contains("m/field.tsv") && e.contains('3'), "{e}");
        let e = FieldProfile::parse("tag\tfive\n", Path::new("f")).unwrap_err().to_string();
        assert!(e.contains("whole number"), "{e}");
    }

    #[test]
    fn the_shipped_profile_knows_the_training_field_and_not_biology() {
        let p = FieldProfile::shipped();
        assert!(p.len() > 1000, "{}", p.len());
        let en = analyzer::english();
        let terms = |s: &str| analyzer::counted_terms(&en, s).into_iter().map(|(t, _)| t).collect::<Vec<_>>();
        let nlp = p.coverage(&terms("We train a statistical part-of-speech tagger on the treebank"), |_| 1.0);
        let bio = p.coverage(&terms("Mitochondrial phosphorylation of cardiomyocytes in transgenic mice"), |_| 1.0);
        assert!(nlp > 0.9 && bio <= 0.6, "nlp {nlp}, bio {bio}");
    }

    #[test]
    fn the_gate_is_linear_between_its_ends() {
        let g = FieldGate { lo: 0.5, hi: 0.8 };
        assert_eq!(g.weight(0.4), 0.0);
        assert!((g.weight(0.65) - 0.5).abs() < 1e-6);
        assert_eq!(g.weight(0.9), 1.0);
    }
}
