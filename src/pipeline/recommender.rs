//! The `Recommender`: the one query path shared by the CLI, the evaluation
//! harness and the editor.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use super::channel::{Bm25Channel, Channel, Ranked, ALL_CHANNELS};
use super::query::Query;
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::library::Library;

/// Candidates each channel fetches before fusion.
pub const DEFAULT_PREFETCH: usize = 100;

/// How one channel ranked a candidate.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ChannelScore {
    pub channel: &'static str,
    /// 1-based rank within the channel.
    pub rank: usize,
    pub score: f32,
}

/// A recommended paper.
#[derive(Debug, Clone, Serialize)]
pub struct Candidate {
    pub id: String,
    /// Final score (fused when several channels ran).
    pub score: f32,
    /// Every channel that found the paper.
    pub channels: Vec<ChannelScore>,
    /// The stored record; absent when the request asked for ids only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paper: Option<Paper>,
}

/// The answer to a query.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Recommendations {
    pub candidates: Vec<Candidate>,
    /// Wall time per stage, in order.
    #[serde(serialize_with = "ser_timings")]
    pub timings: Vec<(String, Duration)>,
    /// Changes made to the query (e.g. truncation).
    pub notices: Vec<String>,
}

fn ser_timings<S: serde::Serializer>(t: &[(String, Duration)], s: S) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(t.len()))?;
    for (k, d) in t {
        m.serialize_entry(&format!("{k}_ms"), &(d.as_secs_f64() * 1000.0))?;
    }
    m.end()
}

/// Runs the channels and fuses their lists.
pub struct Recommender {
    library: Arc<Library>,
    channels: Vec<Box<dyn Channel>>,
    prefetch: usize,
}

impl Recommender {
    /// A recommender with every channel this build has.
    pub fn new(library: Arc<Library>) -> Recommender {
        Self::with_channels(library, ALL_CHANNELS).expect("all channels are known")
    }

    /// A recommender restricted to the named channels (`--stages`).
    pub fn with_channels(library: Arc<Library>, names: &[&str]) -> Result<Recommender> {
        if names.is_empty() {
            return Err(Error::InvalidQuery(format!("no channel selected; available: {}", ALL_CHANNELS.join(", "))));
        }
        let mut channels: Vec<Box<dyn Channel>> = Vec::new();
        for name in names {
            match *name {
                "bm25" => channels.push(Box::new(Bm25Channel::new(library.clone()))),
                other => {
                    return Err(Error::InvalidQuery(format!(
                        "unknown channel `{other}`; available: {}",
                        ALL_CHANNELS.join(", ")
                    )))
                }
            }
        }
        Ok(Recommender { library, channels, prefetch: DEFAULT_PREFETCH })
    }

    pub fn library(&self) -> &Library {
        &self.library
    }

    pub fn channel_names(&self) -> Vec<&'static str> {
        self.channels.iter().map(|c| c.name()).collect()
    }

    /// Ranked papers for the query, with their records.
    pub fn recommend(&self, query: &Query) -> Result<Recommendations> {
        self.run(query, true)
    }

    /// Ranked ids only (no record reads); what evaluation uses.
    pub fn recommend_ids(&self, query: &Query) -> Result<Recommendations> {
        self.run(query, false)
    }

    fn run(&self, query: &Query, with_records: bool) -> Result<Recommendations> {
        let mut query = query.clone();
        let notices = query.validate()?;
        let mut timings = Vec::new();
        let mut lists = Vec::with_capacity(self.channels.len());
        for ch in &self.channels {
            let t = Instant::now();
            lists.push((ch.name(), ch.retrieve(&query, self.prefetch.max(query.k))?));
            timings.push((ch.name().to_string(), t.elapsed()));
        }
        let t = Instant::now();
        let mut candidates = fuse(&lists);
        candidates.truncate(query.k);
        if with_records {
            let index = self.library.papers();
            for c in &mut candidates {
                c.paper = index.paper_by_id(&c.id)?;
            }
        }
        timings.push(("fuse".into(), t.elapsed()));
        Ok(Recommendations { candidates, timings, notices })
    }
}

/// Reciprocal-rank fusion (k = 60) of channel lists; a single list keeps its
/// own order and scores.
pub fn fuse(lists: &[(&'static str, Ranked)]) -> Vec<Candidate> {
    const RRF_K: f32 = 60.0;
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<Candidate> = Vec::new();
    for (name, list) in lists {
        for (i, (id, score)) in list.iter().enumerate() {
            let idx = *by_id.entry(id.as_str()).or_insert_with(|| {
                out.push(Candidate { id: id.clone(), score: 0.0, channels: Vec::new(), paper: None });
                out.len() - 1
            });
            let c = &mut out[idx];
            c.channels.push(ChannelScore { channel: name, rank: i + 1, score: *score });
            c.score = if lists.len() == 1 { *score } else { c.score + 1.0 / (RRF_K + (i + 1) as f32) };
        }
    }
    out.sort_by(|a, b| b.score.total_cmp(&a.score));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[&str]) -> Ranked {
        ids.iter().enumerate().map(|(i, id)| (id.to_string(), 10.0 - i as f32)).collect()
    }

    #[test]
    fn single_channel_keeps_order_and_scores() {
        let c = fuse(&[("bm25", list(&["a", "b", "c"]))]);
        assert_eq!(c.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(c[1].score, 9.0);
        assert_eq!(c[1].channels, vec![ChannelScore { channel: "bm25", rank: 2, score: 9.0 }]);
    }

    #[test]
    fn rrf_rewards_agreement() {
        let c = fuse(&[("x", list(&["a", "b", "c"])), ("y", list(&["d", "b", "e"]))]);
        assert_eq!(c[0].id, "b", "second in both beats first in one");
        assert_eq!(c[0].channels.len(), 2);
        assert_eq!(c.len(), 5);
    }
}
