//! The documents a client has open: their text, kind, the positions the
//! protocol speaks in (UTF-16 code units) and what they cite.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use lsp_types::{Position, Range, Url};
use regex::Regex;

use crate::corpus::citation_markup::{self, CiteSyntax};
use crate::project::{Project, Refused};

/// An open document.
#[derive(Debug, Clone)]
pub struct Document {
    pub uri: Url,
    /// The file, for `file:` URIs.
    pub path: Option<PathBuf>,
    pub syntax: CiteSyntax,
    pub text: String,
    pub version: i32,
    /// The project its paths must stay in (its workspace folder, else its
    /// own folder); none for a document that is not a file.
    pub project: Option<Project>,
}

/// Documents over this size are not read for recommendations (their
/// diagnostics and hovers still work).
pub const MAX_TEXT: usize = 4 << 20;

impl Document {
    pub fn new(uri: Url, language_id: &str, text: String, version: i32) -> Document {
        let path = uri.to_file_path().ok();
        let syntax = match language_id {
            "markdown" | "quarto" | "rmd" | "pandoc" => CiteSyntax::Markdown,
            "typst" => CiteSyntax::Typst,
            "latex" | "tex" | "plaintex" | "bibtex" => CiteSyntax::Latex,
            _ => path.as_deref().map(CiteSyntax::for_file).unwrap_or_default(),
        };
        let project = path.as_deref().and_then(|p| Project::of_file(p).ok());
        Document { uri, path, syntax, text, version, project }
    }

    /// The same document in the project of the first of `roots` (workspace
    /// folders) that holds it; else it keeps its own folder.
    pub fn in_workspace(mut self, roots: &[Project]) -> Document {
        if let Some(path) = &self.path {
            if let Some(root) = roots.iter().filter(|r| r.contains(path)).max_by_key(|r| r.root().components().count()) {
                self.project = Some(root.clone());
            }
        }
        self
    }

    /// The byte offset of a protocol position (a UTF-16 column), or none
    /// when the line does not exist; a column past the line's end is its end.
    /// Lines end as the protocol says: `\n`, `\r\n` or a lone `\r`.
    pub fn offset(&self, pos: Position) -> Option<usize> {
        let b = self.text.as_bytes();
        let mut start = 0;
        for _ in 0..pos.line {
            let end = start + self.text[start..].find(['\n', '\r'])?;
            start = end + if b[end] == b'\r' && b.get(end + 1) == Some(&b'\n') { 2 } else { 1 };
        }
        let line_end = self.text[start..].find(['\n', '\r']).map_or(self.text.len(), |i| start + i);
        let line = &self.text[start..line_end];
        let mut units = 0u32;
        for (i, c) in line.char_indices() {
            if units >= pos.character {
                return Some(start + i);
            }
            units += c.len_utf16() as u32;
        }
        Some(line_end)
    }

    /// The protocol position of a byte offset (clamped to the text, and to
    /// a character boundary; inside a `\r\n`, the end of its line). Lines
    /// end as the protocol says: `\n`, `\r\n` or a lone `\r` (a file
    /// with classic Mac line ends has lines too).
    pub fn position(&self, offset: usize) -> Position {
        let b = self.text.as_bytes();
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        if offset > 0 && b[offset - 1] == b'\r' && b.get(offset) == Some(&b'\n') {
            offset -= 1;
        }
        let mut line = 0u32;
        let mut line_start = 0;
        for (i, &c) in b[..offset].iter().enumerate() {
            if c == b'\n' || (c == b'\r' && b.get(i + 1) != Some(&b'\n')) {
                line += 1;
                line_start = i + 1;
            }
        }
        let character = self.text[line_start..offset].chars().map(|c| c.len_utf16() as u32).sum();
        Position { line, character }
    }

    pub fn range(&self, start: usize, end: usize) -> Range {
        Range { start: self.position(start), end: self.position(end) }
    }

    /// (row, column in characters) of a byte offset, as the draft context
    /// functions take it: rows as [`str::lines`] splits the text (at `\n`),
    /// not the protocol's lines.
    pub fn row_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let row = before.matches('\n').count();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (row, before[line_start..].chars().count())
    }

    /// The bibliography the document names (`\bibliography{refs}`,
    /// `\addbibresource{refs.bib}`, front matter `bibliography: refs.bib`,
    /// Typst `#bibliography("refs.bib")`) as written, with the byte range
    /// of the name; none: it names none.
    pub fn bibliography_named(&self) -> Option<(String, std::ops::Range<usize>)> {
        static LATEX: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r"\\(bibliography|addbibresource)\{([^}]+)\}").expect("a valid pattern"));
        static FRONT: LazyLock<Regex> =
            LazyLock::new(|| Regex::new(r#"(?m)^bibliography:\s*["']?([^"'\n]+?)["']?\s*$"#).expect("a valid pattern"));
        static TYPST: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"#bibliography\(\s*"([^"]+)""#).expect("a valid pattern"));
        let named = if let Some(c) = LATEX.captures(&self.text) {
            let all = c.get(2).expect("group 2");
            let first = all.as_str().split(',').next().unwrap_or("").trim().to_string();
            let name = if &c[1] == "bibliography" && !first.ends_with(".bib") { format!("{first}.bib") } else { first };
            Some((name, all.range()))
        } else if let Some(c) = FRONT.captures(&self.text) {
            let m = c.get(1).expect("group 1");
            Some((m.as_str().trim().to_string(), m.range()))
        } else {
            TYPST.captures(&self.text).map(|c| {
                let m = c.get(1).expect("group 1");
                (m.as_str().to_string(), m.range())
            })
        };
        named.filter(|(n, _)| !n.is_empty())
    }

    /// The bibliography file: the one the document names, else
    /// `references.bib` beside it; it must lie inside the document's
    /// project ([`crate::project`]), for reading and for writing.
    pub fn bibliography(&self) -> Result<PathBuf, Refused> {
        let named = self.bibliography_named().map_or_else(|| "references.bib".to_string(), |(n, _)| n);
        let (Some(project), Some(dir)) = (&self.project, self.path.as_deref().and_then(Path::parent)) else {
            return Err(Refused::Unreadable { named, why: "the document is not a file in a folder".into() });
        };
        project.resolve(dir, &named)
    }

    /// Every citation key the document cites, with its byte range.
    pub fn citations(&self) -> Vec<(String, std::ops::Range<usize>)> {
        citation_markup::citations(&self.text, self.syntax)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, text: &str) -> Document {
        Document::new(Url::parse(&format!("file:///tmp/d/{name}")).unwrap(), "", text.to_string(), 1)
    }

    #[test]
    fn positions_are_utf16_columns() {
        let d = doc("a.tex", "Müller 😀 x\nsecond");
        // "😀" is two UTF-16 units: column 9 is the space after it.
        let off = d.offset(Position { line: 0, character: 9 }).unwrap();
        assert_eq!(&d.text[off..off + 2], " x");
        assert_eq!(d.position(off), Position { line: 0, character: 9 });
        assert_eq!(d.offset(Position { line: 1, character: 99 }), Some(d.text.len()), "past the end: the line's end");
        assert_eq!(d.offset(Position { line: 7, character: 0 }), None, "no such line");
        assert_eq!(d.position(usize::MAX), Position { line: 1, character: 6 });
    }

    /// The protocol's line ends are `\n`, `\r\n` and a lone `\r`: each
    /// starts a line, for positions and for offsets.
    #[test]
    fn every_line_end_the_protocol_knows_starts_a_line() {
        for text in ["one\ntwo\nthr😀e", "one\r\ntwo\r\nthr😀e", "one\rtwo\rthr😀e", "one\rtwo\r\nthr😀e"] {
            let d = doc("a.bib", text);
            let at = text.find("thr").unwrap() + 2;
            assert_eq!(d.position(at), Position { line: 2, character: 2 }, "{text:?}");
            assert_eq!(d.offset(Position { line: 2, character: 2 }), Some(at), "{text:?}");
            let end = text.len();
            assert_eq!(d.position(end), Position { line: 2, character: 6 }, "{text:?}");
            assert_eq!(d.offset(Position { line: 1, character: 0 }), Some(text.find("two").unwrap()), "{text:?}");
            assert_eq!(d.offset(Position { line: 0, character: 99 }), Some(3), "a line ends before its line end: {text:?}");
            assert_eq!(d.offset(Position { line: 3, character: 0 }), None, "{text:?}");
        }
        // Between the `\r` and the `\n` of one line end: the end of the line.
        let d = doc("a.bib", "ab\r\ncd");
        assert_eq!(d.position(3), Position { line: 0, character: 2 });
        assert_eq!(d.position(4), Position { line: 1, character: 0 });
    }

    #[test]
    fn the_bibliography_is_found_for_each_syntax() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("d");
        std::fs::create_dir_all(&d).unwrap();
        let real = d.canonicalize().unwrap();
        let doc = |name: &str, text: &str| Document::new(Url::from_file_path(d.join(name)).unwrap(), "", text.to_string(), 1);
        assert_eq!(doc("a.tex", r"\bibliography{refs,more}").bibliography().unwrap(), real.join("refs.bib"));
        assert_eq!(doc("a.tex", r"\addbibresource{lib/x.bib}").bibliography().unwrap(), real.join("lib/x.bib"));
        assert_eq!(doc("a.md", "---\nbibliography: \"my refs.bib\"\n---\n").bibliography().unwrap(), real.join("my refs.bib"));
        assert_eq!(doc("a.typ", r#"#bibliography("works.bib")"#).bibliography().unwrap(), real.join("works.bib"));
        assert_eq!(doc("a.tex", "no bibliography").bibliography().unwrap(), real.join("references.bib"));
        // Outside the project: refused, whatever the syntax.
        for (name, text) in [
            ("a.tex", r"\addbibresource{/etc/x.bib}"),
            ("a.tex", r"\bibliography{../elsewhere/x}"),
            ("a.md", "---\nbibliography: ../x.bib\n---\n"),
            ("a.typ", r#"#bibliography("/tmp/../etc/works.bib")"#),
        ] {
            let e = doc(name, text).bibliography().unwrap_err();
            assert!(e.to_string().contains("outside the project"), "{text}: {e}");
        }
        // A workspace folder above the document widens its project.
        let sub = d.join("chapters");
        std::fs::create_dir_all(&sub).unwrap();
        let inner = Document::new(Url::from_file_path(sub.join("c.tex")).unwrap(), "", r"\bibliography{../refs}".into(), 1);
        assert!(inner.bibliography().is_err(), "its own folder is its project");
        let inner = inner.in_workspace(&[Project::new(&d).unwrap()]);
        assert_eq!(inner.bibliography().unwrap(), real.join("refs.bib"));
    }
}
