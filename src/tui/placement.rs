//! Where an inserted citation goes, as each syntax's writers place one: at
//! the end of a sentence, before its full stop, joined to the word it
//! follows (LaTeX `text~\cite{x}.`, with the unbreakable space; Pandoc
//! `text [@x].`; Typst `text @x.`); after a word mid-sentence, joined to it
//! the same way (`word~\cite{x}`).

use crate::corpus::citation_markup::CiteSyntax;

/// Abbreviations whose full stop is not a sentence's end: a citation after
/// `et al.` goes after the stop (`et al.~\cite{x}`).
const ABBREVIATIONS: &[&str] = &["al", "e.g", "i.e", "cf", "vs", "etc", "fig", "eq", "sec", "ch", "no", "pp", "resp"];

/// The citation `citation` (as [`CiteSyntax::format`] writes it) placed at
/// a cursor that follows `before` (its line up to the cursor): how many
/// characters before the cursor it replaces, and what it writes in their
/// place. The cursor ends after what is written, where it was in the text.
///
/// Closing punctuation the cursor follows (spaces between allowed) moves
/// after the citation; spaces between the word and the cursor move after it
/// too; the word and the citation are joined by `~` in LaTeX (a tie that
/// is there already is kept) and a space in Pandoc Markdown and Typst. At
/// the start of a line, or after an opening bracket or a space that follows
/// no word, the citation goes at the cursor as it is.
pub fn placed_citation(before: &str, citation: &str, syntax: CiteSyntax) -> (usize, String) {
    let as_is = (0, citation.to_string());
    let trimmed = before.trim_end_matches([' ', '\t']);
    let word_end = match trimmed.chars().last() {
        Some(p @ ('.' | ',' | ';' | ':' | '!' | '?')) => {
            let head = &trimmed[..trimmed.len() - p.len_utf8()];
            if p == '.' && is_abbreviation(head) {
                trimmed.len()
            } else {
                head.len()
            }
        }
        _ => trimmed.len(),
    };
    let head = &before[..word_end];
    let moved = &before[word_end..];
    let joint = match (head.chars().last(), syntax) {
        (None, _) => return as_is,
        (Some(c), _) if c.is_whitespace() || matches!(c, '(' | '[' | '{') => return as_is,
        (Some('~'), CiteSyntax::Latex) => "",
        (Some(_), CiteSyntax::Latex) => "~",
        (Some(_), CiteSyntax::Markdown | CiteSyntax::Typst) => " ",
    };
    (moved.chars().count(), format!("{joint}{citation}{moved}"))
}

/// Whether the text before a full stop ends in an abbreviation (`et al`).
fn is_abbreviation(head: &str) -> bool {
    let word = head.rsplit([' ', '\t', '(', '~']).next().unwrap_or_default().to_lowercase();
    ABBREVIATIONS.contains(&word.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line as it reads after the citation is placed at the end of `before`.
    fn placed(before: &str, syntax: CiteSyntax) -> String {
        let citation = syntax.format(&["x".to_string()]);
        let (replaced, written) = placed_citation(before, &citation, syntax);
        let keep: String = before.chars().take(before.chars().count() - replaced).collect();
        format!("{keep}{written}")
    }

    #[test]
    fn latex_puts_the_citation_before_the_full_stop_with_a_tie() {
        let latex = CiteSyntax::Latex;
        assert_eq!(placed("Completion helps.", latex), "Completion helps~\\cite{x}.");
        assert_eq!(placed("Completion helps. ", latex), "Completion helps~\\cite{x}. ");
        assert_eq!(placed("Does it help?", latex), "Does it help~\\cite{x}?");
        assert_eq!(placed("as in BM25", latex), "as in BM25~\\cite{x}");
        assert_eq!(placed("as in BM25 ", latex), "as in BM25~\\cite{x} ");
        assert_eq!(placed("as in BM25,", latex), "as in BM25~\\cite{x},");
        assert_eq!(placed("as in BM25~", latex), "as in BM25~\\cite{x}");
        assert_eq!(placed("as Smith et al.", latex), "as Smith et al.~\\cite{x}");
        assert_eq!(placed("", latex), "\\cite{x}");
        assert_eq!(placed("   ", latex), "   \\cite{x}");
        assert_eq!(placed("(see ", latex), "(see~\\cite{x} ");
        assert_eq!(placed("(", latex), "(\\cite{x}");
        assert_eq!(placed("Ünïcödé wörds.", latex), "Ünïcödé wörds~\\cite{x}.");
    }

    #[test]
    fn markdown_and_typst_keep_their_own_spacing() {
        assert_eq!(placed("Completion helps.", CiteSyntax::Markdown), "Completion helps [@x].");
        assert_eq!(placed("as in BM25 ", CiteSyntax::Markdown), "as in BM25 [@x] ");
        assert_eq!(placed("Completion helps.", CiteSyntax::Typst), "Completion helps @x.");
        assert_eq!(placed("as in BM25", CiteSyntax::Typst), "as in BM25 @x");
        assert_eq!(placed("", CiteSyntax::Typst), "@x");
    }
}
