//! Retrieval channels: each turns a query into a ranked list of paper ids.

use std::sync::Arc;

use super::query::Query;
use crate::error::Result;
use crate::library::Library;

/// A ranked list from one channel, best first.
pub type Ranked = Vec<(String, f32)>;

/// One way of finding candidate papers.
pub trait Channel: Send + Sync {
    /// Short stable name (`bm25`, ...), used in output and `--stages`.
    fn name(&self) -> &'static str;
    /// The top `k` paper ids for the query, best first, with channel scores.
    fn retrieve(&self, query: &Query, k: usize) -> Result<Ranked>;
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

    fn retrieve(&self, query: &Query, k: usize) -> Result<Ranked> {
        let text = format!("{} {} {}", query.local_text(), query.title, query.abstract_text);
        let index = self.library.papers();
        let searcher = index.searcher();
        let hits = index.search(&text, k)?;
        let ids = index.ids(&searcher, hits.iter().map(|h| h.doc))?;
        Ok(ids.into_iter().zip(hits.iter().map(|h| h.score)).collect())
    }
}

/// Names of every channel this build has, in default order.
pub const ALL_CHANNELS: &[&str] = &["bm25"];
