//! Linking bibliography entries of full text to library papers: by DOI, by
//! arXiv id, then by a normalised title that appears in the raw reference.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use super::document::{Document, LinkMethod, Reference};
use crate::corpus::paper::{normalize_doi, ARXIV_ID};
use crate::corpus::work::{self, approx_find, fold, title_words, years_agree, Strictness, MIN_TITLE_CHARS};
use crate::corpus::Paper;
use crate::index::PaperIndex;

/// A DOI in running text (a reference, a first page).
static DOI_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:doi:\s*|https?://(?:dx\.)?doi\.org/)?(10\.\d{4,9}/[^\s\]\[,;<>\x22]+[^\s\]\[,;<>\x22.)])")
        .expect("a valid pattern")
});
/// An arXiv identifier in running text.
static ARXIV_IN_TEXT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(?:arxiv(?:\s*preprint)?\s*(?:arxiv)?\s*:?\s*|arxiv\.org/(?:abs|pdf)/)(\d{4}\.\d{4,5})").expect("a valid pattern")
});
static YEARS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(1[89]\d\d|20\d\d)\b").expect("a valid pattern"));

pub struct Linker<'a> {
    papers: Option<&'a PaperIndex>,
}

impl<'a> Linker<'a> {
    pub fn new(papers: &'a PaperIndex) -> Linker<'a> {
        Linker { papers: Some(papers) }
    }

    /// A linker that links nothing (benchmark contexts carry their ids).
    pub fn none() -> Linker<'static> {
        Linker { papers: None }
    }

    /// The library's record of `id`.
    pub fn paper(&self, id: &str) -> Option<Paper> {
        self.papers?.paper_by_id(id).ok().flatten()
    }

    /// The library paper a `bib_entries` item refers to.
    pub fn link(&self, entry: &Value) -> Option<(String, LinkMethod)> {
        let papers = self.papers?;
        let ids = entry.get("ids");
        let doi = ids.and_then(|i| i.get("doi")).and_then(Value::as_str).unwrap_or("");
        if !doi.is_empty() {
            if let Ok(Some(id)) = papers.find_by_external_id(&format!("doi:{}", normalize_doi(doi))) {
                return Some((id, LinkMethod::Doi));
            }
        }
        let mut arxiv: Vec<String> = Vec::new();
        if let Some(a) = ids.and_then(|i| i.get("arxiv_id")).and_then(Value::as_str) {
            arxiv.push(a.to_string());
        }
        if let Some(list) = entry.get("contained_arXiv_ids").and_then(Value::as_array) {
            for a in list {
                let s = a.get("id").and_then(Value::as_str).or(a.as_str()).unwrap_or("");
                arxiv.push(s.to_string());
            }
        }
        for a in arxiv {
            if let Some(m) = ARXIV_ID.captures(&a) {
                if let Ok(Some(id)) = papers.find_by_external_id(&format!("arxiv:{}", &m[1])) {
                    return Some((id, LinkMethod::Arxiv));
                }
            }
        }
        let raw = entry.get("bib_entry_raw").and_then(Value::as_str).unwrap_or("");
        self.link_by_title(papers, raw).map(|id| (id, LinkMethod::Title))
    }

    fn link_by_title(&self, papers: &PaperIndex, raw: &str) -> Option<String> {
        let norm_raw = format!(" {} ", title_words(raw));
        if norm_raw.len() < MIN_TITLE_CHARS {
            return None;
        }
        let compact_raw: Vec<char> = norm_raw.chars().filter(|c| *c != ' ').collect();
        let folded_raw = norm_raw.clone();
        let years: Vec<i32> = YEARS.captures_iter(raw).filter_map(|c| c[1].parse().ok()).collect();
        let hits = papers.title_candidates(raw, 8).ok()?;
        // The library title the reference holds (word-aligned, or with a
        // few letters off: typos, hyphens lost at line ends, "Dialog" for
        // "Dialogue"), from a year the reference names when it names any;
        // fewest edits, then longest.
        hits.into_iter()
            .filter_map(|p| {
                let t = title_words(&p.title);
                let fits_year = years.is_empty() || years.iter().any(|&r| years_agree(Some(r), p.year));
                if t.len() < MIN_TITLE_CHARS || !fits_year {
                    return None;
                }
                if norm_raw.contains(&format!(" {t} ")) {
                    // A whole segment of the reference ("2003. Latent
                    // Dirichlet allocation. J. Mach..."), not words inside
                    // another title ("Matching results of latent Dirichlet
                    // allocation for text") or an author list.
                    return title_segment(raw, &t).then_some((0, t.len(), p.id));
                }
                let compact: Vec<char> = t.chars().filter(|c| *c != ' ').collect();
                // Inexact: the first author must be named too; a looser
                // match (a word left out) also needs the year itself.
                let first_author = p.authors.first().and_then(|a| a.split_whitespace().last()).map(title_words);
                let author_named = first_author.as_deref().is_some_and(|f| f.len() >= 2 && folded_raw.contains(&format!(" {f} ")));
                let same_year = p.year.is_some_and(|y| years.contains(&y));
                // The looser bound also needs the title's first and last
                // letters as they are (a word left out in the middle, not
                // another title ending the same way).
                let anchored = compact.len() >= 24 && {
                    let raw: String = compact_raw.iter().collect();
                    raw.contains(&compact[..8].iter().collect::<String>())
                        && raw.contains(&compact[compact.len() - 8..].iter().collect::<String>())
                };
                let k = if author_named && same_year && anchored { compact.len() / 7 } else { compact.len() / 15 };
                let edits = approx_find(&compact_raw, &compact, k)?;
                (author_named || first_author.is_none()).then_some((edits, t.len(), p.id))
            })
            .min_by_key(|(edits, len, _)| (*edits, std::cmp::Reverse(*len)))
            .map(|(_, _, id)| id)
    }

    /// A reference of a citing document: its DOI, its arXiv id, its
    /// BibTeX title (equal after normalising), then a library title inside
    /// its text.
    pub fn link_reference(&self, r: &Reference) -> Option<(String, LinkMethod)> {
        let papers = self.papers?;
        let dois: Vec<String> =
            if r.doi.is_empty() { DOI_IN_TEXT.captures_iter(&r.raw).map(|c| c[1].to_string()).collect() } else { vec![r.doi.clone()] };
        for d in dois {
            if let Ok(Some(id)) = papers.find_by_external_id(&format!("doi:{}", normalize_doi(&d))) {
                return Some((id, LinkMethod::Doi));
            }
        }
        let arxiv: Vec<String> = if r.arxiv.is_empty() {
            ARXIV_IN_TEXT.captures_iter(&r.raw).map(|c| c[1].to_string()).collect()
        } else {
            vec![r.arxiv.clone()]
        };
        for a in arxiv {
            if let Ok(Some(id)) = papers.find_by_external_id(&format!("arxiv:{a}")) {
                return Some((id, LinkMethod::Arxiv));
            }
        }
        if !r.title.is_empty() {
            let cited = Paper { title: r.title.clone(), year: r.year, ..Paper::default() };
            let found = papers.title_candidates(&r.title, 5).ok()?.into_iter().find(|p| work::same_work(&cited, p, Strictness::Title));
            return found.map(|p| (p.id, LinkMethod::Title));
        }
        self.link_by_title(papers, &r.raw).map(|id| (id, LinkMethod::Title))
    }

    /// Other library records of paper `id`'s work ([`work::same_work`],
    /// exactly): the same work imported twice.
    pub fn same_work(&self, id: &str) -> Vec<String> {
        let Some(papers) = self.papers else { return Vec::new() };
        let Ok(Some(p)) = papers.paper_by_id(id) else { return Vec::new() };
        if !work::identifying_title(&p.title) {
            return Vec::new();
        }
        let others = papers.title_candidates(&p.title, 10).unwrap_or_default();
        others.into_iter().filter(|o| o.id != p.id && work::same_work(&p, o, Strictness::Exact)).map(|o| o.id).collect()
    }

    /// Every library record of paper `id`'s work, `id` first, by the loose
    /// rule ([`Strictness::Loose`]: a letter or two in twenty-five off, DOIs
    /// not compared): what a leakage guard leaves out, erring on the side
    /// of more.
    pub fn same_work_loose(&self, id: &str) -> Vec<String> {
        let mut out = vec![id.to_string()];
        let Some(papers) = self.papers else { return out };
        let Ok(Some(p)) = papers.paper_by_id(id) else { return out };
        if !Strictness::Loose.identifies(&p.title) {
            return out;
        }
        for o in papers.title_candidates(&p.title, 10).unwrap_or_default() {
            if o.id != p.id && work::same_work(&p, &o, Strictness::Loose) {
                out.push(o.id);
            }
        }
        out
    }

    /// The library record of a citing document itself: by the DOI on its
    /// first page, else by its title. A library title counts when it is the
    /// title found (letters and digits compared, a few of them off) or stands
    /// in the first page's text before the abstract.
    pub fn identify(&self, doc: &Document) -> Option<Paper> {
        let papers = self.papers?;
        if !doc.doi.is_empty() {
            if let Ok(Some(id)) = papers.find_by_external_id(&format!("doi:{}", normalize_doi(&doc.doi))) {
                return papers.paper_by_id(&id).ok().flatten();
            }
        }
        let title = compact(&doc.title);
        let front = compact(&doc.front);
        let mut candidates: Vec<Paper> = Vec::new();
        for query in [doc.title.clone(), doc.front.chars().take(300).collect::<String>()] {
            if query.trim().is_empty() {
                continue;
            }
            for p in papers.title_candidates(&query, 15).ok()? {
                if !candidates.iter().any(|c| c.id == p.id) {
                    candidates.push(p);
                }
            }
        }
        candidates
            .into_iter()
            .filter_map(|p| {
                let t = compact(&p.title);
                // A short title only when it is all of the title found.
                if t.len() < 12 && !(t.len() >= 6 && t == title) {
                    return None;
                }
                let k = t.len() / 15;
                // The found title is this one (it may carry the authors' names after it).
                let as_title = if title.len() >= t.len() && title.len() <= t.len() * 2 + 40 { approx_find(&title, &t, k) } else { None };
                let as_title = as_title.filter(|_| title.len() * 10 <= t.len() * 25 || t.len() >= MIN_TITLE_CHARS);
                let in_front = if t.len() >= MIN_TITLE_CHARS { approx_find(&front, &t, k) } else { None };
                // The found title first; the rest of the first page (where
                // an affiliation may read like a title) only without one.
                let (rank, edits) = match (as_title, in_front) {
                    (Some(a), _) => (0, a),
                    (None, Some(b)) => (1, b),
                    (None, None) => return None,
                };
                Some(((rank, edits, std::cmp::Reverse(t.len())), p))
            })
            .min_by_key(|(key, _)| *key)
            .map(|(_, p)| p)
    }
}

/// Lower-case letters and digits, nothing else (spaces, hyphens and
/// punctuation differ between a title and its copies).
fn compact(s: &str) -> Vec<char> {
    fold(s).chars().collect()
}

/// Whether the (normalised) title `t` stands in `raw` as a segment of its
/// own: after the start or a period, parenthesis, colon or quote, and
/// before the end or such punctuation (or a comma, question mark).
fn title_segment(raw: &str, t: &str) -> bool {
    // Words of the raw text, each with the punctuation before and after it.
    let mut words: Vec<(String, char, char)> = Vec::new();
    let mut pending = '^';
    let mut cur = String::new();
    for c in raw.chars().chain(std::iter::once(' ')) {
        if c.is_alphanumeric() {
            cur.extend(c.to_lowercase());
            continue;
        }
        if !cur.is_empty() {
            words.push((std::mem::take(&mut cur), pending, ' '));
            pending = ' ';
        }
        if !c.is_whitespace() && !matches!(c, '-' | '\'' | '’') {
            if let Some(last) = words.last_mut() {
                if last.2 == ' ' {
                    last.2 = c;
                }
            }
            if pending == ' ' || pending == '^' {
                pending = c;
            }
        } else if c == '-' || c == '\'' || c == '’' {
            // Inside a word ("part-of-speech"): the title's words are split the same way.
        }
    }
    let want: Vec<&str> = t.split(' ').collect();
    let opens = |c: char| matches!(c, '^' | '.' | ')' | ']' | ':' | '"' | '“' | '”' | '\u{201e}' | '‘' | '?' | '!');
    let closes = |c: char| matches!(c, ' ' | '.' | ',' | ':' | '?' | '!' | '"' | '”' | '“' | ';' | '(' | '[');
    (0..words.len().saturating_sub(want.len() - 1)).any(|i| {
        want.iter().enumerate().all(|(k, w)| words[i + k].0 == *w) && opens(words[i].1) && {
            let (_, _, after) = &words[i + want.len() - 1];
            closes(*after) && (*after != ' ' || i + want.len() == words.len())
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dois_and_arxiv_ids_in_reference_text() {
        let c = DOI_IN_TEXT.captures("J. Doe. 2019. A paper. In SIGIR. https://doi.org/10.1145/3331184.3331203.").unwrap();
        assert_eq!(&c[1], "10.1145/3331184.3331203");
        let c = ARXIV_IN_TEXT.captures("arXiv preprint arXiv:1810.04805 (2018).").unwrap();
        assert_eq!(&c[1], "1810.04805");
    }

    #[test]
    fn titles_must_stand_as_a_segment_of_the_reference() {
        let lda = "latent dirichlet allocation";
        assert!(title_segment(
            "David M. Blei, Andrew Y. Ng, and Michael I. Jordan. 2003. Latent dirichlet allocation. J. Mach. Learn. Res., 3:993-1022.",
            lda
        ));
        assert!(!title_segment("Andreas Niekler and Patrick Jähnichen. 2012. Matching results of latent dirichlet allocation for text. In Proceedings of ICCM.", lda));
        assert!(!title_segment(
            "Voorhees, E.M. 2001. Overview of the TREC 2001 question answering track. In TREC 2001.",
            "overview of the trec"
        ));
        assert!(title_segment(
            "Spence Green and Christopher D. Manning. 2010. Better Arabic parsing: Baselines, evaluations, and analysis. In COLING.",
            "better arabic parsing"
        ));
        assert!(title_segment(
            "Brown, P. (1992). \"An estimate of an upper bound for the entropy of English.\" Computational Linguistics",
            "an estimate of an upper bound for the entropy of english"
        ));
        assert!(!title_segment(
            "Joakim Nivre, Jens Nilsson, Johan Hall, Atanas Chanev, and Erwin Marsi. 2007. MaltParser.",
            "atanas chanev and erwin marsi"
        ));
        assert!(title_segment(
            "Brants, Thorsten. 2000. TnT - a statistical part-of-speech tagger. In ANLP.",
            "tnt a statistical part of speech tagger"
        ));
    }

    #[test]
    fn approximate_title_matches() {
        let c = |s: &str| s.chars().filter(|c| *c != ' ').collect::<Vec<char>>();
        let raw = c(&title_words("Chieu, Hai Leong and Hwee-Tou Ng. 2002. Name Entity Recognition: a Maximum Entropy Approach Using Global Information. In Proceedings"));
        let title = c(&title_words("Named Entity Recognition: A Maximum Entropy Approach Using Global Information"));
        assert_eq!(approx_find(&raw, &title, 4), Some(1));
        assert_eq!(approx_find(&raw, &c("unrelated statistical parsing models"), 2), None);
    }
}
