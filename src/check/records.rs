//! What a cited key stands for: the bibliography's entry, the library's
//! record (by the entry's DOI, else by the key) and what the library says
//! of the key.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::corpus::Paper;
use crate::error::Result;
use crate::index::paper_index::{KeyStatus, PaperIndex};

/// A draft's bibliography as read.
#[derive(Debug, Clone, Default)]
pub struct Bibliography {
    /// The file (none: the draft names none and none is given).
    pub path: Option<PathBuf>,
    /// Its entries read as papers.
    pub papers: Vec<Paper>,
    /// Every key it declares, read or not (an entry without a title is not
    /// read as a paper).
    pub declared: HashSet<String>,
}

impl Bibliography {
    /// Reads a BibTeX file (within the one-file budget); a file that does
    /// not exist reads as empty.
    pub fn read(path: &std::path::Path) -> Result<Bibliography> {
        if !path.exists() {
            return Ok(Bibliography { path: Some(path.to_path_buf()), ..Bibliography::default() });
        }
        let bytes = crate::corpus::source::read_bytes(path)?;
        let mut bib = Bibliography::parse(&crate::corpus::source::decode_text(&bytes).text);
        bib.path = Some(path.to_path_buf());
        Ok(bib)
    }

    /// The entries of a BibTeX text.
    pub fn parse(text: &str) -> Bibliography {
        use crate::corpus::bibtex::{parse_source, EntryOutcome};
        let papers = parse_source(text)
            .into_iter()
            .filter_map(|o| match o {
                EntryOutcome::Paper(p) => Some(*p),
                EntryOutcome::Skipped { .. } => None,
            })
            .collect();
        Bibliography { path: None, papers, declared: declared_keys(text) }
    }

    pub fn entry(&self, key: &str) -> Option<&Paper> {
        self.papers.iter().find(|p| p.key == key)
    }

    /// Its entries by key (the first of a key, as [`Bibliography::entry`]
    /// finds it): for looking many keys up.
    pub fn entries_by_key(&self) -> HashMap<&str, &Paper> {
        let mut by_key = HashMap::with_capacity(self.papers.len());
        for p in &self.papers {
            by_key.entry(p.key.as_str()).or_insert(p);
        }
        by_key
    }

    pub fn declares(&self, key: &str) -> bool {
        self.declared.contains(key) || self.entry(key).is_some()
    }

    /// The file's name as said in messages.
    pub fn name(&self) -> String {
        self.path.as_ref().map_or_else(|| "the bibliography".into(), |p| p.display().to_string())
    }
}

/// The keys a BibTeX text declares (`@type{key,`), entries read or not.
pub fn declared_keys(text: &str) -> HashSet<String> {
    static KEY: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"@[A-Za-z]+\s*[{(]\s*([^,\s{}()]+)\s*,").expect("a valid pattern"));
    KEY.captures_iter(text).map(|c| c[1].to_string()).collect()
}

/// A cited key, resolved.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub key: String,
    /// The bibliography's entry.
    pub entry: Option<Paper>,
    /// The library's record: the one with the entry's DOI, else the one
    /// with the key.
    pub record: Option<Paper>,
    /// Whether `record` was found by the entry's DOI.
    pub by_doi: bool,
    /// The bibliography declares the key (with or without a title).
    pub declared: bool,
    pub status: KeyStatus,
}

impl Resolved {
    pub fn of(key: &str, bib: &Bibliography, papers: &PaperIndex) -> Result<Resolved> {
        Resolved::with_entry(key, bib.entry(key), bib.declares(key), papers)
    }

    /// [`Resolved::of`] with the bibliography's entry of `key` and whether
    /// it declares the key, as the caller looked them up.
    pub fn with_entry(key: &str, entry: Option<&Paper>, declared: bool, papers: &PaperIndex) -> Result<Resolved> {
        let entry = entry.cloned();
        let by_doi_record = match entry.as_ref().filter(|e| !e.doi.is_empty()) {
            Some(e) => papers.paper_by_doi(&e.doi)?,
            None => None,
        };
        let by_doi = by_doi_record.is_some();
        let record = match by_doi_record {
            Some(r) => Some(r),
            None => papers.paper_by_key(key)?,
        };
        let status = if record.as_ref().is_some_and(|r| r.key == key) { KeyStatus::Known } else { papers.key_status(key)? };
        Ok(Resolved { key: key.to_string(), declared, entry, record, by_doi, status })
    }

    /// The paper the key stands for: the library's record, else the entry.
    pub fn paper(&self) -> Option<&Paper> {
        self.record.as_ref().or(self.entry.as_ref())
    }

    /// Neither the bibliography nor the library knows the key.
    pub fn unknown(&self) -> bool {
        !self.declared && self.record.is_none() && self.status != KeyStatus::Known
    }
}
