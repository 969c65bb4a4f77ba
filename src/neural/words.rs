//! Frozen word vectors (GloVe 6B 50-d) and the word tokenizer that matches
//! them: lowercase runs of letters or digits.

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::models::{models_dir, FETCH_HINT};
use crate::error::{Error, Result};

/// The word-vector directory inside the models directory.
pub const GLOVE_DIR: &str = "glove-6b-50d";
/// The vocabulary size used (the most frequent GloVe words).
pub const GLOVE_FILES: (&str, &str) = ("vocab.top100k.txt", "glove.6B.50d.top100k.safetensors");

static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[\p{L}\p{N}]+").unwrap());

/// Lowercase words of `text`, in order.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    WORD.find_iter(text).map(|m| m.as_str().to_lowercase())
}

/// A table of word vectors with its vocabulary.
pub struct WordVectors {
    index: HashMap<String, u32>,
    table: Vec<f32>,
    dim: usize,
}

impl WordVectors {
    /// Loads the GloVe vectors from the models directory.
    pub fn load_default() -> Result<WordVectors> {
        Self::load(&models_dir()?.join(GLOVE_DIR))
    }

    /// Loads `vocab.top100k.txt` and its safetensors table (tensor
    /// `embeddings`, `[words, dim]`, row i = line i) from `dir`.
    pub fn load(dir: &Path) -> Result<WordVectors> {
        let vocab_path = dir.join(GLOVE_FILES.0);
        let table_path = dir.join(GLOVE_FILES.1);
        for p in [&vocab_path, &table_path] {
            if !p.exists() {
                return Err(Error::Library(format!("word vectors missing: {}: {FETCH_HINT}", p.display())));
            }
        }
        let vocab = std::fs::read_to_string(&vocab_path).map_err(|e| Error::io(&vocab_path, e))?;
        let bytes = std::fs::read(&table_path).map_err(|e| Error::io(&table_path, e))?;
        Self::from_parts(&vocab, &bytes, &table_path)
    }

    fn from_parts(vocab: &str, safetensors_bytes: &[u8], path: &Path) -> Result<WordVectors> {
        let bad = |reason: String| Error::Library(format!("{}: {reason}", path.display()));
        let st = safetensors::SafeTensors::deserialize(safetensors_bytes).map_err(|e| bad(e.to_string()))?;
        let t = st.tensor("embeddings").map_err(|e| bad(format!("tensor `embeddings`: {e}")))?;
        let shape = t.shape().to_vec();
        if t.dtype() != safetensors::Dtype::F32 || shape.len() != 2 {
            return Err(bad(format!("tensor `embeddings` is {:?} {shape:?}; expected F32 [words, dim]", t.dtype())));
        }
        let lines: Vec<&str> = vocab.lines().collect();
        if lines.len() != shape[0] {
            return Err(bad(format!("tensor `embeddings` has {} rows but the vocabulary has {} words", shape[0], lines.len())));
        }
        let table: Vec<f32> = t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
        let index = lines.iter().enumerate().map(|(i, w)| (w.to_string(), i as u32)).collect();
        Ok(WordVectors { index, table, dim: shape[1] })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// Row ids of the known words of `text`, at most `max` (unknown words
    /// are skipped: their frozen vector would be zero).
    pub fn ids(&self, text: &str, max: usize) -> Vec<u32> {
        words(text).filter_map(|w| self.index.get(&w).copied()).take(max).collect()
    }

    /// The vector of row `id`.
    pub fn vector(&self, id: u32) -> &[f32] {
        let i = id as usize * self.dim;
        &self.table[i..i + self.dim]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> WordVectors {
        let data: Vec<f32> = vec![1.0, 0.0, 0.0, 1.0, 0.5, 0.5];
        let bytes: Vec<u8> = data.iter().flat_map(|v| v.to_le_bytes()).collect();
        let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![3, 2], &bytes).unwrap();
        let file = safetensors::serialize([("embeddings", view)], None).unwrap();
        WordVectors::from_parts("the\nparser\n2000\n", &file, Path::new("t.safetensors")).unwrap()
    }

    #[test]
    fn words_are_lowercase_letter_and_digit_runs() {
        let w: Vec<String> = words("The TnT-tagger (2000), naïve!").collect();
        assert_eq!(w, ["the", "tnt", "tagger", "2000", "naïve"]);
    }

    #[test]
    fn ids_skip_unknown_words_and_stop_at_max() {
        let v = tiny();
        assert_eq!(v.ids("The unknown PARSER of 2000", 10), [0, 1, 2]);
        assert_eq!(v.ids("The unknown PARSER of 2000", 2), [0, 1]);
        assert_eq!(v.vector(2), [0.5, 0.5]);
    }

    #[test]
    fn a_table_that_does_not_match_the_vocabulary_is_an_error() {
        let data = [0u8; 8];
        let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![1, 2], &data).unwrap();
        let file = safetensors::serialize([("embeddings", view)], None).unwrap();
        let err = WordVectors::from_parts("a\nb\n", &file, Path::new("g.safetensors")).err().unwrap().to_string();
        assert!(err.contains("g.safetensors") && err.contains("1 rows") && err.contains("2 words"), "{err}");
    }
}
