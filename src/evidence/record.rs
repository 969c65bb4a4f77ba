//! What the evidence database stores per span, and how identical spans merge.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::spans::SpanKind;
use crate::util::fnv1a64;

/// Sources shown per span are capped; support counts stay exact.
pub const MAX_SOURCES: usize = 5;

/// The paper a citing sentence comes from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CitingPaper {
    pub id: String,
    pub title: String,
    pub year: Option<i32>,
}

/// One place a span was seen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanSource {
    pub citing_id: String,
    pub citing_title: String,
    pub citing_year: Option<i32>,
    /// The citing sentence, normalised.
    pub sentence: String,
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
}

impl CitedPaper {
    pub fn support(&self) -> u32 {
        self.seen_in.len() as u32
    }
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
                    for s in c.seen_in {
                        if !x.seen_in.contains(&s) {
                            x.seen_in.push(s);
                        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(text: &str, kind: SpanKind, paper: &str, sighting: u64) -> SpanRecord {
        SpanRecord {
            text: text.into(),
            kinds: vec![kind],
            cited: vec![CitedPaper { id: paper.into(), year: Some(2000), seen_in: vec![sighting] }],
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
}
