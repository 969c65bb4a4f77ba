//! Where a citation goes: whether the cursor stands in a citation slot
//! (inside `\cite{…}` after `{` or `,`; after `[@` or `; @`; after `@` or
//! inside `#cite(<…>)`), and the query for the text around it.

use super::documents::Document;
use crate::corpus::citation_markup::{citations, cited_keys_any, open_citation, CiteSyntax};
use crate::pipeline::Query;

/// A citation slot at the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slot {
    /// Where the citation command (or marker) starts: the query's `[CIT]`.
    pub command: usize,
    /// Where the key being typed starts (the completion replaces from
    /// here to the cursor).
    pub key_start: usize,
    /// What has been typed of the key.
    pub typed: String,
}

/// The citation slot the cursor (a byte offset) stands in, if any.
pub fn slot_at(doc: &Document, cursor: usize) -> Option<Slot> {
    let text = doc.text();
    let cursor = cursor.min(text.len());
    if !text.is_char_boundary(cursor) {
        return None;
    }
    let line_start = text[..cursor].rfind('\n').map_or(0, |i| i + 1);
    let before = &text[line_start..cursor];
    let open = open_citation(before, &doc.draft.grammar)?;
    Some(Slot { command: line_start + open.start, key_start: line_start + open.key_start, typed: before[open.key_start..].to_string() })
}

/// The query for a citation at byte `at` of the document: the sentence of
/// its prose around it (no preamble, heading or command in it) with
/// `[CIT]` there (the citation being written removed, from `at` to `end`),
/// the document's title and abstract as the global context.
pub fn query_at(doc: &Document, at: usize, end: usize, k: usize) -> Query {
    let text = doc.text();
    let (at, end) = (at.min(text.len()), end.clamp(at.min(text.len()), text.len()));
    // The rest of an unfinished command on this line goes too.
    let line_end = text[end..].find('\n').map_or(text.len(), |i| end + i);
    let rest = &text[end..line_end];
    let closing = match doc.draft.syntax() {
        CiteSyntax::Latex => rest.find('}').map(|i| i + 1),
        CiteSyntax::Markdown => rest.find(']').map(|i| i + 1),
        CiteSyntax::Typst => rest.find(')').filter(|_| text[at..end].starts_with("#cite")).map(|i| i + 1),
    }
    .filter(|&i| !rest[..i].contains(['.', '!', '?']))
    .unwrap_or(0);
    let local = doc.draft.sentence_at(at..end + closing);
    let (title, abstract_text) = doc.draft.global_context();
    Query::new(local).with_global(title, abstract_text).with_k(k)
}

/// The end of the sentence holding byte `at` (before its closing
/// punctuation), where a citation for the sentence goes; none when the
/// sentence already cites something.
pub fn sentence_end(doc: &Document, at: usize) -> Option<usize> {
    let text = doc.text();
    let at = at.min(text.len());
    let start = text[..at].rfind(['.', '!', '?', '\n']).map_or(0, |i| i + 1);
    let mut end = text.len();
    let bytes = text.as_bytes();
    for (i, c) in text[at..].char_indices() {
        let j = at + i;
        if c == '\n' && text[j + 1..].starts_with('\n') {
            end = j;
            break;
        }
        if matches!(c, '.' | '!' | '?') && (j + 1 == text.len() || bytes[j + 1].is_ascii_whitespace()) {
            end = j;
            break;
        }
    }
    let sentence = &text[start..end];
    if sentence.trim().is_empty()
        || !citations(sentence, &doc.draft.grammar).is_empty()
        || !cited_keys_any(sentence, &doc.draft.grammar).is_empty()
    {
        return None;
    }
    Some(start + sentence.trim_end().len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use lsp_types::Url;

    use crate::corpus::citation_markup::CiteGrammar;

    fn doc(name: &str, text: &str) -> Document {
        Document::new(Url::parse(&format!("file:///tmp/{name}")).unwrap(), "", text.to_string(), 1, &CiteGrammar::PLAIN)
    }

    fn slot(name: &str, text_with_cursor: &str) -> Option<(String, String)> {
        let cursor = text_with_cursor.find('|').unwrap();
        let text = text_with_cursor.replace('|', "");
        let d = doc(name, &text);
        slot_at(&d, cursor).map(|s| (d.text()[s.command..s.key_start].to_string(), s.typed))
    }

    #[test]
    fn latex_slots_after_a_brace_or_comma() {
        assert_eq!(slot("a.tex", r"We tag \cite{|"), Some((r"\cite{".into(), "".into())));
        assert_eq!(slot("a.tex", r"We tag \citep[see][p.~2]{a, bra|"), Some((r"\citep[see][p.~2]{a, ".into(), "bra".into())));
        assert_eq!(slot("a.tex", r"We tag \textbf{|"), None);
        assert_eq!(slot("a.tex", r"We tag \cite{a} and |"), None);
    }

    #[test]
    fn markdown_and_typst_slots() {
        assert_eq!(slot("a.md", "We tag [@|"), Some(("[@".into(), "".into())));
        assert_eq!(slot("a.md", "We tag [@a; @bo|"), Some(("[@a; @".into(), "bo".into())));
        assert_eq!(slot("a.md", "mail me@ho|"), None);
        assert_eq!(slot("a.typ", "We tag @|"), Some(("@".into(), "".into())));
        assert_eq!(slot("a.typ", "We tag #cite(<sm|"), Some(("#cite(<".into(), "sm".into())));
        assert_eq!(slot("a.typ", "mail me@ho|"), None);
    }

    #[test]
    fn the_query_is_the_sentence_with_the_citation_replaced() {
        let text = "\\title{Tagging}\n\nIntro. We tag words with a trigram tagger \\cite{br} and more. Next.";
        let d = doc("a.tex", text);
        let at = text.find("\\cite").unwrap();
        let q = query_at(&d, at, at + "\\cite{br".len(), 7);
        assert_eq!(q.context, "We tag words with a trigram tagger [CIT] and more.");
        assert_eq!((q.title.as_str(), q.k), ("Tagging", 7));
    }

    /// The query is the author's sentence: not the preamble, the heading
    /// on the line above, or `\begin{document}` (once its terms held "end"
    /// and "document").
    #[test]
    fn the_query_is_read_from_the_prose() {
        let text = "\\documentclass{article}\n\\title{Query Completion}\n\\begin{document}\n\\maketitle\n\\section{Introduction}\n\
                    Query auto-completion ranks completions of a typed prefix \\cite{sho";
        let d = doc("a.tex", &format!("{text}}}.\n\\end{{document}}\n"));
        let at = text.find("\\cite").unwrap();
        let q = query_at(&d, at, text.len(), 5);
        assert_eq!(q.context, "Query auto-completion ranks completions of a typed prefix [CIT].");
        assert_eq!(q.title, "Query Completion");
    }

    #[test]
    fn a_citation_goes_at_the_end_of_a_sentence_that_has_none() {
        let d = doc("a.tex", "We tag words with a tagger. It is \\cite{x} fast.");
        let end = sentence_end(&d, 5).unwrap();
        assert_eq!(&d.text()[..end], "We tag words with a tagger");
        assert_eq!(sentence_end(&d, 35), None, "the second sentence cites already");
    }
}
