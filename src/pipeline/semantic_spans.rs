//! Conditional rank ensembling for evidence: for queries of at least
//! `min_words` words, the prefetched spans are re-ranked by their lexical
//! rank and their cosine rank under the citation bi-encoder together
//! (reciprocal ranks, summed). Short queries keep the lexical order: there
//! the exact words carry the signal. The same cosines, for the top spans of
//! any query, tell the evidence channel how closely the database speaks of
//! the query's claim (its confidence). Span vectors are cached by text.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::evidence_channel::{RankedSpan, SpanReranker};
use crate::error::Result;
use crate::neural::bi_encoder::{shared_citation_encoder, BiEncoder};

/// Queries of at least this many words get the semantic re-ranking (tuned
/// on `val`, see CHANGELOG).
pub const DEFAULT_MIN_WORDS: usize = 10;

/// Rank-fusion constant of the lexical and semantic span ranks.
const RRF_K: f32 = 60.0;

/// Span vectors kept in memory at most (about 1.5 KB each).
const CACHE_LIMIT: usize = 200_000;

pub struct SemanticSpans {
    encoder: Arc<BiEncoder>,
    min_words: AtomicUsize,
    cache: Mutex<HashMap<String, Arc<[f32]>>>,
    /// The last query's vector (re-ranking and confidence ask for it twice).
    last_query: Mutex<Option<(String, Arc<[f32]>)>>,
}

impl SemanticSpans {
    pub fn new(encoder: Arc<BiEncoder>) -> SemanticSpans {
        SemanticSpans { encoder, min_words: AtomicUsize::new(DEFAULT_MIN_WORDS), cache: Mutex::new(HashMap::new()), last_query: Mutex::new(None) }
    }

    /// The process-wide instance on the citation bi-encoder (its cache is
    /// shared by every recommender), when the model is installed.
    pub fn shared() -> Result<Arc<SemanticSpans>> {
        static SHARED: Mutex<Option<Arc<SemanticSpans>>> = Mutex::new(None);
        crate::util::load_once(&SHARED, || Ok(SemanticSpans::new(shared_citation_encoder()?)))
    }

    /// Query length (in words) from which the semantic ranks count.
    pub fn set_min_words(&self, n: usize) {
        self.min_words.store(n, Ordering::Relaxed);
    }

    pub fn min_words(&self) -> usize {
        self.min_words.load(Ordering::Relaxed)
    }

    /// Encodes every span of `library`'s evidence database that is not
    /// cached yet (batch work up front instead of per query; evaluation
    /// does this). `on_batch` gets the number of spans done so far.
    pub fn warm(&self, library: &crate::library::Library, on_batch: &dyn Fn(usize, usize)) -> Result<()> {
        let records = library.evidence().all_records()?;
        let texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
        for (i, chunk) in texts.chunks(1024).enumerate() {
            self.vectors(chunk)?;
            on_batch((i * 1024 + chunk.len()).min(texts.len()), texts.len());
        }
        Ok(())
    }

    /// The query's vector (the last one is remembered).
    fn query_vector(&self, query: &str) -> Result<Arc<[f32]>> {
        if let Some((q, v)) = self.last_query.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            if q == query {
                return Ok(v.clone());
            }
        }
        let v: Arc<[f32]> = Arc::from(self.encoder.encode(&[query])?);
        *self.last_query.lock().unwrap_or_else(|e| e.into_inner()) = Some((query.to_string(), v.clone()));
        Ok(v)
    }

    /// Vectors of `texts`, from the cache where possible.
    fn vectors(&self, texts: &[&str]) -> Result<Vec<Arc<[f32]>>> {
        let missing: Vec<&str> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            let mut m: Vec<&str> = texts.iter().copied().filter(|t| !cache.contains_key(*t)).collect();
            m.sort_unstable();
            m.dedup();
            m
        };
        let fresh = self.encoder.encode(&missing)?;
        let d = self.encoder.dim();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() + missing.len() > CACHE_LIMIT {
            cache.clear();
        }
        let mut out = Vec::with_capacity(texts.len());
        let fresh: HashMap<&str, Arc<[f32]>> = missing.iter().enumerate().map(|(i, t)| (*t, Arc::from(&fresh[i * d..(i + 1) * d]))).collect();
        for t in texts {
            let v = match fresh.get(t) {
                Some(v) => v.clone(),
                None => cache[*t].clone(),
            };
            out.push(v);
        }
        for (t, v) in fresh {
            cache.insert(t.to_string(), v);
        }
        Ok(out)
    }
}

impl SpanReranker for SemanticSpans {
    fn rerank(&self, query: &str, spans: &mut Vec<RankedSpan>) -> Result<()> {
        if spans.len() < 2 || query.split_whitespace().count() < self.min_words() {
            return Ok(());
        }
        let cos = self.similarity(query, spans)?;
        let mut by_cos: Vec<usize> = (0..spans.len()).collect();
        by_cos.sort_by(|&a, &b| cos[b].total_cmp(&cos[a]));
        let mut semantic_rank = vec![0usize; spans.len()];
        for (r, &i) in by_cos.iter().enumerate() {
            semantic_rank[i] = r + 1;
        }
        let score: Vec<f32> =
            spans.iter().zip(&semantic_rank).map(|(s, &r)| 1.0 / (RRF_K + s.rank as f32) + 1.0 / (RRF_K + r as f32)).collect();
        let mut order: Vec<usize> = (0..spans.len()).collect();
        order.sort_by(|&a, &b| score[b].total_cmp(&score[a]).then(spans[a].rank.cmp(&spans[b].rank)));
        let mut taken: Vec<Option<RankedSpan>> = std::mem::take(spans).into_iter().map(Some).collect();
        *spans = order.into_iter().map(|i| taken[i].take().expect("each span once")).collect();
        Ok(())
    }

    fn similarity(&self, query: &str, spans: &[RankedSpan]) -> Result<Vec<f32>> {
        if spans.is_empty() {
            return Ok(Vec::new());
        }
        let q = self.query_vector(query)?;
        let texts: Vec<&str> = spans.iter().map(|s| s.record.text.as_str()).collect();
        let vectors = self.vectors(&texts)?;
        Ok(vectors.iter().map(|v| v.iter().zip(q.iter()).map(|(a, b)| a * b).sum()).collect())
    }
}
