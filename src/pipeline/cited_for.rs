//! What other papers cited each candidate for, next to the query: the best
//! cosine (citation encoder) between the query's local text and the
//! evidence spans that cite the candidate. The rerank stage's third signal;
//! a paper that no span cites gets none. Span vectors come from the
//! evidence stage's cache (the editor encodes them all at start).

use std::sync::Arc;

use super::evidence_channel::RankedSpan;
use super::span_cosines::SpanCosines;
use crate::error::Result;
use crate::library::Library;

/// Spans compared per paper: those that share the most query words.
pub const SPANS_PER_PAPER: usize = 10;

pub struct CitedFor {
    spans: Arc<SpanCosines>,
}

impl CitedFor {
    /// The signal over `spans` (shared with the evidence channel's cache).
    pub fn new(spans: Arc<SpanCosines>) -> CitedFor {
        CitedFor { spans }
    }

    /// For each paper id, the best cosine of `local` to a span of
    /// `library`'s evidence database that cites it (none when no span does),
    /// leaving out what the citing paper `exclude` itself said.
    pub fn best_cosines(&self, library: &Library, local: &str, ids: &[&str], exclude: &[u64]) -> Result<Vec<Option<f32>>> {
        let works: Vec<Vec<&str>> = ids.iter().map(|id| vec![*id]).collect();
        self.best_cosines_of_works(library, local, &works, exclude)
    }

    /// [`Self::best_cosines`] for papers the library holds under several
    /// records (each paper's ids: [`super::Candidate::same_work`]): the
    /// spans citing any of them count.
    pub fn best_cosines_of_works(&self, library: &Library, local: &str, works: &[Vec<&str>], exclude: &[u64]) -> Result<Vec<Option<f32>>> {
        let ev = library.evidence();
        if ev.num_spans() == 0 || works.is_empty() {
            return Ok(vec![None; works.len()]);
        }
        let terms = ev.terms(local);
        let mut spans = Vec::new();
        let mut owner = Vec::new();
        for (i, ids) in works.iter().enumerate() {
            for id in ids {
                for (rank, record) in ev.spans_citing(id, &terms, SPANS_PER_PAPER, exclude)?.into_iter().enumerate() {
                    spans.push(RankedSpan { rank: rank + 1, record });
                    owner.push(i);
                }
            }
        }
        let mut best: Vec<Option<f32>> = vec![None; works.len()];
        for (cos, &i) in self.spans.similarity(local, &spans)?.into_iter().zip(&owner) {
            best[i] = Some(best[i].map_or(cos, |b| b.max(cos)));
        }
        Ok(best)
    }
}
