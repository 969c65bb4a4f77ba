//! How close candidate papers come to the query under the citation encoder
//! (a bi-encoder tuned on citation context → cited paper pairs): the rerank
//! stage's second signal beside the cross-encoder. Paper vectors are
//! cached by id, so papers that come back for the next query cost nothing.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::error::Result;
use crate::index::layered::LayeredVectors;
use crate::neural::bi_encoder::{paper_text, BiEncoder};

/// Paper vectors kept in memory at most (about 1.5 KB each).
const CACHE_LIMIT: usize = 20_000;

/// A candidate paper to compare with the query.
pub struct PaperText<'a> {
    pub id: &'a str,
    pub title: &'a str,
    pub abstract_text: &'a str,
}

pub struct PaperCosines {
    encoder: Arc<BiEncoder>,
    cache: Mutex<HashMap<String, Arc<[f32]>>>,
}

impl PaperCosines {
    /// Paper cosines under `encoder` (the citation encoder); one per
    /// [`super::models::Models`], so its cache serves every recommender.
    pub fn new(encoder: Arc<BiEncoder>) -> PaperCosines {
        PaperCosines { encoder, cache: Mutex::new(HashMap::new()) }
    }

    /// The encoder the vectors come from.
    pub fn encoder(&self) -> &Arc<BiEncoder> {
        &self.encoder
    }

    /// Cosine of the query text to each paper (title and abstract), in order.
    /// Papers with a vector in `stored` (the library's citation vectors,
    /// computed from the same text by the same encoder) are not encoded.
    pub fn cosines(&self, query: &str, papers: &[PaperText], stored: Option<&LayeredVectors>) -> Result<Vec<f32>> {
        if papers.is_empty() {
            return Ok(Vec::new());
        }
        let mut vectors: Vec<Option<Arc<[f32]>>> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            papers.iter().map(|p| stored.and_then(|s| s.vector(p.id)).map(Arc::from).or_else(|| cache.get(p.id).cloned())).collect()
        };
        let missing: Vec<usize> = (0..papers.len()).filter(|&i| vectors[i].is_none()).collect();
        let mut texts: Vec<String> = vec![query.to_string()];
        texts.extend(missing.iter().map(|&i| paper_text(papers[i].title, papers[i].abstract_text)));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let encoded = self.encoder.encode(&refs)?;
        let d = self.encoder.dim();
        let q = &encoded[..d];
        {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            if cache.len() + missing.len() > CACHE_LIMIT {
                cache.clear();
            }
            for (row, &i) in missing.iter().enumerate() {
                let v: Arc<[f32]> = Arc::from(&encoded[(row + 1) * d..(row + 2) * d]);
                cache.insert(papers[i].id.to_string(), v.clone());
                vectors[i] = Some(v);
            }
        }
        Ok(vectors.iter().map(|v| v.as_ref().expect("every vector filled").iter().zip(q).map(|(a, b)| a * b).sum()).collect())
    }
}
