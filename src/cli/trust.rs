//! Learning how far a library's evidence is trusted, after the evidence
//! changes (`import --evidence`, `eval --evidence`) or by hand (`adapt
//! --fusion`): a bar over the library's citing sentences, then one line of
//! what was learned; then where `check` flags a citation, learned from the
//! same sentences. The learning is [`crate::pipeline::fusion_learning`]'s
//! and [`crate::check::calibration`]'s.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Result;

use super::progress::count_bar;
use crate::check::calibration;
use crate::library::Library;
use crate::pipeline::fusion_learning::{self, Options, Outcome};
use crate::pipeline::learned_fusion::{self, LearnedFusion};
use crate::pipeline::{Models, Recommender, Settings};

/// Learns and keeps the library's evidence trust from its own citing
/// sentences (searched with the shipped fusion), then `check`'s flag
/// ([`learn_flag`]); says what it learned, or why there was too little to
/// learn from (then the shipped fusion stays).
pub fn learn(lib: &Arc<Library>, models: &Models) -> Result<Option<LearnedFusion>> {
    let learned = learn_trust(lib, models)?;
    learn_flag(lib, models)?;
    Ok(learned)
}

fn learn_trust(lib: &Arc<Library>, models: &Models) -> Result<Option<LearnedFusion>> {
    let opts = Options::default();
    eprintln!(
        "learning how far to trust the evidence from the library's own citing sentences (up to {}, each searched once, \
         as a draft would be, without its own document's evidence; a minute or two on two cores)",
        opts.sentences
    );
    let t = Instant::now();
    let bar = count_bar(0, "searching the library's citing sentences");
    let mut rec = Recommender::open(lib.clone(), models, None, Settings::default())?;
    let outcome = fusion_learning::learn_and_keep(&mut rec, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    match outcome {
        Outcome::Learned(learned) => {
            println!("{} ({:.0} s)", learned.describe(), t.elapsed().as_secs_f64());
            Ok(Some(*learned))
        }
        Outcome::TooFew { sentences, documents } => {
            println!(
                "evidence trusted as shipped: {sentences} usable citing sentences from {documents} documents are too few to learn from \
                 (at least {} from {} documents)",
                opts.min_sentences, opts.min_documents
            );
            Ok(None)
        }
    }
}

/// Learns and keeps where `check` flags a citation, from the scores of the
/// library's own citations (checked as a draft's are, with the library's
/// fusion); nothing without the models (the word channels' score flags
/// nothing).
pub fn learn_flag(lib: &Arc<Library>, models: &Models) -> Result<()> {
    let rec = Recommender::new(lib.clone(), models);
    if rec.rerank_stage().is_none() {
        return Ok(());
    }
    eprintln!(
        "learning where `check` flags a citation from the library's own citations (up to {} citing sentences, \
         each checked as a draft's; about a minute on two cores)",
        calibration::SENTENCES
    );
    let t = Instant::now();
    let bar = count_bar(0, "checking the library's own citations");
    let outcome = calibration::learn_and_keep(&rec, &|done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })?;
    bar.finish_and_clear();
    match outcome {
        calibration::Outcome::Learned(learned) => println!("{} ({:.0} s)", learned.describe(), t.elapsed().as_secs_f64()),
        calibration::Outcome::TooFew { sentences, documents } => println!(
            "check flags as shipped: {sentences} citing sentences from {documents} documents are too few to learn from \
             (at least {} from {} documents)",
            calibration::MIN_SENTENCES,
            calibration::MIN_DOCUMENTS
        ),
        calibration::Outcome::NoModels => {}
    }
    Ok(())
}

/// After new citing sentences (`import --evidence`): learned unless the
/// library's learning is turned off (`adapt --fusion --remove`).
pub fn learn_unless_off(lib: &Arc<Library>, models: &Models) -> Result<()> {
    if learned_fusion::is_off(lib) {
        println!("the evidence trust is not learned: it is turned off for this library (`citewise adapt --fusion` learns it)");
        return Ok(());
    }
    learn(lib, models).map(drop)
}

/// After new vectors: the library's learned trust is learned again if the
/// channels it was weighed against changed (a library without one keeps the
/// shipped fusion until its next `import --evidence`).
pub fn relearn_if_stale(lib: Arc<Library>, models: &Models) -> Result<()> {
    if learned_fusion::is_off(&lib) {
        return Ok(());
    }
    let Some(learned) = learned_fusion::read(&lib)? else { return Ok(()) };
    let rec = Recommender::open(lib.clone(), models, None, Settings::default())?;
    if let Some(why) = fusion_learning::stale(&learned, &rec) {
        eprintln!("the learned evidence trust is out of date ({why})");
        learn(&lib, models)?;
    }
    Ok(())
}
