//! The evidence trust a library learns from its own citing sentences, on
//! real in-field data: the 30,535-paper ACM-CR pool with the citing
//! sentences of 14 of its 21 citing papers as the library's documents (one
//! citing id per paper, as one PDF is one document). Evidence from other
//! papers of the field pulls the papers they cite up for every query, so the
//! library learns to trust it less; `doctor` says so; `adapt --fusion
//! --remove` forgets it.

use crate::common;

use std::path::Path;
use std::process::Output;

fn run(lib: &Path, dir: &Path, args: &[&str]) -> Output {
    let o = run_any(lib, dir, args);
    assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    o
}

/// `doctor` fails here: the models are missing.
fn run_any(lib: &Path, dir: &Path, args: &[&str]) -> Output {
    common::citewise_command()
        .arg("--library")
        .arg(lib)
        .args(args)
        .current_dir(dir)
        // Word channels only: what is learned does not wait on models.
        .env("CITEWISE_MODELS", dir.join("no-models"))
        .env("CITEWISE_DATA_DIR", dir.join("data"))
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_library_learns_to_trust_in_field_evidence_of_other_papers_less_and_doctor_says_so() {
    let Some(shared) = common::shared_or_fail("ACM-CR dev in ../shared") else { return };
    let acm = shared.join("data/acm-cr-dev");
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    // Two thirds of the citing papers (by title), each one document.
    let (sentences, others) = common::acm_citing_documents(&acm);
    std::fs::write(dir.path().join("sentences.jsonl"), sentences).unwrap();
    run(&lib, dir.path(), &["import", "--no-embed", acm.join("papers.jsonl.gz").to_str().unwrap()]);

    let o = run(&lib, dir.path(), &["import", "--evidence", "sentences.jsonl"]);
    let said = stdout(&o);
    let line = said.lines().find(|l| l.starts_with("evidence trusted")).unwrap_or_else(|| panic!("{said}"));
    assert!(line.contains("of 14 documents"), "{line}");
    let learned = citewise::pipeline::learned_fusion::read(&citewise::library::Library::open(&lib).unwrap()).unwrap().unwrap();
    assert!(learned.adopted() && learned.evidence_trust < 1.0, "{learned:?}");
    assert!(learned.gain.lo > 0.0 && learned.best.mrr > learned.shipped.mrr, "{learned:?}");
    assert_eq!(learned.channels, ["bm25", "evidence"]);
    assert!(line.starts_with(&format!("evidence trusted at {} (learned on", learned.evidence_trust)), "{line}");

    let doctor = stdout(&run_any(&lib, dir.path(), &["doctor"]));
    assert!(doctor.contains(&format!("fusion: evidence trusted at {}", learned.evidence_trust)), "{doctor}");
    assert!(!doctor.contains("out of date") && !doctor.contains("learns it again"), "nothing changed since: {doctor}");

    // The same sentences again: nothing new, nothing learned again.
    let again = stdout(&run(&lib, dir.path(), &["import", "--evidence", "sentences.jsonl"]));
    assert!(!again.contains("evidence trusted"), "{again}");

    let removed = stdout(&run(&lib, dir.path(), &["adapt", "--fusion", "--remove"]));
    assert!(removed.contains("removed the learned evidence trust"), "{removed}");
    let doctor = stdout(&run_any(&lib, dir.path(), &["doctor"]));
    assert!(doctor.contains("fusion: shipped; learning it is turned off"), "{doctor}");
    let relearned = stdout(&run(&lib, dir.path(), &["adapt", "--fusion"]));
    assert!(
        relearned.contains(&format!("evidence trusted at {}", learned.evidence_trust)),
        "the same sentences teach the same: {relearned}"
    );

    // A reranker adapted to the library and published since (its weights
    // where the models are looked for): the trust was learned with the
    // default one, and doctor says so.
    let read = || citewise::pipeline::learned_fusion::read(&citewise::library::Library::open(&lib).unwrap()).unwrap().unwrap();
    let adapted = lib.join(citewise::neural::reranker::ADAPTED_RERANKER_DIR);
    std::fs::create_dir_all(&adapted).unwrap();
    std::fs::write(adapted.join("model.safetensors"), b"weights").unwrap();
    let doctor = stdout(&run_any(&lib, dir.path(), &["doctor"]));
    assert!(
        doctor.contains("; learned with the default models, now with adapted ones (reranker) (`citewise adapt --fusion` learns it again)"),
        "{doctor}"
    );
    run(&lib, dir.path(), &["adapt", "--fusion"]);
    assert_eq!(read().models, citewise::library::adapt::published(&lib));
    assert!(!stdout(&run_any(&lib, dir.path(), &["doctor"])).contains("learns it again"));
    // Removed, the library learns it again with the default reranker.
    let o = run(&lib, dir.path(), &["adapt", "--reranker", "--remove"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("the learned evidence trust is out of date (learned with adapted models (reranker), now the default ones)"),
        "{err}"
    );
    assert!(stdout(&o).contains(&format!("evidence trusted at {}", learned.evidence_trust)), "{}", stdout(&o));
    assert!(read().models.is_empty() && !adapted.exists());

    // Turned off, new sentences do not make an import learn it again.
    run(&lib, dir.path(), &["adapt", "--fusion", "--remove"]);
    std::fs::write(dir.path().join("others.jsonl"), others).unwrap();
    let off = stdout(&run(&lib, dir.path(), &["import", "--evidence", "others.jsonl"]));
    assert!(off.contains("it is turned off for this library") && !off.contains("evidence trusted"), "{off}");
    assert!(citewise::pipeline::learned_fusion::read(&citewise::library::Library::open(&lib).unwrap()).unwrap().is_none());
}
