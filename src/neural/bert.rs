//! A BERT encoder in burn, of any depth and width given by a Hugging Face
//! `config.json`, loading Hugging Face safetensors weights.

use std::path::Path;

use burn::config::Config;
use burn::module::Module;
use burn::nn::{Embedding, EmbeddingConfig, LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::store::{KeyRemapper, ModuleSnapshot, PyTorchToBurnAdapter, SafetensorsStore};
use burn::tensor::activation::{gelu, softmax};
use burn::tensor::{Bool, Device, Int, Tensor};

use crate::error::{Error, Result};

/// The fields of a Hugging Face BERT `config.json` that the encoder needs.
#[derive(Config, Debug)]
pub struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub max_position_embeddings: usize,
    #[config(default = 2)]
    pub type_vocab_size: usize,
    #[config(default = 1e-12)]
    pub layer_norm_eps: f64,
}

impl BertConfig {
    /// Reads a Hugging Face `config.json` (unknown fields are ignored).
    pub fn from_file(path: &Path) -> Result<BertConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| Error::Parse { path: path.into(), line: e.line(), reason: e.to_string() })
    }

    pub fn init(&self, device: &Device) -> Bert {
        let norm = || LayerNormConfig::new(self.hidden_size).with_epsilon(self.layer_norm_eps).init(device);
        let linear = |i, o| LinearConfig::new(i, o).init(device);
        Bert {
            embeddings: Embeddings {
                word_embeddings: EmbeddingConfig::new(self.vocab_size, self.hidden_size).init(device),
                position_embeddings: EmbeddingConfig::new(self.max_position_embeddings, self.hidden_size).init(device),
                token_type_embeddings: EmbeddingConfig::new(self.type_vocab_size, self.hidden_size).init(device),
                layer_norm: norm(),
            },
            encoder: Encoder {
                layer: (0..self.num_hidden_layers)
                    .map(|_| Layer {
                        attention: Attention {
                            self_attn: SelfAttention {
                                query: linear(self.hidden_size, self.hidden_size),
                                key: linear(self.hidden_size, self.hidden_size),
                                value: linear(self.hidden_size, self.hidden_size),
                            },
                            output: DenseNorm { dense: linear(self.hidden_size, self.hidden_size), layer_norm: norm() },
                        },
                        intermediate: Dense { dense: linear(self.hidden_size, self.intermediate_size) },
                        output: DenseNorm { dense: linear(self.intermediate_size, self.hidden_size), layer_norm: norm() },
                    })
                    .collect(),
            },
            heads: self.num_attention_heads,
        }
    }
}

#[derive(Module, Debug)]
pub struct Bert {
    pub embeddings: Embeddings,
    pub encoder: Encoder,
    heads: usize,
}

#[derive(Module, Debug)]
pub struct Embeddings {
    pub word_embeddings: Embedding,
    pub position_embeddings: Embedding,
    pub token_type_embeddings: Embedding,
    pub layer_norm: LayerNorm,
}

#[derive(Module, Debug)]
pub struct Encoder {
    pub layer: Vec<Layer>,
}

#[derive(Module, Debug)]
pub struct Layer {
    pub attention: Attention,
    pub intermediate: Dense,
    pub output: DenseNorm,
}

#[derive(Module, Debug)]
pub struct Attention {
    pub self_attn: SelfAttention,
    pub output: DenseNorm,
}

#[derive(Module, Debug)]
pub struct SelfAttention {
    pub query: Linear,
    pub key: Linear,
    pub value: Linear,
}

#[derive(Module, Debug)]
pub struct Dense {
    pub dense: Linear,
}

#[derive(Module, Debug)]
pub struct DenseNorm {
    pub dense: Linear,
    pub layer_norm: LayerNorm,
}

/// A batch of token sequences, padded to one length.
pub struct BertInput {
    /// `[batch, len]`
    pub ids: Tensor<2, Int>,
    pub type_ids: Tensor<2, Int>,
    /// true where there is a real token.
    pub mask: Tensor<2, Bool>,
}

impl Bert {
    /// Loads Hugging Face safetensors weights (PyTorch layout) into a model
    /// built from `config`. Missing or mis-shaped tensors are errors naming
    /// the tensor.
    pub fn load(config: &BertConfig, weights: &Path, device: &Device) -> Result<Bert> {
        if !weights.exists() {
            return Err(Error::model(weights.display().to_string(), "no such weights file"));
        }
        let mut model = config.init(device);
        let remap = KeyRemapper::new()
            .add_pattern(r"^bert\.", "")
            .and_then(|r| r.add_pattern(r"\.LayerNorm\.", ".layer_norm."))
            .and_then(|r| r.add_pattern(r"\.self\.", ".self_attn."))
            .map_err(|e| Error::model("BERT key remapping", e.to_string()))?;
        let mut store = SafetensorsStore::from_file(weights).with_from_adapter(PyTorchToBurnAdapter).remap(remap).allow_partial(true);
        let result = model.load_from(&mut store).map_err(|e| Error::model(weights.display().to_string(), e.to_string()))?;
        super::weights::check_applied(&result, &weights.display().to_string())?;
        Ok(model)
    }

    /// The last hidden state, `[batch, len, hidden]`.
    pub fn forward(&self, input: BertInput) -> Tensor<3> {
        self.forward_layers(input, self.encoder.layer.len()).0
    }

    /// The hidden state after the embeddings and the first `layers` layers,
    /// with the padding mask the remaining layers need.
    pub fn forward_layers(&self, input: BertInput, layers: usize) -> (Tensor<3>, Tensor<4, Bool>) {
        let [batch, len] = input.ids.dims();
        let device = input.ids.device();
        let positions = Tensor::<1, Int>::arange(0..len as i64, &device).reshape([1, len]).repeat_dim(0, batch);
        let e = &self.embeddings;
        let x = e.word_embeddings.forward(input.ids)
            + e.position_embeddings.forward(positions)
            + e.token_type_embeddings.forward(input.type_ids);
        let mut x = e.layer_norm.forward(x);
        let pad = padding_mask(input.mask);
        for layer in self.encoder.layer.iter().take(layers) {
            x = layer.forward(x, pad.clone(), self.heads);
        }
        (x, pad)
    }

    /// Attention heads per layer.
    pub fn heads(&self) -> usize {
        self.heads
    }
}

/// `[batch, 1, 1, len]`, true at padding (masked out of attention).
pub fn padding_mask(mask: Tensor<2, Bool>) -> Tensor<4, Bool> {
    let [batch, len] = mask.dims();
    mask.bool_not().reshape([batch, 1, 1, len])
}

impl Layer {
    /// One transformer layer; `pad` from [`padding_mask`].
    pub fn forward(&self, x: Tensor<3>, pad: Tensor<4, Bool>, heads: usize) -> Tensor<3> {
        let [b, l, h] = x.dims();
        let dh = h / heads;
        let split = |t: Tensor<3>| t.reshape([b, l, heads, dh]).swap_dims(1, 2);
        let a = &self.attention.self_attn;
        let q = split(a.query.forward(x.clone()));
        let k = split(a.key.forward(x.clone()));
        let v = split(a.value.forward(x.clone()));
        let scores = q.matmul(k.swap_dims(2, 3)) / (dh as f64).sqrt();
        let scores = scores.mask_fill(pad.expand([b, heads, l, l]), -1.0e9);
        let ctx = softmax(scores, 3).matmul(v).swap_dims(1, 2).reshape([b, l, h]);
        let out = &self.attention.output;
        let x = out.layer_norm.forward(out.dense.forward(ctx) + x);
        let inner = gelu(self.intermediate.dense.forward(x.clone()));
        self.output.layer_norm.forward(self.output.dense.forward(inner) + x)
    }
}

/// Mean of the token vectors (padding excluded), L2-normalised: `[batch, hidden]`.
pub fn mean_pool_normalized(hidden: Tensor<3>, mask: Tensor<2, Bool>) -> Tensor<2> {
    let [b, l, h] = hidden.dims();
    let m = mask.float().reshape([b, l, 1]);
    let summed = (hidden * m.clone()).sum_dim(1).reshape([b, h]);
    let counts = m.sum_dim(1).reshape([b, 1]).clamp_min(1.0);
    let mean = summed / counts;
    let norm = mean.clone().powf_scalar(2.0).sum_dim(1).sqrt().clamp_min(1e-12);
    mean / norm
}
