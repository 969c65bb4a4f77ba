//! A store of paper vectors with exact top-K cosine search.
//!
//! Layout in its directory:
//! ```text
//! vectors.f32    rows × dim little-endian f32, memory-mapped for search
//! vectors.json   dim, the encoder's fingerprint, and per row the paper id
//!                and a hash of the text it was computed from
//! vectors.q8     the same rows in compact form ([`super::quantized`]):
//!                large stores are searched through it, then rescored
//! ```
//! `vectors.json` is the commit point: rows appended to `vectors.f32` count
//! only once the manifest that lists them is written (atomically), so an
//! interrupted embedding run resumes where it stopped. A paper whose text
//! changed gets a new row; its old row is emptied (id ""). The manifest is
//! written when the store is made, so data without one is damage; it holds
//! a CRC-32 of every block of [`BLOCK_ROWS`] rows of both data files, so
//! damage that keeps a file's size (flipped bytes) is seen too.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::util::write_atomic;

const DATA: &str = "vectors.f32";
const MANIFEST: &str = "vectors.json";
const COMPACT: &str = "vectors.q8";

/// Rows per checksummed block.
pub const BLOCK_ROWS: usize = 4096;

/// Stores of at least this many rows are searched through their compact
/// rows (then rescored exactly); smaller ones are scanned exactly (a few
/// milliseconds).
pub const COMPACT_FROM: usize = 200_000;

/// What a store's manifest lists ([`VectorStore::inspect`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreState {
    /// Rows in the data file, emptied ones included.
    pub rows: usize,
    /// Rows that hold a paper's (or span's) current vector.
    pub live: usize,
    pub dim: usize,
    /// Whether its content was checked against checksums (a store written
    /// before they existed has none until its next writer adds them).
    pub verified: bool,
}

/// What is wrong with a damaged store: the file, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub path: PathBuf,
    pub why: String,
}

impl From<Damage> for Error {
    fn from(d: Damage) -> Error {
        // LIBRARY/<store>/<file>: the command names the library.
        let library = d.path.parent().and_then(Path::parent).unwrap_or(Path::new(""));
        let embed = crate::util::citewise_command(library, "embed");
        Error::corrupt(d.path, format!("these vectors are damaged: {}; run `{embed}` to compute them again", d.why))
    }
}

/// The manifest in `dir` (none: no store there); one that does not read,
/// or whose lists disagree, is damage.
fn read_manifest(dir: &Path) -> Result<Option<Manifest>, Damage> {
    let path = dir.join(MANIFEST);
    let damage = |why: String| Damage { path: path.clone(), why };
    let text = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Rows without the manifest that names them cannot be used.
            return match std::fs::metadata(dir.join(DATA)) {
                Ok(m) if m.len() > 0 => Err(damage(format!("it is missing, though {DATA} holds {} bytes of vectors", m.len()))),
                _ => Ok(None),
            };
        }
        Err(e) => return Err(damage(format!("it cannot be read ({e})"))),
    };
    let m: Manifest = serde_json::from_slice(&text).map_err(|e| damage(format!("the manifest does not read ({e})")))?;
    if m.ids.len() != m.hashes.len() {
        return Err(damage(format!("the manifest lists {} rows but {} text hashes", m.ids.len(), m.hashes.len())));
    }
    Ok(Some(m))
}

/// Data of `have` bytes for manifest `m`: shorter than the rows it lists
/// is damage; longer is rows appended after the last commit.
fn check_length(path: &Path, m: &Manifest, have: u64) -> Result<(), Damage> {
    let want = (m.ids.len() * m.dim * 4) as u64;
    if have < want {
        let why = format!(
            "the file holds {have} bytes but its manifest ({MANIFEST}) lists {} rows of {} floats ({want} bytes)",
            m.ids.len(),
            m.dim
        );
        return Err(Damage { path: path.to_path_buf(), why });
    }
    Ok(())
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Manifest {
    dim: usize,
    encoder: String,
    ids: Vec<String>,
    hashes: Vec<u64>,
    /// CRC-32 of each block of [`BLOCK_ROWS`] rows of the data file, and of
    /// the compact file (empty: written before checksums existed).
    #[serde(default)]
    crc: Vec<u32>,
    #[serde(default)]
    crc_compact: Vec<u32>,
}

impl Manifest {
    fn blocks(&self) -> usize {
        self.ids.len().div_ceil(BLOCK_ROWS)
    }

    /// Whether it holds the checksums of every block.
    fn has_checksums(&self) -> bool {
        self.crc.len() == self.blocks() && self.crc_compact.len() == self.blocks()
    }
}

/// CRC-32s of `bytes` cut into blocks of `block` bytes.
fn block_crcs(bytes: &[u8], block: usize) -> Vec<u32> {
    bytes.chunks(block.max(1)).map(crc32fast::hash).collect()
}

/// The first block of `bytes` whose checksum is not the one listed, as a
/// row range and a sentence.
fn mismatch(file: &str, bytes: &[u8], row_bytes: usize, crcs: &[u32], rows: usize) -> Option<String> {
    let block = BLOCK_ROWS * row_bytes;
    let bad = block_crcs(bytes, block).iter().zip(crcs).position(|(a, b)| a != b)?;
    let first = bad * BLOCK_ROWS;
    let last = (first + BLOCK_ROWS).min(rows);
    Some(format!("rows {first}..{last} of {file} do not match their checksum (the file changed after it was written)"))
}

/// Vectors on disk, one row per paper.
pub struct VectorStore {
    dir: PathBuf,
    manifest: Manifest,
    rows: HashMap<String, usize>,
    data: Option<memmap2::Mmap>,
    /// The compact rows, when they cover every committed row.
    compact: Option<memmap2::Mmap>,
    /// Opened for reading only ([`VectorStore::open_read`]): never
    /// truncated or appended to.
    read_only: bool,
}

/// A search hit: row's paper id and cosine (vectors are stored normalised).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorHit {
    pub id: String,
    pub score: f32,
}

impl VectorStore {
    /// Opens the store in `dir` for vectors of width `dim` from the encoder
    /// `encoder` (a fingerprint). A store written by another encoder is
    /// emptied: its vectors are not comparable with new queries.
    pub fn open(dir: &Path, dim: usize, encoder: &str) -> Result<VectorStore> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let fresh = || Manifest { dim, encoder: encoder.into(), ..Default::default() };
        let manifest = match read_manifest(dir)? {
            Some(m) if m.dim == dim && m.encoder == encoder => m,
            _ => fresh(),
        };
        let mut store = VectorStore { dir: dir.to_path_buf(), manifest, rows: HashMap::new(), data: None, compact: None, read_only: false };
        if !dir.join(MANIFEST).exists() || store.manifest.ids.is_empty() {
            // A new (or emptied) store says so before any row is written.
            store.write_manifest()?;
        }
        store.truncate_to_manifest()?;
        store.reindex();
        store.remap()?;
        store.verify_data()?;
        store.complete_compact()?;
        if !store.manifest.has_checksums() {
            // Written before checksums: what is there now is what they vouch for.
            store.manifest.crc = block_crcs(store.data_bytes(), BLOCK_ROWS * store.row_bytes());
            store.manifest.crc_compact = block_crcs(store.compact_bytes(), BLOCK_ROWS * store.compact_stride());
            store.write_manifest()?;
        }
        Ok(store)
    }

    fn write_manifest(&self) -> Result<()> {
        write_atomic(&self.dir.join(MANIFEST), &serde_json::to_vec(&self.manifest).expect("manifest serializes"))
    }

    fn row_bytes(&self) -> usize {
        self.manifest.dim * 4
    }

    fn compact_stride(&self) -> usize {
        super::quantized::stride(self.manifest.dim)
    }

    /// The committed rows of the data file as bytes.
    fn data_bytes(&self) -> &[u8] {
        match &self.data {
            Some(m) => &m[..(self.manifest.ids.len() * self.row_bytes()).min(m.len())],
            None => &[],
        }
    }

    /// The committed compact rows as bytes.
    fn compact_bytes(&self) -> &[u8] {
        match &self.compact {
            Some(m) => &m[..(self.manifest.ids.len() * self.compact_stride()).min(m.len())],
            None => &[],
        }
    }

    /// The data rows against their checksums (a writer reads every row it
    /// keeps; damage here is what `citewise embed` computes again).
    fn verify_data(&self) -> Result<()> {
        if self.manifest.crc.len() != self.manifest.blocks() {
            return Ok(());
        }
        if let Some(why) = mismatch(DATA, self.data_bytes(), self.row_bytes(), &self.manifest.crc, self.manifest.ids.len()) {
            return Err(Damage { path: self.dir.join(DATA), why }.into());
        }
        Ok(())
    }

    /// Opens the store in `dir` for search only, changing nothing on disk:
    /// rows another process (or thread) appended but has not committed yet
    /// are left alone (a writer commits by writing the manifest after the
    /// data, so the data always holds the rows the manifest lists). A store
    /// of another encoder, or none, reads as empty. The committed rows are
    /// read against their checksums: damaged data is an error (the channel
    /// that reads it is left out, saying so), damaged compact rows are not
    /// used (the exact rows are searched instead).
    pub fn open_read(dir: &Path, dim: usize, encoder: &str) -> Result<VectorStore> {
        let manifest = match read_manifest(dir)? {
            Some(m) if m.dim == dim && m.encoder == encoder => m,
            _ => Manifest { dim, encoder: encoder.into(), ..Default::default() },
        };
        let mut store = VectorStore { dir: dir.to_path_buf(), manifest, rows: HashMap::new(), data: None, compact: None, read_only: true };
        if !store.manifest.ids.is_empty() {
            let path = dir.join(DATA);
            let have = std::fs::metadata(&path).map_err(|e| Error::io(&path, e))?.len();
            check_length(&path, &store.manifest, have)?;
        }
        store.reindex();
        store.remap()?;
        store.verify_data()?;
        let compact_damaged = store.compact.is_some()
            && store.manifest.crc_compact.len() == store.manifest.blocks()
            && mismatch(COMPACT, store.compact_bytes(), store.compact_stride(), &store.manifest.crc_compact, store.manifest.ids.len())
                .is_some();
        if compact_damaged {
            store.compact = None;
        }
        Ok(store)
    }

    /// Like [`VectorStore::open`], but a damaged store ([`Error::Corrupt`])
    /// is emptied and opened afresh; the second value says what was
    /// damaged. For the commands that compute the vectors again.
    pub fn open_or_reset(dir: &Path, dim: usize, encoder: &str) -> Result<(VectorStore, Option<String>)> {
        match Self::open(dir, dim, encoder) {
            Err(e @ Error::Corrupt { .. }) => {
                for file in [MANIFEST, DATA] {
                    let path = dir.join(file);
                    match std::fs::remove_file(&path) {
                        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(Error::io(&path, e)),
                        _ => {}
                    }
                }
                let note = format!("{e}; they were emptied and are computed again");
                Ok((Self::open(dir, dim, encoder)?, Some(note)))
            }
            other => other.map(|s| (s, None)),
        }
    }

    /// Checks the store at `dir` without changing it: its manifest reads
    /// and its data holds every row the manifest lists (more is an
    /// interrupted append, which the next open drops). `Ok(None)`: no store.
    /// Reads every row against the manifest's checksums, and the compact
    /// rows too: a compact file cut short, or bytes changed in either file,
    /// are damage.
    pub fn inspect(dir: &Path) -> Result<Option<StoreState>, Damage> {
        let Some(m) = read_manifest(dir)? else { return Ok(None) };
        let path = dir.join(DATA);
        let have = match std::fs::metadata(&path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(Damage { path, why: format!("it cannot be read ({e})") }),
        };
        check_length(&path, &m, have)?;
        let state =
            |verified| StoreState { rows: m.ids.len(), live: m.ids.iter().filter(|id| !id.is_empty()).count(), dim: m.dim, verified };
        if m.ids.is_empty() {
            return Ok(Some(state(true)));
        }
        let compact = dir.join(COMPACT);
        let stride = super::quantized::stride(m.dim);
        let want = (m.ids.len() * stride) as u64;
        let compact_len = std::fs::metadata(&compact).map(|x| x.len()).ok();
        if let Some(len) = compact_len.filter(|&len| len < want) {
            let why = format!("it holds {len} bytes but the {} rows its manifest lists need {want}", m.ids.len());
            return Err(Damage { path: compact, why });
        }
        if !m.has_checksums() {
            return Ok(Some(state(false)));
        }
        // Mapped, not read into memory: a large store is gigabytes.
        let map = |p: &Path| -> Result<memmap2::Mmap, Damage> {
            let cannot = |e: std::io::Error| Damage { path: p.to_path_buf(), why: format!("it cannot be read ({e})") };
            let f = std::fs::File::open(p).map_err(cannot)?;
            // SAFETY: read once here; a writer only appends past what is checked.
            unsafe { memmap2::Mmap::map(&f) }.map_err(cannot)
        };
        let data = map(&path)?;
        if let Some(why) = mismatch(DATA, &data[..m.ids.len() * m.dim * 4], m.dim * 4, &m.crc, m.ids.len()) {
            return Err(Damage { path, why });
        }
        if compact_len.is_some() {
            let bytes = map(&compact)?;
            if let Some(why) = mismatch(COMPACT, &bytes[..want as usize], stride, &m.crc_compact, m.ids.len()) {
                return Err(Damage { path: compact, why });
            }
        }
        Ok(Some(state(true)))
    }

    fn reindex(&mut self) {
        self.rows = self.manifest.ids.iter().enumerate().filter(|(_, id)| !id.is_empty()).map(|(i, id)| (id.clone(), i)).collect();
    }

    /// Drops rows written after the last committed manifest.
    fn truncate_to_manifest(&self) -> Result<()> {
        let path = self.dir.join(DATA);
        let want = (self.manifest.ids.len() * self.manifest.dim * 4) as u64;
        let f = std::fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path).map_err(|e| Error::io(&path, e))?;
        let have = f.metadata().map_err(|e| Error::io(&path, e))?.len();
        if have != want {
            check_length(&path, &self.manifest, have)?;
            f.set_len(want).map_err(|e| Error::io(&path, e))?;
        }
        Ok(())
    }

    /// Brings the compact rows to the committed rows and maps them: rows
    /// past the manifest (an interrupted append) are cut off like the data
    /// file's; missing ones (a store written before compact rows existed)
    /// mean writing them all again.
    fn complete_compact(&mut self) -> Result<()> {
        let path = self.dir.join(COMPACT);
        let want = (self.manifest.ids.len() * super::quantized::stride(self.manifest.dim)) as u64;
        let have = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        if have > want {
            let f = std::fs::OpenOptions::new().write(true).open(&path).map_err(|e| Error::io(&path, e))?;
            f.set_len(want).map_err(|e| Error::io(&path, e))?;
        }
        self.remap()?;
        // Compact rows are made from the data: missing or damaged ones are
        // made again.
        let damaged = self.manifest.crc_compact.len() == self.manifest.blocks()
            && mismatch(COMPACT, self.compact_bytes(), self.compact_stride(), &self.manifest.crc_compact, self.manifest.ids.len())
                .is_some();
        if have < want || damaged {
            let mut bytes = Vec::with_capacity(want as usize);
            super::quantized::quantize_rows(self.matrix(), self.manifest.dim, &mut bytes);
            write_atomic(&path, &bytes)?;
            self.remap()?;
        }
        Ok(())
    }

    fn remap(&mut self) -> Result<()> {
        let path = self.dir.join(DATA);
        self.data = None;
        self.compact = None;
        if self.manifest.ids.is_empty() {
            return Ok(());
        }
        let compact = self.dir.join(COMPACT);
        let want = (self.manifest.ids.len() * super::quantized::stride(self.manifest.dim)) as u64;
        if std::fs::metadata(&compact).is_ok_and(|m| m.len() >= want) {
            let f = std::fs::File::open(&compact).map_err(|e| Error::io(&compact, e))?;
            // SAFETY: as for the data file below.
            self.compact = Some(unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::io(&compact, e))?);
        }
        let f = std::fs::File::open(&path).map_err(|e| Error::io(&path, e))?;
        // SAFETY: the data file is only appended to while mapped (by this
        // store, which maps it again after each append, or by a writer
        // beside a read-only store); only the committed rows are read, and
        // those never change.
        self.data = Some(unsafe { memmap2::Mmap::map(&f) }.map_err(|e| Error::io(&path, e))?);
        Ok(())
    }

    /// Whether a store has been written at `dir` (without opening it): its
    /// manifest, or rows without one (damage, which opening reports).
    pub fn exists(dir: &Path) -> bool {
        dir.join(MANIFEST).exists() || std::fs::metadata(dir.join(DATA)).is_ok_and(|m| m.len() > 0)
    }

    pub fn dim(&self) -> usize {
        self.manifest.dim
    }

    /// Live vectors.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Whether `id` has a vector computed from text with hash `hash`.
    pub fn is_current(&self, id: &str, hash: u64) -> bool {
        self.rows.get(id).is_some_and(|&r| self.manifest.hashes[r] == hash)
    }

    /// Appends vectors (normalised, `dim` wide) and commits them.
    pub fn append(&mut self, items: &[(String, u64)], vectors: &[f32]) -> Result<()> {
        let dim = self.manifest.dim;
        if self.read_only {
            return Err(Error::Input(format!("the vectors at {} were opened for reading only", self.dir.display())));
        }
        if vectors.len() != items.len() * dim {
            return Err(Error::Input(format!("{} vectors of width {dim} expected, got {} floats", items.len(), vectors.len())));
        }
        let path = self.dir.join(DATA);
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).map_err(|e| Error::io(&path, e))?;
        let bytes: Vec<u8> = vectors.iter().flat_map(|v| v.to_le_bytes()).collect();
        f.write_all(&bytes).and_then(|_| f.sync_data()).map_err(|e| Error::io(&path, e))?;
        let compact = self.dir.join(COMPACT);
        let mut rows = Vec::with_capacity(items.len() * super::quantized::stride(dim));
        super::quantized::quantize_rows(vectors, dim, &mut rows);
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&compact).map_err(|e| Error::io(&compact, e))?;
        f.write_all(&rows).and_then(|_| f.sync_data()).map_err(|e| Error::io(&compact, e))?;
        // The checksums of the last block so far (it grows) and the new ones.
        let first_block = self.manifest.ids.len() / BLOCK_ROWS;
        let from_row = first_block * BLOCK_ROWS;
        let (data_crc, compact_crc) = {
            let old_data = &self.data_bytes()[(from_row * self.row_bytes()).min(self.data_bytes().len())..];
            let old_compact = &self.compact_bytes()[(from_row * self.compact_stride()).min(self.compact_bytes().len())..];
            (
                block_crcs(&[old_data, bytes.as_slice()].concat(), BLOCK_ROWS * self.row_bytes()),
                block_crcs(&[old_compact, rows.as_slice()].concat(), BLOCK_ROWS * self.compact_stride()),
            )
        };
        let checksummed = self.manifest.has_checksums();
        for (id, hash) in items {
            if let Some(&old) = self.rows.get(id) {
                self.manifest.ids[old].clear();
            }
            self.rows.insert(id.clone(), self.manifest.ids.len());
            self.manifest.ids.push(id.clone());
            self.manifest.hashes.push(*hash);
        }
        if checksummed {
            self.manifest.crc.truncate(first_block);
            self.manifest.crc.extend(data_crc);
            self.manifest.crc_compact.truncate(first_block);
            self.manifest.crc_compact.extend(compact_crc);
        }
        self.write_manifest()?;
        self.remap()
    }

    /// All stored rows as one slice (`rows × dim`; emptied rows included).
    pub fn matrix(&self) -> &[f32] {
        match &self.data {
            Some(m) => {
                let n = self.manifest.ids.len() * self.manifest.dim;
                // SAFETY: f32 has no invalid bit patterns; mmap is page aligned.
                unsafe { std::slice::from_raw_parts(m.as_ptr() as *const f32, n) }
            }
            None => &[],
        }
    }

    /// Rows in the data file, emptied ones included.
    pub fn rows(&self) -> usize {
        self.manifest.ids.len()
    }

    /// The paper id of row `row` ("" for an emptied row).
    pub fn id_of_row(&self, row: usize) -> &str {
        &self.manifest.ids[row]
    }

    /// The vector of `id`.
    pub fn vector(&self, id: &str) -> Option<&[f32]> {
        let r = *self.rows.get(id)?;
        let d = self.manifest.dim;
        Some(&self.matrix()[r * d..(r + 1) * d])
    }

    /// The fingerprint of the encoder its vectors come from.
    pub fn encoder(&self) -> &str {
        &self.manifest.encoder
    }

    /// The `k` rows of highest dot product with `query` (cosine, for
    /// normalised vectors), best first; exact, over all rows, on `threads`
    /// threads.
    pub fn search(&self, query: &[f32], k: usize, threads: usize) -> Vec<VectorHit> {
        self.search_skipping(query, k, threads, None)
    }

    /// [`VectorStore::search`] without the rows `skip` marks (indexed by
    /// row). A store of [`COMPACT_FROM`] rows or more is scanned through its
    /// compact rows, whose best `k · OVERSAMPLE` are rescored exactly.
    pub fn search_skipping(&self, query: &[f32], k: usize, threads: usize, skip: Option<&[bool]>) -> Vec<VectorHit> {
        match &self.compact {
            Some(compact) if self.rows() >= COMPACT_FROM => self.hits(self.rescored(compact, query, k, threads, skip)),
            _ => self.search_exact(query, k, threads, skip),
        }
    }

    /// The exact search: every row's f32 dot product.
    pub fn search_exact(&self, query: &[f32], k: usize, threads: usize, skip: Option<&[bool]>) -> Vec<VectorHit> {
        self.hits(top_k_skipping(self.matrix(), self.manifest.dim, query, k, threads, skip))
    }

    /// The search through the compact rows (whatever the store's size;
    /// exact when it has none).
    pub fn search_compact(&self, query: &[f32], k: usize, threads: usize, skip: Option<&[bool]>) -> Vec<VectorHit> {
        match &self.compact {
            Some(compact) => self.hits(self.rescored(compact, query, k, threads, skip)),
            None => self.search_exact(query, k, threads, skip),
        }
    }

    /// Whether the store has compact rows.
    pub fn has_compact(&self) -> bool {
        self.compact.is_some()
    }

    fn rescored(&self, compact: &[u8], query: &[f32], k: usize, threads: usize, skip: Option<&[bool]>) -> Vec<(usize, f32)> {
        let dim = self.manifest.dim;
        let wanted = (k * super::quantized::OVERSAMPLE).max(super::quantized::MIN_RESCORED);
        let matrix = self.matrix();
        let mut found: Vec<(usize, f32)> = super::quantized::candidates(compact, dim, self.rows(), query, wanted, threads, skip)
            .into_iter()
            .map(|(r, _)| (r, dot(&matrix[r * dim..(r + 1) * dim], query)))
            .collect();
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        found.truncate(k);
        found
    }

    fn hits(&self, found: Vec<(usize, f32)>) -> Vec<VectorHit> {
        found
            .into_iter()
            .filter(|(r, _)| !self.manifest.ids[*r].is_empty())
            .map(|(r, s)| VectorHit { id: self.manifest.ids[r].clone(), score: s })
            .collect()
    }
}

/// Exact top-k by dot product over a row-major matrix: `(row, score)`, best first.
pub fn top_k(matrix: &[f32], dim: usize, query: &[f32], k: usize, threads: usize) -> Vec<(usize, f32)> {
    top_k_skipping(matrix, dim, query, k, threads, None)
}

/// [`top_k`] over the rows `r` where `skip[r]` is false (every row when
/// `skip` is `None`; rows past its end are kept).
pub fn top_k_skipping(matrix: &[f32], dim: usize, query: &[f32], k: usize, threads: usize, skip: Option<&[bool]>) -> Vec<(usize, f32)> {
    assert_eq!(query.len(), dim, "query width");
    let n = matrix.len().checked_div(dim).unwrap_or(0);
    if n == 0 || k == 0 {
        return Vec::new();
    }
    let threads = threads.clamp(1, 16).min(n.div_ceil(4096).max(1));
    let chunk = n.div_ceil(threads);
    let partial: Vec<Vec<(usize, f32)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let start = t * chunk;
                let end = ((t + 1) * chunk).min(n);
                s.spawn(move || scan(matrix, dim, query, k, start, end, skip))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("search thread")).collect()
    });
    let mut all: Vec<(usize, f32)> = partial.into_iter().flatten().collect();
    all.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    all.truncate(k);
    all
}

#[derive(PartialEq)]
struct Scored(f32, usize);
impl Eq for Scored {}
impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scored {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

fn scan(matrix: &[f32], dim: usize, query: &[f32], k: usize, start: usize, end: usize, skip: Option<&[bool]>) -> Vec<(usize, f32)> {
    let mut heap: BinaryHeap<Reverse<Scored>> = BinaryHeap::with_capacity(k + 1);
    let dot = dot_fn();
    for r in start..end {
        if skip.is_some_and(|s| s.get(r).copied().unwrap_or(false)) {
            continue;
        }
        let row = &matrix[r * dim..(r + 1) * dim];
        let s = dot(row, query);
        if heap.len() < k {
            heap.push(Reverse(Scored(s, r)));
        } else if s > heap.peek().expect("non-empty").0 .0 {
            heap.pop();
            heap.push(Reverse(Scored(s, r)));
        }
    }
    heap.into_iter().map(|Reverse(Scored(s, r))| (r, s)).collect()
}

/// The fastest [`dot`] this CPU runs (256-bit lanes where it has AVX2).
fn dot_fn() -> fn(&[f32], &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        return |a, b| {
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe { dot_avx2(a, b) }
        };
    }
    dot
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_avx2(a: &[f32], b: &[f32]) -> f32 {
    dot(a, b)
}

/// Dot product in eight independent lanes (vectorises well).
#[inline]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let chunks = a.len() / 8;
    for c in 0..chunks {
        let (x, y) = (&a[c * 8..c * 8 + 8], &b[c * 8..c * 8 + 8]);
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    let mut s: f32 = acc.iter().sum();
    for i in chunks * 8..a.len() {
        s += a[i] * b[i];
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn top_k_matches_a_full_sort_across_threads() {
        let dim = 9;
        // Enough rows for 16 threads (a thread per 4,096 rows at least).
        let n = 70_000;
        let mut seed = 7u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / u32::MAX as f32) - 0.25
        };
        let matrix: Vec<f32> = (0..n * dim).map(|_| next()).collect();
        let q: Vec<f32> = (0..dim).map(|_| next()).collect();
        let mut expect: Vec<(usize, f32)> = (0..n).map(|r| (r, dot(&matrix[r * dim..(r + 1) * dim], &q))).collect();
        expect.sort_by(|a, b| b.1.total_cmp(&a.1));
        for threads in [1, 3, 16] {
            let got = top_k(&matrix, dim, &q, 25, threads);
            assert_eq!(got.iter().map(|x| x.0).collect::<Vec<_>>(), expect[..25].iter().map(|x| x.0).collect::<Vec<_>>());
        }
    }

    #[test]
    fn appends_commit_resume_and_replace_changed_papers() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = VectorStore::open(dir.path(), 2, "enc-a").unwrap();
        s.append(&[("a".into(), 1), ("b".into(), 2)], &[1.0, 0.0, 0.0, 1.0]).unwrap();
        // Bytes past the manifest (an interrupted append) are dropped on open.
        std::fs::OpenOptions::new().append(true).open(dir.path().join(DATA)).unwrap().write_all(&[0u8; 8]).unwrap();
        let mut s = VectorStore::open(dir.path(), 2, "enc-a").unwrap();
        assert_eq!(s.len(), 2);
        assert!(s.is_current("a", 1) && !s.is_current("a", 9) && !s.is_current("c", 1));
        let q = unit(&[1.0, 0.2]);
        assert_eq!(s.search(&q, 1, 2)[0].id, "a");
        // "a" changed: its new vector replaces the old one.
        s.append(&[("a".into(), 9)], &unit(&[-1.0, 0.1])).unwrap();
        assert_eq!(s.len(), 2);
        let hits = s.search(&q, 5, 1);
        assert_eq!(hits.iter().map(|h| h.id.as_str()).collect::<Vec<_>>(), ["b", "a"]);
        assert_eq!(s.vector("a").unwrap(), unit(&[-1.0, 0.1]).as_slice());
        // Another encoder's vectors are not reused.
        assert!(VectorStore::open(dir.path(), 2, "enc-b").unwrap().is_empty());
    }

    #[test]
    fn a_damaged_store_is_an_error_until_the_embedding_commands_reset_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = VectorStore::open(dir.path(), 2, "enc-a").unwrap();
        s.append(&[("a".into(), 1), ("b".into(), 2)], &[1.0, 0.0, 0.0, 1.0]).unwrap();
        drop(s);
        std::fs::OpenOptions::new().write(true).open(dir.path().join(DATA)).unwrap().set_len(12).unwrap();
        let err = VectorStore::open(dir.path(), 2, "enc-a").err().expect("shorter than the manifest");
        let library = dir.path().parent().unwrap().display().to_string();
        assert!(err.to_string().ends_with(&format!(
            "vectors.f32: these vectors are damaged: the file holds 12 bytes but its manifest (vectors.json) lists 2 rows of 2 floats (16 bytes); run `citewise --library {library} embed` to compute them again"
        )), "{err}");
        let damage = VectorStore::inspect(dir.path()).unwrap_err();
        assert!(damage.path.ends_with(DATA), "{damage:?}");
        let (mut s, note) = VectorStore::open_or_reset(dir.path(), 2, "enc-a").unwrap();
        assert!(note.unwrap().contains("emptied and are computed again"));
        assert!(s.is_empty());
        s.append(&[("a".into(), 1)], &[1.0, 0.0]).unwrap();
        assert_eq!(VectorStore::inspect(dir.path()).unwrap().unwrap(), StoreState { rows: 1, live: 1, dim: 2, verified: true });
    }

    #[test]
    fn a_reader_leaves_a_writers_uncommitted_rows_alone() {
        let dir = tempfile::tempdir().unwrap();
        assert!(VectorStore::open_read(dir.path(), 2, "enc-a").unwrap().is_empty());
        let mut writer = VectorStore::open(dir.path(), 2, "enc-a").unwrap();
        writer.append(&[("a".into(), 1)], &[1.0, 0.0]).unwrap();
        // A writer's next rows, written but not yet committed.
        let data = dir.path().join(DATA);
        std::fs::OpenOptions::new().append(true).open(&data).unwrap().write_all(&[0u8; 8]).unwrap();
        let mut reader = VectorStore::open_read(dir.path(), 2, "enc-a").unwrap();
        assert_eq!(reader.len(), 1);
        assert_eq!(reader.search(&[1.0, 0.0], 5, 1).len(), 1);
        assert_eq!(std::fs::metadata(&data).unwrap().len(), 16, "the reader truncated the writer's rows");
        assert!(reader.append(&[("b".into(), 2)], &[0.0, 1.0]).is_err());
        // Another encoder's store reads as empty, untouched.
        assert!(VectorStore::open_read(dir.path(), 2, "enc-b").unwrap().is_empty());
        assert_eq!(VectorStore::open(dir.path(), 2, "enc-a").unwrap().len(), 1);
    }

    #[test]
    fn compact_rows_follow_every_commit_and_rescored_search_matches_the_exact_one() {
        let dir = tempfile::tempdir().unwrap();
        let dim = 16;
        let mut seed = 5u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / u32::MAX as f32) - 0.25
        };
        let mut s = VectorStore::open(dir.path(), dim, "enc").unwrap();
        for batch in 0..3 {
            let items: Vec<(String, u64)> = (0..400).map(|i| (format!("p{batch}-{i}"), 1)).collect();
            let vectors: Vec<f32> = (0..400).flat_map(|_| unit(&(0..dim).map(|_| next()).collect::<Vec<_>>())).collect();
            s.append(&items, &vectors).unwrap();
        }
        let compact = dir.path().join(COMPACT);
        let size = |p: &Path| std::fs::metadata(p).unwrap().len() as usize;
        assert_eq!(size(&compact), 1200 * crate::index::quantized::stride(dim));
        assert!(s.has_compact());
        for _ in 0..5 {
            let q = unit(&(0..dim).map(|_| next()).collect::<Vec<_>>());
            let exact = s.search_exact(&q, 10, 2, None);
            assert_eq!(s.search_compact(&q, 10, 2, None), exact, "rescored scores are exact, so the lists agree");
            assert_eq!(s.search(&q, 10, 2), exact, "small stores are searched exactly");
        }
        // A store without compact rows (written before them) is searched
        // exactly when read, and gets them from its next writer; so does
        // one whose compact rows were cut short or run past the manifest.
        std::fs::remove_file(&compact).unwrap();
        assert!(!VectorStore::open_read(dir.path(), dim, "enc").unwrap().has_compact());
        assert!(VectorStore::open(dir.path(), dim, "enc").unwrap().has_compact());
        assert_eq!(size(&compact), 1200 * crate::index::quantized::stride(dim));
        std::fs::OpenOptions::new().append(true).open(&compact).unwrap().write_all(&[1u8; 7]).unwrap();
        assert!(VectorStore::open_read(dir.path(), dim, "enc").unwrap().has_compact(), "extra bytes: an append not yet committed");
        VectorStore::open(dir.path(), dim, "enc").unwrap();
        assert_eq!(size(&compact), 1200 * crate::index::quantized::stride(dim));
    }
}
