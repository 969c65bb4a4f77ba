//! Retrieval channels: each turns a query into a ranked list of paper ids.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use super::query::Query;
use crate::error::Result;
use crate::library::Library;

/// A ranked list from one channel, best first.
pub type Ranked = Vec<(String, f32)>;

/// An evidence span shown with a paper: a piece of a sentence in which
/// another paper cited it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceSnippet {
    pub text: String,
    /// How many citing sentences cite the paper with this span.
    pub support: u32,
    pub citing_title: String,
    pub citing_year: Option<i32>,
    /// The citing sentence.
    pub sentence: String,
    /// The file the citing sentence was read from (a PDF, a LaTeX or
    /// Markdown source) and its page there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citing_file: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub citing_page: Option<u32>,
}

/// What a channel returns.
#[derive(Debug, Clone, Default)]
pub struct ChannelOutput {
    pub ranked: Ranked,
    /// How much to trust this list for this query, 0..=1 (each channel
    /// defines its own measure; see [`super::Fusion`]).
    pub confidence: f32,
    /// Evidence found on the way, by paper id.
    pub evidence: HashMap<String, Vec<EvidenceSnippet>>,
}

impl ChannelOutput {
    pub fn plain(ranked: Ranked) -> ChannelOutput {
        ChannelOutput { ranked, confidence: 1.0, evidence: HashMap::new() }
    }
}

/// One way of finding candidate papers.
pub trait Channel: Send + Sync {
    /// Short stable name (`bm25`, ...), used in output and `--stages`.
    fn name(&self) -> &'static str;
    /// The top `k` paper ids for the query, best first, with channel scores.
    fn retrieve(&self, query: &Query, k: usize) -> Result<ChannelOutput>;
}

/// BM25 over the library's title + abstract + keywords. The query is the
/// local context plus the global context (title, abstract) when given.
pub struct Bm25Channel {
    library: Arc<Library>,
}

impl Bm25Channel {
    pub fn new(library: Arc<Library>) -> Bm25Channel {
        Bm25Channel { library }
    }
}

impl Channel for Bm25Channel {
    fn name(&self) -> &'static str {
        "bm25"
    }

    fn retrieve(&self, query: &Query, k: usize) -> Result<ChannelOutput> {
        let text = format!("{} {} {}", query.local_text(), query.title, query.abstract_text);
        let index = self.library.papers();
        let searcher = index.searcher();
        let hits = index.search(&text, k)?;
        let ids = index.ids(&searcher, hits.iter().map(|h| h.doc))?;
        // Confidence: how far the best paper stands out from the second.
        let confidence = match hits.as_slice() {
            [first, second, ..] if first.score > 0.0 => (first.score - second.score) / first.score,
            [_] => 1.0,
            _ => 0.0,
        };
        let ranked = ids.into_iter().zip(hits.iter().map(|h| h.score)).collect();
        Ok(ChannelOutput { ranked, confidence, evidence: HashMap::new() })
    }
}

/// Names of every channel this build has, in default order.
pub const ALL_CHANNELS: &[&str] = &["bm25", "evidence", "citation", "hatten"];
