//! Citation contexts of the benchmark (`contexts.jsonl.gz`).

use std::path::Path;

use serde::Deserialize;

use super::source::{decode_text, read_bytes};
use crate::error::{Error, Result};

/// The placeholder that marks the citation position in a context.
pub const CIT: &str = "[CIT]";

/// One held-out citation: the citing text and the paper(s) cited at `[CIT]`.
#[derive(Debug, Clone, Deserialize)]
pub struct CitationContext {
    pub id: String,
    pub source: String,
    pub split: String,
    #[serde(default)]
    pub citing_id: String,
    #[serde(default)]
    pub citing_title: String,
    #[serde(default)]
    pub citing_abstract: Option<String>,
    pub context: String,
    pub cited: Vec<String>,
}

/// Reads every context of the given split (all splits when `split` is `None`).
pub fn load_contexts(path: &Path, split: Option<&str>) -> Result<Vec<CitationContext>> {
    let text = decode_text(&read_bytes(path)?).text;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let c: CitationContext =
            serde_json::from_str(line).map_err(|e| Error::Parse { path: path.into(), line: i + 1, reason: e.to_string() })?;
        if split.is_none_or(|s| s == c.split) {
            out.push(c);
        }
    }
    Ok(out)
}
