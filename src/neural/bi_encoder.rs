//! A BERT bi-encoder: mean-pooled, L2-normalised sentence vectors, compared
//! by cosine. Used to score evidence spans and reranked papers against a
//! query.

use burn::tensor::Device;

use super::backend::on_cpu;
use super::bert::{mean_pool_normalized, Bert, BertConfig};
use super::models::model_dir;
use super::parallel::{in_one_part, in_parts};
use super::tokenizer::{batch, BertTokenizer};
use crate::error::Result;

/// The citation encoder: the bi-encoder tuned on citation context → paper
/// pairs (the citation channel, span cosines, paper cosines).
pub const CITATION_ENCODER: &str = "minilm-citation-v4";

/// Tokens kept per text (spans and local contexts are short).
pub const MAX_TOKENS: usize = 128;

/// Texts encoded per forward pass.
pub const BATCH: usize = 32;

pub struct BiEncoder {
    name: String,
    model: Bert,
    tokenizer: BertTokenizer,
    dim: usize,
    device: Device,
}

/// The text a paper is encoded from (title and abstract), wherever paper
/// vectors of the bi-encoder are computed, so that they are interchangeable.
pub fn paper_text(title: &str, abstract_text: &str) -> String {
    format!("{title}. {abstract_text}")
}

impl BiEncoder {
    /// The named model from the models directory.
    pub fn load(name: &str, device: &Device) -> Result<BiEncoder> {
        let dir = model_dir(name)?;
        let config = BertConfig::from_file(&dir.join("config.json"))?;
        let model = Bert::load(&config, &dir.join("model.safetensors"), device)?;
        let tokenizer = BertTokenizer::from_file(&dir.join("tokenizer.json"), MAX_TOKENS)?;
        Ok(BiEncoder { name: name.to_string(), model, tokenizer, dim: config.hidden_size, device: device.clone() })
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// What its vectors depend on (model name and token limit): vectors
    /// stored under another fingerprint are not comparable.
    pub fn fingerprint(&self) -> String {
        format!("{}/{MAX_TOKENS}", self.name)
    }

    /// Unit vectors, `texts.len() × dim`, row-major, in the order given
    /// (batched by length so that little padding is computed; on the CPU
    /// the texts are dealt over the threads for model work).
    pub fn encode(&self, texts: &[&str]) -> Result<Vec<f32>> {
        let encoded = texts.iter().map(|t| self.tokenizer.encode(t, None)).collect::<Result<Vec<_>>>()?;
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| encoded[i].ids.len());
        let d = self.dim;
        let batched = |part: &[usize]| -> Vec<Vec<f32>> {
            let mut rows = Vec::with_capacity(part.len());
            for chunk in part.chunks(BATCH) {
                let enc: Vec<_> = chunk.iter().map(|&i| encoded[i].clone()).collect();
                let input = batch(&enc, &self.device);
                let mask = input.mask.clone();
                let hidden = self.model.forward(input);
                let v = mean_pool_normalized(hidden, mask).into_data().convert::<f32>().try_to_vec::<f32>().expect("f32 vectors");
                rows.extend(v.chunks(d).map(<[f32]>::to_vec));
            }
            rows
        };
        let rows = if on_cpu(&self.device) { in_parts(&order, batched) } else { in_one_part(&order, batched) };
        Ok(rows.concat())
    }
}
