//! Library-level errors. The binary edge wraps these in `anyhow`.

use std::path::PathBuf;

/// Everything that can go wrong inside the citewise library crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}:{line}: {reason}")]
    Parse { path: PathBuf, line: usize, reason: String },
    #[error("search index: {0}")]
    Index(#[from] tantivy::TantivyError),
    #[error("{0}")]
    Library(String),
    #[error("{0}")]
    InvalidQuery(String),
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
