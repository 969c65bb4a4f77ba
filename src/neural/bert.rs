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

/// BERT's GELU, `x · Φ(x)` with the exact error function. On the CPU
/// backend outside training it runs as one pass over the values with
/// [`erf`] (burn `flex` calls libm's scalar `erff` for each value: an eighth
/// of a forward pass); elsewhere it is burn's own, which autodiff follows.
fn activation(x: Tensor<3>) -> Tensor<3> {
    let device = x.device();
    if device.is_autodiff() || !super::backend::on_cpu(&device) {
        return gelu(x);
    }
    let shape = x.shape();
    let mut values = x.into_data().convert::<f32>().try_into_vec::<f32>().expect("f32 activations");
    for v in &mut values {
        *v = 0.5 * *v * (1.0 + erf(*v * std::f32::consts::FRAC_1_SQRT_2));
    }
    Tensor::from_data(burn::tensor::TensorData::new(values, shape), &device)
}

/// The error function in single precision, as a rational function of `x`
/// on [−4, 4] (outside it `erf` is ±1 in `f32`); the approximation of
/// XLA's and Eigen's `erf` for `f32`, within a few units in the last place,
/// and free of branches, so that the compiler vectorises a loop of it.
fn erf(x: f32) -> f32 {
    let x = x.clamp(-4.0, 4.0);
    let x2 = x * x;
    let mut p = -2.726_142_3e-10_f32;
    p = p * x2 + 2.770_681_4e-8;
    p = p * x2 + -2.101_024e-6;
    p = p * x2 + -5.692_506_4e-5;
    p = p * x2 + -7.349_906_3e-4;
    p = p * x2 + -2.954_600_5e-3;
    p = p * x2 + -1.609_603_3e-2;
    let mut q = -1.456_607_2e-5_f32;
    q = q * x2 + -2.133_740_6e-4;
    q = q * x2 + -1.682_827e-3;
    q = q * x2 + -7.373_329_2e-3;
    q = q * x2 + -1.426_474e-2;
    x * p / q
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
        let inner = activation(self.intermediate.dense.forward(x.clone()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_the_error_function_to_single_precision() {
        // erf at these points, to 10 digits (Abramowitz & Stegun, table 7.1).
        #[allow(clippy::excessive_precision)] // as the table gives them
        let known: [(f32, f32); 8] = [
            (0.0, 0.0),
            (0.1, 0.112_462_916_0),
            (0.5, 0.520_499_877_8),
            (1.0, 0.842_700_792_9),
            (1.5, 0.966_105_146_5),
            (2.0, 0.995_322_265_0),
            (3.0, 0.999_977_909_5),
            (5.0, 1.0),
        ];
        for (x, e) in known {
            assert!((erf(x) - e).abs() < 2e-7, "erf({x}) = {} not {e}", erf(x));
            assert_eq!(erf(-x), -erf(x), "odd");
        }
    }

    #[test]
    fn the_cpu_activation_is_burns_gelu() {
        let device = Device::flex();
        let values: Vec<f32> = (0..2400).map(|i| (i as f32 - 1200.0) / 150.0).collect();
        let x = Tensor::<3>::from_data(burn::tensor::TensorData::new(values, [2, 30, 40]), &device);
        let ours = activation(x.clone()).into_data().try_to_vec::<f32>().unwrap();
        let burns = gelu(x).into_data().try_to_vec::<f32>().unwrap();
        // Both are single-precision approximations of erf: within 2e-6
        // (relative beyond 1).
        let worst = ours.iter().zip(&burns).map(|(a, b)| (a - b).abs() / b.abs().max(1.0)).fold(0f32, f32::max);
        assert!(worst < 2e-6, "largest difference {worst}");
    }
}
