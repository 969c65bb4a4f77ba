#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! A library whose files were deleted, truncated or changed on disk: every
//! command says what is damaged and which command repairs it, `doctor`
//! exits non-zero, and an import repairs what it can.

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use citewise::corpus::Paper;
use citewise::index::vectors::VectorStore;
use citewise::library::health::verify;
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use common::fixture;

fn citewise(lib: &Path, args: &[&str]) -> Output {
    common::citewise_command().args(args).env("CITEWISE_LIBRARY", lib).output().expect("binary runs")
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// A library in a temporary directory holding `tests/fixtures/library.bib` (10 papers).
fn library() -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("lib");
    let lib = Library::open_or_create(&dir).unwrap();
    let s = import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!(s.imported, 10);
    (d, dir)
}

/// The largest file of a tantivy index directory with this extension.
fn segment_file(index: &Path, ext: &str) -> PathBuf {
    std::fs::read_dir(index)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == ext))
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap_or_else(|| panic!("no .{ext} file in {}", index.display()))
}

fn problems(dir: &Path) -> String {
    verify(dir).iter().map(|p| format!("{} | {}\n", p.what, p.repair)).collect()
}

// Row I: the paper index deleted under a journal that says every file is done.

#[test]
fn a_library_whose_records_are_gone_imports_them_again() {
    let (_d, dir) = library();
    assert_eq!(problems(&dir), "", "a fresh library is healthy");
    std::fs::remove_dir_all(dir.join("papers")).unwrap();

    let found = problems(&dir);
    assert!(found.contains("lost its paper records"), "{found}");
    assert!(found.contains("holds 0 papers") && found.contains("10"), "{found}");
    assert!(found.contains("citewise import") && found.contains("library.bib"), "{found}");

    let lib = Library::open(&dir).unwrap();
    let s = import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!((s.files_unchanged, s.imported), (0, 10), "{s:?}");
    assert!(s.notes.iter().any(|n| n.contains("import journal") && n.contains("read again")), "{:?}", s.notes);
    assert_eq!(lib.papers().num_papers(), 10);
    assert_eq!(problems(&dir), "");
    // The next import skips the file again.
    let s = import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!((s.files_unchanged, s.imported), (1, 0));
}

#[test]
fn a_library_whose_evidence_is_gone_reads_the_sentences_again() {
    let (d, dir) = library();
    let contexts = d.path().join("contexts.jsonl");
    std::fs::write(
        &contexts,
        r#"{"context": "We tag the corpus with the TnT tagger [CIT] before parsing.", "cited": ["bib:brants2000tnt"]}
{"context": "Documents are ranked with BM25 [CIT] as the first stage.", "cited": ["bib:robertson2009bm25"]}
"#,
    )
    .unwrap();
    let read =
        |lib: &Library| citewise::library::evidence_import::import_evidence(lib, std::slice::from_ref(&contexts), None, false).unwrap();
    let lib = Library::open(&dir).unwrap();
    let first = read(&lib);
    assert_eq!(first.sentences, 2, "{first:?}");
    let spans = lib.evidence().num_spans();
    assert!(spans > 0);
    drop(lib);

    std::fs::remove_dir_all(dir.join("evidence")).unwrap();
    let lib = Library::open(&dir).unwrap();
    assert_eq!(lib.evidence().num_spans(), 0);
    let found = problems(&dir);
    assert!(
        found.contains("lost its spans") && found.contains(&format!("citewise --library {} import --evidence`", dir.display())),
        "{found}"
    );
    let again = read(&lib);
    assert_eq!((again.files_unchanged, again.sentences), (0, 2), "{again:?}");
    assert!(again.problems.iter().any(|p| p.contains("evidence index holds 0 spans") && p.contains("read again")), "{:?}", again.problems);
    assert_eq!(lib.evidence().num_spans(), spans);
    assert_eq!(problems(&dir), "");
    // Unchanged files are skipped again afterwards.
    assert_eq!(read(&lib).files_unchanged, 1);
}

#[test]
fn a_recreated_paper_index_does_not_trust_the_old_journal() {
    let (_d, dir) = library();
    std::fs::remove_dir_all(dir.join("papers")).unwrap();
    // More papers than before reach the new index without the journal: the
    // count alone would not show that library.bib's records are gone.
    let lib = Library::open(&dir).unwrap();
    let mut w = lib.papers().writer().unwrap();
    for i in 0..12 {
        w.upsert(&Paper { id: format!("bib:o{i}"), title: format!("Other paper {i}"), ..Default::default() }).unwrap();
    }
    w.finish().unwrap();
    lib.papers().reload().unwrap();
    assert!(problems(&dir).contains("created anew"), "{}", problems(&dir));
    let s = import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!((s.files_unchanged, s.imported), (0, 10), "{s:?}");
    assert_eq!(lib.papers().num_papers(), 22);
}

#[test]
fn info_and_doctor_say_the_records_are_gone_and_how_to_import_them_again() {
    let (_d, dir) = library();
    std::fs::remove_dir_all(dir.join("papers")).unwrap();
    let o = citewise(&dir, &["info"]);
    assert!(text(&o).contains("lost its paper records"), "{}", text(&o));
    assert!(text(&o).contains("citewise import"), "{}", text(&o));
    let o = citewise(&dir, &["doctor"]);
    assert!(!o.status.success(), "doctor must fail:\n{}", text(&o));
    assert!(text(&o).contains("lost its paper records") && text(&o).contains("repair: "), "{}", text(&o));
}

// Row J: a damaged tantivy index.

#[test]
fn a_truncated_index_file_is_a_plain_error_with_the_repair() {
    let (_d, dir) = library();
    let term = segment_file(&dir.join("papers"), "term");
    let len = std::fs::metadata(&term).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&term).unwrap().set_len(len / 2).unwrap();

    let err = Library::open(&dir).err().expect("a damaged index does not open");
    assert!(matches!(err, citewise::error::Error::Corrupt { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("the paper index") && msg.contains("is damaged (a file is truncated or changed: "), "{msg}");
    assert!(msg.contains(&format!("citewise --library {} import --force`", dir.display())), "{msg}");
    assert!(!msg.contains("tantivy"), "no raw index-library text: {msg}");

    let o = citewise(&dir, &["info"]);
    assert!(!o.status.success());
    assert!(text(&o).contains("is damaged") && !text(&o).contains("Footer"), "{}", text(&o));
    let o = citewise(&dir, &["doctor"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("the paper index") && text(&o).contains("import --force`"), "{}", text(&o));
}

#[test]
fn a_changed_byte_in_an_index_file_is_found_by_doctor() {
    let (_d, dir) = library();
    let store = segment_file(&dir.join("papers"), "store");
    let mut bytes = std::fs::read(&store).unwrap();
    bytes[10] ^= 0x55;
    std::fs::write(&store, bytes).unwrap();
    let found = problems(&dir);
    assert!(found.contains("the paper index") && found.contains("is damaged"), "{found}");
    assert!(found.contains(".store"), "names the file: {found}");
    let o = citewise(&dir, &["doctor"]);
    assert!(!o.status.success(), "{}", text(&o));
}

#[test]
fn a_damaged_evidence_index_names_the_evidence_import() {
    let (_d, dir) = library();
    let lib = Library::open(&dir).unwrap();
    citewise::library::evidence_import::import_evidence(&lib, &[fixture("fulltext.jsonl")], None, false).unwrap();
    let spans = lib.evidence().num_spans();
    drop(lib);
    assert!(spans > 0, "the fixture gives evidence");
    let store = segment_file(&dir.join("evidence"), "store");
    std::fs::OpenOptions::new().write(true).open(&store).unwrap().set_len(3).unwrap();
    let found = problems(&dir);
    assert!(found.contains("the evidence index") && found.contains("import --evidence --force`"), "{found}");
}

// Row K: vector stores whose data and manifest disagree.

fn store_with_rows(dir: &Path, n: usize) {
    let mut s = VectorStore::open(dir, 4, "enc-test").unwrap();
    let items: Vec<(String, u64)> = (0..n).map(|i| (format!("bib:p{i}"), i as u64)).collect();
    let vectors: Vec<f32> = (0..n * 4).map(|i| i as f32).collect();
    s.append(&items, &vectors).unwrap();
}

#[test]
fn truncated_vectors_are_a_plain_error_and_doctor_fails() {
    let (_d, dir) = library();
    let store = dir.join("citation-vectors");
    store_with_rows(&store, 3);
    std::fs::OpenOptions::new().write(true).open(store.join("vectors.f32")).unwrap().set_len(20).unwrap();
    let err = VectorStore::open(&store, 4, "enc-test").err().expect("damaged");
    assert!(matches!(err, citewise::error::Error::Corrupt { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(msg.contains("vectors.f32") && msg.contains("3 rows") && msg.contains(" embed`"), "{msg}");

    let found = problems(&dir);
    assert!(found.contains("citation-vectors") && found.contains(" embed`"), "{found}");
    let o = citewise(&dir, &["doctor"]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("3 of 10 papers encoded"), "{}", text(&o));
}

#[test]
fn a_junk_manifest_is_damage_and_a_longer_data_file_still_resumes() {
    let (_d, dir) = library();
    let store = dir.join("vectors");
    store_with_rows(&store, 2);
    // Longer than the manifest: an interrupted append, which resumes.
    std::fs::OpenOptions::new().append(true).open(store.join("vectors.f32")).unwrap().write_all(&[0; 12]).unwrap();
    assert_eq!(problems(&dir), "");
    assert_eq!(VectorStore::open(&store, 4, "enc-test").unwrap().len(), 2);

    std::fs::write(store.join("vectors.json"), "{\"dim\": 4, \"ids\": [").unwrap();
    let err = VectorStore::open(&store, 4, "enc-test").err().expect("damaged");
    assert!(matches!(err, citewise::error::Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("vectors.json") && err.to_string().contains(" embed`"), "{err}");
    let found = problems(&dir);
    assert!(found.contains("vectors.json") && found.contains(" embed`"), "{found}");
}

#[test]
fn damaged_span_vectors_are_found_by_doctor() {
    let (_d, dir) = library();
    let store = dir.join("span-vectors");
    store_with_rows(&store, 2);
    std::fs::write(store.join("vectors.json"), "not json").unwrap();
    let found = problems(&dir);
    assert!(found.contains("span-vectors") && found.contains(" embed`"), "{found}");
}

/// The recommender leaves out a channel whose vectors are damaged, and says
/// so in its notices. Needs the models (`scripts/fetch-models.sh`).
#[test]
fn a_channel_dropped_for_damaged_vectors_is_a_notice() {
    if !common::models_or_fail("the damaged-channel notice") {
        return;
    }
    let (_d, dir) = library();
    let models = citewise::pipeline::Models::installed();
    let encoder = models.citation_encoder().unwrap();
    let store = dir.join("citation-vectors");
    {
        let mut s = VectorStore::open(&store, encoder.dim(), &encoder.fingerprint()).unwrap();
        s.append(&[("bib:a".into(), 1)], &vec![0.1; encoder.dim()]).unwrap();
    }
    std::fs::OpenOptions::new().write(true).open(store.join("vectors.f32")).unwrap().set_len(8).unwrap();
    let lib = Arc::new(Library::open(&dir).unwrap());
    let rec = citewise::pipeline::Recommender::new(lib, &models);
    let r = rec.recommend(&citewise::pipeline::Query::new("BLEU scores of translation [CIT]")).unwrap();
    assert!(r.notices.iter().any(|n| n.contains("citation channel is off") && n.contains(" embed`")), "{:?}", r.notices);
    assert!(!r.candidates.is_empty(), "the other channels still answer");
}

// A second import while one is writing.

#[test]
fn a_second_import_while_one_writes_is_a_plain_error() {
    let (_d, dir) = library();
    let lib = Library::open(&dir).unwrap();
    let _writing = lib.papers().writer().unwrap();
    let o = citewise(&dir, &["import", "--force", "--no-embed", fixture("library.bib").to_str().unwrap()]);
    assert!(!o.status.success());
    let expected = format!("another citewise import is writing to {}; wait for it to finish", dir.display());
    assert!(text(&o).contains(&expected), "{}", text(&o));
    assert!(!text(&o).contains("LockBusy"), "{}", text(&o));
}

#[test]
fn doctor_passes_a_healthy_library() {
    let (_d, dir) = library();
    store_with_rows(&dir.join("citation-vectors"), 3);
    let o = citewise(&dir, &["doctor"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!text(&o).contains("problem"), "{}", text(&o));
}

// Damage that keeps a file's size, a missing manifest, a truncated compact
// file: found by `doctor`, each with a repair that works as printed.

/// The first repair command `doctor` printed (between backticks).
fn printed_repair(o: &Output) -> String {
    let out = text(o);
    let line = out.lines().find(|l| l.trim_start().starts_with("repair:")).unwrap_or_else(|| panic!("no repair printed:\n{out}"));
    line.split('`').nth(1).unwrap_or_else(|| panic!("no command in `{line}`")).to_string()
}

/// Runs a command `doctor` printed, as a user pastes it into a shell (no
/// CITEWISE_LIBRARY: the command must name the library itself).
fn run_printed(command: &str) -> Output {
    let rest = command.strip_prefix("citewise ").unwrap_or_else(|| panic!("not a citewise command: {command}"));
    Command::new("sh")
        .arg("-c")
        .arg(format!("'{}' {rest}", env!("CARGO_BIN_EXE_citewise")))
        .env_remove("CITEWISE_LIBRARY")
        .output()
        .unwrap()
}

/// Flips one byte in the middle of `file`, keeping its size.
fn flip_byte(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x5a;
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn damage_that_keeps_a_files_size_is_found_in_every_store() {
    let (_d, dir) = library();
    for (_, sub) in citewise::library::health::STORES {
        let store = dir.join(sub);
        store_with_rows(&store, 3);
        assert_eq!(problems(&dir), "", "{sub}: healthy after writing");
        flip_byte(&store.join("vectors.f32"));
        let found = problems(&dir);
        assert!(found.contains(sub) && found.contains("do not match their checksum"), "{sub}: {found}");
        assert!(found.contains(&format!("citewise --library {} embed", dir.display())), "the repair names the library: {found}");
        // A writer sees it too, so the repair computes the rows again.
        assert!(matches!(VectorStore::open(&store, 4, "enc-test"), Err(citewise::error::Error::Corrupt { .. })), "{sub}");
        let (s, note) = VectorStore::open_or_reset(&store, 4, "enc-test").unwrap();
        assert!(s.is_empty() && note.is_some(), "{sub}");
        std::fs::remove_dir_all(&store).unwrap();
    }
    let store = dir.join("vectors");
    store_with_rows(&store, 3);
    // A compact file cut short, or with a changed byte.
    let compact = store.join("vectors.q8");
    let len = std::fs::metadata(&compact).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&compact).unwrap().set_len(len - 3).unwrap();
    assert!(problems(&dir).contains("vectors.q8: it holds"), "{}", problems(&dir));
    VectorStore::open(&store, 4, "enc-test").unwrap();
    assert_eq!(problems(&dir), "", "the next writer makes the compact rows again");
    flip_byte(&compact);
    assert!(problems(&dir).contains("rows 0..3 of vectors.q8 do not match their checksum"), "{}", problems(&dir));
    VectorStore::open(&store, 4, "enc-test").unwrap();
    assert_eq!(problems(&dir), "");
    // The manifest deleted: the rows are no one's.
    std::fs::remove_file(store.join("vectors.json")).unwrap();
    assert!(problems(&dir).contains("vectors.json: it is missing, though vectors.f32 holds 48 bytes"), "{}", problems(&dir));
    assert!(VectorStore::exists(&store), "a store without its manifest is still there (damaged)");
    assert!(matches!(VectorStore::open_read(&store, 4, "enc-test"), Err(citewise::error::Error::Corrupt { .. })));
}

#[test]
fn a_store_written_before_checksums_gets_them_from_its_next_writer() {
    let (_d, dir) = library();
    let store = dir.join("citation-vectors");
    store_with_rows(&store, 3);
    // The manifest as an earlier citewise wrote it: no checksums.
    let manifest = store.join("vectors.json");
    let mut m: serde_json::Value = serde_json::from_slice(&std::fs::read(&manifest).unwrap()).unwrap();
    m.as_object_mut().unwrap().retain(|k, _| k != "crc" && k != "crc_compact");
    std::fs::write(&manifest, m.to_string()).unwrap();
    let state = VectorStore::inspect(&store).unwrap().unwrap();
    assert!(!state.verified && state.live == 3, "{state:?}");
    assert_eq!(problems(&dir), "", "not damage");
    let o = citewise(&dir, &["doctor"]);
    assert!(o.status.success() && text(&o).contains("citation channel carry no checksums yet"), "{}", text(&o));
    VectorStore::open(&store, 4, "enc-test").unwrap();
    assert!(VectorStore::inspect(&store).unwrap().unwrap().verified);
    flip_byte(&store.join("vectors.f32"));
    assert!(problems(&dir).contains("do not match their checksum"));
}

#[test]
fn a_missing_or_garbled_library_json_fails_doctor_and_its_printed_repair_mends_it() {
    let (_d, dir) = library();
    for damage in ["missing", "garbled"] {
        match damage {
            "missing" => std::fs::remove_file(dir.join("library.json")).unwrap(),
            _ => std::fs::write(dir.join("library.json"), "{\"format\": 1}").unwrap(),
        }
        let o = citewise(&dir, &["doctor"]);
        assert!(!o.status.success(), "{damage}: doctor must fail:\n{}", text(&o));
        let repair = printed_repair(&o);
        assert_eq!(repair, format!("citewise --library {} doctor --repair", dir.display()), "{damage}");
        // Other commands say the same, in words.
        let info = citewise(&dir, &["info"]);
        assert!(!info.status.success() && text(&info).contains("doctor --repair"), "{damage}: {}", text(&info));
        if damage == "garbled" {
            assert!(
                text(&info).contains("does not read as a citewise library's description (missing field `written_by`"),
                "{}",
                text(&info)
            );
        }
        let fixed = run_printed(&repair);
        assert!(fixed.status.success(), "{damage}: {}", text(&fixed));
        let o = citewise(&dir, &["doctor"]);
        assert!(o.status.success(), "{damage}: repaired:\n{}", text(&o));
        assert!(citewise(&dir, &["info"]).status.success());
    }
    assert_eq!(std::fs::read_to_string(dir.join("library.json.bak")).unwrap(), "{\"format\": 1}", "the garbled file is kept");
    // No library yet is not damage: doctor says how to make one.
    let empty = dir.parent().unwrap().join("nothing-here");
    let o = citewise(&empty, &["doctor"]);
    assert!(o.status.success() && text(&o).contains("none yet at"), "{}", text(&o));
    assert!(text(&o).contains(&format!("citewise --library {} import refs.bib", empty.display())), "{}", text(&o));
}

/// With the models: vectors computed by `citewise embed`, then damaged in
/// each way; `doctor` fails, the command it prints repairs, the damaged
/// channel is a notice in the answer meanwhile.
#[test]
fn damaged_vectors_are_repaired_by_the_command_doctor_prints() {
    if !common::models_or_fail("repairing vectors with citewise embed") {
        return;
    }
    let (_d, dir) = library();
    let o = citewise(&dir, &["embed"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(citewise(&dir, &["doctor"]).status.success());
    let hatten = dir.join("vectors");
    let citation = dir.join("citation-vectors");
    type Damage<'a> = (&'a str, Box<dyn Fn() + 'a>);
    let damages: [Damage; 3] = [
        ("flipped bytes", Box::new(|| flip_byte(&citation.join("vectors.f32")))),
        ("a deleted manifest", Box::new(|| std::fs::remove_file(hatten.join("vectors.json")).unwrap())),
        (
            "a truncated compact file",
            Box::new(|| {
                let q8 = hatten.join("vectors.q8");
                let len = std::fs::metadata(&q8).unwrap().len();
                std::fs::OpenOptions::new().write(true).open(&q8).unwrap().set_len(len / 2).unwrap();
            }),
        ),
    ];
    for (what, damage) in damages {
        damage();
        let o = citewise(&dir, &["doctor"]);
        assert!(!o.status.success(), "{what}: doctor must fail:\n{}", text(&o));
        if what == "a deleted manifest" {
            let r = citewise(&dir, &["recommend", "--json", "Part-of-speech tagging with a trigram hidden Markov model [CIT]"]);
            assert!(r.status.success(), "{}", text(&r));
            let v: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
            let notices = v["notices"].to_string();
            assert!(notices.contains("hatten channel is off") && notices.contains("vectors.json"), "{what}: {notices}");
        }
        let fixed = run_printed(&printed_repair(&o));
        assert!(fixed.status.success(), "{what}: {}", text(&fixed));
        let o = citewise(&dir, &["doctor"]);
        assert!(o.status.success(), "{what}: repaired:\n{}", text(&o));
    }
}

// One writer per library.

/// A second writer waits while another process holds the library's write
/// lock, saying so, and goes on when that process is killed: a crashed
/// holder's lock goes with it (before: `import` did not wait, and wrote
/// beside the other writer). The holder is `flock(1)`, which takes the same
/// lock of the operating system.
#[test]
fn a_second_writer_waits_and_a_killed_holder_lets_go() {
    use std::io::BufRead;
    use std::process::Stdio;
    let (_d, dir) = library();
    let mut holder = match Command::new("flock")
        .arg("--close")
        .arg(dir.join("write.lock"))
        .args(["-c", "echo locked; read line"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(h) => h,
        Err(e) => {
            common::skip_unless_ci("two writers of one library", &format!("flock(1) ({e})"));
            return;
        }
    };
    let mut said = String::new();
    std::io::BufReader::new(holder.stdout.take().unwrap()).read_line(&mut said).unwrap();
    assert_eq!(said.trim(), "locked");
    let mut import = common::citewise_command()
        .arg("--library")
        .arg(&dir)
        .args(["import", "--force", "--no-embed"])
        .arg(fixture("library.bib"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut errors = std::io::BufReader::new(import.stderr.take().unwrap());
    let mut line = String::new();
    while !line.starts_with("waiting:") {
        line.clear();
        assert!(errors.read_line(&mut line).unwrap() > 0, "the import ended without waiting: {:?}", import.wait());
    }
    assert!(line.contains("is writing to the library at") && line.contains(&dir.display().to_string()), "{line}");
    assert!(import.try_wait().unwrap().is_none(), "the import waits for the lock");
    holder.kill().unwrap(); // SIGKILL: the holder dies holding the lock
    holder.wait().unwrap();
    drop(holder.stdin.take());
    let status = import.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut errors, &mut rest).unwrap();
    assert!(status.success(), "{rest}");
    assert_eq!(Library::open(&dir).unwrap().papers().num_papers(), 10);
}

/// The editor's background encoding commits as the library's writer: its
/// commits wait while another writer holds the lock (the status bar says
/// for whom), and a second front end on the same library does not encode
/// beside the first; it takes over when the first ends. The vectors are
/// whole afterwards.
#[test]
fn front_ends_encode_one_at_a_time_and_wait_for_a_writer() {
    use citewise::pipeline::background::{BackgroundEncoding, EncodingEvent, EncodingOptions, Phase};
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::benchmark_library(dir.path(), 200) else { return };
    if !common::models_or_fail("encoding in the background") {
        return;
    }
    let lib = Arc::new(lib);
    let lib_dir = lib.dir().to_path_buf();
    let models = Arc::new(citewise::pipeline::Models::installed().for_library(Some(lib_dir.clone())));
    let options = || EncodingOptions { phases: vec![Phase::StandIns], threads: 1, low_priority: false, ..EncodingOptions::default() };
    let idle = || Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Another writer holds the lock (as an import would).
    let other_writer = citewise::library::lock::Writing::new(&lib_dir);
    other_writer.hold().unwrap();
    let first = BackgroundEncoding::spawn(lib.clone(), models.clone(), idle(), options());
    let Some(EncodingEvent::Waiting { holder }) = first.recv() else { panic!("the encoding wrote beside the other writer") };
    assert!(holder.contains(&format!("process {}", std::process::id())), "the status names the writer: {holder}");
    let second = BackgroundEncoding::spawn(Arc::new(Library::open(&lib_dir).unwrap()), models.clone(), idle(), options());
    let Some(EncodingEvent::Elsewhere { holder }) = second.recv() else { panic!("the second front end encodes beside the first") };
    assert!(holder.contains(&format!("process {}", std::process::id())), "{holder}");
    other_writer.release();
    let events: Vec<EncodingEvent> = std::iter::from_fn(|| first.recv()).take_while(|e| *e != EncodingEvent::Finished).collect();
    let covered: Vec<&EncodingEvent> = events.iter().filter(|e| matches!(e, EncodingEvent::Covered { .. })).collect();
    assert_eq!(covered, [&EncodingEvent::Covered { phase: Phase::StandIns, encoded: 200 }], "{events:?}");
    // The first front end is gone: the second takes over, finds nothing
    // left to encode, and opens its recommender again on what the first did.
    drop(first);
    let rest: Vec<EncodingEvent> = std::iter::from_fn(|| second.recv())
        .take_while(|e| *e != EncodingEvent::Finished)
        .filter(|e| !matches!(e, EncodingEvent::Progress { done: 0, .. }))
        .collect();
    assert_eq!(rest, [EncodingEvent::Covered { phase: Phase::StandIns, encoded: 0 }], "{rest:?}");
    let state = VectorStore::inspect(&lib_dir.join("citation-vectors-student")).unwrap().unwrap();
    assert_eq!((state.live, state.rows, state.verified), (200, 200, true));
}

/// A reader that finds vectors whose bytes changed leaves their channel
/// out, saying which rows (before: it searched them and served off-topic
/// papers with no notice).
#[test]
fn a_reader_leaves_out_vectors_that_fail_their_checksum() {
    let (_d, dir) = library();
    let store = dir.join("vectors");
    store_with_rows(&store, 3);
    assert_eq!(VectorStore::open_read(&store, 4, "enc-test").unwrap().len(), 3);
    flip_byte(&store.join("vectors.f32"));
    let err = VectorStore::open_read(&store, 4, "enc-test").err().expect("damage is seen by a reader").to_string();
    assert!(err.contains("rows 0..3 of vectors.f32 do not match their checksum") && err.contains(" embed`"), "{err}");
}
