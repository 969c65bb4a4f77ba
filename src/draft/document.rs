//! One draft as every front end sees it: its text, how it writes
//! citations (its grammar: its syntax and the wrapper commands the user's
//! configuration names), what it cites, its prose, and the bibliography
//! files it names, resolved inside its project. The language server wraps it with what only
//! the protocol needs (a URI, a version, UTF-16 positions); `check` and the
//! editor use it as it is.

use std::ops::Range;
use std::path::{Path, PathBuf};

use super::prose::{read, uncommented, Reading};
use crate::corpus::bibliography_names::{bibliography_names, BibliographyName};
use crate::corpus::citation_markup::{citations, CiteGrammar, CiteSyntax};
use crate::project::{Project, Refused};

/// The bibliography a draft that names none reads: this file beside it.
pub const DEFAULT_BIBLIOGRAPHY: &str = "references.bib";

/// A draft.
#[derive(Debug, Clone)]
pub struct Document {
    pub text: String,
    /// How it writes citations: its syntax, and the wrapper commands that
    /// cite in it.
    pub grammar: CiteGrammar,
    /// The file (none: a text that is not a file).
    pub path: Option<PathBuf>,
    /// The project its paths must stay in (its workspace folder, else its
    /// own folder); none for a text that is not a file.
    pub project: Option<Project>,
}

/// A bibliography file of a draft.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BibliographyFile {
    /// The file as the draft names it (`refs.bib` for `\bibliography{refs}`);
    /// [`DEFAULT_BIBLIOGRAPHY`] when it names none.
    pub name: String,
    /// Where the draft names it (the name's bytes); none for the default.
    pub named_at: Option<Range<usize>>,
    /// The file, inside the project; or why it is not read.
    pub path: Result<PathBuf, Refused>,
}

impl Document {
    /// A text that is not a file, read with `grammar`.
    pub fn new(text: String, grammar: CiteGrammar) -> Document {
        Document { text, grammar, path: None, project: None }
    }

    /// The file at `path` holding `text`, in its own folder's project; its
    /// grammar `configured`'s (the wrapper commands the user's
    /// configuration names) in its syntax: from `language` (an editor's
    /// language id) when that names one, else from the file's name.
    pub fn of_file(path: &Path, text: String, language: Option<&str>, configured: &CiteGrammar) -> Document {
        let grammar = configured.in_syntax(syntax_of(language.unwrap_or_default(), Some(path)));
        let project = Project::of_file(path).ok();
        Document { text, grammar, path: Some(path.to_path_buf()), project }
    }

    /// How it writes citations.
    pub fn syntax(&self) -> CiteSyntax {
        self.grammar.syntax()
    }

    /// The same draft in `project`.
    pub fn in_project(mut self, project: Project) -> Document {
        self.project = Some(project);
        self
    }

    /// The same draft in the project of the innermost of `roots` (workspace
    /// folders) that holds it; else it keeps its own folder.
    pub fn in_workspace(mut self, roots: &[Project]) -> Document {
        if let Some(path) = &self.path {
            if let Some(root) = roots.iter().filter(|r| r.contains(path)).max_by_key(|r| r.root().components().count()) {
                self.project = Some(root.clone());
            }
        }
        self
    }

    /// The draft read: its citations (at most `max_keys` keys) and its prose.
    pub fn reading(&self, max_keys: usize) -> Reading {
        read(&self.text, &self.grammar, max_keys)
    }

    /// Its prose ([`super::prose`]).
    pub fn prose(&self) -> String {
        super::prose::prose(&self.text, &self.grammar)
    }

    /// Every key it cites (comments and code aside), with its byte range.
    pub fn citations(&self) -> Vec<(String, Range<usize>)> {
        citations(&uncommented(&self.text, self.syntax()), &self.grammar)
    }

    /// The bibliography files it names, as it writes them.
    pub fn bibliography_names(&self) -> Vec<BibliographyName> {
        bibliography_names(&self.text, self.syntax())
    }

    /// Every bibliography file it reads: those it names, else
    /// [`DEFAULT_BIBLIOGRAPHY`] beside it; each resolved inside its project
    /// ([`crate::project`]), for reading and for writing.
    pub fn bibliographies(&self) -> Vec<BibliographyFile> {
        let named = self.bibliography_names();
        if named.is_empty() {
            return vec![self.file(DEFAULT_BIBLIOGRAPHY, None)];
        }
        named.into_iter().map(|n| self.file(&n.file, Some(n.range))).collect()
    }

    /// The bibliography file entries are added to: the first it reads.
    pub fn bibliography(&self) -> Result<PathBuf, Refused> {
        self.bibliographies().swap_remove(0).path
    }

    /// Its title and abstract ([`super::global_context`]).
    pub fn global_context(&self) -> (String, String) {
        super::global_context(&self.text, &self.grammar)
    }

    /// The sentence of the prose around `removed` (a citation being
    /// written, taken out; `[CIT]` where it was): a request's local context.
    pub fn sentence_at(&self, removed: Range<usize>) -> String {
        super::citing_sentence(&self.prose(), removed)
    }

    fn file(&self, name: &str, named_at: Option<Range<usize>>) -> BibliographyFile {
        BibliographyFile { name: name.to_string(), named_at, path: self.resolve(name) }
    }

    /// `named`, written in this draft, inside its project.
    fn resolve(&self, named: &str) -> Result<PathBuf, Refused> {
        let (Some(project), Some(dir)) = (&self.project, self.path.as_deref().and_then(Path::parent)) else {
            return Err(Refused::Unreadable { named: named.to_string(), why: "the document is not a file in a folder".into() });
        };
        project.resolve(dir, named)
    }
}

/// How a draft writes citations: by its editor's language id (`latex`,
/// `markdown`, `typst`, …) when that names a syntax, else by its file's
/// name.
pub fn syntax_of(language: &str, path: Option<&Path>) -> CiteSyntax {
    match language {
        "markdown" | "quarto" | "rmd" | "pandoc" => CiteSyntax::Markdown,
        "typst" => CiteSyntax::Typst,
        "latex" | "tex" | "plaintex" | "bibtex" => CiteSyntax::Latex,
        _ => path.map(CiteSyntax::for_file).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_bibliography_a_draft_names_is_resolved_in_its_project() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("d");
        std::fs::create_dir_all(&d).unwrap();
        let real = d.canonicalize().unwrap();
        let doc = |name: &str, text: &str| Document::of_file(&d.join(name), text.to_string(), None, &CiteGrammar::default());
        let paths = |doc: Document| doc.bibliographies().into_iter().map(|f| f.path.unwrap()).collect::<Vec<_>>();
        assert_eq!(paths(doc("a.tex", r"\bibliography{refs,more}")), [real.join("refs.bib"), real.join("more.bib")]);
        assert_eq!(paths(doc("a.md", "---\nbibliography: [a.bib, b.bib]\n---\n")), [real.join("a.bib"), real.join("b.bib")]);
        assert_eq!(paths(doc("a.md", "---\nbibliography:\n  - a.bib\n  - b.bib\n---\n")), [real.join("a.bib"), real.join("b.bib")]);
        assert_eq!(paths(doc("a.typ", r#"#bibliography(("a.bib", "b.bib"))"#)), [real.join("a.bib"), real.join("b.bib")]);
        let none = doc("a.tex", "no bibliography").bibliographies();
        assert_eq!((none[0].name.as_str(), none[0].named_at.clone()), (DEFAULT_BIBLIOGRAPHY, None));
        assert_eq!(doc("a.md", "---\nbibliography: [a.bib, b.bib]\n---\n").bibliography().unwrap(), real.join("a.bib"));
        let named = doc("a.tex", "x \\addbibresource{../out.bib}").bibliographies();
        assert!(named[0].path.as_ref().unwrap_err().to_string().contains("outside the project"));
        assert_eq!(named[0].named_at, Some(18..28));
        assert!(Document::new("\\bibliography{refs}".into(), CiteGrammar::of(CiteSyntax::Latex)).bibliography().is_err(), "not a file");
    }

    #[test]
    fn a_commented_citation_is_none() {
        let doc = Document::new("We tag \\cite{a}. % \\cite{b}\n".into(), CiteGrammar::of(CiteSyntax::Latex));
        assert_eq!(doc.citations().into_iter().map(|(k, _)| k).collect::<Vec<_>>(), ["a"]);
        assert_eq!(syntax_of("", Some(Path::new("x.qmd"))), CiteSyntax::Markdown);
        assert_eq!(syntax_of("typst", Some(Path::new("x.tex"))), CiteSyntax::Typst);
    }

    /// A document reads with its own grammar: the configured wrapper is a
    /// citation of a draft whose grammar names it, in its citations, its
    /// reading and its prose, and of no other draft.
    #[test]
    fn a_draft_reads_with_its_own_grammar() {
        let tmp = tempfile::tempdir().unwrap();
        let text = "\\begin{document}\nWe tag \\refp{a} fast \\cite{b}.\n\\end{document}\n";
        let configured = CiteGrammar::default().with_wrappers(["refp"]);
        let mine = Document::of_file(&tmp.path().join("a.tex"), text.into(), None, &configured);
        let plain = Document::of_file(&tmp.path().join("a.tex"), text.into(), None, &CiteGrammar::default());
        let keys = |d: &Document| d.citations().into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(keys(&mine), ["a", "b"]);
        assert_eq!(keys(&plain), ["b"]);
        assert_eq!(mine.reading(10).scan.groups.len(), 2);
        assert!(mine.prose().contains("\\refp{a}"), "a citation stays as written in the prose");
        assert!(!plain.prose().contains("\\refp"), "an unknown command's name is blanked");
        // A Markdown file keeps the configured wrappers (readers of any syntax, as `strip_citations`, use them).
        let md = Document::of_file(&tmp.path().join("a.md"), "As [@x] said.".into(), None, &configured);
        assert_eq!((md.syntax(), md.grammar.wrappers()), (CiteSyntax::Markdown, configured.wrappers()));
        assert_eq!(keys(&md), ["x"]);
    }
}
