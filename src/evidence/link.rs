//! Linking bibliography entries of full text to library papers: by DOI, by
//! arXiv id, then by a normalised title that appears in the raw reference.

use serde_json::Value;

use crate::corpus::paper::{normalize_doi, ARXIV_ID};
use crate::index::PaperIndex;

/// How an entry was linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMethod {
    Doi,
    Arxiv,
    Title,
}

impl LinkMethod {
    pub fn name(self) -> &'static str {
        match self {
            LinkMethod::Doi => "doi",
            LinkMethod::Arxiv => "arxiv",
            LinkMethod::Title => "title",
        }
    }
}


/// Titles shorter than this (in normalised characters) are not matched by
/// title alone: too many false links.
const MIN_TITLE_CHARS: usize = 20;

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
        let norm_raw = normalize_title(raw);
        if norm_raw.len() < MIN_TITLE_CHARS {
            return None;
        }
        let hits = papers.search_titles(raw, 5).ok()?;
        hits.into_iter().find_map(|(id, title)| {
            let t = normalize_title(&title);
            (t.len() >= MIN_TITLE_CHARS && norm_raw.contains(&t)).then_some(id)
        })
    }
}

/// Lower-case letters and digits, single-spaced.
pub fn normalize_title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split(|c: char| !c.is_alphanumeric()) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn titles_normalise() {
        assert_eq!(normalize_title("TnT -- A Statistical Part-of-Speech Tagger."), "tnt a statistical part of speech tagger");
    }
}
