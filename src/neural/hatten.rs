//! HAtten: a hierarchical attention text encoder for prefetching.
//!
//! A document is a few *paragraphs*, each of a field type: the local
//! context, the title, the abstract (a query has all three; a paper has a
//! title and an abstract). The paragraph encoder turns each paragraph's
//! frozen word vectors into one vector (projection + sinusoidal positions +
//! one transformer layer + multi-head attention pooling); the document
//! encoder adds a field-type embedding to each paragraph vector and pools
//! them the same way. Queries and papers share every weight; similarity is
//! the cosine of the L2-normalised outputs.

use std::path::Path;

use burn::config::Config;
use burn::module::{Module, Param};
use burn::nn::transformer::{TransformerEncoder, TransformerEncoderConfig, TransformerEncoderInput};
use burn::nn::{Embedding, EmbeddingConfig, Initializer, Linear, LinearConfig, PositionalEncoding, PositionalEncodingConfig};
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::activation::softmax;
use burn::tensor::{Bool, Device, Int, Tensor, TensorData};

use super::words::WordVectors;
use crate::error::{Error, Result};

/// Field types, in the order of the field-type embedding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Context = 0,
    Title = 1,
    Abstract = 2,
}

pub const FIELDS: [Field; 3] = [Field::Context, Field::Title, Field::Abstract];

/// The text of a query or a paper, by field (empty = absent).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DocText {
    pub context: String,
    pub title: String,
    pub abstract_text: String,
}

impl DocText {
    pub fn paper(title: &str, abstract_text: &str) -> DocText {
        DocText { context: String::new(), title: title.into(), abstract_text: abstract_text.into() }
    }

    /// The local context alone (no citing title or abstract).
    pub fn local_only(&self) -> DocText {
        DocText { context: self.context.clone(), ..DocText::default() }
    }

    fn field(&self, f: Field) -> &str {
        match f {
            Field::Context => &self.context,
            Field::Title => &self.title,
            Field::Abstract => &self.abstract_text,
        }
    }
}

#[derive(Config, Debug)]
pub struct HattenConfig {
    /// The frozen word vectors (a models-directory name, see
    /// [`super::words::WordVectors::load_named`]); GloVe when absent.
    pub word_vectors: Option<String>,
    /// Width of the frozen word vectors.
    #[config(default = 50)]
    pub word_dim: usize,
    /// Width of paragraph and document vectors (and of the output).
    #[config(default = 128)]
    pub d_model: usize,
    #[config(default = 4)]
    pub heads: usize,
    #[config(default = 256)]
    pub d_ff: usize,
    #[config(default = 0.1)]
    pub dropout: f64,
    /// Words kept per field: local context, title, abstract.
    #[config(default = 64)]
    pub max_context_words: usize,
    #[config(default = 32)]
    pub max_title_words: usize,
    #[config(default = 128)]
    pub max_abstract_words: usize,
    /// Width of the output when it differs from `d_model` (a linear map
    /// after pooling): a student that writes into its teacher's space.
    pub out_dim: Option<usize>,
}

impl HattenConfig {
    pub fn init(&self, device: &Device) -> Hatten {
        let layer = || {
            TransformerEncoderConfig::new(self.d_model, self.d_ff, self.heads, 1)
                .with_dropout(self.dropout)
                .with_norm_first(true)
                .init(device)
        };
        let max_len = self.max_context_words.max(self.max_title_words).max(self.max_abstract_words).max(8);
        Hatten {
            word_proj: LinearConfig::new(self.word_dim, self.d_model).init(device),
            positions: PositionalEncodingConfig::new(self.d_model).with_max_sequence_size(max_len).init(device),
            paragraph_layer: layer(),
            paragraph_pool: MultiHeadPool::new(self.d_model, self.heads, device),
            // Small, so that the field type does not drown the paragraph's content.
            field_types: EmbeddingConfig::new(FIELDS.len(), self.d_model)
                .with_initializer(Initializer::Normal { mean: 0.0, std: 0.02 })
                .init(device),
            document_layer: layer(),
            document_pool: MultiHeadPool::new(self.d_model, self.heads, device),
            output: self.out_dim.map(|o| LinearConfig::new(self.d_model, o).init(device)),
        }
    }

    /// Width of the vectors it writes.
    pub fn dim(&self) -> usize {
        self.out_dim.unwrap_or(self.d_model)
    }

    /// The models-directory name of the word vectors this encoder reads.
    pub fn word_vectors_name(&self) -> &str {
        self.word_vectors.as_deref().unwrap_or(super::words::GLOVE_DIR)
    }

    fn max_words(&self, f: Field) -> usize {
        match f {
            Field::Context => self.max_context_words,
            Field::Title => self.max_title_words,
            Field::Abstract => self.max_abstract_words,
        }
    }

    pub fn from_file(path: &Path) -> Result<HattenConfig> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        serde_json::from_str(&text).map_err(|e| Error::Parse { path: path.into(), line: e.line(), reason: e.to_string() })
    }
}

#[derive(Module, Debug)]
pub struct Hatten {
    pub word_proj: Linear,
    pub positions: PositionalEncoding,
    pub paragraph_layer: TransformerEncoder,
    pub paragraph_pool: MultiHeadPool,
    pub field_types: Embedding,
    pub document_layer: TransformerEncoder,
    pub document_pool: MultiHeadPool,
    pub output: Option<Linear>,
}

/// Attention pooling with one learned query per head:
/// `out = W_o · concat_h Σ_t softmax_t(q_h · k_t,h / √d_h) v_t,h`.
#[derive(Module, Debug)]
pub struct MultiHeadPool {
    pub key: Linear,
    pub value: Linear,
    pub queries: Param<Tensor<2>>,
    pub output: Linear,
}

impl MultiHeadPool {
    fn new(d: usize, heads: usize, device: &Device) -> MultiHeadPool {
        MultiHeadPool {
            key: LinearConfig::new(d, d).init(device),
            value: LinearConfig::new(d, d).init(device),
            queries: Initializer::Normal { mean: 0.0, std: 0.1 }.init([heads, d / heads], device),
            output: LinearConfig::new(d, d).init(device),
        }
    }

    /// `x`: `[batch, len, d]`; `pad`: true at padding. Returns `[batch, d]`.
    pub fn forward(&self, x: Tensor<3>, pad: Tensor<2, Bool>) -> Tensor<2> {
        let [b, l, d] = x.dims();
        let [h, dh] = self.queries.dims();
        let k = self.key.forward(x.clone()).reshape([b, l, h, dh]);
        let q = self.queries.val().reshape([1, 1, h, dh]);
        let scores = (k * q).sum_dim(3).reshape([b, l, h]) / (dh as f64).sqrt();
        let scores = scores.mask_fill(pad.reshape([b, l, 1]).expand([b, l, h]), -1.0e9);
        let w = softmax(scores, 1).reshape([b, l, h, 1]);
        let v = self.value.forward(x).reshape([b, l, h, dh]);
        let pooled = (v * w).sum_dim(1).reshape([b, d]);
        self.output.forward(pooled)
    }
}

impl Hatten {
    /// Paragraph vectors: `words` `[batch, len, word_dim]` → `[batch, d]`.
    pub fn paragraphs(&self, words: Tensor<3>, pad: Tensor<2, Bool>) -> Tensor<2> {
        // Scaled as in the original transformer, so that positions (the
        // same for every text) do not drown the words.
        let d = self.word_proj.weight.dims()[1] as f64;
        let x = self.positions.forward(self.word_proj.forward(words) * d.sqrt());
        let x = self.paragraph_layer.forward(TransformerEncoderInput::new(x).mask_pad(pad.clone()));
        self.paragraph_pool.forward(x, pad)
    }

    /// Document vectors, L2-normalised: paragraph vectors `[batch, n, d]`
    /// with their field types `[batch, n]` → `[batch, d]`.
    pub fn documents(&self, paragraphs: Tensor<3>, fields: Tensor<2, Int>, pad: Tensor<2, Bool>) -> Tensor<2> {
        let x = paragraphs + self.field_types.forward(fields);
        let x = self.document_layer.forward(TransformerEncoderInput::new(x).mask_pad(pad.clone()));
        let mut v = self.document_pool.forward(x, pad);
        if let Some(output) = &self.output {
            v = output.forward(v);
        }
        let norm = v.clone().powf_scalar(2.0).sum_dim(1).sqrt().clamp_min(1e-12);
        v / norm
    }

    /// Encodes texts into L2-normalised vectors `[docs.len(), d]`.
    pub fn encode(&self, config: &HattenConfig, words: &WordVectors, docs: &[DocText], device: &Device) -> Tensor<2> {
        let b = docs.len();
        let dim = words.dim();
        let ids: Vec<Vec<Vec<u32>>> =
            docs.iter().map(|d| FIELDS.iter().map(|f| words.ids(d.field(*f), config.max_words(*f))).collect()).collect();
        // Fields with a known word in some document of the batch; a document
        // with no known word at all is read as an empty title (the same
        // vector whatever else the batch holds).
        let any_empty = ids.iter().any(|fields| fields.iter().all(Vec::is_empty));
        let present: Vec<Field> = FIELDS
            .iter()
            .copied()
            .filter(|f| ids.iter().any(|fields| !fields[*f as usize].is_empty()) || (*f == Field::Title && any_empty))
            .collect();
        let mut paragraph_vectors = Vec::with_capacity(present.len());
        let mut field_pad = vec![true; b * present.len()];
        for (j, f) in present.iter().enumerate() {
            let rows: Vec<&Vec<u32>> = ids.iter().map(|fields| &fields[*f as usize]).collect();
            let len = rows.iter().map(|r| r.len()).max().unwrap_or(0).max(1);
            let mut values = vec![0f32; b * len * dim];
            let mut pad = vec![true; b * len];
            for (i, row) in rows.iter().enumerate() {
                // An absent field is one zero word (masked at document level).
                pad[i * len] = false;
                for (t, id) in row.iter().enumerate() {
                    values[(i * len + t) * dim..(i * len + t + 1) * dim].copy_from_slice(words.vector(*id));
                    pad[i * len + t] = false;
                }
                field_pad[i * present.len() + j] = row.is_empty();
            }
            let x = Tensor::<3>::from_data(TensorData::new(values, [b, len, dim]), device);
            let pad = Tensor::<2, Bool>::from_data(TensorData::new(pad, [b, len]), device);
            paragraph_vectors.push(self.paragraphs(x, pad));
        }
        let title = present.iter().position(|f| *f == Field::Title);
        for i in 0..b {
            let row = &mut field_pad[i * present.len()..(i + 1) * present.len()];
            if row.iter().all(|p| *p) {
                row[title.expect("an empty document puts the title in the batch")] = false;
            }
        }
        let n = present.len();
        let paragraphs = Tensor::stack(paragraph_vectors, 1);
        let field_ids: Vec<i64> = (0..b).flat_map(|_| present.iter().map(|f| *f as i64)).collect();
        let fields = Tensor::<2, Int>::from_data(TensorData::new(field_ids, [b, n]), device);
        let pad = Tensor::<2, Bool>::from_data(TensorData::new(field_pad, [b, n]), device);
        self.documents(paragraphs, fields, pad)
    }

    /// Writes the weights as safetensors.
    pub fn save(&self, path: &Path) -> Result<()> {
        let mut store = SafetensorsStore::from_file(path).overwrite(true);
        self.save_into(&mut store).map_err(|e| Error::model(path.display().to_string(), e.to_string()))
    }

    /// Loads weights written by [`Hatten::save`] into a model built from
    /// `config`; a missing or mis-shaped tensor is an error naming it.
    pub fn load(config: &HattenConfig, path: &Path, device: &Device) -> Result<Hatten> {
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        Self::load_bytes(config, bytes, &path.display().to_string(), device)
    }

    pub fn load_bytes(config: &HattenConfig, bytes: Vec<u8>, name: &str, device: &Device) -> Result<Hatten> {
        let mut model = config.init(device);
        let mut store = SafetensorsStore::from_bytes(Some(bytes)).allow_partial(true);
        let result = model.load_from(&mut store).map_err(|e| Error::model(name, e.to_string()))?;
        super::weights::check_applied(&result, name)?;
        Ok(model)
    }
}
