//! What the author asks: the local context around the citation position and
//! the draft's global context (title, abstract).

use crate::corpus::benchmark::CIT;
use crate::error::{Error, Result};

/// Local context beyond this many words is cut (with a notice).
pub const MAX_CONTEXT_WORDS: usize = 400;

/// A recommendation request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Query {
    /// Text around the citation position; may contain `[CIT]` where the
    /// citation goes.
    pub context: String,
    /// Title of the citing draft (global context), may be empty.
    pub title: String,
    /// Abstract of the citing draft (global context), may be empty.
    pub abstract_text: String,
    /// How many papers to return.
    pub k: usize,
}

impl Query {
    pub fn new(context: impl Into<String>) -> Query {
        Query { context: context.into(), k: 10, ..Default::default() }
    }

    pub fn with_global(mut self, title: impl Into<String>, abstract_text: impl Into<String>) -> Query {
        self.title = title.into();
        self.abstract_text = abstract_text.into();
        self
    }

    pub fn with_k(mut self, k: usize) -> Query {
        self.k = k;
        self
    }

    /// The local context as plain words: `[CIT]`, LaTeX `\cite{..}` commands
    /// and Markdown `[@key]` citations removed, whitespace collapsed.
    pub fn local_text(&self) -> String {
        strip_citations(&self.context)
    }

    /// Checks the request; returns notices about changes made to it.
    pub fn validate(&mut self) -> Result<Vec<String>> {
        let mut notices = Vec::new();
        if self.local_text().is_empty() && self.title.trim().is_empty() && self.abstract_text.trim().is_empty() {
            return Err(Error::InvalidQuery(
                "the query is empty: give some text around the citation (and optionally --title/--abstract)".into(),
            ));
        }
        let words = self.context.split_whitespace().count();
        if words > MAX_CONTEXT_WORDS {
            let cut = cut_around_cit(&self.context, MAX_CONTEXT_WORDS);
            notices.push(format!("the context has {words} words; only the {MAX_CONTEXT_WORDS} around [CIT] were used"));
            self.context = cut;
        }
        if self.k == 0 {
            self.k = 10;
        }
        Ok(notices)
    }
}

/// Keeps `max` words, centred on `[CIT]` when there is one (else the last words,
/// which sit closest to where the author is typing).
fn cut_around_cit(text: &str, max: usize) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    let centre = words.iter().position(|w| w.contains(CIT)).unwrap_or(words.len());
    let start = centre.saturating_sub(max / 2).min(words.len().saturating_sub(max));
    words[start..(start + max).min(words.len())].join(" ")
}

/// Removes citation markup and collapses whitespace.
pub fn strip_citations(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(CIT) {
            out.push(' ');
            rest = r;
        } else if let Some(len) = latex_cite_len(rest) {
            out.push(' ');
            rest = &rest[len..];
        } else if let Some(len) = markdown_cite_len(rest) {
            out.push(' ');
            rest = &rest[len..];
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Length of a `\cite...{...}` command (with optional `[..]` arguments) at the start of `s`.
fn latex_cite_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix('\\')?;
    let name_len = rest.find(|c: char| !c.is_ascii_alphabetic() && c != '*').unwrap_or(rest.len());
    let name = &rest[..name_len];
    if !(name.starts_with("cite") || name.starts_with("Cite") || matches!(name, "parencite" | "textcite" | "autocite" | "footcite")) {
        return None;
    }
    let mut i = 1 + name_len;
    let b = s.as_bytes();
    while i < b.len() && b[i] == b'[' {
        i += s[i..].find(']')? + 1;
    }
    if b.get(i) != Some(&b'{') {
        return None;
    }
    Some(i + s[i..].find('}')? + 1)
}

/// Length of a Markdown/Pandoc citation `[@key; @other, p. 3]` at the start of `s`.
fn markdown_cite_len(s: &str) -> Option<usize> {
    if !s.starts_with("[@") && !s.starts_with("[-@") {
        return None;
    }
    let end = s.find(']')?;
    (!s[..end].contains('\n')).then_some(end + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_are_stripped() {
        assert_eq!(strip_citations("using TnT [CIT] trained  on\nWSJ"), "using TnT trained on WSJ");
        assert_eq!(strip_citations(r"as shown \citep[p.~3]{a,b} and \cite{c}."), "as shown and .");
        assert_eq!(strip_citations("see [@smith2020; @doe, p. 3] for [details]"), "see for [details]");
        assert_eq!(strip_citations(r"\emph{not} a cite"), r"\emph{not} a cite");
    }

    #[test]
    fn empty_queries_are_rejected() {
        assert!(Query::new("  [CIT] \n").validate().is_err());
        assert!(Query::new(r"\cite{x}").validate().is_err());
        assert!(Query::new("").with_global("A title", "").validate().is_ok());
    }

    #[test]
    fn long_contexts_are_cut_around_cit() {
        let mut words: Vec<String> = (0..1000).map(|i| format!("w{i}")).collect();
        words[700] = "[CIT]".into();
        let mut q = Query::new(words.join(" "));
        let notices = q.validate().unwrap();
        assert_eq!(notices.len(), 1);
        let kept: Vec<&str> = q.context.split_whitespace().collect();
        assert_eq!(kept.len(), MAX_CONTEXT_WORDS);
        assert_eq!(kept[MAX_CONTEXT_WORDS / 2], "[CIT]");
    }
}
