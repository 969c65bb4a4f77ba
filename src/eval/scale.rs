//! A library of any size for measuring speed and memory: synthetic
//! records composed from a real library's papers, with vectors mixed from
//! theirs, so that a million papers need not be encoded to be searched.
//!
//! Each record is marked as synthetic: its id is `synthetic:N` and its venue
//! [`SYNTHETIC_VENUE`]. Its title is one source paper's, its abstract the
//! first half of a second's and the second half of a third's; its vectors
//! (HAtten's, and the citation channel's as a stand-in) are the normalised
//! weighted sum of the three sources' (0.4 / 0.3 / 0.3). They carry no
//! claim about quality: recall is measured on the real papers only.

use std::io::Write;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::error::{Error, Result};
use crate::index::layered::LayeredVectors;
use crate::index::vectors::VectorStore;
use crate::library::embed::text_hash;
use crate::library::Library;

/// The venue that marks a synthetic record.
pub const SYNTHETIC_VENUE: &str = "synthetic record (citewise bench scale)";

/// The id prefix of synthetic records.
pub const SYNTHETIC_PREFIX: &str = "synthetic:";

/// Vectors appended between commits.
const COMMIT_EVERY: usize = 50_000;

/// A source paper: its text, and its rows in the two vector spaces.
struct Source {
    title: String,
    abstract_text: String,
    authors: Vec<String>,
    year: Option<i32>,
    dense: Vec<f32>,
    citation: Vec<f32>,
}

/// What [`synthesize`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Synthesized {
    /// Real papers the records were made from.
    pub sources: usize,
    /// Records written.
    pub records: usize,
}

/// Writes `n` synthetic records made from `lib`'s papers to `out` (JSON
/// Lines, for `citewise import`) and their vectors to `dense` (HAtten's
/// store of `lib`) and `stand_ins` (the citation channel's student store),
/// ahead of the import: once imported, each record's vectors are current.
/// Sources are the papers with a vector in both `dense` and `citation`.
pub fn synthesize(
    lib: &Library,
    dense: &mut VectorStore,
    citation: &LayeredVectors,
    stand_ins: &mut VectorStore,
    out: &Path,
    n: usize,
    seed: u64,
) -> Result<Synthesized> {
    let mut sources = Vec::new();
    lib.papers().for_each_paper(&mut |p| {
        if p.id.starts_with(SYNTHETIC_PREFIX) || p.abstract_text.split_whitespace().count() < 20 {
            return Ok(());
        }
        if let (Some(d), Some(c)) = (dense.vector(&p.id), citation.vector(&p.id)) {
            let (dense, citation) = (d.to_vec(), c.to_vec());
            sources.push(Source { title: p.title, abstract_text: p.abstract_text, authors: p.authors, year: p.year, dense, citation });
        }
        Ok(())
    })?;
    if sources.len() < 3 {
        return Err(Error::Input(format!(
            "{} papers of the library at {} have both vectors: encode it first (`citewise embed --fast`)",
            sources.len(),
            lib.dir().display()
        )));
    }
    let file = std::fs::File::create(out).map_err(|e| Error::io(out, e))?;
    let mut w = std::io::BufWriter::new(file);
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut items, mut dense_rows, mut citation_rows) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..n {
        let pick = |rng: &mut StdRng| &sources[rng.random_range(0..sources.len())];
        let (a, b, c) = (pick(&mut rng), pick(&mut rng), pick(&mut rng));
        let abstract_text = format!("{} {}", first_half(&b.abstract_text), second_half(&c.abstract_text));
        let id = format!("{SYNTHETIC_PREFIX}{i:07}");
        let row = serde_json::json!({
            "id": id, "title": a.title, "abstract": abstract_text, "authors": b.authors, "year": a.year, "venue": SYNTHETIC_VENUE,
        });
        writeln!(w, "{row}").map_err(|e| Error::io(out, e))?;
        items.push((id, text_hash(&a.title, &abstract_text)));
        dense_rows.extend(mix(&a.dense, &b.dense, &c.dense));
        citation_rows.extend(mix(&a.citation, &b.citation, &c.citation));
        if items.len() == COMMIT_EVERY || i + 1 == n {
            dense.append(&items, &dense_rows)?;
            stand_ins.append(&items, &citation_rows)?;
            items.clear();
            dense_rows.clear();
            citation_rows.clear();
        }
    }
    w.flush().map_err(|e| Error::io(out, e))?;
    Ok(Synthesized { sources: sources.len(), records: n })
}

/// The first half of a text's words.
fn first_half(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    words[..words.len() / 2].join(" ")
}

/// The second half of a text's words.
fn second_half(text: &str) -> String {
    let words: Vec<&str> = text.split_whitespace().collect();
    words[words.len() / 2..].join(" ")
}

/// `0.4 a + 0.3 b + 0.3 c`, normalised.
fn mix(a: &[f32], b: &[f32], c: &[f32]) -> Vec<f32> {
    let v: Vec<f32> = a.iter().zip(b).zip(c).map(|((a, b), c)| 0.4 * a + 0.3 * b + 0.3 * c).collect();
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.into_iter().map(|x| x / norm).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halves_split_the_words_and_mixes_are_unit_vectors() {
        assert_eq!(first_half("a b c d e"), "a b");
        assert_eq!(second_half("a b c d e"), "c d e");
        let v = mix(&[1.0, 0.0], &[0.0, 1.0], &[0.0, 1.0]);
        assert!((v.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-6);
        assert!((v[0] / v[1] - 0.4 / 0.6).abs() < 1e-6);
    }
}
