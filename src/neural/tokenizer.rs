//! WordPiece tokenization with the `tokenizers` crate, with padding and
//! truncation set here (never taken from the file).

use std::path::Path;

use burn::tensor::{Bool, Device, Int, Tensor, TensorData};
use tokenizers::{PaddingParams, Tokenizer, TruncationDirection, TruncationParams, TruncationStrategy};

use super::bert::BertInput;
use crate::error::{Error, Result};

pub struct BertTokenizer {
    inner: Tokenizer,
}

/// One encoded sequence.
#[derive(Debug, Clone, PartialEq)]
pub struct Encoded {
    pub ids: Vec<u32>,
    pub type_ids: Vec<u32>,
    pub tokens: Vec<String>,
}

impl BertTokenizer {
    /// Loads `tokenizer.json`; sequences are cut to `max_len` tokens.
    pub fn from_file(path: &Path, max_len: usize) -> Result<BertTokenizer> {
        let mut inner = Tokenizer::from_file(path).map_err(|e| Error::model(path.display().to_string(), e))?;
        inner.with_padding(None::<PaddingParams>);
        inner
            .with_truncation(Some(TruncationParams {
                max_length: max_len,
                strategy: TruncationStrategy::LongestFirst,
                direction: TruncationDirection::Right,
                stride: 0,
            }))
            .map_err(|e| Error::model(path.display().to_string(), e))?;
        Ok(BertTokenizer { inner })
    }

    /// `[CLS] a [SEP]`, or `[CLS] a [SEP] b [SEP]` with type ids 0 / 1.
    pub fn encode(&self, a: &str, b: Option<&str>) -> Result<Encoded> {
        let enc = match b {
            Some(b) => self.inner.encode((a, b), true),
            None => self.inner.encode(a, true),
        }
        .map_err(|e| Error::model("tokenizer", e))?;
        Ok(Encoded { ids: enc.get_ids().to_vec(), type_ids: enc.get_type_ids().to_vec(), tokens: enc.get_tokens().to_vec() })
    }
}

impl BertTokenizer {
    /// Token ids of `text` without special tokens (cut to the tokenizer's
    /// `max_len`).
    pub fn ids(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self.inner.encode(text, false).map_err(|e| Error::model("tokenizer", e))?;
        Ok(enc.get_ids().to_vec())
    }

    /// The id of a token such as `[CLS]`.
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }
}

/// Pads encoded sequences into one batch on `device`.
pub fn batch(encoded: &[Encoded], device: &Device) -> BertInput {
    let b = encoded.len();
    let l = encoded.iter().map(|e| e.ids.len()).max().unwrap_or(1).max(1);
    let mut ids = vec![0i64; b * l];
    let mut types = vec![0i64; b * l];
    let mut mask = vec![false; b * l];
    for (i, e) in encoded.iter().enumerate() {
        for (j, (&id, &t)) in e.ids.iter().zip(&e.type_ids).enumerate() {
            ids[i * l + j] = id as i64;
            types[i * l + j] = t as i64;
            mask[i * l + j] = true;
        }
    }
    BertInput {
        ids: Tensor::<2, Int>::from_data(TensorData::new(ids, [b, l]), device),
        type_ids: Tensor::<2, Int>::from_data(TensorData::new(types, [b, l]), device),
        mask: Tensor::<2, Bool>::from_data(TensorData::new(mask, [b, l]), device),
    }
}
