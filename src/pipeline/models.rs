//! The neural models a front end works with, as one value: the HAtten
//! encoder, the citation encoder (a bi-encoder tuned on citation context →
//! cited paper pairs) with its span and paper cosine caches, and the
//! cross-encoder reranker. Each front end (the CLI, the editor, the
//! language server) builds one `Models` and hands it to every recommender
//! it makes, so the models load once and their caches are shared; nothing
//! is process-wide. Each model loads on first use; a failed load is
//! retried on the next use (e.g. after the models were fetched), and its
//! error says what is missing.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::paper_cosines::PaperCosines;
use super::span_cosines::SpanCosines;
use crate::error::{Error, Result};
use crate::neural::backend::{select, Backend, DevicePreference};
use crate::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
use crate::neural::encoder::HattenEncoder;
use crate::neural::reranker::Reranker;

/// A value loaded on first use; a failed load leaves it empty.
struct Lazy<T>(Mutex<Option<Arc<T>>>);

impl<T> Lazy<T> {
    fn new() -> Lazy<T> {
        Lazy(Mutex::new(None))
    }

    fn with(value: T) -> Lazy<T> {
        Lazy(Mutex::new(Some(Arc::new(value))))
    }

    fn get(&self, load: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = slot.as_ref() {
            return Ok(v.clone());
        }
        let v = Arc::new(load()?);
        *slot = Some(v.clone());
        Ok(v)
    }
}

/// Which models a `Models` may load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Availability {
    /// Whatever is installed.
    Installed,
    /// None: every neural stage is off (tests whose output must not depend
    /// on what is installed).
    Off,
}

/// The models of one front end; cheap to share by reference.
pub struct Models {
    availability: Availability,
    device: DevicePreference,
    /// The library whose adapted weights are used where it has them.
    library: Option<PathBuf>,
    backend: Lazy<Backend>,
    hatten: Lazy<HattenEncoder>,
    citation: Lazy<BiEncoder>,
    reranker: Lazy<Reranker>,
    span_cosines: Lazy<SpanCosines>,
    paper_cosines: Lazy<PaperCosines>,
}

impl Default for Models {
    fn default() -> Models {
        Models::installed()
    }
}

impl Models {
    /// The installed models, on a hardware GPU when there is one, else on
    /// the CPU.
    pub fn installed() -> Models {
        Models::on(DevicePreference::Auto)
    }

    /// The installed models on the device `device` asks for.
    pub fn on(device: DevicePreference) -> Models {
        Models {
            availability: Availability::Installed,
            device,
            library: None,
            backend: Lazy::new(),
            hatten: Lazy::new(),
            citation: Lazy::new(),
            reranker: Lazy::new(),
            span_cosines: Lazy::new(),
            paper_cosines: Lazy::new(),
        }
    }

    /// No models: recommenders get the channels that need none (BM25 and
    /// lexical evidence) and no rerank stage.
    pub fn none() -> Models {
        Models { availability: Availability::Off, ..Models::installed() }
    }

    /// These models for the library in `dir`: the weights adapted to it
    /// (`citewise adapt`) where it has them.
    pub fn for_library(mut self, dir: Option<PathBuf>) -> Models {
        self.library = dir;
        self
    }

    /// The device these models were asked to run on.
    pub fn device_preference(&self) -> DevicePreference {
        self.device
    }

    /// These models with `reranker` as the cross-encoder.
    pub fn with_reranker(mut self, reranker: Reranker) -> Models {
        self.reranker = Lazy::with(reranker);
        self
    }

    fn available(&self, model: &'static str) -> Result<()> {
        match self.availability {
            Availability::Installed => Ok(()),
            Availability::Off => Err(Error::ModelOff { model }),
        }
    }

    /// The device the models run on (chosen once).
    pub fn backend(&self) -> Arc<Backend> {
        self.backend.get(|| Ok(select(self.device))).expect("choosing a device cannot fail")
    }

    /// The HAtten encoder (the dense prefetch channel).
    pub fn hatten(&self) -> Result<Arc<HattenEncoder>> {
        self.available("hatten")?;
        self.hatten.get(|| HattenEncoder::load_on(self.library.as_deref(), &self.backend()))
    }

    /// The citation encoder (the citation channel, span and paper cosines).
    pub fn citation_encoder(&self) -> Result<Arc<BiEncoder>> {
        self.available(CITATION_ENCODER)?;
        self.citation.get(|| BiEncoder::load(CITATION_ENCODER, &self.backend().device))
    }

    /// The cross-encoder reranker.
    pub fn reranker(&self) -> Result<Arc<Reranker>> {
        self.available("reranker")?;
        self.reranker.get(|| Reranker::load_on(self.library.as_deref(), &self.backend()))
    }

    /// The query-to-span cosines under the citation encoder, with their
    /// cache (shared by the evidence channel and the cited-for signal).
    pub fn span_cosines(&self) -> Result<Arc<SpanCosines>> {
        let encoder = self.citation_encoder()?;
        self.span_cosines.get(|| Ok(SpanCosines::new(encoder)))
    }

    /// The query-to-paper cosines under the citation encoder, with their
    /// cache (the rerank stage's citation signal).
    pub fn paper_cosines(&self) -> Result<Arc<PaperCosines>> {
        let encoder = self.citation_encoder()?;
        self.paper_cosines.get(|| Ok(PaperCosines::new(encoder)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_models_means_every_neural_stage_says_it_is_off() {
        let m = Models::none();
        let e = m.reranker().err().expect("off");
        assert!(e.to_string().contains("reranker"), "{e}");
        assert!(m.hatten().is_err() && m.citation_encoder().is_err() && m.span_cosines().is_err());
    }

    #[test]
    fn a_failed_load_is_tried_again() {
        let slot: Lazy<u32> = Lazy::new();
        assert!(slot.get(|| Err(Error::Config("not yet".into()))).is_err());
        assert_eq!(*slot.get(|| Ok(7)).unwrap(), 7);
        assert_eq!(*slot.get(|| Ok(8)).unwrap(), 7, "loaded once");
    }
}
