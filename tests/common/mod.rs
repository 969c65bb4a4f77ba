#![allow(dead_code)]

pub mod pdf;

use std::path::{Path, PathBuf};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name)
}

/// `../shared` beside the checkout, when present (real-data tests run only then).
pub fn shared() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared");
    p.join("README.md").exists().then_some(p)
}

/// Whether the tests run in CI (`CI=true`), where `.ci/run` installs every
/// prerequisite.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// Says that `what` cannot run because `missing` is not there: under
/// `CI=true` the test fails with that reason, elsewhere it says it skips.
pub fn skip_unless_ci(what: &str, missing: &str) {
    if in_ci() {
        panic!("{missing}, and {what} needs it (CI=true)");
    }
    eprintln!("{missing}: skipping {what}");
}

/// `../shared`, or `None` after saying the test is skipped; under `CI=true`
/// a missing `../shared` fails the test instead.
pub fn shared_or_fail(what: &str) -> Option<PathBuf> {
    let found = shared();
    if found.is_none() {
        skip_unless_ci(what, "../shared is missing");
    }
    found
}

/// Whether the model files (`scripts/fetch-models.sh`) are installed; when
/// not, says the test is skipped (fails it under `CI=true`).
pub fn models_or_fail(what: &str) -> bool {
    let ok = citewise::neural::models::model_dir(citewise::neural::bi_encoder::CITATION_ENCODER).is_ok()
        && citewise::neural::models::model_dir("paraphrase-minilm-l3-v2").is_ok();
    if !ok {
        skip_unless_ci(what, "the models are not installed (scripts/fetch-models.sh)");
    }
    ok
}

/// A library in `dir/lib` holding `tests/fixtures/library.bib`, imported by
/// the `citewise` binary at `bin`.
pub fn fixture_library(dir: &Path, bin: &str) -> PathBuf {
    let lib = dir.join("lib");
    let o = std::process::Command::new(bin)
        .args(["--library", lib.to_str().unwrap(), "import", fixture("library.bib").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    lib
}
