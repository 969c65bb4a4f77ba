//! A citing document read from a PDF, a LaTeX project or a Markdown file:
//! its paragraphs with their in-text citations resolved to reference
//! entries, and its reference list. The readers (`pdf`, `latex`,
//! `markdown`) produce a [`Document`]; linking gives each reference a
//! library paper; [`Document::citing_sentences`] then splits paragraphs
//! into sentences without cutting a citation and emits the sentences that
//! cite a linked paper, as every other source of citing sentences does.

use std::path::PathBuf;

use serde::Serialize;

use super::markers::{find_markers, resolve_overlaps, Marker};
use super::record::{CitingPaper, CitingSentence};
use super::sentences::split_sentences;

use crate::corpus::Paper;

/// What kind of file a document came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DocKind {
    Pdf,
    Latex,
    Markdown,
}

impl DocKind {
    pub fn name(self) -> &'static str {
        match self {
            DocKind::Pdf => "PDF",
            DocKind::Latex => "LaTeX",
            DocKind::Markdown => "Markdown",
        }
    }
}

/// An in-text citation: a byte range of its paragraph and the reference
/// entries it points to (empty when it could not be resolved).
#[derive(Debug, Clone, PartialEq)]
pub struct Citation {
    pub start: usize,
    pub end: usize,
    pub refs: Vec<usize>,
}

/// A paragraph of running text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Paragraph {
    pub text: String,
    /// 1-based page (PDFs).
    pub page: Option<u32>,
    pub citations: Vec<Citation>,
}

/// An entry of the document's reference list (a PDF's bibliography, a
/// `.bib` / `.bbl` entry).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reference {
    /// The entry as text (a PDF's reference; `title. authors. venue` for a
    /// `.bib` entry).
    pub raw: String,
    /// Its label or key: `12` for `[12]`, `Kogure 90`, a BibTeX key.
    pub label: String,
    /// Fields when the source states them (BibTeX); PDFs leave them empty
    /// and the linker reads `raw`.
    pub title: String,
    pub doi: String,
    pub arxiv: String,
    pub year: Option<i32>,
    /// `a` in "2002a".
    pub year_suffix: Option<char>,
    /// Family names of the authors, as far as they could be read.
    pub surnames: Vec<String>,
    /// The library paper it was linked to.
    pub link: Option<(String, LinkMethod)>,
    /// Other library records of the same work (a paper imported twice,
    /// under two ids): they are cited too.
    pub also: Vec<String>,
    /// The whole record when the source is a BibTeX entry (imported into
    /// the library with `--add-cited` when it is not there yet).
    pub paper: Option<Box<Paper>>,
}

/// A document ready to give citing sentences.
#[derive(Debug, Clone)]
pub struct Document {
    pub kind: DocKind,
    pub file: PathBuf,
    /// The document's own title and DOI as found in it (may be empty), to
    /// match it to its library record.
    pub title: String,
    pub doi: String,
    /// Text of the first page before the abstract (PDFs): where the title
    /// is, when no metadata says it.
    pub front: String,
    pub paragraphs: Vec<Paragraph>,
    pub references: Vec<Reference>,
}

/// What one document gave.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DocStats {
    pub references: usize,
    pub references_linked: usize,
    /// In-text citations found, resolved to a reference entry, and resolved
    /// to a reference that is linked to a library paper.
    pub markers: usize,
    pub markers_resolved: usize,
    pub markers_linked: usize,
    pub sentences: usize,
}

impl Document {
    pub fn new(kind: DocKind, file: PathBuf) -> Document {
        Document {
            kind,
            file,
            title: String::new(),
            doi: String::new(),
            front: String::new(),
            paragraphs: Vec::new(),
            references: Vec::new(),
        }
    }

    /// Counts of references and markers (after linking).
    pub fn stats(&self) -> DocStats {
        let mut s = DocStats {
            references: self.references.len(),
            references_linked: self.references.iter().filter(|r| r.link.is_some()).count(),
            ..DocStats::default()
        };
        for p in &self.paragraphs {
            for c in &p.citations {
                s.markers += 1;
                s.markers_resolved += !c.refs.is_empty() as usize;
                s.markers_linked += c.refs.iter().any(|&r| self.references.get(r).is_some_and(|r| r.link.is_some())) as usize;
            }
        }
        s
    }

    /// The library papers a citation cites (its linked references).
    fn cited_by(&self, c: &Citation) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for &r in &c.refs {
            let Some(r) = self.references.get(r) else { continue };
            if let Some((id, _)) = &r.link {
                for id in std::iter::once(id).chain(&r.also) {
                    if !out.contains(id) {
                        out.push(id.clone());
                    }
                }
            }
        }
        out
    }

    /// The sentences that cite at least one library paper, with every
    /// citation of the sentence as a marker (unlinked ones cite nothing
    /// but still delimit spans).
    pub fn citing_sentences(&self, citing: &CitingPaper) -> Vec<CitingSentence> {
        let mut out = Vec::new();
        for p in &self.paragraphs {
            let cited: Vec<Vec<String>> = p.citations.iter().map(|c| self.cited_by(c)).collect();
            if cited.iter().all(Vec::is_empty) {
                continue;
            }
            let protected: Vec<(usize, usize)> = p.citations.iter().map(|c| (c.start, c.end)).collect();
            let bounds = split_sentences(&p.text, &protected);
            for (k, &(ss, se)) in bounds.iter().enumerate() {
                let inside: Vec<usize> =
                    (0..p.citations.len()).filter(|&i| p.citations[i].start >= ss && p.citations[i].start < se).collect();
                if inside.iter().all(|&i| cited[i].is_empty()) {
                    continue;
                }
                let sentence = &p.text[ss..se];
                let mut markers: Vec<Marker> = inside
                    .iter()
                    .map(|&i| Marker { start: p.citations[i].start - ss, end: p.citations[i].end.min(se) - ss, cited: cited[i].clone() })
                    .collect();
                // Citations the reader did not resolve still delimit spans.
                markers.extend(find_markers(sentence, &[]));
                let from = bounds[k.saturating_sub(1)].0;
                let to = bounds[(k + 1).min(bounds.len() - 1)].1;
                out.push(CitingSentence {
                    text: sentence.to_string(),
                    markers: resolve_overlaps(markers),
                    citing: citing.clone(),
                    page: p.page,
                    context: Some(p.text[from..to].to_string()),
                });
            }
        }
        out
    }
}

/// How an entry was linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkMethod {
    Doi,
    Arxiv,
    Title,
    /// Imported from the document's own bibliography (`--add-cited`).
    Added,
}

impl LinkMethod {
    pub fn name(self) -> &'static str {
        match self {
            LinkMethod::Doi => "doi",
            LinkMethod::Arxiv => "arxiv",
            LinkMethod::Title => "title",
            LinkMethod::Added => "added",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc() -> Document {
        let text = "We tag with TnT [1]. Parsing uses a lexicalised model [2, 3]. Nothing here.".to_string();
        let at = |s: &str| (text.find(s).unwrap(), text.find(s).unwrap() + s.len());
        let (a, b) = at("[1]");
        let (c, d) = at("[2, 3]");
        let mut doc = Document::new(DocKind::Pdf, PathBuf::from("x.pdf"));
        doc.paragraphs.push(Paragraph {
            citations: vec![Citation { start: a, end: b, refs: vec![0] }, Citation { start: c, end: d, refs: vec![1, 2] }],
            text,
            page: Some(3),
        });
        doc.references = vec![
            Reference { label: "1".into(), link: Some(("acl:A00-1031".into(), LinkMethod::Title)), ..Default::default() },
            Reference { label: "2".into(), ..Default::default() },
            Reference { label: "3".into(), link: Some(("acl:P97-1003".into(), LinkMethod::Doi)), ..Default::default() },
        ];
        doc
    }

    #[test]
    fn sentences_that_cite_linked_papers_come_out_with_their_markers() {
        let d = doc();
        let s = d.citing_sentences(&CitingPaper { id: "doc:1".into(), ..Default::default() });
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].text, "We tag with TnT [1].");
        assert_eq!(s[0].markers[0].cited, ["acl:A00-1031"]);
        assert_eq!(s[0].page, Some(3));
        assert_eq!(s[1].text, "Parsing uses a lexicalised model [2, 3].");
        assert_eq!(s[1].markers[0].cited, ["acl:P97-1003"], "the unlinked reference adds nothing");
        let st = d.stats();
        assert_eq!((st.references, st.references_linked, st.markers, st.markers_resolved, st.markers_linked), (3, 2, 2, 2, 2));
    }
}
