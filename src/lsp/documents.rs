//! The documents a client has open: their text, kind, the positions the
//! protocol speaks in (UTF-16 code units) and what they cite.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use lsp_types::{Position, Range, Url};
use regex::Regex;

use crate::export::cite::CiteSyntax;

/// An open document.
#[derive(Debug, Clone)]
pub struct Document {
    pub uri: Url,
    /// The file, for `file:` URIs.
    pub path: Option<PathBuf>,
    pub syntax: CiteSyntax,
    pub text: String,
    pub version: i32,
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
        Document { uri, path, syntax, text, version }
    }

    /// The byte offset of a protocol position (a UTF-16 column), or none
    /// when the line does not exist; a column past the line's end is its end.
    pub fn offset(&self, pos: Position) -> Option<usize> {
        let mut start = 0;
        for _ in 0..pos.line {
            start += self.text[start..].find('\n')? + 1;
        }
        let line_end = self.text[start..].find('\n').map_or(self.text.len(), |i| start + i);
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
    /// a character boundary).
    pub fn position(&self, offset: usize) -> Position {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let before = &self.text[..offset];
        let line = before.matches('\n').count() as u32;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let character = before[line_start..].chars().map(|c| c.len_utf16() as u32).sum();
        Position { line, character }
    }

    pub fn range(&self, start: usize, end: usize) -> Range {
        Range { start: self.position(start), end: self.position(end) }
    }

    /// (row, column in characters) of a byte offset, as the draft context
    /// functions take it.
    pub fn row_col(&self, offset: usize) -> (usize, usize) {
        let before = &self.text[..offset.min(self.text.len())];
        let row = before.matches('\n').count();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (row, before[line_start..].chars().count())
    }

    /// The bibliography file the document names (`\bibliography{refs}`,
    /// `\addbibresource{refs.bib}`, front matter `bibliography: refs.bib`,
    /// Typst `#bibliography("refs.bib")`), else `references.bib` beside it.
    pub fn bibliography(&self) -> PathBuf {
        static LATEX: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\(bibliography|addbibresource)\{([^}]+)\}").unwrap());
        static FRONT: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"(?m)^bibliography:\s*["']?([^"'\n]+?)["']?\s*$"#).unwrap());
        static TYPST: LazyLock<Regex> = LazyLock::new(|| Regex::new(r#"#bibliography\(\s*"([^"]+)""#).unwrap());
        let dir = self.path.as_deref().and_then(Path::parent).map(Path::to_path_buf).unwrap_or_default();
        let named = if let Some(c) = LATEX.captures(&self.text) {
            let first = c[2].split(',').next().unwrap_or("").trim().to_string();
            Some(if &c[1] == "bibliography" && !first.ends_with(".bib") { format!("{first}.bib") } else { first })
        } else if let Some(c) = FRONT.captures(&self.text) {
            Some(c[1].trim().to_string())
        } else {
            TYPST.captures(&self.text).map(|c| c[1].to_string())
        };
        match named.filter(|n| !n.is_empty()) {
            Some(n) => dir.join(n),
            None => dir.join("references.bib"),
        }
    }

    /// Every citation key the document cites, with its byte range.
    pub fn citations(&self) -> Vec<(String, std::ops::Range<usize>)> {
        citations(&self.text, self.syntax)
    }
}

/// Citation keys of `text` with their byte ranges: `\cite`-family commands
/// (LaTeX), `[@key]` groups (Markdown), `@key` and `#cite(<key>)` (Typst).
pub fn citations(text: &str, syntax: CiteSyntax) -> Vec<(String, std::ops::Range<usize>)> {
    static LATEX: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\\[A-Za-z]*cite[A-Za-z]*\*?(?:\[[^\]]*\])*\{([^}]*)\}").unwrap());
    static BRACKET: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\[[^\]\n]*@[^\]\n]*\]").unwrap());
    static AT_KEY: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?:^|[^\w@])-?@([A-Za-z0-9_][A-Za-z0-9_:.\-]*[A-Za-z0-9_])").unwrap());
    static TYPST_CITE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"#cite\(\s*<([^>\s]+)>").unwrap());
    let mut out = Vec::new();
    match syntax {
        CiteSyntax::Latex => {
            for c in LATEX.captures_iter(text) {
                let group = c.get(1).expect("group 1");
                let mut at = group.start();
                for part in group.as_str().split(',') {
                    let key = part.trim();
                    if !key.is_empty() {
                        let start = at + part.find(key).unwrap_or(0);
                        out.push((key.to_string(), start..start + key.len()));
                    }
                    at += part.len() + 1;
                }
            }
        }
        CiteSyntax::Markdown => {
            for b in BRACKET.find_iter(text) {
                for c in AT_KEY.captures_iter(b.as_str()) {
                    let m = c.get(1).expect("group 1");
                    out.push((m.as_str().to_string(), b.start() + m.start()..b.start() + m.end()));
                }
            }
        }
        CiteSyntax::Typst => {
            for c in AT_KEY.captures_iter(text) {
                let m = c.get(1).expect("group 1");
                out.push((m.as_str().to_string(), m.range()));
            }
            for c in TYPST_CITE.captures_iter(text) {
                let m = c.get(1).expect("group 1");
                out.push((m.as_str().to_string(), m.range()));
            }
        }
    }
    out
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

    #[test]
    fn the_bibliography_is_found_for_each_syntax() {
        assert_eq!(doc("a.tex", r"\bibliography{refs,more}").bibliography(), PathBuf::from("/tmp/d/refs.bib"));
        assert_eq!(doc("a.tex", r"\addbibresource{lib/x.bib}").bibliography(), PathBuf::from("/tmp/d/lib/x.bib"));
        assert_eq!(doc("a.md", "---\nbibliography: \"my refs.bib\"\n---\n").bibliography(), PathBuf::from("/tmp/d/my refs.bib"));
        assert_eq!(doc("a.typ", r#"#bibliography("works.bib")"#).bibliography(), PathBuf::from("/tmp/d/works.bib"));
        assert_eq!(doc("a.tex", "no bibliography").bibliography(), PathBuf::from("/tmp/d/references.bib"));
    }

    #[test]
    fn citations_with_their_ranges() {
        let t = r"As \citep[p.~3]{smith2020, doe2019} said.";
        let c = citations(t, CiteSyntax::Latex);
        assert_eq!(
            c.iter().map(|(k, r)| (k.as_str(), &t[r.clone()])).collect::<Vec<_>>(),
            [("smith2020", "smith2020"), ("doe2019", "doe2019")]
        );
        let md = "See [@lee2018; -@kim2017, p. 4], mail me@host.org.";
        assert_eq!(citations(md, CiteSyntax::Markdown).iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["lee2018", "kim2017"]);
        let typ = "As @smith2020 and #cite(<doe2019>) show; mail a@b.";
        assert_eq!(citations(typ, CiteSyntax::Typst).iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>(), ["smith2020", "doe2019"]);
    }
}
