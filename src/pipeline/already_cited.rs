//! Papers a text already cites: the one rule the recommender's answer,
//! the editor's results and the language server's offers share.
//!
//! A passage that names a paper beside the place a citation goes, "Wu
//! (1997) and [CIT] introduced a normal form", "(Chklovski and Pantel,
//! 2004)", or `\cite{wu-1997-stochastic}`, cites that paper elsewhere: it is
//! the one paper the cursor does not need. The recommender moves such
//! papers to the end of the fused list, after every other candidate,
//! before the rerank stage spends its depth on them. A front end leaves
//! out the papers its draft cites.
//!
//! A name counts when it is a first author's family name followed by a
//! year ("Surname (2004)", "Surname et al., 2004", "Surname and Other
//! [2004]"), and a paper is named when its first author's family name and
//! its year are those. A year with a letter ("2002a") is left alone: that
//! author has two papers of the year and the other may be the one wanted.
//! A citation command (`\cite`-family and the configured wrappers,
//! Pandoc's `[@key]`) names its keys (the one citation grammar, the
//! caller's [`CiteGrammar`]: [`cited_keys_any`] for a passage of unknown
//! syntax, [`cited_keys`] for a draft of known syntax). A key cites the
//! paper whose library key it is, the paper the draft's bibliography holds
//! (or would hold) under it, and the paper whose work its entry there is
//! ([`Identity::is`]).

use std::sync::LazyLock;

use regex::Regex;

use super::answer::Candidate;
use crate::corpus::citation_markup::{cited_keys, cited_keys_any, CiteGrammar};
use crate::corpus::work::{family_name, Identity};
use crate::corpus::Paper;

/// A family name (capitalised), an optional "et al." or second author, and
/// a year, in any of the author-year styles.
static AUTHOR_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    let name = r"\p{Lu}[\p{L}'’\-]+";
    Regex::new(&format!(r"({name})(?:\s+et\s+al\.?|\s+(?:and|&)\s+{name})?,?\s*[(\[]?((?:19|20)\d\d)([a-z])?\b")).expect("a valid pattern")
});

/// The papers a text cites: family names with years, citation keys, and
/// what those keys stand for in the draft's bibliography.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlreadyCited {
    /// Lower-case family name and year.
    names: Vec<(String, i32)>,
    keys: Vec<String>,
    /// The works of the cited keys' bibliography entries.
    entries: Vec<Identity>,
}

impl AlreadyCited {
    /// What a passage names (the recommender's query): author-year names
    /// and the keys of citation commands of any syntax (with `grammar`'s
    /// wrapper commands).
    pub fn in_text(text: &str, grammar: &CiteGrammar) -> AlreadyCited {
        let mut out = AlreadyCited::default();
        for m in AUTHOR_YEAR.captures_iter(text) {
            if m.get(3).is_some() {
                continue;
            }
            if let Ok(year) = m[2].parse() {
                let name = (m[1].to_lowercase(), year);
                if !out.names.contains(&name) {
                    out.names.push(name);
                }
            }
        }
        out.keys = cited_keys_any(text, grammar);
        out
    }

    /// What a draft read with `grammar` cites (the editor's and the
    /// language server's): the keys of its citations.
    pub fn in_draft(text: &str, grammar: &CiteGrammar) -> AlreadyCited {
        AlreadyCited { keys: cited_keys(text, grammar), ..AlreadyCited::default() }
    }

    /// The cited keys read through the draft's bibliography: `entry` gives
    /// the work of the entry a key stands for, where it has one.
    pub fn through(mut self, entry: impl Fn(&str) -> Option<Identity>) -> AlreadyCited {
        self.entries = self.keys.iter().filter_map(|k| entry(k)).collect();
        self
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.keys.is_empty()
    }

    /// Whether the text cites `paper`, whose key in the draft's
    /// bibliography is `key` (the key it has there or would get: export's;
    /// none where no bibliography is known): a cited key is its library key
    /// or that key, a cited key's entry is its work, or the text names its
    /// first author's family name with its year.
    pub fn cites(&self, paper: &Paper, key: Option<&str>) -> bool {
        let cited = |k: &str| !k.is_empty() && self.keys.iter().any(|c| c == k);
        if cited(&paper.key) || key.is_some_and(cited) {
            return true;
        }
        if !self.entries.is_empty() {
            let work = Identity::of(paper);
            if self.entries.iter().any(|e| e.is(&work)) {
                return true;
            }
        }
        let (Some(year), Some(first)) = (paper.year, paper.authors.first()) else { return false };
        let family = family_name(first).to_lowercase();
        !family.is_empty() && self.names.iter().any(|(n, y)| *y == year && *n == family)
    }

    /// Moves the candidates the passage names (by their record, read where
    /// the candidate has one) after all the others, each list keeping its
    /// order, and renumbers the fused ranks. Says how many it moved.
    pub fn move_last(&self, candidates: &mut Vec<Candidate>) -> usize {
        if self.is_empty() {
            return 0;
        }
        let (named, mut kept): (Vec<Candidate>, Vec<Candidate>) =
            std::mem::take(candidates).into_iter().partition(|c| c.paper.as_ref().is_some_and(|p| self.cites(p, None)));
        let moved = named.len();
        kept.extend(named);
        for (i, c) in kept.iter_mut().enumerate() {
            c.fused_rank = i + 1;
        }
        *candidates = kept;
        moved
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::citation_markup::CiteSyntax;

    /// The plain grammar: no wrapper command.
    const PLAIN: &CiteGrammar = &CiteGrammar::of(CiteSyntax::Latex);

    fn paper(id: &str, first_author: &str, year: i32, key: &str) -> Paper {
        Paper {
            id: id.into(),
            key: key.into(),
            authors: vec![first_author.into(), "Someone Else".into()],
            year: Some(year),
            ..Default::default()
        }
    }

    // Citation contexts of the benchmark's `val` split, as they stand.
    const ITG: &str = "Because of this, Wu (1997) and [CIT] introduced a normal form ITG which avoids this over-counting.";
    const WEB: &str = "On-line usage of web queries is less frequent and was used mainly in semantic acquisition applications: \
        the discovery of semantic verb relations (Chklovski and Pantel, 2004), the acquisition of entailment relations [CIT], \
        and the discovery of concept-specific relationships (Davidov et al, 2007).";
    const JOSHUA: &str = "We use Joshua, a Java-based open source implementation of the hierarchical decoder [CIT], release 1.1.1 \
        Word alignment was computed using the first three steps of the train-factored-phrase model.perl script packed with Moses2 (Koehn et al., 2007).";

    #[test]
    fn author_year_names_in_real_contexts_name_their_papers_and_no_other() {
        let itg = AlreadyCited::in_text(ITG, PLAIN);
        assert!(itg.cites(&paper("acl:J97-3002", "Dekai Wu", 1997, ""), None), "{itg:?}");
        assert!(!itg.cites(&paper("acl:P05-1059", "Hao Zhang", 2005, ""), None), "a paper the passage does not name");
        assert!(!itg.cites(&paper("acl:W95-0106", "Dekai Wu", 1995, ""), None), "Wu's other years are not named");

        let web = AlreadyCited::in_text(WEB, PLAIN);
        assert!(web.cites(&paper("acl:W04-3205", "Timothy Chklovski", 2004, ""), None), "{web:?}");
        assert!(web.cites(&paper("acl:P07-1030", "Dmitry Davidov", 2007, ""), None), "`et al,` without the dot");
        assert!(!web.cites(&paper("acl:W04-3206", "Idan Szpektor", 2004, ""), None), "the cited paper, not named");
        assert!(!web.cites(&paper("x", "Patrick Pantel", 2004, ""), None), "a second author's name is not a first author's");

        let joshua = AlreadyCited::in_text(JOSHUA, PLAIN);
        assert!(joshua.cites(&paper("acl:P07-2045", "Philipp Koehn", 2007, ""), None), "{joshua:?}");
        assert!(!joshua.cites(&paper("acl:W09-0424", "Zhifei Li", 2009, ""), None));
    }

    #[test]
    fn family_names_with_particles_commas_and_brackets_and_years_with_letters() {
        let t = AlreadyCited::in_text("as in van Noord [1997] and (Marcus et al., 1993), unlike Collins (2002a)", PLAIN);
        assert!(t.cites(&paper("a", "Gertjan van Noord", 1997, ""), None), "{t:?}");
        assert!(t.cites(&paper("b", "Marcus, Mitchell P.", 1993, ""), None), "a `Family, Given` author line");
        assert!(!t.cites(&paper("c", "Michael Collins", 2002, ""), None), "2002a: Collins has two papers that year");
        let no_year = Paper { id: "d".into(), authors: vec!["Gertjan van Noord".into()], ..Default::default() };
        assert!(!t.cites(&no_year, None), "no year");
        assert!(AlreadyCited::in_text("We tag the words [CIT] in 12 of 2000 sentences.", PLAIN).is_empty(), "no name before the number");
    }

    #[test]
    fn citation_commands_name_their_keys() {
        let t = AlreadyCited::in_text(
            r"Phrase tables \citep[see][p.~3]{koehn-etal-2007-moses,och-ney-2003-systematic} and [@li-etal-2009-joshua]",
            PLAIN,
        );
        for key in ["koehn-etal-2007-moses", "och-ney-2003-systematic", "li-etal-2009-joshua"] {
            assert!(t.cites(&paper("x", "A B", 1900, key), None), "{key}: {t:?}");
        }
        assert!(!t.cites(&paper("x", "A B", 1900, "koehn-etal-2003-statistical"), None));
        assert!(!t.cites(&paper("x", "A B", 1900, ""), None), "an empty key is no key");
    }

    /// A draft cites a paper by its library key, by the key its
    /// bibliography holds (or would give) it under, or by a key whose entry
    /// there is its work (one DOI, or its title); a draft's author-year
    /// names are not read (the recommender reads the passage's).
    #[test]
    fn a_draft_cites_by_its_keys_and_their_entries() {
        let text = r"As shown by \cite{shokouhi2013learning} and \citep{mine}, Wu (1997) completes.";
        let draft = AlreadyCited::in_draft(text, PLAIN);
        let mine = Paper { title: "Other title".into(), doi: "10.1/b".into(), ..Default::default() };
        let cited = draft.clone().through(|k| (k == "mine").then(|| Identity::of(&mine)));
        let p = |key: &str, title: &str, doi: &str| Paper {
            key: key.into(),
            title: title.into(),
            doi: doi.into(),
            authors: vec!["Dekai Wu".into()],
            year: Some(1997),
            ..Default::default()
        };
        assert!(cited.cites(&p("shokouhi2013learning", "Learning", ""), None), "its library key");
        assert!(cited.cites(&p("x1", "Learning", ""), Some("shokouhi2013learning")), "its key in the bibliography");
        assert!(cited.cites(&p("x2", "Some paper", "10.1/b"), Some("wu1997some")), "the entry's DOI");
        assert!(cited.cites(&p("x3", "Other Title.", ""), Some("wu1997other")), "the entry's title");
        assert!(!draft.cites(&p("x3", "Other Title.", ""), Some("wu1997other")), "no bibliography read");
        assert!(!cited.cites(&p("x4", "Fresh work", ""), Some("wu1997fresh")), "a draft's names are not read");
        // A wrapper the draft's grammar names cites; to another grammar it is no citation.
        let wrapped = r"As shown by \refp{shokouhi2013learning}.";
        let mine = CiteGrammar::of(CiteSyntax::Latex).with_wrappers(["refp"]);
        assert!(AlreadyCited::in_draft(wrapped, &mine).cites(&p("shokouhi2013learning", "Learning", ""), None));
        assert!(AlreadyCited::in_text(wrapped, &mine).cites(&p("shokouhi2013learning", "Learning", ""), None));
        assert!(AlreadyCited::in_draft(wrapped, PLAIN).is_empty());
    }

    #[test]
    fn named_candidates_move_after_the_others_and_ranks_follow() {
        let mut list: Vec<Candidate> =
            [("acl:P05-1059", "Hao Zhang", 2005), ("acl:J97-3002", "Dekai Wu", 1997), ("acl:P03-1019", "Richard Zens", 2003)]
                .into_iter()
                .enumerate()
                .map(|(i, (id, a, y))| Candidate { fused_rank: i + 1, paper: Some(paper(id, a, y, "")), ..Candidate::new(id) })
                .collect();
        list.push(Candidate { fused_rank: 4, ..Candidate::new("no-record") });
        assert_eq!(AlreadyCited::in_text(ITG, PLAIN).move_last(&mut list), 1);
        let order: Vec<(&str, usize)> = list.iter().map(|c| (c.id.as_str(), c.fused_rank)).collect();
        assert_eq!(order, [("acl:P05-1059", 1), ("acl:P03-1019", 2), ("no-record", 3), ("acl:J97-3002", 4)]);
        assert_eq!(AlreadyCited::in_text("nothing named here [CIT]", PLAIN).move_last(&mut list), 0);
        assert_eq!(list[3].id, "acl:J97-3002", "an empty passage moves nothing");
    }
}
