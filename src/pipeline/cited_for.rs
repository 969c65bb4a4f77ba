//! What other papers cited each candidate for, next to the query: the best
//! cosine (citation bi-encoder) between the query's local text and the
//! evidence spans that cite the candidate. The rerank stage's third signal;
//! a paper that no span cites gets none. Span vectors come from the
//! evidence stage's cache (the editor encodes them all at start).

use std::sync::Arc;

use super::evidence_channel::{RankedSpan, SpanReranker};
use super::semantic_spans::SemanticSpans;
use crate::error::Result;
use crate::library::Library;

/// Spans compared per paper: those that share the most query words.
pub const SPANS_PER_PAPER: usize = 10;

pub struct CitedFor {
    spans: Arc<SemanticSpans>,
}

impl CitedFor {
    pub fn new(spans: Arc<SemanticSpans>) -> CitedFor {
        CitedFor { spans }
    }

    /// The process-wide instance (sharing the evidence stage's span cache),
    /// when the citation bi-encoder is installed.
    pub fn shared() -> Result<Arc<CitedFor>> {
        Ok(Arc::new(CitedFor::new(SemanticSpans::shared()?)))
    }

    /// For each paper id, the best cosine of `local` to a span of
    /// `library`'s evidence database that cites it (none when no span does),
    /// leaving out what the citing paper `exclude` itself said.
    pub fn best_cosines(&self, library: &Library, local: &str, ids: &[&str], exclude: &[u64]) -> Result<Vec<Option<f32>>> {
        let ev = library.evidence();
        if ev.num_spans() == 0 || ids.is_empty() {
            return Ok(vec![None; ids.len()]);
        }
        let terms = ev.terms(local);
        let mut spans = Vec::new();
        let mut owner = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            for (rank, record) in ev.spans_citing(id, &terms, SPANS_PER_PAPER, exclude)?.into_iter().enumerate() {
                spans.push(RankedSpan { rank: rank + 1, record });
                owner.push(i);
            }
        }
        let mut best: Vec<Option<f32>> = vec![None; ids.len()];
        for (cos, &i) in self.spans.similarity(local, &spans)?.into_iter().zip(&owner) {
            best[i] = Some(best[i].map_or(cos, |b| b.max(cos)));
        }
        Ok(best)
    }
}
