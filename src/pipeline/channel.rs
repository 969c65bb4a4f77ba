//! Retrieval channels: each turns a query into a ranked list of paper ids.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::query::Prepared;
use crate::error::Result;
use crate::index::QueryTf;
use crate::library::Library;

/// A ranked list from one channel, best first.
pub type Ranked = Vec<(String, f32)>;

/// An evidence span shown with a paper: a piece of a sentence in which
/// another paper cited it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub citing_file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

/// The channels this build has, in default order. Adding one means a
/// variant here, its `name`/`badge`, its weight in [`super::fusion::Fusion`]
/// and its opening in [`super::recommender`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChannelId {
    /// BM25 over titles, abstracts and keywords.
    Bm25,
    /// Papers cited by evidence spans that match the query.
    Evidence,
    /// Nearest papers under the citation encoder.
    Citation,
    /// Nearest papers under HAtten.
    Hatten,
}

impl ChannelId {
    /// Every channel, in the order they run.
    pub const ALL: [ChannelId; 4] = [ChannelId::Bm25, ChannelId::Evidence, ChannelId::Citation, ChannelId::Hatten];

    /// Short stable name, used in output, `--stages` and timings.
    pub fn name(self) -> &'static str {
        match self {
            ChannelId::Bm25 => "bm25",
            ChannelId::Evidence => "evidence",
            ChannelId::Citation => "citation",
            ChannelId::Hatten => "hatten",
        }
    }

    /// The letter the editor shows before the channel's rank.
    pub fn badge(self) -> char {
        match self {
            ChannelId::Bm25 => 'B',
            ChannelId::Evidence => 'E',
            ChannelId::Citation => 'N',
            ChannelId::Hatten => 'H',
        }
    }

    /// The channel of a name, if any.
    pub fn from_name(name: &str) -> Option<ChannelId> {
        ChannelId::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Whether the channel matches the query's words (not only its meaning).
    pub fn matches_words(self) -> bool {
        matches!(self, ChannelId::Bm25 | ChannelId::Evidence)
    }

    /// The names of every channel, for messages.
    pub fn names() -> String {
        ChannelId::ALL.map(ChannelId::name).join(", ")
    }
}

impl std::fmt::Display for ChannelId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One way of finding candidate papers.
pub trait Channel: Send + Sync {
    fn id(&self) -> ChannelId;
    /// The top `k` paper ids for the query, best first, with channel scores.
    fn retrieve(&self, query: &Prepared, k: usize) -> Result<ChannelOutput>;
}

/// BM25 over the library's title + abstract + keywords. The query is the
/// local context plus the global context (title, abstract) when given.
pub struct Bm25Channel {
    library: Arc<Library>,
    query_tf: QueryTf,
}

impl Bm25Channel {
    pub fn new(library: Arc<Library>) -> Bm25Channel {
        Bm25Channel { library, query_tf: QueryTf::default() }
    }

    /// How a word the query repeats weighs.
    pub fn with_query_tf(mut self, tf: QueryTf) -> Bm25Channel {
        self.query_tf = tf;
        self
    }
}

impl Channel for Bm25Channel {
    fn id(&self) -> ChannelId {
        ChannelId::Bm25
    }

    fn retrieve(&self, query: &Prepared, k: usize) -> Result<ChannelOutput> {
        let index = self.library.papers();
        let searcher = index.searcher();
        let hits = index.search_up_to(&query.full, k, self.query_tf, query.query.written_in)?;
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
