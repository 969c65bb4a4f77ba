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

/// Where a library keeps the HAtten weights adapted to its papers
/// (`citewise adapt`), relative to the library directory.
pub const ADAPTED_DIR: &str = "models/hatten";

/// What an encoder is built from: its config, safetensors bytes, where they
/// came from, and the field it was trained in.
pub struct Weights {
    pub config: HattenConfig,
    pub bytes: Vec<u8>,
    pub source: String,
    pub field: Option<Arc<FieldProfile>>,
}

impl Weights {
    /// The weights in the models directory's `hatten/` (written by
    /// `citewise train hatten`), else the shipped ones.
    pub fn default_weights() -> Result<Weights> {
        let dir = models_dir()?.join(HATTEN_DIR);
        if dir.join("model.safetensors").exists() {
            return Weights::in_dir(&dir);
        }
        Ok(Weights::shipped())
    }

    /// The weights shipped in `assets/hatten/`.
    pub fn shipped() -> Weights {
        let config: HattenConfig = serde_json::from_str(SHIPPED.0).expect("the shipped HAtten config parses");
        Weights { config, bytes: SHIPPED.1.to_vec(), source: "shipped (assets/hatten)".into(), field: Some(FieldProfile::shipped()) }
    }

    /// `config.json`, `model.safetensors` and (when there is one) `field.tsv` in `dir`.
    pub fn in_dir(dir: &Path) -> Result<Weights> {
        let config = HattenConfig::from_file(&dir.join("config.json"))?;
        let path = dir.join("model.safetensors");
        let bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
        let field = FieldProfile::load_beside(dir)?.map(Arc::new);
        Ok(Weights { config, bytes, source: path.display().to_string(), field })
    }
}

/// What identifies HAtten weights (their safetensors bytes): vectors of
/// weights with another fingerprint are not comparable.
pub fn fingerprint_of(bytes: &[u8]) -> String {
    format!("hatten-{:016x}", crate::util::fnv1a64(bytes))
}

impl HattenEncoder {
    /// The default weights ([`Weights::default_weights`]). Either way the
    /// word vectors they name come from the models directory.
    pub fn load_default(device: &Device) -> Result<HattenEncoder> {
        Self::from_weights(Weights::default_weights()?, device)
    }

    /// The weights adapted to the library in `library` when it has them
    /// ([`ADAPTED_DIR`]), else the default ones.
    pub fn for_library(library: Option<&Path>, device: &Device) -> Result<HattenEncoder> {
        if let Some(dir) = library.map(|l| l.join(ADAPTED_DIR)).filter(|d| d.join("model.safetensors").exists()) {
            let mut w = Weights::in_dir(&dir)?;
            w.source = format!("adapted to this library ({})", dir.display());
            return Self::from_weights(w, device);
        }
        Self::load_default(device)
    }

    /// The weights shipped in `assets/hatten/`.
    pub fn shipped(device: &Device) -> Result<HattenEncoder> {
        Self::from_weights(Weights::shipped(), device)
    }

    /// Weights written by `citewise train hatten` in `dir`.
    pub fn load_dir(dir: &Path, words: Arc<WordVectors>, device: &Device) -> Result<HattenEncoder> {
        Self::with_words(Weights::in_dir(dir)?, words, device)
    }

    /// An encoder of `w`, reading the word vectors its config names.
    pub fn from_weights(w: Weights, device: &Device) -> Result<HattenEncoder> {
        let words = WordVectors::load_named(w.config.word_vectors_name())?;
        Self::with_words(w, Arc::new(words), device)
    }

    fn with_words(w: Weights, words: Arc<WordVectors>, device: &Device) -> Result<HattenEncoder> {
        let mut e = Self::from_parts(w.config, w.bytes, w.source, words, device)?;
        e.field = w.field;
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
        let fingerprint = fingerprint_of(&bytes);
        let model = Hatten::load_bytes(&config, bytes, &source, device)?;
        Ok(HattenEncoder { model, config, words, device: device.clone(), fingerprint, source, backend: String::new(), field: None })
    }

    pub fn dim(&self) -> usize {
        self.config.dim()
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
    /// The HAtten encoder of the library in `library` (adapted weights when
    /// it has them, else the default) on `backend`, saying where it runs.
    pub fn load_on(library: Option<&Path>, backend: &Backend) -> Result<HattenEncoder> {
        let mut e = HattenEncoder::for_library(library, &backend.device)?;
        e.backend = format!("{} on {}", backend.name, backend.adapter);
        Ok(e)
    }
}
