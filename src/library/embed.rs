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

/// A vector store of the library that an embedding writes: where, how
/// wide, and under which encoder (a fingerprint).
struct Target<'a> {
    lib: &'a Library,
    dir: std::path::PathBuf,
    dim: usize,
    encoder: &'a str,
}

impl Target<'_> {
    /// Opens the store as its writer once, so that a damaged one is emptied
    /// (and said) before anything is encoded.
    fn reset_damage(&self) -> Result<Option<String>> {
        self.lib.writing().during(|| VectorStore::open_or_reset(&self.dir, self.dim, self.encoder).map(|(_, repaired)| repaired))
    }

    /// The store as it stands now, for reading.
    fn now(&self) -> Result<VectorStore> {
        VectorStore::open_read(&self.dir, self.dim, self.encoder)
    }

    /// Commits the vectors of `items` as the library's writer, leaving out
    /// those another writer committed while these were encoded.
    fn commit(&self, items: &[(String, u64)], vectors: &[f32]) -> Result<()> {
        self.lib.writing().during(|| {
            let mut store = VectorStore::open(&self.dir, self.dim, self.encoder)?;
            let fresh: Vec<usize> = (0..items.len()).filter(|&i| !store.is_current(&items[i].0, items[i].1)).collect();
            if fresh.len() == items.len() {
                return store.append(items, vectors);
            }
            let kept: Vec<(String, u64)> = fresh.iter().map(|&i| items[i].clone()).collect();
            let rows: Vec<f32> = fresh.iter().flat_map(|&i| vectors[i * self.dim..(i + 1) * self.dim].iter().copied()).collect();
            store.append(&kept, &rows)
        })
    }

    /// Encodes `todo` with `encode` a commit's worth at a time. Where
    /// another process writes the library too (an editor's background
    /// encoding beside an import), what it committed meanwhile is not
    /// encoded again. Returns how many were encoded here.
    fn encode_all<T: Clone>(&self, todo: &Todo<T>, encode: &dyn Fn(&[T]) -> Result<Vec<f32>>, on_progress: &dyn Fn(u64)) -> Result<usize> {
        let mut encoded = 0;
        for chunk in todo.chunks(COMMIT_EVERY) {
            let all = chunk.len();
            let chunk: Vec<&(String, u64, T)> = if self.lib.writing().is_held() {
                chunk.iter().collect()
            } else {
                let now = self.now()?;
                chunk.iter().filter(|t| !now.is_current(&t.0, t.1)).collect()
            };
            on_progress((all - chunk.len()) as u64);
            if chunk.is_empty() {
                continue;
            }
            let texts: Vec<T> = chunk.iter().map(|t| t.2.clone()).collect();
            let vectors = encode(&texts)?;
            let items: Vec<(String, u64)> = chunk.iter().map(|t| (t.0.clone(), t.1)).collect();
            self.commit(&items, &vectors)?;
            encoded += items.len();
        }
        Ok(encoded)
    }
}

/// Encodes the papers that have no current vector. `on_start(n)` is called
/// with the number to encode, `on_progress(k)` after each batch.
pub fn embed_library(lib: &Library, encoder: &HattenEncoder, on_start: &dyn Fn(u64), on_progress: &dyn Fn(u64)) -> Result<EmbedSummary> {
    let target = Target { lib, dir: lib.vectors_dir(), dim: encoder.dim(), encoder: encoder.fingerprint() };
    let repaired = target.reset_damage()?;
    let (todo, kept) = stale_papers(lib, &target.now()?, |p| DocText::paper(&p.title, &p.abstract_text))?;
    on_start(todo.len() as u64);
    let embedded = target.encode_all(&todo, &|texts: &[DocText]| Ok(encoder.encode_with_progress(texts, on_progress)), &|_| {})?;
    Ok(EmbedSummary { embedded, kept, repaired })
}

/// Papers each thread encodes between progress reports.
const PROGRESS_EVERY: usize = 64;

/// Encodes `items` with `encode` (unit vectors, `dim` wide, row-major) on
/// `threads` threads, in pieces that go to whichever thread is free (texts
/// differ in length, so fixed shares would leave a core idle);
/// `on_progress(k)` after each piece. The models' matrix products run on
/// the rayon pool of the threads for model work ([`crate::neural::parallel`]),
/// whichever thread calls them.
pub fn encode_in_threads<T: Sync>(
    items: &[T],
    threads: usize,
    dim: usize,
    encode: &(dyn Fn(&[T]) -> Result<Vec<f32>> + Sync),
    on_progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<f32>> {
    let pieces: Vec<&[T]> = items.chunks(PROGRESS_EVERY).collect();
    if threads <= 1 {
        // On this thread (so that a thread pool it runs in is the one its
        // matrix products use).
        let mut vectors = Vec::with_capacity(items.len() * dim);
        for piece in pieces {
            vectors.extend(encode(piece)?);
            on_progress(piece.len() as u64);
        }
        return Ok(vectors);
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    // Per thread: (piece, vectors) of every piece it encoded.
    type Encoded = Result<Vec<(usize, Vec<f32>)>>;
    let done: Vec<Encoded> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1).min(pieces.len()))
            .map(|_| {
                s.spawn(|| -> Encoded {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(piece) = pieces.get(i) else { return Ok(out) };
                        out.push((i, encode(piece)?));
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
    debug_assert_eq!(vectors.len(), items.len() * dim);
    Ok(vectors)
}

/// Paper texts under the citation bi-encoder, on `threads` threads.
pub fn encode_with_bi_encoder(
    encoder: &BiEncoder,
    texts: &[String],
    threads: usize,
    on_progress: &(dyn Fn(u64) + Sync),
) -> Result<Vec<f32>> {
    encode_in_threads(
        texts,
        threads,
        encoder.dim(),
        &|piece: &[String]| encoder.encode(&piece.iter().map(String::as_str).collect::<Vec<_>>()),
        on_progress,
    )
}

/// Encodes, under the citation bi-encoder, the papers that have no current
/// vector in the library's citation vector store, on `threads` threads.
/// Same callbacks as `embed_library`.
pub fn embed_citation_vectors(
    lib: &Library,
    encoder: &BiEncoder,
    threads: usize,
    on_start: &dyn Fn(u64),
    on_progress: &(dyn Fn(u64) + Sync),
) -> Result<EmbedSummary> {
    let fingerprint = encoder.fingerprint();
    let target = Target { lib, dir: lib.citation_vectors_dir(), dim: encoder.dim(), encoder: &fingerprint };
    let repaired = target.reset_damage()?;
    let (todo, kept) = stale_papers(lib, &target.now()?, |p| paper_text(&p.title, &p.abstract_text))?;
    on_start(todo.len() as u64);
    let embedded =
        target.encode_all(&todo, &|texts: &[String]| encode_with_bi_encoder(encoder, texts, threads, on_progress), &|k| on_progress(k))?;
    Ok(EmbedSummary { embedded, kept, repaired })
}

/// The fingerprint of stand-in vectors that `student` writes into the space
/// of the encoder `teacher` (a fingerprint too).
pub fn student_vectors_fingerprint(student: &str, teacher: &str) -> String {
    format!("{student} for {teacher}")
}

/// Encodes, under the student of the citation encoder `teacher` (its
/// fingerprint), the papers that have neither a current vector of the
/// teacher's own nor a current stand-in, into the library's student vector
/// store ([`Library::student_vectors_dir`]); resumable like the others.
/// `kept` counts papers current in either store.
pub fn embed_student_vectors(
    lib: &Library,
    student: &HattenEncoder,
    teacher: &str,
    threads: usize,
    on_start: &dyn Fn(u64),
    on_progress: &(dyn Fn(u64) + Sync),
) -> Result<EmbedSummary> {
    let fingerprint = student_vectors_fingerprint(student.fingerprint(), teacher);
    let target = Target { lib, dir: lib.student_vectors_dir(), dim: student.dim(), encoder: &fingerprint };
    let repaired = target.reset_damage()?;
    let teacher_dir = lib.citation_vectors_dir();
    // The teacher's own vectors, where they read: damaged ones are the
    // citation encoder's to compute again (`embed` does it next), not a
    // reason to stop here.
    let by_teacher = match VectorStore::exists(&teacher_dir).then(|| VectorStore::open_read(&teacher_dir, student.dim(), teacher)) {
        Some(Ok(store)) => Some(store),
        Some(Err(crate::error::Error::Corrupt { .. })) | None => None,
        Some(Err(e)) => return Err(e),
    };
    let (todo, kept) = stale_papers(lib, &target.now()?, |p| DocText::paper(&p.title, &p.abstract_text))?;
    let stale = todo.len();
    let todo: Vec<_> = todo.into_iter().filter(|t| !by_teacher.as_ref().is_some_and(|s| s.is_current(&t.0, t.1))).collect();
    let kept = kept + (stale - todo.len());
    on_start(todo.len() as u64);
    let encode =
        |texts: &[DocText]| encode_in_threads(texts, threads, student.dim(), &|piece: &[DocText]| Ok(student.encode(piece)), on_progress);
    let embedded = target.encode_all(&todo, &encode, &|k| on_progress(k))?;
    Ok(EmbedSummary { embedded, kept, repaired })
}
