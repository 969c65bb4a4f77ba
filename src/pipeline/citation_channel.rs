//! The citation channel: the query's local context encoded by the citation
//! bi-encoder (`minilm-citation-v4`, tuned on citation context → cited
//! paper pairs), nearest papers by cosine among the library's citation
//! vectors. It finds papers that say the same thing in other words, where
//! BM25 needs shared terms and evidence needs an earlier citing sentence.

use std::collections::HashMap;
use std::sync::Arc;

use super::channel::{Channel, ChannelId, ChannelOutput};
use super::query::Prepared;
use crate::error::{Error, Result};
use crate::index::layered::LayeredVectors;
use crate::index::vectors::VectorStore;
use crate::library::Library;
use crate::neural::bi_encoder::BiEncoder;
use crate::neural::parallel::threads_here;

pub struct CitationChannel {
    encoder: Arc<BiEncoder>,
    vectors: Arc<LayeredVectors>,
}

/// The library's paper vectors under `encoder` (its own, and its student's
/// stand-ins for the papers it has not encoded yet), when it has any.
pub fn open_citation_vectors(library: &Library, encoder: &BiEncoder) -> Result<Option<LayeredVectors>> {
    let dir = library.citation_vectors_dir();
    let own = if VectorStore::exists(&dir) { Some(VectorStore::open_read(&dir, encoder.dim(), &encoder.fingerprint())?) } else { None };
    let stand_ins = crate::library::student::student_vectors(library, &encoder.fingerprint(), encoder.dim())?;
    Ok(LayeredVectors::new(own, stand_ins))
}

impl CitationChannel {
    /// The channel over `vectors`; an error says how to compute them when
    /// there are none.
    pub fn new(library: &Library, encoder: Arc<BiEncoder>, vectors: Option<Arc<LayeredVectors>>) -> Result<CitationChannel> {
        match vectors {
            Some(vectors) => Ok(CitationChannel { encoder, vectors }),
            None => Err(Error::Missing(format!(
                "the library at {} has no paper vectors for the citation channel: run `citewise embed`",
                library.dir().display()
            ))),
        }
    }
}

impl Channel for CitationChannel {
    fn id(&self) -> ChannelId {
        ChannelId::Citation
    }

    fn retrieve(&self, query: &Prepared, k: usize) -> Result<ChannelOutput> {
        let local = &query.local;
        if local.split_whitespace().next().is_none() {
            return Ok(ChannelOutput::default());
        }
        let v = self.encoder.encode(&[local.as_str()])?;
        // The channels run one after another: the scan takes the threads of model work.
        let hits = self.vectors.search(&v, k, threads_here());
        // The share of the list found by the encoder's own vectors (the
        // rest by the student's stand-ins): fusion weighs the list by it.
        let own = hits.iter().filter(|h| self.vectors.has_own(&h.id)).count();
        let confidence = if hits.is_empty() { 1.0 } else { own as f32 / hits.len() as f32 };
        Ok(ChannelOutput { ranked: hits.into_iter().map(|h| (h.id, h.score)).collect(), confidence, evidence: HashMap::new() })
    }
}
