//! Papers the passage already cites. A passage that names a paper beside
//! the place a citation goes, "Wu (1997) and [CIT] introduced a normal
//! form", "(Chklovski and Pantel, 2004)", or `\cite{wu-1997-stochastic}`,
//! cites that paper elsewhere: it is the one paper the cursor does not
//! need. Such papers are moved to the end of the fused list, after every
//! other candidate, before the rerank stage spends its depth on them.
//!
//! A name counts when it is a first author's family name followed by a
//! year ("Surname (2004)", "Surname et al., 2004", "Surname and Other
//! [2004]"), and a paper is named when its first author's family name and
//! its year are those. A year with a letter ("2002a") is left alone: that
//! author has two papers of the year and the other may be the one wanted.
//! A citation command (`\cite`-family, Pandoc's `[@key]`) names its keys
//! ([`cited_keys_any`]: the one citation grammar, for a text of unknown syntax).

use std::sync::LazyLock;

use regex::Regex;

use super::answer::Candidate;
use crate::corpus::citation_markup::cited_keys_any;
use crate::corpus::work::family_name;
use crate::corpus::Paper;

/// A family name (capitalised), an optional "et al." or second author, and
/// a year, in any of the author-year styles.
static AUTHOR_YEAR: LazyLock<Regex> = LazyLock::new(|| {
    let name = r"\p{Lu}[\p{L}'’\-]+";
    Regex::new(&format!(r"({name})(?:\s+et\s+al\.?|\s+(?:and|&)\s+{name})?,?\s*[(\[]?((?:19|20)\d\d)([a-z])?\b")).expect("a valid pattern")
});

/// The papers a passage names: family names with years, and citation keys.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AlreadyCited {
    /// Lower-case family name and year.
    names: Vec<(String, i32)>,
    keys: Vec<String>,
}

impl AlreadyCited {
    /// What `text` names.
    pub fn in_text(text: &str) -> AlreadyCited {
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
        out.keys = cited_keys_any(text);
        out
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.keys.is_empty()
    }

    /// Whether the passage names `paper`: its key, or its first author's
    /// family name with its year.
    pub fn names(&self, paper: &Paper) -> bool {
        if !paper.key.is_empty() && self.keys.contains(&paper.key) {
            return true;
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
            std::mem::take(candidates).into_iter().partition(|c| c.paper.as_ref().is_some_and(|p| self.names(p)));
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
        let itg = AlreadyCited::in_text(ITG);
        assert!(itg.names(&paper("acl:J97-3002", "Dekai Wu", 1997, "")), "{itg:?}");
        assert!(!itg.names(&paper("acl:P05-1059", "Hao Zhang", 2005, "")), "a paper the passage does not name");
        assert!(!itg.names(&paper("acl:W95-0106", "Dekai Wu", 1995, "")), "Wu's other years are not named");

        let web = AlreadyCited::in_text(WEB);
        assert!(web.names(&paper("acl:W04-3205", "Timothy Chklovski", 2004, "")), "{web:?}");
        assert!(web.names(&paper("acl:P07-1030", "Dmitry Davidov", 2007, "")), "`et al,` without the dot");
        assert!(!web.names(&paper("acl:W04-3206", "Idan Szpektor", 2004, "")), "the cited paper, not named");
        assert!(!web.names(&paper("x", "Patrick Pantel", 2004, "")), "a second author's name is not a first author's");

        let joshua = AlreadyCited::in_text(JOSHUA);
        assert!(joshua.names(&paper("acl:P07-2045", "Philipp Koehn", 2007, "")), "{joshua:?}");
        assert!(!joshua.names(&paper("acl:W09-0424", "Zhifei Li", 2009, "")));
    }

    #[test]
    fn family_names_with_particles_commas_and_brackets_and_years_with_letters() {
        let t = AlreadyCited::in_text("as in van Noord [1997] and (Marcus et al., 1993), unlike Collins (2002a)");
        assert!(t.names(&paper("a", "Gertjan van Noord", 1997, "")), "{t:?}");
        assert!(t.names(&paper("b", "Marcus, Mitchell P.", 1993, "")), "a `Family, Given` author line");
        assert!(!t.names(&paper("c", "Michael Collins", 2002, "")), "2002a: Collins has two papers that year");
        assert!(!t.names(&Paper { id: "d".into(), authors: vec!["Gertjan van Noord".into()], ..Default::default() }), "no year");
        assert!(AlreadyCited::in_text("We tag the words [CIT] in 12 of 2000 sentences.").is_empty(), "no name before the number");
    }

    #[test]
    fn citation_commands_name_their_keys() {
        let t = AlreadyCited::in_text(
            r"Phrase tables \citep[see][p.~3]{koehn-etal-2007-moses,och-ney-2003-systematic} and [@li-etal-2009-joshua]",
        );
        for key in ["koehn-etal-2007-moses", "och-ney-2003-systematic", "li-etal-2009-joshua"] {
            assert!(t.names(&paper("x", "A B", 1900, key)), "{key}: {t:?}");
        }
        assert!(!t.names(&paper("x", "A B", 1900, "koehn-etal-2003-statistical")));
        assert!(!t.names(&paper("x", "A B", 1900, "")), "an empty key is no key");
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
        assert_eq!(AlreadyCited::in_text(ITG).move_last(&mut list), 1);
        let order: Vec<(&str, usize)> = list.iter().map(|c| (c.id.as_str(), c.fused_rank)).collect();
        assert_eq!(order, [("acl:P05-1059", 1), ("acl:P03-1019", 2), ("no-record", 3), ("acl:J97-3002", 4)]);
        assert_eq!(AlreadyCited::in_text("nothing named here [CIT]").move_last(&mut list), 0);
        assert_eq!(list[3].id, "acl:J97-3002", "an empty passage moves nothing");
    }
}
