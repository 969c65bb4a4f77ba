//! The paper record every importer produces and every stage consumes.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// A new-style arXiv identifier (`2104.06921`, optional version).
pub static ARXIV_ID: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(\d{4}\.\d{4,5})(?:v\d+)?").expect("a valid pattern"));

/// One paper of the library, as imported.
///
/// `id` is the stable identity used for de-duplication: records with the same
/// `id` replace each other on re-import.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Paper {
    pub id: String,
    /// Citation key (BibTeX key), empty when the source has none.
    pub key: String,
    pub doi: String,
    pub title: String,
    #[serde(rename = "abstract")]
    pub abstract_text: String,
    pub keywords: Vec<String>,
    /// Display names, "Given Family".
    pub authors: Vec<String>,
    pub year: Option<i32>,
    pub venue: String,
    pub url: String,
    /// BibTeX entry type in lower case (`article`, `inproceedings`, ...).
    pub entry_type: String,
    /// The entry exactly as it stood in the source file; empty when the
    /// source was not BibTeX (the exporter generates one then).
    pub bibtex: String,
    /// Its source flags it retracted (Zotero's retraction list).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub retracted: bool,
    /// Where it stands in Zotero, when it was imported from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zotero: Option<ZoteroOrigin>,
}

/// A record's place in a Zotero library.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ZoteroOrigin {
    /// `library/item key`.
    pub item: String,
    /// Where its citation key came from (`zotero`, `better-bibtex`, `extra`,
    /// `generated`, ...).
    pub key_source: String,
    /// Its collections, as paths (`Parent/Child`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub collections: Vec<String>,
    /// Its tags (also its `keywords`, so that search finds them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Keys it had before (a draft that still cites one is told the new key).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub former_keys: Vec<String>,
}

impl Paper {
    /// Identity for a BibTeX entry: its DOI when it has one, else its key.
    pub fn bibtex_id(doi: &str, key: &str) -> String {
        if doi.is_empty() {
            format!("bib:{key}")
        } else {
            format!("doi:{}", normalize_doi(doi))
        }
    }

    /// "Family et al." style short author line for result lists.
    pub fn short_authors(&self) -> String {
        match self.authors.len() {
            0 => String::new(),
            1 => self.authors[0].clone(),
            2 => format!("{} and {}", self.authors[0], self.authors[1]),
            _ => format!("{} et al.", self.authors[0]),
        }
    }
}

/// Lower-cases a DOI and strips resolver prefixes (`https://doi.org/`, `doi:`).
pub fn normalize_doi(doi: &str) -> String {
    let d = doi.trim();
    let lower = d.to_ascii_lowercase();
    for prefix in ["https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"] {
        if let Some(rest) = lower.strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
    lower
}

/// `arxiv:<id>` when a URL or DOI names an arXiv paper.
pub fn arxiv_id_of(url_or_doi: &str) -> Option<String> {
    let lower = url_or_doi.to_ascii_lowercase();
    if !(lower.contains("arxiv")) {
        return None;
    }
    ARXIV_ID.captures(&lower).map(|m| format!("arxiv:{}", &m[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doi_prefixes_are_stripped_and_lowercased() {
        assert_eq!(normalize_doi(" https://doi.org/10.1145/ABC.1 "), "10.1145/abc.1");
        assert_eq!(normalize_doi("doi:10.18653/V1/P19-1"), "10.18653/v1/p19-1");
        assert_eq!(Paper::bibtex_id("", "smith2020"), "bib:smith2020");
        assert_eq!(Paper::bibtex_id("10.1/X", "smith2020"), "doi:10.1/x");
    }

    #[test]
    fn arxiv_ids_from_urls_and_dois() {
        assert_eq!(arxiv_id_of("https://arxiv.org/abs/2104.06921v2").as_deref(), Some("arxiv:2104.06921"));
        assert_eq!(arxiv_id_of("10.48550/arXiv.2002.11768").as_deref(), Some("arxiv:2002.11768"));
        assert_eq!(arxiv_id_of("https://aclanthology.org/2020.acl-main.1"), None);
    }

    #[test]
    fn short_authors_forms() {
        let mut p = Paper::default();
        assert_eq!(p.short_authors(), "");
        p.authors = vec!["A B".into()];
        assert_eq!(p.short_authors(), "A B");
        p.authors.push("C D".into());
        assert_eq!(p.short_authors(), "A B and C D");
        p.authors.push("E F".into());
        assert_eq!(p.short_authors(), "A B et al.");
    }
}
