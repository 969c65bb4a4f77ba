//! Library-level errors. The binary edge wraps these in `anyhow`.

use std::path::PathBuf;

/// A source error of any type (a model loader's, a decoder's).
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong inside the citewise library crate; each
/// variant says what failed and keeps its source.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or writing a file.
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A line of a user's file that cannot be read (BibTeX, JSON Lines).
    #[error("{path}:{line}: {reason}")]
    Parse { path: PathBuf, line: usize, reason: String },
    /// An input that cannot be used as given (a file of an unknown type, a
    /// benchmark directory without its files, a read-only bibliography).
    #[error("{0}")]
    Input(String),
    /// A setting that cannot be used: the config file, a theme, a keymap,
    /// fusion weights, stage names.
    #[error("{0}")]
    Config(String),
    /// Something a command needs that is not there yet (paper vectors not
    /// computed, no home directory to keep the library in).
    #[error("{0}")]
    Missing(String),
    /// A model that is not installed or does not load.
    #[error("model `{model}`: {source}")]
    Model {
        model: String,
        #[source]
        source: BoxError,
    },
    /// A model asked of a `Models` value that has none.
    #[error("{model}: no models in use")]
    ModelOff { model: &'static str },
    /// A stored file of the library (an index record, vectors, a journal)
    /// that does not read as what was written.
    #[error("{path}: {source}")]
    Corrupt {
        path: PathBuf,
        #[source]
        source: BoxError,
    },
    /// An index that another process is writing to (a second import).
    #[error("another citewise import is writing to {}; wait for it to finish", .0.display())]
    Busy(PathBuf),
    /// The search index.
    #[error("search index: {0}")]
    Index(#[from] tantivy::TantivyError),
    /// Encoding a record as JSON.
    #[error("encoding a record: {0}")]
    Encode(#[from] serde_json::Error),
    /// Drawing on a terminal.
    #[error("terminal: {0}")]
    Terminal(String),
    /// The query itself (empty, nothing but markup).
    #[error("{0}")]
    InvalidQuery(String),
    /// A Zotero data directory or database that cannot be read as one.
    #[error("{path}: {reason}")]
    Zotero { path: PathBuf, reason: String },
}

impl Error {
    /// Wraps an I/O error with the path it happened on.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }

    /// A model that failed, with why.
    pub fn model(model: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Error::Model { model: model.into(), source: source.into() }
    }

    /// A stored file that does not read, with why.
    pub fn corrupt(path: impl Into<PathBuf>, source: impl Into<BoxError>) -> Self {
        Error::Corrupt { path: path.into(), source: source.into() }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;
