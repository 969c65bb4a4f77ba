//! The student of the citation encoder for a library: what it is distilled
//! from (a sample of the library's papers with the citation encoder's
//! vectors — read from the library's citation vectors where they are
//! current, else encoded — and the encoder's vectors of one sentence of
//! each sampled abstract), where its run and its published weights live,
//! and the stand-in vectors it writes.
//!
//! The training itself is [`crate::neural::train::distill`]'s.

use std::path::{Path, PathBuf};

use rand::rngs::StdRng;
use rand::seq::IndexedRandom;
use rand::SeedableRng;

use super::embed::{encode_with_bi_encoder, student_vectors_fingerprint, text_hash};
use super::Library;
use crate::error::{Error, Result};
use crate::evidence::sentences::split_sentences;
use crate::index::vectors::VectorStore;
use crate::neural::bi_encoder::{paper_text, BiEncoder};
use crate::neural::encoder::Weights;
use crate::neural::hatten::{DocText, HattenConfig};
use crate::neural::train::adapt::query_sentences;
use crate::neural::train::distill::{DistillData, DistillState};
use crate::neural::words::BERT_WORDS_DIR;
use crate::util::{fnv1a64, write_atomic};

/// Where a library keeps its student's weights, relative to its directory.
pub const STUDENT_DIR: &str = "models/student";
/// Where a distillation run keeps its state and checkpoints.
pub const RUN_DIR: &str = "models/distill/student";

/// The student's shape: HAtten over the citation encoder's WordPiece
/// vectors, 256 wide inside (about 3.5 times cheaper per paper than 384),
/// mapped linearly into the teacher's `teacher_dim`-wide space.
pub fn student_config(teacher_dim: usize) -> HattenConfig {
    HattenConfig::new()
        .with_word_vectors(Some(BERT_WORDS_DIR.into()))
        .with_word_dim(384)
        .with_d_model(256)
        .with_heads(4)
        .with_d_ff(512)
        .with_out_dim(Some(teacher_dim))
}

/// How many papers to distil from.
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// Papers sampled (those with an abstract), at most.
    pub papers: usize,
    /// Of them, held out for validation (at most a tenth).
    pub val: usize,
    pub seed: u64,
}

impl Default for SampleOptions {
    fn default() -> SampleOptions {
        SampleOptions { papers: 20_000, val: 1_000, seed: 43 }
    }
}

/// Where the sample's teacher vectors came from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SampleReport {
    /// Papers whose vector was read from the library's citation vectors.
    pub stored: usize,
    /// Papers encoded by the teacher now.
    pub encoded: usize,
    /// Sentences encoded by the teacher.
    pub sentences: usize,
}

/// What [`distillation_data`] reports as it goes: a phase with its size,
/// then progress within it.
pub trait SampleProgress: Sync {
    fn phase(&self, name: &str, total: u64);
    fn advance(&self, n: u64);
}

/// The sample a student is distilled from: up to `opts.papers` papers with
/// an abstract (chosen by a hash of their id, so the same library gives the
/// same sample), the teacher's vectors of each and of one sentence of its
/// abstract, the held-out part, and each query's teacher neighbours.
pub fn distillation_data(
    lib: &Library,
    teacher: &BiEncoder,
    opts: &SampleOptions,
    threads: usize,
    progress: &dyn SampleProgress,
) -> Result<(DistillData, SampleReport)> {
    let mut all: Vec<(u64, String, String, String)> = Vec::new();
    lib.papers().for_each_paper(&mut |p| {
        if p.abstract_text.split_whitespace().count() >= 20 {
            all.push((fnv1a64(format!("{}#{}", opts.seed, p.id).as_bytes()), p.id, p.title, p.abstract_text));
        }
        Ok(())
    })?;
    all.sort();
    all.truncate(opts.papers);
    let dim = teacher.dim();
    let dir = lib.citation_vectors_dir();
    // Vectors the teacher stored save encoding again; damaged ones do not count.
    let stored = match VectorStore::exists(&dir).then(|| VectorStore::open_read(&dir, dim, &teacher.fingerprint())) {
        Some(Ok(store)) => Some(store),
        Some(Err(Error::Corrupt { .. })) | None => None,
        Some(Err(e)) => return Err(e),
    };
    let mut vectors: Vec<Option<Vec<f32>>> = all
        .iter()
        .map(|(_, id, title, abs)| {
            stored.as_ref().filter(|s| s.is_current(id, text_hash(title, abs))).and_then(|s| s.vector(id)).map(<[f32]>::to_vec)
        })
        .collect();
    let mut report = SampleReport { stored: vectors.iter().filter(|v| v.is_some()).count(), ..SampleReport::default() };
    let missing: Vec<usize> = (0..all.len()).filter(|&i| vectors[i].is_none()).collect();
    if !missing.is_empty() {
        progress.phase("encoding sampled papers with the citation encoder", missing.len() as u64);
        let texts: Vec<String> = missing.iter().map(|&i| paper_text(&all[i].2, &all[i].3)).collect();
        let encoded = encode_with_bi_encoder(teacher, &texts, threads, &|n| progress.advance(n))?;
        for (row, &i) in missing.iter().enumerate() {
            vectors[i] = Some(encoded[row * dim..(row + 1) * dim].to_vec());
        }
        report.encoded = missing.len();
    }
    // One sentence of each abstract, encoded as a query would be.
    let mut rng = StdRng::seed_from_u64(opts.seed);
    let sentences: Vec<Option<String>> = all
        .iter()
        .map(|(_, _, _, abs)| {
            let ranges = split_sentences(abs, &[]);
            query_sentences(abs, &ranges).choose(&mut rng).map(|&k| abs[ranges[k].0..ranges[k].1].trim().to_string())
        })
        .collect();
    let with_sentence: Vec<usize> = (0..all.len()).filter(|&i| sentences[i].is_some()).collect();
    progress.phase("encoding abstract sentences with the citation encoder", with_sentence.len() as u64);
    let texts: Vec<String> = with_sentence.iter().map(|&i| sentences[i].clone().expect("a sentence")).collect();
    let encoded = encode_with_bi_encoder(teacher, &texts, threads, &|n| progress.advance(n))?;
    report.sentences = texts.len();
    let mut queries: Vec<Option<Vec<f32>>> = vec![None; all.len()];
    for (row, &i) in with_sentence.iter().enumerate() {
        queries[i] = Some(encoded[row * dim..(row + 1) * dim].to_vec());
    }
    let held = opts.val.min(all.len() / 10);
    let mut data = DistillData {
        ids: all.iter().map(|(_, id, _, _)| id.clone()).collect(),
        papers: all.iter().map(|(_, _, title, abs)| DocText::paper(title, abs)).collect(),
        teacher: vectors.into_iter().flat_map(|v| v.expect("every sampled paper has a teacher vector")).collect(),
        dim,
        queries,
        val: (0..held).collect(),
        train: (held..all.len()).collect(),
        neighbours: Vec::new(),
    };
    progress.phase("finding the teacher's neighbours", 1);
    data.find_neighbours(threads);
    progress.advance(1);
    Ok((data, report))
}

pub fn run_dir(lib_dir: &Path) -> PathBuf {
    lib_dir.join(RUN_DIR)
}

pub fn student_dir(lib_dir: &Path) -> PathBuf {
    lib_dir.join(STUDENT_DIR)
}

/// Copies the run's best weights, atomically, to [`STUDENT_DIR`].
pub fn publish(lib_dir: &Path) -> Result<PathBuf> {
    super::lock::Writing::of_library(lib_dir).during(|| {
        let run = run_dir(lib_dir);
        let dir = student_dir(lib_dir);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
        for name in ["config.json", "model.safetensors"] {
            let from = run.join(name);
            let bytes = std::fs::read(&from).map_err(|e| Error::io(&from, e))?;
            write_atomic(&dir.join(name), &bytes)?;
        }
        Ok(dir)
    })
}

/// The student shipped with citewise, distilled from the citation encoder
/// on the benchmark's papers (how: `assets/README.md`).
const SHIPPED: (&str, &[u8]) = (include_str!("../../assets/student/config.json"), include_bytes!("../../assets/student/model.safetensors"));

/// The shipped student's weights.
pub fn shipped_student() -> Weights {
    let config: HattenConfig = serde_json::from_str(SHIPPED.0).expect("the shipped student's config parses");
    Weights { config, bytes: SHIPPED.1.to_vec(), source: "shipped (assets/student)".into(), field: None }
}

/// The library's student: the one distilled for it (`citewise distill`)
/// when it has one, else the shipped one.
pub fn student_weights(lib_dir: &Path) -> Result<Weights> {
    let dir = student_dir(lib_dir);
    if !dir.join("model.safetensors").exists() {
        return Ok(shipped_student());
    }
    let mut w = Weights::in_dir(&dir)?;
    w.source = format!("distilled for this library ({})", dir.display());
    w.field = None;
    Ok(w)
}

/// The fingerprint of the library's student (as
/// [`crate::neural::encoder::HattenEncoder::fingerprint`] gives it) without
/// loading it.
pub fn student_fingerprint(lib_dir: &Path) -> Result<String> {
    let path = student_dir(lib_dir).join("model.safetensors");
    match std::fs::read(&path) {
        Ok(bytes) => Ok(crate::neural::encoder::fingerprint_of(&bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(SHIPPED_FINGERPRINT.clone()),
        Err(e) => Err(Error::io(&path, e)),
    }
}

static SHIPPED_FINGERPRINT: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| crate::neural::encoder::fingerprint_of(SHIPPED.1));

/// The library's stand-in vectors written by its current student for the
/// citation encoder `teacher` (a fingerprint), when there are any.
pub fn student_vectors(lib: &Library, teacher: &str, dim: usize) -> Result<Option<VectorStore>> {
    let dir = lib.student_vectors_dir();
    if !VectorStore::exists(&dir) {
        return Ok(None);
    }
    let student = student_fingerprint(lib.dir())?;
    let store = VectorStore::open_read(&dir, dim, &student_vectors_fingerprint(&student, teacher))?;
    Ok((!store.is_empty()).then_some(store))
}

/// Removes the library's own student, its run and its vectors (the shipped
/// student is used again).
pub fn remove(lib: &Library) -> Result<bool> {
    lib.writing().during(|| crate::util::remove_dirs(&[student_dir(lib.dir()), run_dir(lib.dir()), lib.student_vectors_dir()]))
}

/// The saved state of the library's distillation run, when there is one.
pub fn run_state(lib_dir: &Path) -> Result<Option<DistillState>> {
    crate::neural::train::run::RunFiles::saved(&run_dir(lib_dir))
}
