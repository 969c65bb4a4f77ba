//! What a reranker run trains on: the examples (a citation context with the
//! prefetched papers), the inputs of a run, and the pairs they encode to.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::corpus::Paper;
use crate::error::Result;
use crate::neural::cross_encoder::{PairEncoder, QueryTokens, RerankerConfig};
use crate::neural::tokenizer::Encoded;

/// One citation context with the pipeline's prefetched papers.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RerankExample {
    pub local: String,
    pub title: String,
    pub abstract_text: String,
    /// Indices (into the papers) of the cited papers.
    pub cited: Vec<usize>,
    /// Indices of the prefetched papers, best first.
    pub prefetched: Vec<usize>,
}

/// What a reranker run starts from and trains on.
#[derive(Clone, Copy)]
pub struct RerankInputs<'a> {
    pub config: &'a RerankerConfig,
    /// The base model's directory (its `tokenizer.json`, `config.json` and
    /// weights: the frozen lower layers and the top's starting point).
    pub base_dir: &'a Path,
    /// Fine-tuned top weights to go on from (as a reranker's
    /// `model.safetensors` holds them); none: the base model's top. The run
    /// validates them before its first step, so they are the first best and
    /// only a step that beats them replaces them.
    pub start: Option<&'a [u8]>,
    /// The papers the examples' indices point into.
    pub papers: &'a [Paper],
    pub train: &'a [RerankExample],
    pub val: &'a [RerankExample],
}

/// Examples and papers as the cross-encoder reads them.
pub(super) struct Encoders<'a> {
    pub(super) pairs: &'a PairEncoder,
    pub(super) papers: &'a [Paper],
}

impl Encoders<'_> {
    pub(super) fn query(&self, e: &RerankExample) -> Result<QueryTokens> {
        self.pairs.query(&e.local, &e.title, &e.abstract_text)
    }
    pub(super) fn pair(&self, q: &QueryTokens, paper: usize) -> Result<Encoded> {
        let p = &self.papers[paper];
        Ok(self.pairs.pair(q, &self.pairs.candidate(&p.title, &p.abstract_text)?))
    }
}
