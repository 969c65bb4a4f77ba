//! A ready-to-use HAtten encoder: weights, word vectors and device.

use std::path::Path;
use std::sync::Arc;

use super::backend::Backend;

use super::field::FieldProfile;
use super::hatten::{DocText, Hatten, HattenConfig};
use super::models::models_dir;
use super::train::embed;
use super::words::WordVectors;
use crate::error::{Error, Result};
use burn::tensor::Device;

/// The directory (inside the models directory) of the HAtten weights:
/// `config.json` + `model.safetensors` as `citewise train hatten` writes them.
pub const HATTEN_DIR: &str = "hatten";

/// The HAtten weights shipped with citewise (config and weights; how they
/// were trained is in `assets/README.md`), used when the models directory
/// holds none of its own.
const SHIPPED: (&str, &[u8]) = (include_str!("../../assets/hatten/config.json"), include_bytes!("../../assets/hatten/model.safetensors"));

pub struct HattenEncoder {
    model: Hatten,
    config: HattenConfig,
    words: Arc<WordVectors>,
    device: Device,
    /// Identifies the weights (vectors of another encoder are not comparable).
    fingerprint: String,
    /// Where the weights came from.
    pub source: String,
    /// The backend and adapter it runs on, when loaded by [`HattenEncoder::load_on`].
    pub backend: String,
    /// The field it was trained in (none: unknown, so never gated).
    pub field: Option<Arc<FieldProfile>>,
}

impl HattenEncoder {
    /// The weights in the models directory's `hatten/` (written by
    /// `citewise train hatten`), else the shipped ones. Either way the word
    /// vectors they name come from the models directory.
    pub fn load_default(device: &Device) -> Result<HattenEncoder> {
        let dir = models_dir()?.join(HATTEN_DIR);
        if dir.join("model.safetensors").exists() {
            let config = HattenConfig::from_file(&dir.join("config.json"))?;
            let words = WordVectors::load_named(config.word_vectors_name())?;
            return Self::from_dir(&dir, config, Arc::new(words), device);
        }
        Self::shipped(device)
    }

    /// The weights shipped in `assets/hatten/`.
    pub fn shipped(device: &Device) -> Result<HattenEncoder> {
        let name = "assets/hatten/config.json";
        let config: HattenConfig =
            serde_json::from_str(SHIPPED.0).map_err(|e| Error::Parse { path: name.into(), line: e.line(), reason: e.to_string() })?;
        let words = WordVectors::load_named(config.word_vectors_name())?;
        let mut e = Self::from_parts(config, SHIPPED.1.to_vec(), "shipped (assets/hatten)".into(), Arc::new(words), device)?;
        e.field = Some(FieldProfile::shipped());
        Ok(e)
    }

    /// Weights written by `citewise train hatten` in `dir`.
    pub fn load_dir(dir: &Path, words: Arc<WordVectors>, device: &Device) -> Result<HattenEncoder> {
        Self::from_dir(dir, HattenConfig::from_file(&dir.join("config.json"))?, words, device)
    }

    /// The weights in `dir` under an already read `config`.
    fn from_dir(dir: &Path, config: HattenConfig, words: Arc<WordVectors>, device: &Device) -> Result<HattenEncoder> {
        let path = dir.join("model.safetensors");
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let mut e = Self::from_parts(config, bytes, path.display().to_string(), words, device)?;
        e.field = FieldProfile::load_beside(dir)?.map(Arc::new);
        Ok(e)
    }

    fn from_parts(config: HattenConfig, bytes: Vec<u8>, source: String, words: Arc<WordVectors>, device: &Device) -> Result<HattenEncoder> {
        if config.word_dim != words.dim() || config.word_vectors_name() != words.name {
            return Err(Error::Config(format!(
                "{source}: the encoder expects {}-d word vectors from {}, the loaded ones are {}-d from {}",
                config.word_dim,
                config.word_vectors_name(),
                words.dim(),
                words.name
            )));
        }
        let fingerprint = format!("hatten-{:016x}", crate::util::fnv1a64(&bytes));
        let model = Hatten::load_bytes(&config, bytes, &source, device)?;
        Ok(HattenEncoder { model, config, words, device: device.clone(), fingerprint, source, backend: String::new(), field: None })
    }

    pub fn dim(&self) -> usize {
        self.config.d_model
    }

    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    /// L2-normalised vectors, `texts.len() × dim`, row-major.
    pub fn encode(&self, texts: &[DocText]) -> Vec<f32> {
        embed(&self.model, &self.config, &self.words, texts, &self.device, &|_| {})
    }

    /// Like [`HattenEncoder::encode`], reporting each batch's size.
    pub fn encode_with_progress(&self, texts: &[DocText], on_batch: &dyn Fn(u64)) -> Vec<f32> {
        embed(&self.model, &self.config, &self.words, texts, &self.device, on_batch)
    }
}

impl HattenEncoder {
    /// The default HAtten encoder on `backend`, saying where it runs.
    pub fn load_on(backend: &Backend) -> Result<HattenEncoder> {
        let mut e = HattenEncoder::load_default(&backend.device)?;
        e.backend = format!("{} on {}", backend.name, backend.adapter);
        Ok(e)
    }
}
