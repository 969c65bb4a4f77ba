//! Citation markup in running text: the benchmark's `[CIT]`, LaTeX
//! `\cite{..}` commands and Pandoc `[@key]` citations.

use super::benchmark::CIT;

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
}
