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

/// `../shared`, or `None` after saying the test is skipped; under `CI=true`
/// a missing `../shared` fails the test instead.
pub fn shared_or_fail(what: &str) -> Option<PathBuf> {
    match shared() {
        Some(p) => Some(p),
        None if std::env::var("CI").is_ok_and(|v| v == "true") => panic!("../shared is missing, and {what} needs it (CI=true)"),
        None => {
            eprintln!("../shared not found: skipping {what}");
            None
        }
    }
}
