//! What a check reports: one finding per problem of a citation, with how
//! severe it is and what to do.

use std::ops::Range;

use serde::Serialize;

/// How much a finding matters; `check` exits 1 on a warning or above.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warning,
    Error,
}

/// The kinds of problem a check finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// In neither the bibliography nor the library (without a library: not
    /// in the bibliography).
    UnknownKey,
    /// Not in the bibliography LaTeX reads, though the library has it: the
    /// fix adds it from the library (a suggestion whose `why` is
    /// [`FROM_LIBRARY`]).
    NotInBibliography,
    /// A bibliography file the draft names (or the default one beside it)
    /// does not exist.
    MissingBibliography,
    /// The bibliography's entry and the library's record of its DOI
    /// disagree (title, year or first author).
    Mismatch,
    /// Two cited keys are one work, or a preprint and its published version.
    Duplicate,
    /// The cited paper is flagged retracted.
    Retracted,
    /// The cited paper's support is under the threshold: it fits its
    /// sentence clearly worse than the papers that fit it best.
    WeakSupport,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::UnknownKey => "unknown key",
            Kind::NotInBibliography => "not in the bibliography",
            Kind::MissingBibliography => "missing bibliography",
            Kind::Mismatch => "mismatch",
            Kind::Duplicate => "duplicate",
            Kind::Retracted => "retracted",
            Kind::WeakSupport => "weak support",
        }
    }
}

/// Why a key is offered: the library renamed the cited key.
pub const RENAMED: &str = "its key now";
/// Why a key is offered: it is a letter or two off the cited key.
pub const NEAR_MISS: &str = "near miss";
/// Why a key is offered: its paper fits the sentence.
pub const FITS: &str = "fits the sentence";
/// Why a key is offered: the bibliography holds the cited paper under it.
pub const IN_BIBLIOGRAPHY: &str = "its key in the bibliography";
/// Why a paper is offered: the fix of a key the bibliography lacks and the
/// library has. Its `id` is the library record whose entry goes to the
/// bibliography (its first file), under its `key`: the cited key when a
/// bibliography can hold it (a citation key without `/`), else the key
/// export gives the paper, and the citation is rewritten to it.
pub const FROM_LIBRARY: &str = "add it from the library";

/// A paper offered instead of (or beside) the cited key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Suggestion {
    /// The key to cite it by: the bibliography's key for it, else the key
    /// export writes for it (the configured key style; a checker given no
    /// key maker says the library's own key), else a near miss as written.
    /// Empty: the library record has none.
    pub key: String,
    /// Its library id (empty: a key only, such as a near-miss in the
    /// bibliography).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub id: String,
    pub title: String,
    /// Why it is offered ("renamed", "near miss", "fits the sentence").
    pub why: String,
    /// Its support for the sentence, when scored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub support: Option<f32>,
    /// What other papers cited it for (best match first).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// One problem of one citation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub kind: Kind,
    pub severity: Severity,
    pub key: String,
    /// 1-based line and column (in characters) of the key.
    pub line: usize,
    pub column: usize,
    /// The key's byte range in the draft.
    #[serde(skip)]
    pub range: Range<usize>,
    pub message: String,
    /// What to do.
    pub fix: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub suggestions: Vec<Suggestion>,
    /// A mismatched title: the library record's title for the entry's DOI.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub library_title: Option<String>,
    /// A duplicate: the key to keep.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub keep: Option<String>,
    /// Weak support: the cited paper's evidence or abstract sentence that
    /// best matches the sentence.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub best_match: Option<String>,
}

impl Finding {
    /// The library record to add to the bibliography, and the key its entry
    /// gets ("add it from the library"), when that is the fix.
    pub fn from_library(&self) -> Option<&Suggestion> {
        self.suggestions.iter().find(|s| s.why == FROM_LIBRARY && !s.id.is_empty())
    }

    /// The key the library knows the paper of an unknown key by now (the
    /// library renamed the cited key), when that is the finding: what the
    /// language server's quick fix and the editor's rewrite write.
    pub fn renamed_to(&self) -> Option<&str> {
        if self.kind != Kind::UnknownKey {
            return None;
        }
        self.suggestions.iter().find(|s| s.why == RENAMED).map(|s| s.key.as_str())
    }

    /// One terminal line, `file:line:column: severity: kind: message`
    /// (control characters dropped), with the severity word as `paint`
    /// writes it (a front end's colour, or as it is).
    pub fn line(&self, file: &str, paint: impl Fn(&str) -> String) -> String {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        };
        let (file, message) = (crate::util::printable(file), crate::util::printable(&self.message));
        format!("{file}:{}:{}: {}: {}: {}", self.line, self.column, paint(sev), self.kind.name(), message)
    }
}
