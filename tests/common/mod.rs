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

/// The `citewise` binary as a command that reads none of the developer's
/// settings (a `config.toml` in their configuration directory, a library
/// variable, a thread count, forced colours), so that a test reads the same
/// on any machine; the data directory and `CITEWISE_MODELS` stay the
/// environment's. A test that sets one of these sets it after this.
pub fn citewise_command() -> std::process::Command {
    let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_citewise"));
    c.env("CITEWISE_CONFIG_DIR", Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/no-config"));
    for k in ["CITEWISE_LIBRARY", "XDG_CONFIG_HOME", "CITEWISE_THREADS", "CLICOLOR_FORCE", "CLICOLOR", "NO_COLOR"] {
        c.env_remove(k);
    }
    c
}

/// A library in `dir/lib` holding `tests/fixtures/library.bib`, imported by
/// the `citewise` binary.
pub fn fixture_library(dir: &Path) -> PathBuf {
    let lib = dir.join("lib");
    let o =
        citewise_command().args(["--library", lib.to_str().unwrap(), "import", fixture("library.bib").to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    lib
}

/// A library in `dir/lib` of the first `n` ACL papers of the benchmark
/// that have an abstract of 40 words or more (their JSONL in
/// `dir/papers.jsonl`), imported without vectors; `None` without the shared
/// data.
pub fn benchmark_library(dir: &Path, n: usize) -> Option<citewise::library::Library> {
    use std::io::Write;
    let shared = shared_or_fail("the benchmark in ../shared")?;
    let raw = citewise::corpus::source::read_bytes(&shared.join("data/benchmark/papers.jsonl.gz")).unwrap();
    let file = dir.join("papers.jsonl");
    let mut out = std::fs::File::create(&file).unwrap();
    let mut kept = 0;
    for line in String::from_utf8(raw).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let words = v["abstract"].as_str().unwrap_or("").split_whitespace().count();
        if kept < n && words >= 40 && v["id"].as_str().unwrap().starts_with("acl:") {
            writeln!(out, "{line}").unwrap();
            kept += 1;
        }
    }
    let lib = citewise::library::Library::open_or_create(&dir.join("lib")).unwrap();
    citewise::library::import::import(
        &lib,
        &[file],
        citewise::library::import::ImportOptions::default(),
        &citewise::library::import::Quiet,
    )
    .unwrap();
    assert_eq!(lib.papers().num_papers() as usize, n);
    Some(lib)
}

/// Runs `cmd` to its end with its output collected, and its peak resident
/// memory (`util::peak_rss_bytes_of`, read until it exits: what it holds
/// in its last moments after the last reading is not seen). A test process
/// runs many tests at once, models among them, and `wait4`'s count would
/// give a child the test process's own peak.
#[cfg(target_os = "linux")]
pub fn output_and_peak(cmd: &mut std::process::Command) -> (std::process::Output, u64) {
    use std::io::Read as _;
    use std::process::Stdio;
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let read = |mut from: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            from.read_to_end(&mut v).unwrap();
            v
        })
    };
    let stdout = read(Box::new(child.stdout.take().unwrap()));
    let stderr = read(Box::new(child.stderr.take().unwrap()));
    let mut peak = 0;
    let status = loop {
        // Read before asking whether it exited, so the last reading is of
        // the process as it ended.
        peak = peak.max(citewise::util::peak_rss_bytes_of(child.id()).unwrap_or(0));
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        // A sampling interval, not a wait for an event.
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    (std::process::Output { status, stdout: stdout.join().unwrap(), stderr: stderr.join().unwrap() }, peak)
}

/// ACM-CR dev's citing sentences as a library's documents would supply
/// them, one citing id per citing paper (as one PDF is one document): the
/// sentences of 14 of its 21 citing papers (by title, two of every three),
/// and those of the other 7. JSON lines for `import --evidence`.
pub fn acm_citing_documents(acm: &Path) -> (String, String) {
    let raw = citewise::corpus::source::read_bytes(&acm.join("contexts.jsonl.gz")).unwrap();
    let rows: Vec<serde_json::Value> = String::from_utf8(raw).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let title = |r: &serde_json::Value| r["citing_title"].as_str().unwrap().trim().to_lowercase();
    let mut titles: Vec<String> = rows.iter().map(title).collect();
    titles.sort();
    titles.dedup();
    assert_eq!(titles.len(), 21);
    let (mut most, mut others) = (String::new(), String::new());
    for mut r in rows {
        let paper = titles.iter().position(|t| *t == title(&r)).unwrap();
        r["citing_id"] = format!("paper:{paper}").into();
        let to = if paper % 3 != 0 { &mut most } else { &mut others };
        to.push_str(&format!("{r}\n"));
    }
    (most, others)
}

/// `dir/lib`: the ACM-CR pool (30,535 papers) with the citing sentences of
/// 14 of its citing papers as the library's documents, imported by the
/// binary without vectors and without learning their trust (`--no-embed`),
/// as a Zotero sync or an `import --evidence --no-embed` leaves a library;
/// `dir/no-models` is an empty models directory (word channels only).
pub fn acm_library_with_documents(dir: &Path) -> Option<PathBuf> {
    let acm = shared_or_fail("ACM-CR dev in ../shared")?.join("data/acm-cr-dev");
    let (sentences, _) = acm_citing_documents(&acm);
    std::fs::write(dir.join("sentences.jsonl"), sentences).unwrap();
    let lib = dir.join("lib");
    let papers = acm.join("papers.jsonl.gz");
    for args in [vec!["import", "--no-embed", papers.to_str().unwrap()], vec!["import", "--evidence", "--no-embed", "sentences.jsonl"]] {
        let o = citewise_command()
            .arg("--library")
            .arg(&lib)
            .args(&args)
            .current_dir(dir)
            .env("CITEWISE_MODELS", dir.join("no-models"))
            .env("CITEWISE_DATA_DIR", dir.join("data"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{args:?}: {}", String::from_utf8_lossy(&o.stderr));
    }
    Some(lib)
}
