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
    /// `@a @b`
    Typst,
}

impl CiteSyntax {
    /// By the draft's extension: Markdown-family files use Pandoc syntax,
    /// everything else LaTeX.
    pub fn for_file(path: &Path) -> CiteSyntax {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("md" | "markdown" | "qmd" | "rmd" | "pandoc") => CiteSyntax::Markdown,
            Some("typ") => CiteSyntax::Typst,
            _ => CiteSyntax::Latex,
        }
    }

    pub fn format(self, keys: &[String]) -> String {
        match self {
            CiteSyntax::Latex => format!("\\cite{{{}}}", keys.join(",")),
            CiteSyntax::Markdown => format!("[{}]", keys.iter().map(|k| format!("@{k}")).collect::<Vec<_>>().join("; ")),
            CiteSyntax::Typst => keys.iter().map(|k| format!("@{k}")).collect::<Vec<_>>().join(" "),
        }
    }
}

/// Keys cited in a draft of the given syntax (Typst adds `@key` and
/// `#cite(<key>)` to what [`cited_keys`] finds).
pub fn cited_keys_in(text: &str, syntax: CiteSyntax) -> Vec<String> {
    use std::sync::LazyLock;
    static AT_KEY: LazyLock<regex::Regex> =
        LazyLock::new(|| regex::Regex::new(r"(?:^|[^\w@])@([A-Za-z0-9_][A-Za-z0-9_:.\-]*[A-Za-z0-9_])|#cite\(\s*<([^>\s]+)>").unwrap());
    let mut out = cited_keys(text);
    if syntax == CiteSyntax::Typst {
        for c in AT_KEY.captures_iter(text) {
            let k = c.get(1).or(c.get(2)).expect("one group").as_str().to_string();
            if !out.contains(&k) {
                out.push(k);
            }
        }
    }
    out
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
        assert_eq!(CiteSyntax::for_file(Path::new("thesis.typ")), CiteSyntax::Typst);
        assert_eq!(CiteSyntax::Typst.format(&keys), "@a @b");
        assert_eq!(cited_keys_in("As @smith2020 and #cite(<doe2019>) show; mail a@b.", CiteSyntax::Typst), ["smith2020", "doe2019"]);
    }

    #[test]
    fn keys_already_cited() {
        let t = r"As in \citep[p.~3]{smith2020, doe2019} and \cite{x}; see [@lee2018; -@kim2017, p. 4] or mail me@host.";
        assert_eq!(cited_keys(t), ["smith2020", "doe2019", "x", "lee2018", "kim2017"]);
    }
}
