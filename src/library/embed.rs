//! Paper vectors for the dense channels (HAtten, and the citation
//! bi-encoder): every paper of the library encoded once, incrementally (new
//! or changed papers only), committed in batches so that an interrupted run
//! resumes.

use crate::corpus::Paper;
use crate::error::Result;
use crate::index::vectors::VectorStore;
use crate::library::Library;
use crate::neural::bi_encoder::{paper_text, BiEncoder};
use crate::neural::encoder::HattenEncoder;
use crate::neural::hatten::DocText;
use crate::util::fnv1a64;

/// Papers encoded between commits.
const COMMIT_EVERY: usize = 2048;

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct EmbedSummary {
    /// Papers encoded now.
    pub embedded: usize,
    /// Papers whose vector was already current.
    pub kept: usize,
    /// What was damaged, when the store was damaged and started afresh.
    pub repaired: Option<String>,
}

/// Hash of the text a paper's vector is computed from.
pub fn text_hash(title: &str, abstract_text: &str) -> u64 {
    fnv1a64(format!("{title}\n{abstract_text}").as_bytes())
}

/// The papers whose vector in `store` is missing or stale, each as (id,
/// text hash, what `text` makes of it to encode), and how many are current.
/// Papers to encode: id, text hash, and what to encode.
type Todo<T> = Vec<(String, u64, T)>;

fn stale_papers<T>(lib: &Library, store: &VectorStore, text: impl Fn(&Paper) -> T) -> Result<(Todo<T>, usize)> {
    let mut todo = Vec::new();
    let mut kept = 0;
    lib.papers().for_each_paper(&mut |p| {
        let h = text_hash(&p.title, &p.abstract_text);
        if store.is_current(&p.id, h) {
            kept += 1;
        } else {
            let t = text(&p);
            todo.push((p.id, h, t));
        }
        Ok(())
    })?;
    Ok((todo, kept))
}

/// Encodes the papers that have no current vector. `on_start(n)` is called
/// with the number to encode, `on_progress(k)` after each batch.
pub fn embed_library(lib: &Library, encoder: &HattenEncoder, on_start: &dyn Fn(u64), on_progress: &dyn Fn(u64)) -> Result<EmbedSummary> {
    let (mut store, repaired) = VectorStore::open_or_reset(&lib.vectors_dir(), encoder.dim(), encoder.fingerprint())?;
    let (todo, kept) = stale_papers(lib, &store, |p| DocText::paper(&p.title, &p.abstract_text))?;
    on_start(todo.len() as u64);
    for chunk in todo.chunks(COMMIT_EVERY) {
        let texts: Vec<DocText> = chunk.iter().map(|t| t.2.clone()).collect();
        let vectors = encoder.encode_with_progress(&texts, on_progress);
        let items: Vec<(String, u64)> = chunk.iter().map(|t| (t.0.clone(), t.1)).collect();
        store.append(&items, &vectors)?;
    }
    Ok(EmbedSummary { embedded: todo.len(), kept, repaired })
}

/// Papers each thread encodes between progress reports (bi-encoder).
const PROGRESS_EVERY: usize = 64;

/// Encodes, under the citation bi-encoder, the papers that have no current
/// vector in the library's citation vector store, on `threads` threads (the
/// CPU backend runs a model on one core). Same callbacks as `embed_library`.
pub fn embed_citation_vectors(
    lib: &Library,
    encoder: &BiEncoder,
    threads: usize,
    on_start: &dyn Fn(u64),
    on_progress: &(dyn Fn(u64) + Sync),
) -> Result<EmbedSummary> {
    let (mut store, repaired) = VectorStore::open_or_reset(&lib.citation_vectors_dir(), encoder.dim(), &encoder.fingerprint())?;
    let (todo, kept) = stale_papers(lib, &store, |p| paper_text(&p.title, &p.abstract_text))?;
    on_start(todo.len() as u64);
    let threads = threads.max(1);
    let dim = encoder.dim();
    for chunk in todo.chunks(COMMIT_EVERY) {
        // Pieces go to whichever thread is free (texts differ in length, so
        // fixed shares would leave a core idle).
        let pieces: Vec<&[(String, u64, String)]> = chunk.chunks(PROGRESS_EVERY).collect();
        let next = std::sync::atomic::AtomicUsize::new(0);
        // Per thread: (row in the chunk, vector) of every paper it encoded.
        type Encoded = Result<Vec<(usize, Vec<f32>)>>;
        let done: Vec<Encoded> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads.min(pieces.len()))
                .map(|_| {
                    s.spawn(|| -> Result<Vec<(usize, Vec<f32>)>> {
                        let mut out = Vec::new();
                        loop {
                            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                            let Some(piece) = pieces.get(i) else { return Ok(out) };
                            let texts: Vec<&str> = piece.iter().map(|t| t.2.as_str()).collect();
                            out.push((i, encoder.encode(&texts)?));
                            on_progress(piece.len() as u64);
                        }
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("paper encoder thread panicked")).collect()
        });
        let mut encoded: Vec<Option<Vec<f32>>> = vec![None; pieces.len()];
        for part in done {
            for (i, v) in part? {
                encoded[i] = Some(v);
            }
        }
        let vectors: Vec<f32> = encoded.into_iter().flat_map(|v| v.expect("every piece encoded")).collect();
        debug_assert_eq!(vectors.len(), chunk.len() * dim);
        let items: Vec<(String, u64)> = chunk.iter().map(|t| (t.0.clone(), t.1)).collect();
        store.append(&items, &vectors)?;
    }
    Ok(EmbedSummary { embedded: todo.len(), kept, repaired })
}
