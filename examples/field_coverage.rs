#![allow(clippy::unwrap_used, clippy::too_many_lines)] // a diagnostic tool, run by hand
//! How well a library's own sentences are covered by the shipped models'
//! training field and by the field of the library's adapted weights: the
//! held-out sentences of `citewise adapt` (same pairs, same seed), so none of
//! them was trained on. Prints quantiles of the coverage and the share of
//! sentences over the HAtten gate's bounds.
//!
//! cargo run --release --example field_coverage -- LIB [SEED]

use std::path::PathBuf;

use citewise::library::adapt::{adaptation_data, adapted_dir, PairOptions};
use citewise::library::Library;
use citewise::neural::field::FieldProfile;

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let dir = PathBuf::from(&args[1]);
    let seed: u64 = args.get(2).map_or(PairOptions::default().seed, |s| s.parse().unwrap());
    let lib = Library::open(&dir)?;
    let data = adaptation_data(&lib, &PairOptions { seed, ..PairOptions::default() }, &|_, _| {})?;
    let adapted = FieldProfile::load_beside(&adapted_dir(&dir))?.ok_or_else(|| anyhow::anyhow!("{}: no adapted weights", dir.display()))?;
    for (name, profile) in [("shipped", &*FieldProfile::shipped()), ("adapted", &adapted)] {
        let mut cov: Vec<f32> = data.val.iter().map(|p| profile.coverage_in(lib.papers(), &p.query)).collect();
        cov.sort_by(f32::total_cmp);
        let q = |f: f64| cov[((cov.len() - 1) as f64 * f) as usize];
        let share = |x: f32| cov.iter().filter(|c| **c > x).count() as f64 / cov.len() as f64;
        println!(
            "{name:<8} {} held-out sentences: coverage q25 {:.2}, median {:.2}, q75 {:.2}; above 0.5 {:.0} %, at or above 0.8 {:.0} %",
            cov.len(),
            q(0.25),
            q(0.5),
            q(0.75),
            100.0 * share(0.5),
            100.0 * cov.iter().filter(|c| **c >= 0.8).count() as f64 / cov.len() as f64
        );
    }
    Ok(())
}
