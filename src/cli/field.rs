//! The field a trained model knows, written beside its weights (both
//! trainers write it; the field gates read it).

use anyhow::Result;

use crate::neural::field::{FieldProfile, FIELD_FILE};

/// Writes the field profile of the benchmark's `train` queries (their local
/// context, as the models read it) into `out`.
pub fn write_field(bench: &std::path::Path, out: &std::path::Path) -> Result<()> {
    let contexts = crate::eval::harness::load_split(bench, crate::eval::harness::TRAIN_SPLIT)?;
    let texts: Vec<String> = contexts
        .iter()
        .map(|c| crate::pipeline::query::strip_citations(&c.context, &crate::corpus::citation_markup::CiteGrammar::PLAIN))
        .collect();
    let profile = FieldProfile::from_texts(texts.iter().map(String::as_str));
    std::fs::create_dir_all(out)?;
    profile.write_beside(out)?;
    eprintln!(
        "field profile: {} terms known from {} training queries in {}",
        profile.len(),
        contexts.len(),
        out.join(FIELD_FILE).display()
    );
    Ok(())
}
