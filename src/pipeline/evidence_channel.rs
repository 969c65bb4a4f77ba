//! The evidence channel: spans prefetched with BM25 and BM25+, re-ranked by
//! a rank ensemble, then papers ordered by best evidence rank, total
//! support, recency.

use std::collections::HashMap;
use std::sync::Arc;

use tantivy::DocAddress;

use super::channel::{Channel, ChannelId, ChannelOutput, EvidenceSnippet};
use super::query::Prepared;
use crate::error::Result;
use crate::evidence::record::SpanRecord;
use crate::library::Library;

/// Spans prefetched by each BM25 variant.
pub const SPAN_PREFETCH: usize = 100;
/// Evidence spans kept per paper.
pub const SNIPPETS_PER_PAPER: usize = 3;
/// Rank-fusion constant of the span ensemble.
const SPAN_RRF_K: f32 = 60.0;

/// A retrieved span with its ensemble rank (1-based).
pub struct RankedSpan {
    pub rank: usize,
    pub record: SpanRecord,
}

/// Evidence spans looked at when judging how well the database matches a
/// query.
const CONFIDENCE_SPANS: usize = 3;

/// The lexical evidence confidence (idf share of the query covered by the
/// best span × the fourth power of the share of query terms the database
/// knows) reaches full weight at `1 / LEXICAL_SCALE`. Tuned on `val`.
const LEXICAL_SCALE: f32 = 6.0;

/// Semantic confidence: the best cosine between the query and its top
/// spans, mapped linearly from `SEMANTIC_FLOOR` (none) to
/// `SEMANTIC_FLOOR + SEMANTIC_RAMP` (full). Tuned on `val`: the spans of a
/// field the database covers paraphrase the query (cosine above 0.5 for 90 %
/// of `val` scisummnet queries); a query from elsewhere only meets loosely
/// related sentences (below 0.55 for 90 % of `val` scicite queries).
const SEMANTIC_FLOOR: f32 = 0.35;
const SEMANTIC_RAMP: f32 = 0.2;

/// Hook for a semantic model of spans: re-ranks the prefetched spans (for
/// long queries) and says how close the best spans come to the query.
pub trait SpanReranker: Send + Sync {
    /// Reorders `spans` in place for the query text.
    fn rerank(&self, query: &str, spans: &mut Vec<RankedSpan>) -> Result<()>;
    /// Cosine similarity of the query to each of `spans`.
    fn similarity(&self, query: &str, spans: &[RankedSpan]) -> Result<Vec<f32>>;
}

impl<T: SpanReranker + ?Sized> SpanReranker for Arc<T> {
    fn rerank(&self, query: &str, spans: &mut Vec<RankedSpan>) -> Result<()> {
        (**self).rerank(query, spans)
    }
    fn similarity(&self, query: &str, spans: &[RankedSpan]) -> Result<Vec<f32>> {
        (**self).similarity(query, spans)
    }
}

pub struct EvidenceChannel {
    library: Arc<Library>,
    reranker: Option<Box<dyn SpanReranker>>,
    order: PaperOrder,
}

impl EvidenceChannel {
    pub fn new(library: Arc<Library>) -> EvidenceChannel {
        EvidenceChannel { library, reranker: None, order: PaperOrder::default() }
    }

    /// Adds a semantic re-ranker of the prefetched spans.
    pub fn with_reranker(mut self, reranker: Box<dyn SpanReranker>) -> EvidenceChannel {
        self.reranker = Some(reranker);
        self
    }

    pub fn with_order(mut self, order: PaperOrder) -> EvidenceChannel {
        self.order = order;
        self
    }

    /// Share of the query terms' idf mass that a span's terms cover, 0..=1.
    pub fn coverage(&self, terms: &[String], span: &SpanRecord) -> f32 {
        let ev = self.library.evidence();
        let idf: HashMap<&str, f32> = terms.iter().map(|t| (t.as_str(), ev.idf(t))).collect();
        let total: f32 = idf.values().sum();
        let covered: f32 = ev.terms(&span.text).iter().filter_map(|t| idf.get(t.as_str())).sum();
        if total > 0.0 {
            covered / total
        } else {
            0.0
        }
    }

    /// Share of the query's distinct terms that occur in the evidence
    /// database at all: low when the query is about a field the database
    /// does not cover.
    pub fn vocabulary_coverage(&self, terms: &[String]) -> f32 {
        if terms.is_empty() {
            return 0.0;
        }
        let ev = self.library.evidence();
        let known = terms.iter().filter(|t| ev.doc_freq(t) > 0).count();
        known as f32 / terms.len() as f32
    }

    /// How much the evidence list deserves trust for this query, 0..=1:
    /// the lexical confidence, times the semantic one when a semantic model
    /// is present (both must agree that the database speaks of the query's
    /// claim; evidence from a field the database does not cover scores low
    /// on both).
    pub fn confidence(&self, local: &str, terms: &[String], spans: &[RankedSpan]) -> Result<f32> {
        let Some(best) = spans.first() else { return Ok(0.0) };
        let lexical = (LEXICAL_SCALE * self.coverage(terms, &best.record) * self.vocabulary_coverage(terms).powi(4)).min(1.0);
        let semantic = match &self.reranker {
            Some(r) => {
                let top = &spans[..spans.len().min(CONFIDENCE_SPANS)];
                let best = r.similarity(local, top)?.into_iter().fold(f32::MIN, f32::max);
                ((best - SEMANTIC_FLOOR) / SEMANTIC_RAMP).clamp(0.0, 1.0)
            }
            None => 1.0,
        };
        Ok(lexical * semantic)
    }

    /// Spans for the query, best first.
    pub fn spans(&self, query: &Prepared) -> Result<Vec<RankedSpan>> {
        self.spans_for(&query.span_text, &query.span_terms, &query.citing_keys)
    }

    /// Spans for the query words, best first; without what the citing paper
    /// `exclude` said (a span only it gave is dropped).
    fn spans_for(&self, local: &str, terms: &[String], exclude: &[u64]) -> Result<Vec<RankedSpan>> {
        let ev = self.library.evidence();
        let hits = ev.search(terms, SPAN_PREFETCH)?;
        let mut fused: HashMap<DocAddress, f32> = HashMap::new();
        for list in [&hits.okapi, &hits.plus] {
            for (i, (doc, _)) in list.iter().enumerate() {
                *fused.entry(*doc).or_default() += 1.0 / (SPAN_RRF_K + (i + 1) as f32);
            }
        }
        let okapi_rank: HashMap<DocAddress, usize> = hits.okapi.iter().enumerate().map(|(i, (d, _))| (*d, i)).collect();
        let mut order: Vec<(DocAddress, f32)> = fused.into_iter().collect();
        order.sort_by(|a, b| {
            b.1.total_cmp(&a.1).then(okapi_rank.get(&a.0).unwrap_or(&usize::MAX).cmp(okapi_rank.get(&b.0).unwrap_or(&usize::MAX)))
        });
        let searcher = ev.searcher();
        let mut spans = Vec::with_capacity(order.len());
        for (doc, _) in order {
            let record = ev.record(&searcher, doc)?;
            let record = if exclude.is_empty() {
                record
            } else {
                match record.without_citing(exclude) {
                    Some(r) => r,
                    None => continue,
                }
            };
            spans.push(RankedSpan { rank: spans.len() + 1, record });
        }
        if let Some(r) = &self.reranker {
            r.rerank(local, &mut spans)?;
            for (i, s) in spans.iter_mut().enumerate() {
                s.rank = i + 1;
            }
        }
        Ok(spans)
    }
}

/// How papers are ordered from their spans.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PaperOrder {
    /// Best (lowest) evidence rank, then total support, then recency.
    BestRank,
    /// Σ over the paper's spans of support / (k + rank): the best rank
    /// dominates, and every further span (and sighting) adds a vote; ties
    /// fall to recency. Better on `val` (see CHANGELOG).
    Votes { k: f32 },
}

impl Default for PaperOrder {
    fn default() -> PaperOrder {
        PaperOrder::Votes { k: 5.0 }
    }
}

/// A paper found through evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct EvidencePaper {
    pub id: String,
    pub best_rank: usize,
    pub support: u32,
    pub year: Option<i32>,
    /// Decreasing along the order.
    pub score: f32,
}

/// Papers cited by the ranked spans, in `order`.
pub fn rank_papers(spans: &[RankedSpan], order: PaperOrder) -> Vec<EvidencePaper> {
    let mut by_id: HashMap<&str, EvidencePaper> = HashMap::new();
    for s in spans {
        for c in &s.record.cited {
            let p = by_id.entry(c.id.as_str()).or_insert_with(|| EvidencePaper {
                id: c.id.clone(),
                best_rank: s.rank,
                support: 0,
                year: c.year,
                score: 0.0,
            });
            p.best_rank = p.best_rank.min(s.rank);
            p.support += c.support();
            if let PaperOrder::Votes { k } = order {
                p.score += c.support() as f32 / (k + s.rank as f32);
            }
        }
    }
    let mut out: Vec<EvidencePaper> = by_id.into_values().collect();
    match order {
        PaperOrder::BestRank => {
            out.sort_by(|a, b| {
                a.best_rank.cmp(&b.best_rank).then(b.support.cmp(&a.support)).then(b.year.cmp(&a.year)).then(a.id.cmp(&b.id))
            });
            for p in &mut out {
                p.score = 1.0 / p.best_rank as f32;
            }
        }
        PaperOrder::Votes { .. } => {
            out.sort_by(|a, b| b.score.total_cmp(&a.score).then(b.year.cmp(&a.year)).then(a.id.cmp(&b.id)));
        }
    }
    out
}

/// A span as shown with one of the papers it cites.
pub fn snippet(record: &SpanRecord, paper: &str) -> EvidenceSnippet {
    let src = record.sources.first();
    EvidenceSnippet {
        text: record.text.clone(),
        support: record.support_for(paper),
        citing_title: src.map(|s| s.citing_title.clone()).unwrap_or_default(),
        citing_year: src.and_then(|s| s.citing_year),
        sentence: src.map(|s| s.sentence.clone()).unwrap_or_default(),
        citing_file: src.and_then(|s| s.file.clone()),
        citing_page: src.and_then(|s| s.page),
    }
}

impl Channel for EvidenceChannel {
    fn id(&self) -> ChannelId {
        ChannelId::Evidence
    }

    fn retrieve(&self, query: &Prepared, k: usize) -> Result<ChannelOutput> {
        let (local, terms) = (&query.span_text, &query.span_terms);
        let spans = self.spans_for(local, terms, &query.citing_keys)?;
        let papers = rank_papers(&spans, self.order);
        let mut evidence: HashMap<String, Vec<EvidenceSnippet>> = HashMap::new();
        for s in &spans {
            for c in &s.record.cited {
                let list = evidence.entry(c.id.clone()).or_default();
                if list.len() < SNIPPETS_PER_PAPER {
                    list.push(snippet(&s.record, &c.id));
                }
            }
        }
        let confidence = self.confidence(local, terms, &spans)?;
        let ranked = papers.into_iter().take(k).map(|p| (p.id, p.score)).collect();
        Ok(ChannelOutput { ranked, confidence, evidence })
    }
}
