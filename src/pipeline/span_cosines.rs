//! Cosines of a query to evidence spans under the citation encoder, and
//! conditional rank ensembling with them ([`SpanRanking`]): for queries of
//! at least `min_words` words, the prefetched spans are re-ranked by their
//! lexical rank and their cosine rank together (reciprocal ranks, summed).
//! Short queries keep the lexical order: there the exact words carry the
//! signal. The same cosines, for the top spans of any query, tell the
//! evidence channel how closely the database speaks of the query's claim
//! (its confidence), and give the rerank stage its cited-for signal. Span
//! vectors are cached in memory by text and kept in the library
//! (`span-vectors/`, a `VectorStore` keyed by span text): `warm` encodes
//! what is missing and saves it, `load_saved` reads it back, so a new
//! process starts with every span encoded. One `SpanCosines` per
//! [`super::models::Models`], so every recommender of a front end shares
//! the cache.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::evidence_channel::{RankedSpan, SpanReranker};
use crate::error::Result;
use crate::index::vectors::VectorStore;
use crate::library::Library;
use crate::neural::bi_encoder::BiEncoder;

/// Queries of at least this many words get the semantic re-ranking (chosen
/// on `val`, see CHANGELOG).
pub const DEFAULT_MIN_WORDS: usize = 10;

/// Rank-fusion constant of the lexical and semantic span ranks.
const RRF_K: f32 = 60.0;

/// Span vectors kept in memory at most (about 1.5 KB each).
const CACHE_LIMIT: usize = 200_000;

pub struct SpanCosines {
    encoder: Arc<BiEncoder>,
    cache: Mutex<HashMap<String, Arc<[f32]>>>,
    /// The last query's vector (re-ranking and confidence ask for it twice).
    last_query: Mutex<Option<(String, Arc<[f32]>)>>,
    /// Libraries whose saved vectors are in the cache.
    loaded: Mutex<HashSet<PathBuf>>,
    /// Span texts encoded by this process (not read from a library).
    encoded: AtomicUsize,
}

/// Spans encoded and saved per batch (an interrupted `warm` resumes after
/// the last saved batch).
const WARM_BATCH: usize = 1024;

impl SpanCosines {
    /// Span cosines under `encoder` (the citation encoder).
    pub fn new(encoder: Arc<BiEncoder>) -> SpanCosines {
        SpanCosines {
            encoder,
            cache: Mutex::new(HashMap::new()),
            last_query: Mutex::new(None),
            loaded: Mutex::new(HashSet::new()),
            encoded: AtomicUsize::new(0),
        }
    }

    /// Span texts this process has encoded so far.
    pub fn encoded(&self) -> usize {
        self.encoded.load(Ordering::Relaxed)
    }

    /// Encodes every span of `library`'s evidence database that has no
    /// saved vector, saving them in the library batch by batch, and caches
    /// them all (evaluation and the editor do this up front instead of per
    /// query). `on_batch` gets the spans done so far and the total.
    pub fn warm(&self, library: &Library, on_batch: &dyn Fn(usize, usize)) -> Result<()> {
        let records = library.evidence().all_records()?;
        let mut texts: Vec<&str> = records.iter().map(|r| r.text.as_str()).collect();
        texts.sort_unstable();
        texts.dedup();
        // Damage is mended (as the library's writer) before anything is read.
        library.writing().during(|| self.open_store(library).map(drop))?;
        let store = self.read_store(library)?;
        self.cache_store(&store);
        self.loaded.lock().unwrap_or_else(|e| e.into_inner()).insert(library.dir().to_path_buf());
        let missing: Vec<&str> = texts.iter().copied().filter(|t| !store.is_current(t, 0)).collect();
        drop(store);
        let mut done = texts.len() - missing.len();
        on_batch(done, texts.len());
        for chunk in missing.chunks(WARM_BATCH) {
            let vectors = self.vectors(chunk)?;
            // Committed as the library's writer, leaving out what another
            // process (an editor of the same library) saved meanwhile.
            library.writing().during(|| {
                let mut store = self.open_store(library)?;
                let fresh: Vec<usize> = (0..chunk.len()).filter(|&i| !store.is_current(chunk[i], 0)).collect();
                let flat: Vec<f32> = fresh.iter().flat_map(|&i| vectors[i].iter().copied()).collect();
                let items: Vec<(String, u64)> = fresh.iter().map(|&i| (chunk[i].to_string(), 0)).collect();
                if items.is_empty() {
                    return Ok(());
                }
                store.append(&items, &flat)
            })?;
            done += chunk.len();
            on_batch(done, texts.len());
        }
        Ok(())
    }

    /// Caches the span vectors `library` holds (once per library and
    /// process); returns how many were read. Reads only: a writer's rows
    /// not yet committed are left alone, and a damaged store is not read.
    pub fn load_saved(&self, library: &Library) -> Result<usize> {
        let dir = library.span_vectors_dir();
        if !dir.exists() || !self.loaded.lock().unwrap_or_else(|e| e.into_inner()).insert(library.dir().to_path_buf()) {
            return Ok(0);
        }
        match self.read_store(library) {
            Ok(store) => Ok(self.cache_store(&store)),
            // Damaged: nothing is read (the next `warm` computes them again).
            Err(crate::error::Error::Corrupt { .. }) => Ok(0),
            Err(e) => Err(e),
        }
    }

    /// The library's span vector store for this encoder, for reading.
    fn read_store(&self, library: &Library) -> Result<VectorStore> {
        VectorStore::open_read(&library.span_vectors_dir(), self.encoder.dim(), &self.encoder.fingerprint())
    }

    /// The library's span vector store for this encoder, as its writer
    /// (the caller holds the library's write lock); a damaged one is
    /// started afresh (it only holds what can be computed again).
    fn open_store(&self, library: &Library) -> Result<VectorStore> {
        let dir = library.span_vectors_dir();
        match VectorStore::open(&dir, self.encoder.dim(), &self.encoder.fingerprint()) {
            Ok(store) => Ok(store),
            Err(_) => {
                std::fs::remove_dir_all(&dir).map_err(|e| crate::error::Error::io(&dir, e))?;
                VectorStore::open(&dir, self.encoder.dim(), &self.encoder.fingerprint())
            }
        }
    }

    /// Puts a store's vectors in the cache (up to its limit).
    fn cache_store(&self, store: &VectorStore) -> usize {
        let d = store.dim();
        let matrix = store.matrix();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let mut n = 0;
        for row in 0..matrix.len() / d.max(1) {
            if cache.len() >= CACHE_LIMIT {
                break;
            }
            let text = store.id_of_row(row);
            if text.is_empty() {
                continue;
            }
            cache.entry(text.to_string()).or_insert_with(|| Arc::from(&matrix[row * d..(row + 1) * d]));
            n += 1;
        }
        n
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
        self.encoded.fetch_add(missing.len(), Ordering::Relaxed);
        let d = self.encoder.dim();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() + missing.len() > CACHE_LIMIT {
            cache.clear();
        }
        let mut out = Vec::with_capacity(texts.len());
        let fresh: HashMap<&str, Arc<[f32]>> =
            missing.iter().enumerate().map(|(i, t)| (*t, Arc::from(&fresh[i * d..(i + 1) * d]))).collect();
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

/// The evidence channel's span re-ranker: conditional rank ensembling of
/// the lexical order with the cosine order, for queries of at least
/// `min_words` words.
pub struct SpanRanking {
    cosines: Arc<SpanCosines>,
    min_words: usize,
}

impl SpanRanking {
    pub fn new(cosines: Arc<SpanCosines>, min_words: usize) -> SpanRanking {
        SpanRanking { cosines, min_words }
    }
}

impl SpanReranker for SpanRanking {
    fn rerank(&self, query: &str, spans: &mut Vec<RankedSpan>) -> Result<()> {
        if spans.len() < 2 || query.split_whitespace().count() < self.min_words {
            return Ok(());
        }
        let cos = self.cosines.similarity(query, spans)?;
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
        self.cosines.similarity(query, spans)
    }
}

impl SpanCosines {
    /// Cosine of the query text to each of `spans`.
    pub fn similarity(&self, query: &str, spans: &[RankedSpan]) -> Result<Vec<f32>> {
        if spans.is_empty() {
            return Ok(Vec::new());
        }
        let q = self.query_vector(query)?;
        let texts: Vec<&str> = spans.iter().map(|s| s.record.text.as_str()).collect();
        let vectors = self.vectors(&texts)?;
        Ok(vectors.iter().map(|v| v.iter().zip(q.iter()).map(|(a, b)| a * b).sum()).collect())
    }
}
