//! A ready-to-use reranker: the base model, its fine-tuned top, the pair
//! tokenizer and the device.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::sync::Mutex;

use burn::tensor::Device;

use super::backend::Backend;
use super::bert::Bert;
use super::cross_encoder::{logits, probability, split_base, PairEncoder, QueryTokens, RerankerConfig, RerankerTop};
use super::field::FieldProfile;
use super::models::{model_dir, models_dir};
use crate::error::{Error, Result};

/// The directory (inside the models directory) of a fine-tuned reranker:
/// `reranker.json` + `model.safetensors` as `citewise train reranker` writes them.
pub const RERANKER_DIR: &str = "reranker";

/// The fine-tuned reranker shipped with citewise (its config and weights),
/// used when the models directory holds none of its own.
const SHIPPED: Option<(&str, &[u8])> =
    Some((include_str!("../../assets/reranker/reranker.json"), include_bytes!("../../assets/reranker/model.safetensors")));

/// Where `citewise adapt --reranker` publishes a library's own reranker,
/// relative to the library directory.
pub const ADAPTED_RERANKER_DIR: &str = "models/reranker";

/// A fine-tuned reranker's files, before they are loaded on a device.
pub struct RerankerWeights {
    pub config: RerankerConfig,
    /// The top layers and head (`model.safetensors`).
    pub bytes: Vec<u8>,
    /// Where they came from.
    pub source: String,
    /// The field they were fine-tuned in.
    pub field: Option<std::sync::Arc<FieldProfile>>,
}

impl RerankerWeights {
    /// `reranker.json`, `model.safetensors` and `field.tsv` (when there) in `dir`.
    pub fn in_dir(dir: &Path) -> Result<RerankerWeights> {
        let config = RerankerConfig::from_file(&dir.join("reranker.json"))?;
        let path = dir.join("model.safetensors");
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        Ok(RerankerWeights {
            config,
            bytes,
            source: path.display().to_string(),
            field: FieldProfile::load_beside(dir)?.map(std::sync::Arc::new),
        })
    }

    /// The models directory's `reranker/`, else the shipped one.
    pub fn default_weights() -> Result<RerankerWeights> {
        let dir = models_dir()?.join(RERANKER_DIR);
        if dir.join("model.safetensors").exists() {
            return Self::in_dir(&dir);
        }
        match SHIPPED {
            Some((config, weights)) => Ok(RerankerWeights {
                config: RerankerConfig::from_json(config, Path::new("assets/reranker/reranker.json"))?,
                bytes: weights.to_vec(),
                source: "shipped (assets/reranker)".into(),
                field: Some(FieldProfile::shipped()),
            }),
            None => {
                Err(Error::Missing(format!("no fine-tuned reranker: train one with `citewise train reranker --out {}`", dir.display())))
            }
        }
    }
}

pub struct Reranker {
    bottom: Bert,
    top: RerankerTop,
    pairs: PairEncoder,
    device: Device,
    pub config: RerankerConfig,
    /// Where the fine-tuned weights came from.
    pub source: String,
    /// The backend and adapter it runs on, when loaded by [`Reranker::load_on`].
    pub backend: String,
    /// Whether it runs on the wgpu backend (set by [`Reranker::load_on`]).
    pub on_gpu: bool,
    /// The field it was fine-tuned in (none: unknown, so never gated).
    pub field: Option<std::sync::Arc<FieldProfile>>,
    /// Scores of pairs seen before, by a hash of their token ids: the same
    /// paragraph asked again, or reranked deeper, costs only its new pairs.
    seen: Mutex<HashMap<u64, f32>>,
}

/// Pair scores kept in memory at most.
const SEEN_LIMIT: usize = 100_000;

impl Reranker {
    /// The base model from the models directory with fine-tuned top weights.
    pub fn from_parts(config: RerankerConfig, weights: Vec<u8>, source: String, device: &Device) -> Result<Reranker> {
        let base = model_dir(&config.base)?;
        let (bottom, top) = split_base(&config, &base, device)?;
        let top = top.load_bytes(weights, &source)?;
        let pairs = PairEncoder::new(&base.join("tokenizer.json"), config.max_len, config.max_candidate_tokens)?;
        Ok(Reranker {
            bottom,
            top,
            pairs,
            device: device.clone(),
            config,
            source,
            backend: String::new(),
            on_gpu: false,
            field: None,
            seen: Mutex::new(HashMap::new()),
        })
    }

    /// A reranker written by `citewise train reranker` in `dir`.
    pub fn load_dir(dir: &Path, device: &Device) -> Result<Reranker> {
        Self::from_weights(RerankerWeights::in_dir(dir)?, device)
    }

    /// The models directory's `reranker/`, else the shipped one.
    pub fn load_default(device: &Device) -> Result<Reranker> {
        Self::from_weights(RerankerWeights::default_weights()?, device)
    }

    /// The reranker adapted to the library in `library` (`citewise adapt
    /// --reranker` publishes it to [`ADAPTED_RERANKER_DIR`]), else the
    /// default one.
    pub fn for_library(library: Option<&Path>, device: &Device) -> Result<Reranker> {
        if let Some(dir) = library.map(|l| l.join(ADAPTED_RERANKER_DIR)).filter(|d| d.join("model.safetensors").exists()) {
            let mut w = RerankerWeights::in_dir(&dir)?;
            w.source = format!("adapted to this library ({})", dir.display());
            return Self::from_weights(w, device);
        }
        Self::load_default(device)
    }

    fn from_weights(w: RerankerWeights, device: &Device) -> Result<Reranker> {
        let mut r = Self::from_parts(w.config, w.bytes, w.source, device)?;
        r.field = w.field;
        Ok(r)
    }

    /// The frozen lower part and the fine-tuned top.
    pub fn into_parts(self) -> (RerankerConfig, Bert, RerankerTop) {
        (self.config, self.bottom, self.top)
    }

    /// Tokens of the citing side of a query.
    pub fn query(&self, local: &str, title: &str, abstract_text: &str) -> Result<QueryTokens> {
        self.pairs.query(local, title, abstract_text)
    }

    /// Scores in 0..1 of candidates given as (title, abstract), in order.
    pub fn score(&self, query: &QueryTokens, candidates: &[(&str, &str)]) -> Result<Vec<f32>> {
        let mut pairs = Vec::with_capacity(candidates.len());
        for (title, abstract_text) in candidates {
            pairs.push(self.pairs.pair(query, &self.pairs.candidate(title, abstract_text)?));
        }
        let keys: Vec<u64> = pairs.iter().map(|p| pair_key(&p.ids, &p.type_ids)).collect();
        let mut out: Vec<Option<f32>> = {
            let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            keys.iter().map(|k| seen.get(k).copied()).collect()
        };
        let missing: Vec<usize> = (0..pairs.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let todo: Vec<_> = missing.iter().map(|&i| pairs[i].clone()).collect();
            let fresh: Vec<f32> = logits(&self.bottom, &self.top, &todo, &self.device).into_iter().map(probability).collect();
            let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
            if seen.len() + missing.len() > SEEN_LIMIT {
                seen.clear();
            }
            for (&i, score) in missing.iter().zip(fresh) {
                seen.insert(keys[i], score);
                out[i] = Some(score);
            }
        }
        Ok(out.into_iter().map(|s| s.expect("every score filled")).collect())
    }
}

/// A hash of a pair's input.
fn pair_key(ids: &[u32], type_ids: &[u32]) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    ids.hash(&mut h);
    type_ids.hash(&mut h);
    h.finish()
}

impl Reranker {
    /// The reranker of the library in `library` (see
    /// [`Reranker::for_library`]) on `backend`, saying where it runs.
    pub fn load_on(library: Option<&Path>, backend: &Backend) -> Result<Reranker> {
        let mut r = Reranker::for_library(library, &backend.device)?;
        r.backend = format!("{} on {}", backend.name, backend.adapter);
        r.on_gpu = backend.is_gpu();
        Ok(r)
    }
}
