//! The dense channel: the query encoded by HAtten, nearest papers by cosine
//! in the library's vector store.

use std::collections::HashMap;
use std::sync::Arc;

use super::channel::{Channel, ChannelId, ChannelOutput};
use super::query::Prepared;
use crate::error::{Error, Result};
use crate::index::vectors::VectorStore;
use crate::library::Library;
use crate::neural::encoder::HattenEncoder;
use crate::neural::hatten::DocText;
use crate::neural::parallel::threads_here;

pub struct DenseChannel {
    library: Arc<Library>,
    encoder: Arc<HattenEncoder>,
    vectors: VectorStore,
}

impl DenseChannel {
    /// The channel over `library`'s vectors; an error says what is missing
    /// (weights, word vectors, or vectors not yet computed).
    pub fn open(library: &Arc<Library>, encoder: Arc<HattenEncoder>) -> Result<DenseChannel> {
        let vectors = VectorStore::open_read(&library.vectors_dir(), encoder.dim(), encoder.fingerprint())?;
        if vectors.is_empty() && library.papers().num_papers() > 0 {
            return Err(Error::Missing(format!(
                "the library at {} has no paper vectors for this encoder: run `citewise embed`",
                library.dir().display()
            )));
        }
        Ok(DenseChannel { library: library.clone(), encoder, vectors })
    }
}

/// The query as HAtten reads it.
pub fn query_doc(query: &Prepared) -> DocText {
    DocText { context: query.local.clone(), title: query.query.title.clone(), abstract_text: query.query.abstract_text.clone() }
}

impl Channel for DenseChannel {
    fn id(&self) -> ChannelId {
        ChannelId::Hatten
    }

    fn retrieve(&self, query: &Prepared, k: usize) -> Result<ChannelOutput> {
        let v = self.encoder.encode(&[query_doc(query)]);
        // The channels run one after another: the scan takes the threads of model work.
        let hits = self.vectors.search(&v, k, threads_here());
        // Confidence: how far the query's words are inside the encoder's
        // training field (fusion gates the list by it).
        let confidence = match &self.encoder.field {
            Some(field) => field.coverage_of(self.library.papers(), &query.full_terms),
            None => 1.0,
        };
        Ok(ChannelOutput { ranked: hits.into_iter().map(|h| (h.id, h.score)).collect(), confidence, evidence: HashMap::new() })
    }
}
