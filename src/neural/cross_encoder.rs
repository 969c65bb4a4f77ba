//! The cross-encoder reranker: one BERT reads the citing text and a
//! candidate paper together,
//! `[CLS] citing title + abstract + local context [SEP] candidate title + abstract [SEP]`,
//! and `[CLS]` → linear → sigmoid scores the candidate.
//!
//! The lower layers are a PyPI model's, used as they are; only the top
//! `trained_layers` layers and the head are fine-tuned. Those are stored on
//! their own (a few MB), so a fine-tuned reranker is the base model plus a
//! small delta file.

use std::path::Path;

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::activation::sigmoid;
use burn::tensor::{Bool, Device, Tensor};

use super::backend::on_cpu;
use super::bert::{Bert, BertConfig, Layer};
use super::parallel::{in_one_part, in_parts};
use super::tokenizer::batch;
use super::tokenizer::{BertTokenizer, Encoded};
use crate::error::{Error, Result};

/// How the reranker is built from its base model (`reranker.json`).
#[derive(Config, Debug)]
pub struct RerankerConfig {
    /// Directory name of the base BERT in the models directory.
    pub base: String,
    /// Top layers fine-tuned and stored with the head.
    #[config(default = 1)]
    pub trained_layers: usize,
    /// Tokens of a whole pair, `[CLS]` and both `[SEP]` included.
    #[config(default = 192)]
    pub max_len: usize,
    /// Tokens the candidate keeps when the citing side needs the room.
    #[config(default = 80)]
    pub max_candidate_tokens: usize,
}

impl RerankerConfig {
    pub fn from_file(path: &Path) -> Result<RerankerConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        RerankerConfig::from_json(&text, path)
    }

    pub fn from_json(text: &str, path: &Path) -> Result<RerankerConfig> {
        serde_json::from_str(text).map_err(|e| Error::Parse { path: path.into(), line: e.line(), reason: e.to_string() })
    }
}

/// The fine-tuned part: the top layers and the scoring head.
#[derive(Module, Debug)]
pub struct RerankerTop {
    pub layers: Vec<Layer>,
    pub head: Linear,
}

impl RerankerTop {
    /// Relevance logits `[batch]` from the hidden state below the top layers.
    pub fn forward(&self, hidden: Tensor<3>, pad: Tensor<4, Bool>, heads: usize) -> Tensor<1> {
        let mut x = hidden;
        for layer in &self.layers {
            x = layer.forward(x, pad.clone(), heads);
        }
        let [b, _, h] = x.dims();
        let cls = x.slice([0..b, 0..1, 0..h]).reshape([b, h]);
        self.head.forward(cls).reshape([b])
    }

    /// Writes the fine-tuned weights as safetensors.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut store = SafetensorsStore::from_file(path).overwrite(true);
        self.save_into(&mut store).map_err(|e| Error::model(path.display().to_string(), e.to_string()))
    }

    /// Loads weights written by [`RerankerTop::save`]; a missing or
    /// mis-shaped tensor is an error naming it and the file.
    pub fn load_bytes(mut self, bytes: Vec<u8>, name: &str) -> Result<RerankerTop> {
        let mut store = SafetensorsStore::from_bytes(Some(bytes)).allow_partial(true);
        let result = self.load_from(&mut store).map_err(|e| Error::model(name, e.to_string()))?;
        super::weights::check_applied(&result, name)?;
        if !result.unused.is_empty() {
            return Err(Error::model(
                name,
                format!(
                    "tensors this reranker configuration does not have (written for another `trained_layers`?): {}",
                    result.unused.join(", ")
                ),
            ));
        }
        Ok(self)
    }
}

/// The base model split into its frozen lower part and a fresh top (the
/// base's own top layers and a new head), on `device`.
pub fn split_base(config: &RerankerConfig, base_dir: &Path, device: &Device) -> Result<(Bert, RerankerTop)> {
    let bert_config = BertConfig::from_file(&base_dir.join("config.json"))?;
    if config.trained_layers == 0 || config.trained_layers > bert_config.num_hidden_layers {
        return Err(Error::Config(format!(
            "reranker: trained_layers is {}, the base `{}` has {} layers",
            config.trained_layers, config.base, bert_config.num_hidden_layers
        )));
    }
    let mut bert = Bert::load(&bert_config, &base_dir.join("model.safetensors"), device)?;
    let keep = bert_config.num_hidden_layers - config.trained_layers;
    let layers = bert.encoder.layer.split_off(keep);
    let head = LinearConfig::new(bert_config.hidden_size, 1).init(device);
    Ok((bert, RerankerTop { layers, head }))
}

/// The citing side of a pair, as tokens (without special tokens).
#[derive(Debug, Clone)]
pub struct QueryTokens {
    pub global: Vec<u32>,
    pub local: Vec<u32>,
}

/// Builds the reranker's token pairs: the global context (citing title and
/// abstract) is cut first, the local context only when it alone exceeds the
/// citing side's share, the candidate down to `max_candidate_tokens` when
/// the citing side needs the room.
pub struct PairEncoder {
    tokenizer: BertTokenizer,
    cls: u32,
    sep: u32,
    max_len: usize,
    max_candidate: usize,
}

impl PairEncoder {
    pub fn new(tokenizer_json: &Path, max_len: usize, max_candidate: usize) -> Result<PairEncoder> {
        let tokenizer = BertTokenizer::from_file(tokenizer_json, 100_000)?;
        let cls = tokenizer.token_id("[CLS]").ok_or_else(|| Error::model(tokenizer_json.display().to_string(), "no [CLS] token"))?;
        let sep = tokenizer.token_id("[SEP]").ok_or_else(|| Error::model(tokenizer_json.display().to_string(), "no [SEP] token"))?;
        if max_len < 8 || max_candidate + 3 >= max_len {
            return Err(Error::Config(format!("reranker: max_len {max_len} leaves no room beside {max_candidate} candidate tokens")));
        }
        Ok(PairEncoder { tokenizer, cls, sep, max_len, max_candidate })
    }

    /// Tokens of the citing side.
    pub fn query(&self, local: &str, title: &str, abstract_text: &str) -> Result<QueryTokens> {
        let mut global = self.tokenizer.ids(title)?;
        global.extend(self.tokenizer.ids(abstract_text)?);
        Ok(QueryTokens { global, local: self.tokenizer.ids(local)? })
    }

    /// Tokens of a candidate paper.
    pub fn candidate(&self, title: &str, abstract_text: &str) -> Result<Vec<u32>> {
        let mut ids = self.tokenizer.ids(title)?;
        ids.extend(self.tokenizer.ids(abstract_text)?);
        ids.truncate(self.max_len); // never needed beyond the whole pair
        Ok(ids)
    }

    /// `[CLS] global' local' [SEP] candidate' [SEP]` within `max_len`.
    pub fn pair(&self, q: &QueryTokens, candidate: &[u32]) -> Encoded {
        let room = self.max_len - 3;
        let cand_share = candidate.len().min(self.max_candidate);
        let q_room = room - cand_share;
        let local = &q.local[..q.local.len().min(q_room)];
        let global = &q.global[..q.global.len().min(q_room - local.len())];
        let cand = &candidate[..candidate.len().min(room - local.len() - global.len())];
        let mut ids = Vec::with_capacity(3 + global.len() + local.len() + cand.len());
        ids.push(self.cls);
        ids.extend_from_slice(global);
        ids.extend_from_slice(local);
        ids.push(self.sep);
        let first = ids.len();
        ids.extend_from_slice(cand);
        ids.push(self.sep);
        let type_ids = (0..ids.len()).map(|i| u32::from(i >= first)).collect();
        Encoded { ids, type_ids, tokens: Vec::new() }
    }
}

/// Pairs scored per forward pass.
pub const SCORE_BATCH: usize = 16;

/// Relevance logits of `pairs` (in their order), batched by length so that
/// little padding is computed; on the CPU the pairs are dealt over the
/// threads for model work ([`in_parts`]).
pub fn logits(bottom: &Bert, top: &RerankerTop, pairs: &[Encoded], device: &Device) -> Vec<f32> {
    let mut order: Vec<usize> = (0..pairs.len()).collect();
    order.sort_by_key(|&i| pairs[i].ids.len());
    let batched = |part: &[usize]| -> Vec<f32> {
        let mut out = Vec::with_capacity(part.len());
        for chunk in part.chunks(SCORE_BATCH) {
            let enc: Vec<Encoded> = chunk.iter().map(|&i| pairs[i].clone()).collect();
            let input = batch(&enc, device);
            let (hidden, pad) = bottom.forward_layers(input, bottom.encoder.layer.len());
            out.extend(top.forward(hidden, pad, bottom.heads()).into_data().convert::<f32>().try_to_vec::<f32>().expect("f32 logits"));
        }
        out
    };
    if on_cpu(device) {
        in_parts(&order, batched)
    } else {
        in_one_part(&order, batched)
    }
}

/// Sigmoid of a logit: the score the reranker reports, in 0..1.
pub fn probability(logit: f32) -> f32 {
    1.0 / (1.0 + (-logit).exp())
}

/// Batched sigmoid scores as a tensor (training uses this form).
pub fn scores(top: &RerankerTop, hidden: Tensor<3>, pad: Tensor<4, Bool>, heads: usize) -> Tensor<1> {
    sigmoid(top.forward(hidden, pad, heads))
}
