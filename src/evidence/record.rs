//! What the evidence database stores per span, and how identical spans merge.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::markers::Marker;
use super::spans::{extract_spans, normalize, SpanKind};
use crate::util::fnv1a64;

/// Sources shown per span are capped; support counts stay exact.
pub const MAX_SOURCES: usize = 5;

/// The paper a citing sentence comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CitingPaper {
    pub id: String,
    pub title: String,
    pub year: Option<i32>,
    /// The file the sentences were read from (PDF, LaTeX, Markdown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
}

/// One place a span was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanSource {
    pub citing_id: String,
    pub citing_title: String,
    pub citing_year: Option<i32>,
    /// The citing sentence, normalised.
    pub sentence: String,
    /// The file it was read from, and its page there (PDFs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<u32>,
}

/// A paper a span cites, with its support: the number of distinct citing
/// sentences in which this span cites it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CitedPaper {
    pub id: String,
    /// Publication year of the cited paper (for recency ties).
    pub year: Option<i32>,
    /// Fingerprints of the (citing paper, sentence) pairs; `len()` is the support.
    pub seen_in: Vec<u64>,
    /// For each sighting, a fingerprint of its citing paper's id
    /// ([`citing_key`]; 0 when unknown, as in databases written before it
    /// was kept), so that evidence from one citing paper can be set aside.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub by: Vec<u64>,
}

impl CitedPaper {
    pub fn support(&self) -> u32 {
        self.seen_in.len() as u32
    }

    /// The citing-paper fingerprint of sighting `i` (0: unknown).
    fn by_at(&self, i: usize) -> u64 {
        self.by.get(i).copied().unwrap_or(0)
    }

    /// Adds a sighting unless it is there; fills in an unknown citing paper.
    fn add_sighting(&mut self, seen: u64, by: u64) {
        if self.by.len() < self.seen_in.len() {
            self.by.resize(self.seen_in.len(), 0);
        }
        match self.seen_in.iter().position(|&s| s == seen) {
            Some(i) => {
                if self.by[i] == 0 {
                    self.by[i] = by;
                }
            }
            None => {
                self.seen_in.push(seen);
                self.by.push(by);
            }
        }
        if self.by.iter().all(|&b| b == 0) {
            self.by.clear();
        }
    }

    /// This link without the sightings of one citing paper (under any of
    /// its ids' fingerprints; `None` when nothing is left).
    pub fn without_citing(&self, citing: &[u64]) -> Option<CitedPaper> {
        if !self.by.iter().any(|b| citing.contains(b)) {
            return Some(self.clone());
        }
        let keep: Vec<usize> = (0..self.seen_in.len()).filter(|&i| !citing.contains(&self.by_at(i))).collect();
        if keep.is_empty() {
            return None;
        }
        Some(CitedPaper {
            id: self.id.clone(),
            year: self.year,
            seen_in: keep.iter().map(|&i| self.seen_in[i]).collect(),
            by: keep.iter().map(|&i| self.by_at(i)).collect(),
        })
    }
}

/// Fingerprint of a citing paper's id, as kept per sighting.
pub fn citing_key(citing_id: &str) -> u64 {
    fnv1a64(citing_id.as_bytes()).max(1)
}

/// A span of the evidence database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanRecord {
    pub text: String,
    pub kinds: Vec<SpanKind>,
    pub cited: Vec<CitedPaper>,
    pub sources: Vec<SpanSource>,
}

impl SpanRecord {
    /// Merge key: identical spans up to case.
    pub fn key_of(text: &str) -> String {
        text.to_lowercase()
    }

    pub fn support_for(&self, paper: &str) -> u32 {
        self.cited.iter().find(|c| c.id == paper).map_or(0, CitedPaper::support)
    }

    /// Merges another record of the same key into this one (idempotent:
    /// sightings are counted once however often they are merged).
    pub fn merge(&mut self, other: SpanRecord) {
        for k in other.kinds {
            if !self.kinds.contains(&k) {
                self.kinds.push(k);
            }
        }
        self.kinds.sort();
        for c in other.cited {
            match self.cited.iter_mut().find(|x| x.id == c.id) {
                Some(x) => {
                    for (i, &s) in c.seen_in.iter().enumerate() {
                        x.add_sighting(s, c.by_at(i));
                    }
                    x.year = x.year.or(c.year);
                }
                None => self.cited.push(c),
            }
        }
        for s in other.sources {
            if self.sources.len() < MAX_SOURCES && !self.sources.contains(&s) {
                self.sources.push(s);
            }
        }
    }
}

impl SpanRecord {
    /// The span as a query from `citing` may see it: without the sightings
    /// of that citing paper (the evaluation's leakage guard: a citation is
    /// never its own evidence). `None` when no link is left.
    pub fn without_citing(&self, citing: &[u64]) -> Option<SpanRecord> {
        let cited: Vec<CitedPaper> = self.cited.iter().filter_map(|c| c.without_citing(citing)).collect();
        if cited.is_empty() {
            return None;
        }
        let sources = self.sources.iter().filter(|s| !citing.contains(&citing_key(&s.citing_id))).cloned().collect();
        Some(SpanRecord { text: self.text.clone(), kinds: self.kinds.clone(), cited, sources })
    }

    /// Removes the given sightings (a document read again); false when no
    /// link is left.
    pub fn retract(&mut self, sightings: &std::collections::HashSet<u64>) -> bool {
        for c in &mut self.cited {
            if c.by.len() < c.seen_in.len() {
                c.by.resize(c.seen_in.len(), 0);
            }
            let keep: Vec<usize> = (0..c.seen_in.len()).filter(|&i| !sightings.contains(&c.seen_in[i])).collect();
            c.seen_in = keep.iter().map(|&i| c.seen_in[i]).collect();
            c.by = keep.iter().map(|&i| c.by[i]).collect();
            if c.by.iter().all(|&b| b == 0) {
                c.by.clear();
            }
        }
        self.cited.retain(|c| !c.seen_in.is_empty());
        self.sources.retain(|s| !sightings.contains(&sighting(&s.citing_id, &s.sentence)));
        !self.cited.is_empty()
    }
}

/// Fingerprint of one sighting.
pub fn sighting(citing_id: &str, sentence: &str) -> u64 {
    fnv1a64(format!("{citing_id}\u{1f}{sentence}").as_bytes())
}

/// Collects spans in memory, merging identical ones.
#[derive(Debug, Default)]
pub struct EvidenceBuilder {
    pub spans: HashMap<String, SpanRecord>,
}

impl EvidenceBuilder {
    pub fn add(&mut self, record: SpanRecord) {
        let key = SpanRecord::key_of(&record.text);
        match self.spans.get_mut(&key) {
            Some(existing) => existing.merge(record),
            None => {
                self.spans.insert(key, record);
            }
        }
    }
}

/// A sentence with its citation markers (byte ranges into `text`).
#[derive(Debug, Clone)]
pub struct CitingSentence {
    pub text: String,
    pub markers: Vec<Marker>,
    pub citing: CitingPaper,
    /// 1-based page of a PDF.
    pub page: Option<u32>,
    /// The sentence with the ones before and after it in its paragraph
    /// (documents), for reading the citation in context.
    pub context: Option<String>,
}

impl CitingSentence {
    /// The span records this sentence contributes. `year_of` gives cited
    /// papers' years.
    pub fn records(&self, year_of: &dyn Fn(&str) -> Option<i32>) -> Vec<SpanRecord> {
        let normalized_sentence = normalize(&self.text);
        let seen = sighting(&self.citing.id, &normalized_sentence);
        let by = citing_key(&self.citing.id);
        let source = SpanSource {
            citing_id: self.citing.id.clone(),
            citing_title: self.citing.title.clone(),
            citing_year: self.citing.year,
            sentence: normalized_sentence,
            file: self.citing.file.clone(),
            page: self.page,
        };
        extract_spans(&self.text, &self.markers)
            .into_iter()
            .map(|s| SpanRecord {
                text: s.text,
                kinds: vec![s.kind],
                cited: s
                    .cited
                    .iter()
                    .map(|id| CitedPaper { id: id.clone(), year: year_of(id), seen_in: vec![seen], by: vec![by] })
                    .collect(),
                sources: vec![source.clone()],
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(text: &str, kind: SpanKind, paper: &str, sighting: u64) -> SpanRecord {
        SpanRecord {
            text: text.into(),
            kinds: vec![kind],
            cited: vec![CitedPaper { id: paper.into(), year: Some(2000), seen_in: vec![sighting], by: vec![sighting * 10] }],
            sources: vec![],
        }
    }

    #[test]
    fn identical_spans_merge_with_support_counted_once_per_sighting() {
        let mut b = EvidenceBuilder::default();
        b.add(rec("TnT", SpanKind::Mention, "p1", 1));
        b.add(rec("tnt", SpanKind::Between, "p1", 1)); // same sentence, another rule
        b.add(rec("TnT", SpanKind::Mention, "p1", 2));
        b.add(rec("TnT", SpanKind::Mention, "p2", 3));
        b.add(rec("TnT", SpanKind::Mention, "p1", 2)); // merged twice: no double count
        assert_eq!(b.spans.len(), 1);
        let r = &b.spans["tnt"];
        assert_eq!(r.support_for("p1"), 2);
        assert_eq!(r.support_for("p2"), 1);
        assert_eq!(r.kinds, [SpanKind::Between, SpanKind::Mention]);
    }

    #[test]
    fn one_citing_paper_can_be_set_aside_and_retracted() {
        let mut b = EvidenceBuilder::default();
        b.add(rec("TnT", SpanKind::Mention, "p1", 1));
        b.add(rec("TnT", SpanKind::Mention, "p1", 2));
        b.add(rec("TnT", SpanKind::Mention, "p2", 2));
        let r = b.spans["tnt"].clone();
        let seen = r.without_citing(&[20]).unwrap();
        assert_eq!((seen.support_for("p1"), seen.support_for("p2")), (1, 0), "citing paper 20 saw sighting 2");
        assert!(r.without_citing(&[20]).unwrap().without_citing(&[10]).is_none());
        assert!(r.without_citing(&[10, 20]).is_none(), "a paper under two ids");
        assert_eq!(r.without_citing(&[99]).unwrap(), r);
        let mut gone = r.clone();
        assert!(gone.retract(&[2].into_iter().collect()));
        assert_eq!((gone.support_for("p1"), gone.support_for("p2")), (1, 0));
        assert!(!gone.retract(&[1].into_iter().collect()));
    }

    #[test]
    fn records_without_citing_papers_learn_them_on_merge() {
        let mut old = rec("TnT", SpanKind::Mention, "p1", 1);
        old.cited[0].by.clear();
        let mut b = EvidenceBuilder::default();
        b.add(old);
        b.add(rec("TnT", SpanKind::Mention, "p1", 1));
        assert_eq!(b.spans["tnt"].cited[0].by, [10]);
        assert_eq!(b.spans["tnt"].support_for("p1"), 1);
    }
}
