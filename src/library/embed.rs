//! Paper vectors for the dense channel: every paper of the library encoded
//! once, incrementally (new or changed papers only), committed in batches so
//! that an interrupted run resumes.

use crate::error::Result;
use crate::index::vectors::VectorStore;
use crate::library::Library;
use crate::neural::encoder::HattenEncoder;
use crate::neural::hatten::DocText;
use crate::util::fnv1a64;

/// Papers encoded between commits.
const COMMIT_EVERY: usize = 2048;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct EmbedSummary {
    /// Papers encoded now.
    pub embedded: usize,
    /// Papers whose vector was already current.
    pub kept: usize,
}

/// Hash of the text a paper's vector is computed from.
pub fn text_hash(title: &str, abstract_text: &str) -> u64 {
    fnv1a64(format!("{title}\n{abstract_text}").as_bytes())
}

/// Encodes the papers that have no current vector. `on_start(n)` is called
/// with the number to encode, `on_progress(k)` after each batch.
pub fn embed_library(lib: &Library, encoder: &HattenEncoder, on_start: &dyn Fn(u64), on_progress: &dyn Fn(u64)) -> Result<EmbedSummary> {
    let mut store = VectorStore::open(&lib.vectors_dir(), encoder.dim(), encoder.fingerprint())?;
    let mut todo: Vec<(String, u64, DocText)> = Vec::new();
    let mut kept = 0;
    lib.papers().for_each_paper(&mut |p| {
        let h = text_hash(&p.title, &p.abstract_text);
        if store.is_current(&p.id, h) {
            kept += 1;
        } else {
            todo.push((p.id, h, DocText::paper(&p.title, &p.abstract_text)));
        }
        Ok(())
    })?;
    on_start(todo.len() as u64);
    for chunk in todo.chunks(COMMIT_EVERY) {
        let texts: Vec<DocText> = chunk.iter().map(|t| t.2.clone()).collect();
        let vectors = encoder.encode_with_progress(&texts, on_progress);
        let items: Vec<(String, u64)> = chunk.iter().map(|t| (t.0.clone(), t.1)).collect();
        store.append(&items, &vectors)?;
    }
    Ok(EmbedSummary { embedded: todo.len(), kept })
}
