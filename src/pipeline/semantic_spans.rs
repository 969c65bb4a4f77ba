//! Conditional rank ensembling for evidence: for queries of at least
//! `min_words` words, the prefetched spans are re-ranked by their lexical
//! rank and their cosine rank under the citation bi-encoder together
//! (reciprocal ranks, summed). Short queries keep the lexical order: there
//! the exact words carry the signal. Span vectors are cached by text.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::evidence_channel::{RankedSpan, SpanReranker};
use crate::error::Result;
use crate::neural::backend::{select, DevicePreference};
use crate::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};

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
}

impl SemanticSpans {
    pub fn new(encoder: Arc<BiEncoder>) -> SemanticSpans {
        SemanticSpans { encoder, min_words: AtomicUsize::new(DEFAULT_MIN_WORDS), cache: Mutex::new(HashMap::new()) }
    }

    /// The process-wide instance on the citation bi-encoder (its cache is
    /// shared by every recommender), when the model is installed.
    pub fn shared() -> Result<Arc<SemanticSpans>> {
        static SHARED: Mutex<Option<Arc<SemanticSpans>>> = Mutex::new(None);
        crate::util::load_once(&SHARED, || {
            let backend = select(DevicePreference::Auto);
            Ok(SemanticSpans::new(Arc::new(BiEncoder::load(CITATION_ENCODER, &backend.device)?)))
        })
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
        let q = self.encoder.encode(&[query])?;
        let texts: Vec<&str> = spans.iter().map(|s| s.record.text.as_str()).collect();
        let vectors = self.vectors(&texts)?;
        let cos: Vec<f32> = vectors.iter().map(|v| v.iter().zip(&q).map(|(a, b)| a * b).sum()).collect();
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
}
