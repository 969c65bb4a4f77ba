//! The documents a client has open: what only the protocol needs (the
//! URI, the version, positions in UTF-16 code units) around the draft
//! model every front end shares ([`crate::draft::Document`]: the text, its
//! syntax, what it cites, its prose, the bibliography files it names).

use lsp_types::{Position, Range, Url};

use crate::corpus::citation_markup::CiteGrammar;
use crate::draft;
use crate::project::Project;

/// An open document.
#[derive(Debug, Clone)]
pub struct Document {
    pub uri: Url,
    pub version: i32,
    /// The draft: its text, syntax, file and project.
    pub draft: draft::Document,
}

/// Documents over this size are not read for recommendations (their
/// diagnostics and hovers still work).
pub const MAX_TEXT: usize = 4 << 20;

impl Document {
    /// A document as the client opened it: its syntax from its language id,
    /// else its file's name; a `file:` URI is a file in its folder's project.
    /// Its citations are read with `configured`'s wrapper commands.
    pub fn new(uri: Url, language_id: &str, text: String, version: i32, configured: &CiteGrammar) -> Document {
        let draft = match uri.to_file_path() {
            Ok(path) => draft::Document::of_file(&path, text, Some(language_id), configured),
            Err(()) => draft::Document::new(text, configured.in_syntax(draft::syntax_of(language_id, None))),
        };
        Document { uri, version, draft }
    }

    /// The same document in the project of the innermost of `roots`
    /// (workspace folders) that holds it; else it keeps its own folder.
    pub fn in_workspace(mut self, roots: &[Project]) -> Document {
        self.draft = self.draft.in_workspace(roots);
        self
    }

    /// Its text.
    pub fn text(&self) -> &str {
        &self.draft.text
    }

    /// The byte offset of a protocol position (a UTF-16 column), or none
    /// when the line does not exist; a column past the line's end is its end.
    /// Lines end as the protocol says: `\n`, `\r\n` or a lone `\r`.
    pub fn offset(&self, pos: Position) -> Option<usize> {
        let text = self.text();
        let b = text.as_bytes();
        let mut start = 0;
        for _ in 0..pos.line {
            let end = start + text[start..].find(['\n', '\r'])?;
            start = end + if b[end] == b'\r' && b.get(end + 1) == Some(&b'\n') { 2 } else { 1 };
        }
        let line_end = text[start..].find(['\n', '\r']).map_or(text.len(), |i| start + i);
        let line = &text[start..line_end];
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
        let text = self.text();
        let b = text.as_bytes();
        let mut offset = offset.min(text.len());
        while !text.is_char_boundary(offset) {
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
        let character = text[line_start..offset].chars().map(|c| c.len_utf16() as u32).sum();
        Position { line, character }
    }

    pub fn range(&self, start: usize, end: usize) -> Range {
        Range { start: self.position(start), end: self.position(end) }
    }

    /// The file's name, or its URI, as messages say it.
    pub fn name(&self) -> String {
        self.draft.path.as_deref().map_or_else(|| self.uri.to_string(), |p| p.display().to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(name: &str, text: &str) -> Document {
        Document::new(Url::parse(&format!("file:///tmp/d/{name}")).unwrap(), "", text.to_string(), 1, &CiteGrammar::PLAIN)
    }

    #[test]
    fn positions_are_utf16_columns() {
        let d = doc("a.tex", "Müller 😀 x\nsecond");
        // "😀" is two UTF-16 units: column 9 is the space after it.
        let off = d.offset(Position { line: 0, character: 9 }).unwrap();
        assert_eq!(&d.text()[off..off + 2], " x");
        assert_eq!(d.position(off), Position { line: 0, character: 9 });
        assert_eq!(d.offset(Position { line: 1, character: 99 }), Some(d.text().len()), "past the end: the line's end");
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
        let doc = |name: &str, text: &str| {
            Document::new(Url::from_file_path(d.join(name)).unwrap(), "", text.to_string(), 1, &CiteGrammar::PLAIN)
        };
        let bib = |doc: Document| doc.draft.bibliography();
        assert_eq!(bib(doc("a.tex", r"\bibliography{refs,more}")).unwrap(), real.join("refs.bib"));
        assert_eq!(bib(doc("a.tex", r"\addbibresource{lib/x.bib}")).unwrap(), real.join("lib/x.bib"));
        assert_eq!(bib(doc("a.md", "---\nbibliography: \"my refs.bib\"\n---\n")).unwrap(), real.join("my refs.bib"));
        // Pandoc's lists: the first file, not one named "[a.bib, b.bib]" or "- a.bib".
        assert_eq!(bib(doc("a.md", "---\nbibliography: [a.bib, b.bib]\n---\n")).unwrap(), real.join("a.bib"));
        assert_eq!(bib(doc("a.md", "---\nbibliography:\n- a.bib\n- b.bib\n---\n")).unwrap(), real.join("a.bib"));
        assert_eq!(bib(doc("a.typ", r#"#bibliography("works.bib")"#)).unwrap(), real.join("works.bib"));
        assert_eq!(bib(doc("a.tex", "no bibliography")).unwrap(), real.join("references.bib"));
        // Outside the project: refused, whatever the syntax.
        for (name, text) in [
            ("a.tex", r"\addbibresource{/etc/x.bib}"),
            ("a.tex", r"\bibliography{../elsewhere/x}"),
            ("a.md", "---\nbibliography: ../x.bib\n---\n"),
            ("a.typ", r#"#bibliography("/tmp/../etc/works.bib")"#),
        ] {
            let e = bib(doc(name, text)).unwrap_err();
            assert!(e.to_string().contains("outside the project"), "{text}: {e}");
        }
        // A workspace folder above the document widens its project.
        let sub = d.join("chapters");
        std::fs::create_dir_all(&sub).unwrap();
        let inner =
            Document::new(Url::from_file_path(sub.join("c.tex")).unwrap(), "", r"\bibliography{../refs}".into(), 1, &CiteGrammar::PLAIN);
        assert!(inner.draft.bibliography().is_err(), "its own folder is its project");
        let inner = inner.in_workspace(&[Project::new(&d).unwrap()]);
        assert_eq!(inner.draft.bibliography().unwrap(), real.join("refs.bib"));
    }
}
