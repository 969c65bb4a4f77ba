//! Citation commands for the draft's syntax.

use std::path::Path;

use serde::{Deserialize, Serialize};

/// How citations are written into a draft.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CiteSyntax {
    /// `\cite{a,b}`
    #[default]
    Latex,
    /// `[@a; @b]`
    Markdown,
}

impl CiteSyntax {
    /// By the draft's extension: Markdown-family files use Pandoc syntax,
    /// everything else LaTeX.
    pub fn for_file(path: &Path) -> CiteSyntax {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("md" | "markdown" | "qmd" | "rmd" | "pandoc") => CiteSyntax::Markdown,
            _ => CiteSyntax::Latex,
        }
    }

    pub fn format(self, keys: &[String]) -> String {
        match self {
            CiteSyntax::Latex => format!("\\cite{{{}}}", keys.join(",")),
            CiteSyntax::Markdown => format!("[{}]", keys.iter().map(|k| format!("@{k}")).collect::<Vec<_>>().join("; ")),
        }
    }
}

/// Keys cited in a draft (`\cite{..}`-family commands and `[@key]`).
pub fn cited_keys(text: &str) -> Vec<String> {
    use std::sync::LazyLock;
    static LATEX: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"\\[A-Za-z]*cite[A-Za-z]*\*?(?:\[[^\]]*\])*\{([^}]*)\}").unwrap());
    static PANDOC: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"-?@([A-Za-z0-9_][A-Za-z0-9_:.#$%&+?<>~/-]*)").unwrap());
    static BRACKET: LazyLock<regex::Regex> = LazyLock::new(|| regex::Regex::new(r"\[[^\]\n]*@[^\]\n]*\]").unwrap());
    let mut out = Vec::new();
    for c in LATEX.captures_iter(text) {
        out.extend(c[1].split(',').map(|k| k.trim().to_string()).filter(|k| !k.is_empty()));
    }
    for b in BRACKET.find_iter(text) {
        out.extend(PANDOC.captures_iter(b.as_str()).map(|c| c[1].trim_end_matches(['.', ',', ';']).to_string()));
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syntax_by_file_and_format() {
        assert_eq!(CiteSyntax::for_file(Path::new("paper.tex")), CiteSyntax::Latex);
        assert_eq!(CiteSyntax::for_file(Path::new("notes.MD")), CiteSyntax::Markdown);
        let keys = vec!["a".to_string(), "b".to_string()];
        assert_eq!(CiteSyntax::Latex.format(&keys), "\\cite{a,b}");
        assert_eq!(CiteSyntax::Markdown.format(&keys), "[@a; @b]");
    }

    #[test]
    fn keys_already_cited() {
        let t = r"As in \citep[p.~3]{smith2020, doe2019} and \cite{x}; see [@lee2018; -@kim2017, p. 4] or mail me@host.";
        assert_eq!(cited_keys(t), ["smith2020", "doe2019", "x", "lee2018", "kim2017"]);
    }
}
