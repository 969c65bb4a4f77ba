//! Frozen word vectors for HAtten, and the tokenizer that matches them:
//! GloVe 6B 50-d over lowercase runs of letters or digits, or a BERT
//! model's token embedding table over its WordPiece tokens (each row as
//! BERT's first layer sees it without a position, `LayerNorm(word + type 0)`,
//! then every column standardised over the vocabulary).

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
/// The BERT model whose token embeddings HAtten can read instead of GloVe
/// (the citation bi-encoder: its WordPiece vectors are tuned on citations).
pub const BERT_WORDS_DIR: &str = "minilm-citation-v4";

static WORD: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"[\p{L}\p{N}]+").expect("a valid pattern"));

/// Lowercase words of `text`, in order.
pub fn words(text: &str) -> impl Iterator<Item = String> + '_ {
    WORD.find_iter(text).map(|m| m.as_str().to_lowercase())
}

/// How text becomes rows of the table.
enum Vocabulary {
    /// Whole lowercase words (GloVe).
    Words(HashMap<String, u32>),
    /// WordPiece tokens, without special tokens; `unknown` is skipped.
    WordPiece { tokenizer: Box<tokenizers::Tokenizer>, unknown: Option<u32> },
}

/// Centres every column of a `[rows, dim]` table on zero and scales it to
/// unit variance. BERT's token vectors share a large common component and a
/// few outlier dimensions; left in, they make every text's vector point the
/// same way.
fn standardize(table: &mut [f32], dim: usize) {
    let rows = (table.len() / dim).max(1) as f64;
    let mut mean = vec![0f64; dim];
    let mut sq = vec![0f64; dim];
    for row in table.chunks_exact(dim) {
        for (i, x) in row.iter().enumerate() {
            mean[i] += *x as f64;
            sq[i] += (*x as f64) * (*x as f64);
        }
    }
    let scale: Vec<f64> = (0..dim)
        .map(|i| {
            mean[i] /= rows;
            let var = sq[i] / rows - mean[i] * mean[i];
            1.0 / var.max(1e-12).sqrt()
        })
        .collect();
    for row in table.chunks_exact_mut(dim) {
        for (i, x) in row.iter_mut().enumerate() {
            *x = ((*x as f64 - mean[i]) * scale[i]) as f32;
        }
    }
}

/// The values of a little-endian F32 safetensors tensor (its dtype checked
/// by the caller).
fn f32_values(t: &safetensors::tensor::TensorView<'_>) -> Vec<f32> {
    t.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// A table of word vectors with its vocabulary.
pub struct WordVectors {
    vocabulary: Vocabulary,
    table: Vec<f32>,
    dim: usize,
    /// The models-directory name they were loaded from (the directory's
    /// name for a BERT table).
    pub name: String,
}

impl WordVectors {
    /// Loads the GloVe vectors from the models directory.
    pub fn load_default() -> Result<WordVectors> {
        Self::load_named(GLOVE_DIR)
    }

    /// Loads the word vectors a HAtten config names: [`GLOVE_DIR`], or a
    /// BERT model directory (such as [`BERT_WORDS_DIR`]) for its token table.
    pub fn load_named(name: &str) -> Result<WordVectors> {
        let dir = models_dir()?.join(name);
        if name == GLOVE_DIR {
            Self::load(&dir)
        } else {
            Self::load_bert(&dir)
        }
    }

    /// The token embedding table of the BERT model in `dir`
    /// (`model.safetensors`, `config.json`, `tokenizer.json`), each row
    /// `LayerNorm(word_embeddings[i] + token_type_embeddings[0])`.
    pub fn load_bert(dir: &Path) -> Result<WordVectors> {
        let weights = dir.join("model.safetensors");
        let tokenizer_path = dir.join("tokenizer.json");
        for p in [&weights, &tokenizer_path] {
            if !p.exists() {
                return Err(Error::model("word vectors", format!("missing {}: {FETCH_HINT}", p.display())));
            }
        }
        let config = super::bert::BertConfig::from_file(&dir.join("config.json"))?;
        let bytes = std::fs::read(&weights).map_err(|e| Error::io(&weights, e))?;
        let bad = |reason: String| Error::model(weights.display().to_string(), reason);
        let st = safetensors::SafeTensors::deserialize(&bytes).map_err(|e| bad(e.to_string()))?;
        let tensor = |name: &str, rows: Option<usize>| -> Result<(Vec<f32>, Vec<usize>)> {
            let t = st.tensor(name).map_err(|e| bad(format!("tensor `{name}`: {e}")))?;
            let shape = t.shape().to_vec();
            let width_ok = shape.last() == Some(&config.hidden_size) && shape.len() == rows.map_or(1, |_| 2);
            if t.dtype() != safetensors::Dtype::F32 || !width_ok {
                return Err(bad(format!("tensor `{name}` is {:?} {shape:?}; expected F32 with width {}", t.dtype(), config.hidden_size)));
            }
            Ok((f32_values(&t), shape))
        };
        let (words, shape) = tensor("embeddings.word_embeddings.weight", Some(0))?;
        let (types, _) = tensor("embeddings.token_type_embeddings.weight", Some(0))?;
        let (gamma, _) = tensor("embeddings.LayerNorm.weight", None)?;
        let (beta, _) = tensor("embeddings.LayerNorm.bias", None)?;
        let dim = shape[1];
        let mut table = words;
        for row in table.chunks_exact_mut(dim) {
            for (x, t) in row.iter_mut().zip(&types[..dim]) {
                *x += t;
            }
            let mean = row.iter().sum::<f32>() / dim as f32;
            let var = row.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / dim as f32;
            let scale = 1.0 / (var + config.layer_norm_eps as f32).sqrt();
            for (i, x) in row.iter_mut().enumerate() {
                *x = (*x - mean) * scale * gamma[i] + beta[i];
            }
        }
        standardize(&mut table, dim);
        let mut tokenizer =
            tokenizers::Tokenizer::from_file(&tokenizer_path).map_err(|e| Error::model(tokenizer_path.display().to_string(), e))?;
        tokenizer.with_padding(None);
        tokenizer.with_truncation(None).map_err(|e| Error::model(tokenizer_path.display().to_string(), e))?;
        let unknown = tokenizer.token_to_id("[UNK]");
        if tokenizer.get_vocab_size(true) > shape[0] {
            return Err(bad(format!("the tokenizer has {} tokens but the table {} rows", tokenizer.get_vocab_size(true), shape[0])));
        }
        let name = dir.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        Ok(WordVectors { vocabulary: Vocabulary::WordPiece { tokenizer: Box::new(tokenizer), unknown }, table, dim, name })
    }

    /// Loads `vocab.top100k.txt` and its safetensors table (tensor
    /// `embeddings`, `[words, dim]`, row i = line i) from `dir`.
    pub fn load(dir: &Path) -> Result<WordVectors> {
        let vocab_path = dir.join(GLOVE_FILES.0);
        let table_path = dir.join(GLOVE_FILES.1);
        for p in [&vocab_path, &table_path] {
            if !p.exists() {
                return Err(Error::model("word vectors", format!("missing {}: {FETCH_HINT}", p.display())));
            }
        }
        let vocab = std::fs::read_to_string(&vocab_path).map_err(|e| Error::io(&vocab_path, e))?;
        let bytes = std::fs::read(&table_path).map_err(|e| Error::io(&table_path, e))?;
        Self::from_parts(&vocab, &bytes, &table_path)
    }

    fn from_parts(vocab: &str, safetensors_bytes: &[u8], path: &Path) -> Result<WordVectors> {
        let bad = |reason: String| Error::model(path.display().to_string(), reason);
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
        let table = f32_values(&t);
        let index = lines.iter().enumerate().map(|(i, w)| (w.to_string(), i as u32)).collect();
        Ok(WordVectors { vocabulary: Vocabulary::Words(index), table, dim: shape[1], name: GLOVE_DIR.to_string() })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Rows of the table.
    pub fn len(&self) -> usize {
        self.table.len() / self.dim.max(1)
    }

    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Row ids of the known words (or word pieces) of `text`, at most `max`
    /// (unknown ones are skipped: they carry no meaning of their own).
    pub fn ids(&self, text: &str, max: usize) -> Vec<u32> {
        match &self.vocabulary {
            Vocabulary::Words(index) => words(text).filter_map(|w| index.get(&w).copied()).take(max).collect(),
            Vocabulary::WordPiece { tokenizer, unknown } => match tokenizer.encode(text, false) {
                Ok(enc) => enc.get_ids().iter().copied().filter(|id| Some(*id) != *unknown).take(max).collect(),
                Err(_) => Vec::new(),
            },
        }
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
