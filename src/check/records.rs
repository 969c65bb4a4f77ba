//! What a cited key stands for: the bibliography's entry, the library's
//! record (by the entry's DOI, else by the key) and what the library says
//! of the key.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use crate::corpus::Paper;
use crate::error::Result;
use crate::index::paper_index::{KeyStatus, PaperIndex};

/// A draft's bibliography as read: what LaTeX will find its citations in.
#[derive(Debug, Clone, Default)]
pub struct Bibliography {
    /// The first file (where entries are added; none: no file, such as a
    /// bibliography refused or given as text).
    pub path: Option<PathBuf>,
    /// Its entries read as papers (the first of a key, over its files).
    pub papers: Vec<Paper>,
    /// Every key it declares, read or not (an entry without a title is not
    /// read as a paper).
    pub declared: HashSet<String>,
    /// Its files, in order, each as the draft names it and whether it is
    /// there (empty: no file is known, as for [`Bibliography::parse`]).
    pub files: Vec<BibFile>,
}

/// One file of a bibliography.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BibFile {
    /// As the draft names it (`refs.bib`), or the file's own name.
    pub name: String,
    pub path: PathBuf,
    /// It exists (else LaTeX finds nothing in it).
    pub found: bool,
}

impl Bibliography {
    /// Reads a BibTeX file (within the one-file budget); a file that does
    /// not exist reads as empty, and is said missing.
    pub fn read(path: &std::path::Path) -> Result<Bibliography> {
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        Bibliography::read_files(&[(name, path.to_path_buf())])
    }

    /// Reads the files a draft names (each: its name as the draft writes
    /// it, and its path), in order; a file that does not exist reads as
    /// empty, and is said missing.
    pub fn read_files(files: &[(String, PathBuf)]) -> Result<Bibliography> {
        let mut texts = Vec::with_capacity(files.len());
        for (name, path) in files {
            let text = if path.exists() {
                let bytes = crate::corpus::source::read_bytes(path)?;
                Some(crate::corpus::source::decode_text(&bytes).text)
            } else {
                None
            };
            texts.push((name.clone(), path.clone(), text));
        }
        Ok(Bibliography::of_files(texts))
    }

    /// The bibliography of files already read (each: its name, its path and
    /// its text; none: it does not exist).
    pub fn of_files(files: Vec<(String, PathBuf, Option<String>)>) -> Bibliography {
        let mut bib = Bibliography { path: files.first().map(|(_, p, _)| p.clone()), ..Bibliography::default() };
        let mut keys = HashSet::new();
        for (name, path, text) in files {
            if let Some(text) = &text {
                let part = Bibliography::parse(text);
                bib.papers.extend(part.papers.into_iter().filter(|p| keys.insert(p.key.clone())));
                bib.declared.extend(part.declared);
            }
            bib.files.push(BibFile { name, path, found: text.is_some() });
        }
        bib
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
        Bibliography { path: None, papers, declared: declared_keys(text), files: Vec::new() }
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

    /// The file's name as said in messages (its files, when it has more
    /// than one).
    pub fn name(&self) -> String {
        if self.files.len() > 1 {
            return self.files.iter().map(|f| f.path.display().to_string()).collect::<Vec<_>>().join(" and ");
        }
        self.path.as_ref().map_or_else(|| "the bibliography".into(), |p| p.display().to_string())
    }

    /// What LaTeX will read is known: files were named or given, or a
    /// bibliography's text (not the stand-in for one refused or unknown).
    pub fn known(&self) -> bool {
        self.path.is_some() || !self.files.is_empty() || !self.papers.is_empty() || !self.declared.is_empty()
    }

    /// Its files that do not exist.
    pub fn missing(&self) -> impl Iterator<Item = &BibFile> {
        self.files.iter().filter(|f| !f.found)
    }

    /// None of its files exists (it has files).
    pub fn none_found(&self) -> bool {
        !self.files.is_empty() && self.files.iter().all(|f| !f.found)
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
    pub fn of(key: &str, bib: &Bibliography, papers: Option<&PaperIndex>) -> Result<Resolved> {
        Resolved::with_entry(key, bib.entry(key), bib.declares(key), papers)
    }

    /// [`Resolved::of`] with the bibliography's entry of `key` and whether
    /// it declares the key, as the caller looked them up (no library: no
    /// record, and the key's status unknown).
    pub fn with_entry(key: &str, entry: Option<&Paper>, declared: bool, papers: Option<&PaperIndex>) -> Result<Resolved> {
        let entry = entry.cloned();
        let Some(papers) = papers else {
            return Ok(Resolved { key: key.to_string(), declared, entry, record: None, by_doi: false, status: KeyStatus::Unknown });
        };
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
