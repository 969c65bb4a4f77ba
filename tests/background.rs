#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The editor while the library's missing vectors are encoded in the
//! background: keys still reach the screen within a frame, the status bar
//! shows the progress, and the channels join the answers as their vectors
//! come to cover the library. (Alone in its test binary, so that no other
//! test competes for the cores while key latency is measured.)

mod common;

use std::sync::Arc;
use std::time::Duration;

use citewise::index::vectors::VectorStore;
use citewise::pipeline::background::{EncodingOptions, Phase};
use citewise::pipeline::Models;
use citewise::testbed::editor_latency::{input_latency, KeyLatency};

#[test]
fn the_editor_stays_responsive_while_the_library_is_encoded() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::benchmark_library(dir.path(), 1000) else { return };
    if !common::models_or_fail("encoding in the background") {
        return;
    }
    let lib_dir = lib.dir().to_path_buf();
    let models = Arc::new(Models::installed().for_library(Some(lib_dir.clone())));
    let options = EncodingOptions { phases: vec![Phase::StandIns, Phase::Dense], ..EncodingOptions::default() };
    // A fast typist (a key every 30 ms) asking for citations every 20 keys.
    let run = input_latency(Arc::new(lib), models, 2500, Duration::from_millis(30), Some(options)).unwrap();

    let q = |p| citewise::eval::metrics::quantile(&run.ms, p);
    eprintln!("key to frame: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms", q(0.5), q(0.99), q(1.0));
    let run = KeyLatency { ms: Vec::new(), ..run };
    assert!(q(0.99) <= 16.0, "key to frame p99 {:.2} ms while encoding", q(0.99));
    // Both phases ran to the end, the student's first.
    assert_eq!(run.covered, [Phase::StandIns.label(), Phase::Dense.label()], "{run:?}");
    assert!(run.frames_with_progress > 0, "the status bar never showed the encoding: {run:?}");
    let status = run.last_status.clone().unwrap_or_default();
    assert!(status.starts_with("encoding ") && status.contains('%'), "{status}");
    // Every paper has its stand-in and its dense vector, and the answers
    // came from the channels those vectors opened.
    for store in ["citation-vectors-student", "vectors"] {
        let s = VectorStore::inspect(&lib_dir.join(store)).unwrap().expect(store);
        assert_eq!(s.live, 1000, "{store}");
    }
    for stage in ["citation", "hatten"] {
        assert!(run.last_stages.iter().any(|s| s == stage), "no {stage} channel in the last answer: {:?}", run.last_stages);
    }
}
