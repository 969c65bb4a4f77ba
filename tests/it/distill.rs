#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The student of the citation encoder: distilled on a slice of the real
//! benchmark (its loss falls and its vectors come to agree with the
//! citation encoder's), published into the library, its stand-in vectors
//! written for every paper and replaced by the citation encoder's own as
//! those arrive.

use crate::common;

use std::path::Path;

use burn::tensor::Device;
use citewise::index::vectors::dot;
use citewise::library::embed::{embed_citation_vectors, embed_student_vectors};
use citewise::library::student::{distillation_data, publish, run_dir, student_config, student_weights, SampleOptions, SampleProgress};
use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
use citewise::neural::encoder::HattenEncoder;
use citewise::neural::train::distill::{distill_student, DistillOptions};
use citewise::neural::train::Quiet as QuietTraining;
use citewise::neural::words::WordVectors;
use citewise::pipeline::citation_channel::open_citation_vectors;

struct NoProgress;
impl SampleProgress for NoProgress {
    fn phase(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
}

#[test]
fn a_student_distilled_on_real_papers_comes_to_agree_with_the_citation_encoder() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::benchmark_library(dir.path(), 400) else { return };
    if !common::models_or_fail("distilling the citation encoder") {
        return;
    }
    let device = Device::flex();
    let teacher = BiEncoder::load(CITATION_ENCODER, &device).unwrap();
    let sample = SampleOptions { papers: 300, val: 30, seed: 5 };
    let (data, report) = distillation_data(&lib, &teacher, &sample, 2, &NoProgress).unwrap();
    // No citation vectors in the library yet: every sampled paper was encoded now.
    assert_eq!((data.papers.len(), report.stored, report.encoded), (300, 0, 300));
    assert_eq!((data.val.len(), data.train.len()), (30, 270));
    assert!(report.sentences > 250, "{report:?}");
    // The teacher's vectors are unit vectors of its width, and a paper's
    // sentence is closer to it than to the average paper.
    let d = teacher.dim();
    assert_eq!(data.teacher.len(), 300 * d);
    let (mut own, mut other, mut n) = (0f32, 0f32, 0);
    for p in 0..300 {
        assert!((dot(&data.teacher[p * d..(p + 1) * d], &data.teacher[p * d..(p + 1) * d]) - 1.0).abs() < 1e-3);
        if let Some(q) = &data.queries[p] {
            own += dot(q, &data.teacher[p * d..(p + 1) * d]);
            other += dot(q, &data.teacher[((p + 150) % 300) * d..((p + 150) % 300 + 1) * d]);
            n += 1;
        }
        assert!(data.neighbours[p].iter().all(|&x| x != p && !data.val.contains(&x)), "neighbours are other training papers");
    }
    assert!(own / n as f32 > other / n as f32 + 0.2, "own {own} other {other} over {n}");

    let config = student_config(d);
    let words = WordVectors::load_named(config.word_vectors_name()).unwrap();
    let opts = DistillOptions { batch: 16, eval_every: 15, max_steps: 60, ..DistillOptions::default() };
    let history = distill_student(&config, None, &data, &run_dir(lib.dir()), &opts, &words, &device, &QuietTraining).unwrap();
    assert_eq!(history.iter().map(|c| c.step).collect::<Vec<_>>(), [0, 15, 30, 45, 60]);
    let (start, first, last) = (&history[0], &history[1], &history[4]);
    assert!(last.loss < first.loss * 0.8, "the loss falls: {history:?}");
    let best = history.iter().rfind(|c| c.best).unwrap();
    assert!(best.cosine > start.cosine + 0.2 && best.cosine > 0.25, "held-out vectors come to agree with the teacher's: {history:?}");
    assert!(best.top10_overlap > start.top10_overlap, "{history:?}");

    // Published and used: stand-in vectors for every paper, found by the
    // teacher's query vectors; the teacher's own replace them.
    publish(lib.dir()).unwrap();
    let student = HattenEncoder::from_weights(student_weights(lib.dir()).unwrap(), &device).unwrap();
    assert_eq!(student.dim(), d);
    let s = embed_student_vectors(&lib, &student, &teacher.fingerprint(), 2, &|_| {}, &|_| {}).unwrap();
    assert_eq!((s.embedded, s.kept), (400, 0));
    let layered = open_citation_vectors(&lib, &teacher).unwrap().expect("stand-ins");
    assert_eq!((layered.primary_len(), layered.fallback_len()), (0, 400));
    // A held-out paper's stand-in is nearer its own vector under the teacher
    // than other held-out papers' are, on average (by chance: half of them).
    let n = data.val.len();
    let mut nearer = 0f64;
    for &p in &data.val {
        let v = layered.vector(&data.ids[p]).unwrap();
        let own = dot(v, &data.teacher[p * d..(p + 1) * d]);
        let beaten = data.val.iter().filter(|&&q| q != p && dot(v, &data.teacher[q * d..(q + 1) * d]) < own).count();
        nearer += beaten as f64 / (n - 1) as f64;
    }
    eprintln!("stand-ins nearer their own paper than {:.3} of the others", nearer / n as f64);
    assert!(nearer / n as f64 > 0.65, "stand-ins nearer their own paper than {:.3} of the others", nearer / n as f64);
    let t = embed_citation_vectors(&lib, &teacher, 2, &|_| {}, &|_| {}).unwrap();
    assert_eq!(t.embedded, 400);
    let layered = open_citation_vectors(&lib, &teacher).unwrap().unwrap();
    assert_eq!((layered.primary_len(), layered.fallback_len()), (400, 0), "every paper now answers with the teacher's own vector");
    let again = embed_student_vectors(&lib, &student, &teacher.fingerprint(), 2, &|_| {}, &|_| {}).unwrap();
    assert_eq!((again.embedded, again.kept), (0, 400));
}

/// Runs the `citewise` binary on the library in `lib`.
fn citewise(lib: &Path) -> std::process::Command {
    let mut c = common::citewise_command();
    c.arg("--library").arg(lib);
    c
}

#[test]
fn encoding_with_the_student_resumes_after_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::benchmark_library(dir.path(), 5000) else { return };
    if !common::models_or_fail("distilling the citation encoder") {
        return;
    }
    let lib_dir = lib.dir().to_path_buf();
    drop(lib);
    // A quick student (a few steps on 300 papers), published without encoding.
    let o = citewise(&lib_dir)
        .args(["distill", "--papers", "300", "--val-papers", "30", "--steps", "12", "--eval-every", "6", "--batch", "16", "--no-embed"])
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("student: ") && out.contains("models/student"), "{out}");

    // Killed once the first batch of stand-ins is committed.
    let store = lib_dir.join("citation-vectors-student");
    let mut child = citewise(&lib_dir)
        .args(["embed", "--fast"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let live = loop {
        if let Ok(Some(s)) = citewise::index::vectors::VectorStore::inspect(&store) {
            if s.live > 0 {
                child.kill().unwrap(); // SIGKILL
                child.wait().unwrap();
                break s.live;
            }
        }
        assert!(child.try_wait().unwrap().is_none(), "embed ended before its first commit could be seen");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(live < 5000, "killed mid-run: {live} committed");
    let after = citewise::index::vectors::VectorStore::inspect(&store).expect("not damaged by the kill").unwrap();
    assert!(after.live >= live);

    // The next run encodes only what is missing, and the channel covers every paper.
    let o = citewise(&lib_dir).args(["embed", "--fast"]).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    let expect = format!("stand-in citation vectors: {} papers encoded by the student, {} already current", 5000 - after.live, after.live);
    assert!(out.contains(&expect), "{out}\nexpected: {expect}");
    let done = citewise::index::vectors::VectorStore::inspect(&store).unwrap().unwrap();
    assert_eq!(done.live, 5000);
    // An import says what the channel covers and what the encoder's own vectors would take.
    let o = citewise(&lib_dir).arg("import").arg(dir.path().join("papers.jsonl")).output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        out.contains("ready: the citation channel covers 5000 of 5000 papers (0 with the citation encoder's own vectors, 5000 with its student's stand-ins); `citewise embed` computes the encoder's own for the other 5000 in about "),
        "{out}"
    );
    let o = citewise(&lib_dir).arg("doctor").output().unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("citation channel: 0 of 5000 papers encoded, 5000 with the student's stand-ins"), "{out}");
    assert!(out.contains("student") && out.contains("distilled for this library"), "{out}");
}
