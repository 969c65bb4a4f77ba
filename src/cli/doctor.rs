use std::path::Path;

use anyhow::Result;
use burn::tensor::Device;

use crate::library::Library;
use crate::neural::bert::{Bert, BertConfig};
use crate::neural::models::{models_dir, FETCH_HINT};
use crate::pipeline::rerank::RerankStage;
use crate::pipeline::Models;

/// The models citewise knows, and what each is for.
pub const MODELS: &[(&str, &str)] = &[
    ("all-minilm-l6-v2", "BERT 6×384, general sentence encoder"),
    ("minilm-citation-v4", "BERT 6×384 tuned on citation context → paper pairs"),
    ("paraphrase-minilm-l3-v2", "BERT 3×384, fast"),
];

/// Prints versions, the library, the models (loading each once) and the backend.
pub fn run(library: &Path, models: &Models) -> Result<()> {
    println!("citewise {}", env!("CARGO_PKG_VERSION"));
    match Library::open(library) {
        Ok(lib) => {
            let ev = lib.evidence().stats()?;
            println!("library   {} ({} papers, {} evidence spans)", library.display(), lib.papers().num_papers(), ev.spans);
            match crate::index::vectors::VectorStore::manifest_len(&lib.citation_vectors_dir()) {
                Some(n) => println!("          citation channel: {n} of {} papers encoded", lib.papers().num_papers()),
                None => println!("          citation channel: off (`citewise embed` encodes the papers)"),
            }
        }
        Err(e) => println!("library   {e}"),
    }
    let device = Device::flex();
    let adapters = crate::neural::backend::adapters();
    for a in &adapters {
        println!("adapter   {} ({:?}, {}){}", a.name, a.kind, a.api, if a.is_hardware() { "" } else { " — software, not used" });
    }
    if adapters.is_empty() {
        println!("adapter   none (no Vulkan/Metal/DX12 driver found)");
    }
    let backend = models.backend();
    println!("backend   {} on {}", backend.name, backend.adapter);
    let dir = models_dir()?;
    println!("models    {}", dir.display());
    for (name, what) in MODELS {
        let m = dir.join(name);
        let status = if !m.join("model.safetensors").exists() {
            format!("missing: {FETCH_HINT}")
        } else {
            match BertConfig::from_file(&m.join("config.json"))
                .and_then(|c| Bert::load(&c, &m.join("model.safetensors"), &device).map(|_| c))
            {
                Ok(c) => format!("ok ({} layers, {} wide)", c.num_hidden_layers, c.hidden_size),
                Err(e) => format!("broken: {e}"),
            }
        };
        println!("  {name:<24} {status}  — {what}");
    }
    match crate::neural::encoder::HattenEncoder::load_default(&device) {
        Ok(e) => println!("  {:<24} ok ({} wide, {}) — dense prefetch encoder", "hatten", e.dim(), e.source),
        Err(e) => println!("  {:<24} {e}", "hatten"),
    }
    // Loaded where the editor runs it, so the depth printed is the one used.
    match models.reranker() {
        Ok(r) => {
            let depth = RerankStage::new(r.clone()).depth();
            println!(
                "  {:<24} ok (on {}, top {} layer(s) fine-tuned, {}; runs on {}, reranks the top {depth} by default) — cross-encoder reranker",
                "reranker", r.config.base, r.config.trained_layers, r.source, r.backend
            )
        }
        Err(e) => println!("  {:<24} {e}", "reranker"),
    }
    Ok(())
}
