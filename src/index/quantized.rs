//! Compact vectors for search: every row as `dim` signed bytes with a scale
//! of its own (`x ≈ scale · q`, `q = round(127 · x / max |x|)`), a quarter
//! of the f32 rows' size. A search scans them for the `k · OVERSAMPLE`
//! nearest by approximate dot product, then rescoring with the exact f32
//! rows picks the top `k`: the scan reads 4x less memory and the answer's
//! scores are exact.
//!
//! Row layout in `vectors.q8`: the scale (f32, little-endian), then the
//! `dim` bytes.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Candidates the compact scan keeps per wanted hit, for rescoring.
pub const OVERSAMPLE: usize = 4;

/// At least this many candidates are rescored.
pub const MIN_RESCORED: usize = 200;

/// Bytes of one row of width `dim`.
pub fn stride(dim: usize) -> usize {
    dim + 4
}

/// Appends the compact form of `vectors` (rows of width `dim`) to `out`.
pub fn quantize_rows(vectors: &[f32], dim: usize, out: &mut Vec<u8>) {
    for row in vectors.chunks(dim) {
        let (scale, q) = quantize(row);
        out.extend_from_slice(&scale.to_le_bytes());
        out.extend(q.iter().map(|&x| x as u8));
    }
}

/// A vector as `(scale, bytes)`.
pub fn quantize(v: &[f32]) -> (f32, Vec<i8>) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 {
        return (0.0, vec![0; v.len()]);
    }
    let scale = max / 127.0;
    (scale, v.iter().map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8).collect())
}

/// The rows `r` in `start..end` (not marked in `skip`) of highest
/// approximate dot product with the quantized query `(qs, q)`, at most `k`,
/// unordered.
fn scan(data: &[u8], dim: usize, query: (f32, &[i8]), k: usize, range: (usize, usize), skip: Option<&[bool]>) -> Vec<(usize, f32)> {
    let s = stride(dim);
    let dot = dot_i8_fn();
    let mut heap: BinaryHeap<Reverse<(OrdF32, usize)>> = BinaryHeap::with_capacity(k + 1);
    for r in range.0..range.1 {
        if skip.is_some_and(|sk| sk.get(r).copied().unwrap_or(false)) {
            continue;
        }
        let row = &data[r * s..(r + 1) * s];
        let scale = f32::from_le_bytes([row[0], row[1], row[2], row[3]]);
        // SAFETY: i8 and u8 have the same size and alignment.
        let bytes: &[i8] = unsafe { std::slice::from_raw_parts(row[4..].as_ptr() as *const i8, dim) };
        let score = dot(bytes, query.1) as f32 * scale * query.0;
        if heap.len() < k {
            heap.push(Reverse((OrdF32(score), r)));
        } else if score > heap.peek().expect("non-empty").0 .0 .0 {
            heap.pop();
            heap.push(Reverse((OrdF32(score), r)));
        }
    }
    heap.into_iter().map(|Reverse((s, r))| (r, s.0)).collect()
}

/// The `k` rows of highest approximate dot product with `query` over the
/// compact rows in `data` (`rows` of them), on `threads` threads: `(row,
/// approximate score)`, unordered.
pub fn candidates(
    data: &[u8],
    dim: usize,
    rows: usize,
    query: &[f32],
    k: usize,
    threads: usize,
    skip: Option<&[bool]>,
) -> Vec<(usize, f32)> {
    if rows == 0 || k == 0 {
        return Vec::new();
    }
    let (qs, q) = quantize(query);
    let threads = threads.clamp(1, 16).min(rows.div_ceil(4096).max(1));
    let chunk = rows.div_ceil(threads);
    let q = &q;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let range = (t * chunk, ((t + 1) * chunk).min(rows));
                s.spawn(move || scan(data, dim, (qs, q), k, range, skip))
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().expect("search thread")).collect()
    })
}

/// An f32 ordered by `total_cmp`.
#[derive(Clone, Copy)]
struct OrdF32(f32);
impl PartialEq for OrdF32 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}
impl Eq for OrdF32 {}
impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdF32 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// The fastest byte dot product this CPU runs.
fn dot_i8_fn() -> fn(&[i8], &[i8]) -> i32 {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") {
        return |a, b| {
            // SAFETY: the CPU has AVX2 (checked above).
            unsafe { dot_i8_avx2(a, b) }
        };
    }
    dot_i8
}

/// Byte dot product (vectorises to 16-bit multiply-adds).
#[inline]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    a.iter().zip(b).map(|(&x, &y)| x as i32 * y as i32).sum()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    dot_i8(a, b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantized_rows_keep_dot_products_and_find_the_exact_top_after_rescoring() {
        let dim = 48;
        let mut seed = 11u64;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32 / u32::MAX as f32) - 0.25
        };
        let unit = |v: Vec<f32>| {
            let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
            v.into_iter().map(|x| x / n).collect::<Vec<f32>>()
        };
        let rows = 5000;
        let matrix: Vec<f32> = (0..rows).flat_map(|_| unit((0..dim).map(|_| next()).collect())).collect();
        let mut data = Vec::new();
        quantize_rows(&matrix, dim, &mut data);
        assert_eq!(data.len(), rows * stride(dim));
        for trial in 0..5 {
            let q = unit((0..dim).map(|_| next()).collect());
            let exact = crate::index::vectors::top_k(&matrix, dim, &q, 10, 1);
            let found = candidates(&data, dim, rows, &q, 10 * OVERSAMPLE, 2, None);
            // Approximate scores are close to the exact ones.
            for &(r, s) in &found {
                let e = crate::index::vectors::dot(&matrix[r * dim..(r + 1) * dim], &q);
                assert!((s - e).abs() < 0.02, "row {r}: {s} vs {e}");
            }
            // The exact top 10 is among the candidates.
            for (r, _) in &exact {
                assert!(found.iter().any(|(f, _)| f == r), "trial {trial}: row {r} missed");
            }
        }
        // Skipped rows are never candidates.
        let skip: Vec<bool> = (0..rows).map(|r| r % 2 == 0).collect();
        let q = unit((0..dim).map(|_| next()).collect());
        assert!(candidates(&data, dim, rows, &q, 50, 2, Some(&skip)).iter().all(|(r, _)| r % 2 == 1));
    }
}
