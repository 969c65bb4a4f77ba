#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Fuzzing that keeps going: every reader of user input, fed mutated real
//! inputs for a bounded time, must return (an error is fine) without a
//! panic, an abort, a hang or unbounded memory.
//!
//! Each target starts from seeds (the fixtures, the malformed-input corpus,
//! `tests/fuzz-regressions/TARGET/`, and `../shared` samples when present)
//! and applies random byte-level and token-level mutations. The time per
//! target is `CITEWISE_FUZZ_SECONDS` (default 5 s, as CI runs it); the long
//! runs of the notes use 600:
//!
//! ```text
//! CITEWISE_FUZZ_SECONDS=600 cargo test --release --test fuzz -- --test-threads 2 --nocapture
//! ```
//!
//! An input that panics is written to `target/fuzz-findings/TARGET/` and
//! fails the test; one that runs longer than 20 s aborts the run after
//! writing it there. Found inputs become regression seeds in
//! `tests/fuzz-regressions/TARGET/`, replayed first by every run.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use citewise::corpus::citation_markup::CiteGrammar;
use citewise::corpus::{bibtex, jsonl, source};
use citewise::evidence::latex::{read_latex, Files};
use citewise::evidence::link::Linker;
use citewise::evidence::markers::find_markers;
use citewise::evidence::record::CitingPaper;
use citewise::evidence::sentences::split_sentences;
use citewise::evidence::spans::{extract_spans, group_markers, normalize};
use citewise::library::Library;
use citewise::pipeline::{Models, Query, Recommender};

/// Largest input a mutation may produce.
const MAX_INPUT: usize = 512 * 1024;
/// One execution longer than this is a hang.
const HANG: Duration = Duration::from_secs(20);
/// Peak memory of the whole test process.
const MAX_RSS: u64 = 1 << 30;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn seconds() -> u64 {
    std::env::var("CITEWISE_FUZZ_SECONDS").ok().and_then(|s| s.parse().ok()).unwrap_or(5)
}

/// Files under `dir` (recursively) whose name ends with one of `exts`, or
/// `dir` itself when it is a file.
fn files(dir: &Path, exts: &[&str], out: &mut Vec<Vec<u8>>, limit: usize) {
    if dir.is_file() {
        if let Ok(mut b) = std::fs::read(dir) {
            b.truncate(MAX_INPUT);
            out.push(b);
        }
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if out.len() >= limit {
            return;
        }
        if p.is_dir() {
            files(&p, exts, out, limit);
        } else if exts.iter().any(|x| p.to_string_lossy().ends_with(x)) {
            if let Ok(mut b) = std::fs::read(&p) {
                b.truncate(MAX_INPUT);
                out.push(b);
            }
        }
    }
}

fn seeds(target: &str, exts: &[&str], shared_dirs: &[&str]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    files(&repo().join("tests/fuzz-regressions").join(target), &[""], &mut out, usize::MAX);
    for dir in ["tests/fixtures", "tests/malformed"] {
        files(&repo().join(dir), exts, &mut out, usize::MAX);
    }
    if let Some(shared) = common::shared() {
        for d in shared_dirs {
            let limit = out.len() + 8;
            files(&shared.join(d), exts, &mut out, limit);
        }
    }
    out
}

/// Tokens the mutator splices in: the syntax the readers care about.
const TOKENS: &[&str] = &[
    "@",
    "@string{",
    "@article{",
    "@{",
    "@comment{",
    "@preamble{",
    "{",
    "}",
    "(",
    ")",
    "\"",
    "#",
    "=",
    ",",
    "\\",
    "$",
    "%",
    "\n",
    "\r\n",
    "crossref = {",
    "title = ",
    "author = {",
    " and ",
    "\\\"{o}",
    "{\\'\\i}",
    "\\textbf{",
    "&amp;",
    "\u{0}",
    "\u{1b}[2J",
    "\u{202e}",
    "\u{feff}",
    "\u{200b}",
    "ü",
    "中",
    "[CIT]",
    "[1]",
    "[1, 2]",
    "[12-15]",
    "(Smith et al., 2001)",
    "(Smith and Jones, 2001; Doe 2002)",
    "et al.",
    "e.g.",
    ". ",
    "? ",
    "\\cite{",
    "\\citep[p.~3]{",
    "\\input{",
    "\\include{",
    "\\begin{document}",
    "\\end{document}",
    "\\bibitem{",
    "\\begin{thebibliography}{9}",
    "\\section{",
    "\\newcommand{\\x}{\\x}",
    "\\def\\x{\\x}",
    "[@",
    "; @",
    "---\n",
    "bibliography: ",
    "\"body_text\": [",
    "\"cite_spans\": [",
    "{\"start\": 0, \"end\": 3",
    "\"ref_id\": \"b0\"",
    "\"bib_entries\": {",
    "\"context\": \"",
    "\"cited\": [",
    "\"id\": \"",
    "\"title\": \"",
    "\"authors\": ",
    "null",
    "-1",
    "99999999999",
    "1e308",
    "obj",
    "endobj",
    "stream\n",
    "endstream",
    "<<",
    ">>",
    "/Length 99999",
    "xref",
    "trailer",
    "%PDF-1.4\n",
    "%%EOF",
    "../",
    "/..",
    "//",
    "Content-Length: ",
    "Content-Length: 12\r\n\r\n",
    "\r\n\r\n",
];

fn mutate(rng: &mut StdRng, seeds: &[Vec<u8>], input: &mut Vec<u8>) {
    for _ in 0..rng.random_range(1..=8) {
        let len = input.len();
        match rng.random_range(0..9) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                input[i] ^= 1 << rng.random_range(0..8);
            }
            1 => {
                let i = rng.random_range(0..=len);
                input.insert(i, rng.random());
            }
            2 if len > 0 => {
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..64)).min(len);
                input.drain(a..b);
            }
            3 | 4 => {
                let i = rng.random_range(0..=len);
                let t = TOKENS[rng.random_range(0..TOKENS.len())].as_bytes();
                input.splice(i..i, t.iter().copied());
            }
            5 if len > 0 => {
                // Repeat a chunk: deep nesting, long runs, many markers.
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..16)).min(len);
                let chunk = input[a..b].to_vec();
                let most = if rng.random_bool(0.1) { 5000 } else { 50 };
                let times = rng.random_range(1..most);
                let at = rng.random_range(0..=len);
                input.splice(at..at, chunk.iter().copied().cycle().take(chunk.len() * times));
            }
            6 if !seeds.is_empty() => {
                // Splice in part of another seed.
                let other = &seeds[rng.random_range(0..seeds.len())];
                if !other.is_empty() {
                    let a = rng.random_range(0..other.len());
                    let b = (a + rng.random_range(1..256)).min(other.len());
                    let at = rng.random_range(0..=len);
                    input.splice(at..at, other[a..b].iter().copied());
                }
            }
            7 if len > 0 => input.truncate(rng.random_range(0..len)),
            _ => {
                let i = rng.random_range(0..=len);
                input.insert(i, b"{}@\\\"#,=()[]$%\n\x00\xc3\xff"[rng.random_range(0..15)]);
            }
        }
    }
    input.truncate(MAX_INPUT);
}

/// Runs `target` on the seeds, then on mutations of them until the time is
/// up; fails on a panic, aborts on a hang, and says how many executions ran.
fn fuzz(name: &str, seeds: Vec<Vec<u8>>, target: impl Fn(&[u8])) {
    let findings = repo().join("target/fuzz-findings").join(name);
    let started_at = Arc::new(AtomicU64::new(u64::MAX));
    let current: Arc<Mutex<Vec<u8>>> = Arc::default();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let clock = Instant::now();
    let watchdog = {
        let (started_at, current, done, findings, name) =
            (started_at.clone(), current.clone(), done.clone(), findings.clone(), name.to_string());
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(250));
                let s = started_at.load(Ordering::Relaxed);
                if s != u64::MAX && clock.elapsed().as_millis() as u64 > s + HANG.as_millis() as u64 {
                    let path = save(&findings, "hang", &current.lock().unwrap_or_else(|e| e.into_inner()));
                    eprintln!("fuzz {name}: an input ran longer than {HANG:?}; written to {}", path.display());
                    std::process::abort();
                }
            }
        })
    };
    let deadline = Duration::from_secs(seconds());
    let mut rng = StdRng::seed_from_u64(std::env::var("CITEWISE_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(0x5eed));
    let mut executions = 0u64;
    let mut crashes = Vec::new();
    let mut run = |input: Vec<u8>| {
        *current.lock().unwrap() = input.clone();
        started_at.store(clock.elapsed().as_millis() as u64, Ordering::Relaxed);
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| target(&input)));
        started_at.store(u64::MAX, Ordering::Relaxed);
        executions += 1;
        if outcome.is_err() {
            crashes.push(save(&findings, "crash", &input));
        }
    };
    for s in &seeds {
        run(s.clone());
    }
    let start = Instant::now();
    let mut input = Vec::new();
    while start.elapsed() < deadline {
        if input.is_empty() || rng.random_bool(0.2) {
            input = if seeds.is_empty() { Vec::new() } else { seeds[rng.random_range(0..seeds.len())].clone() };
        }
        mutate(&mut rng, &seeds, &mut input);
        run(input.clone());
    }
    done.store(true, Ordering::Relaxed);
    watchdog.join().unwrap();
    let rss = citewise::util::peak_rss_bytes().unwrap_or(0);
    eprintln!(
        "fuzz {name}: {executions} executions in {:.0} s ({} seeds), {} crashes, peak RSS of the process {} MB",
        start.elapsed().as_secs_f64(),
        seeds.len(),
        crashes.len(),
        rss >> 20
    );
    assert!(crashes.is_empty(), "fuzz {name}: inputs that panic: {crashes:?}");
    assert!(rss < MAX_RSS, "fuzz {name}: peak RSS {} MB", rss >> 20);
}

fn save(dir: &Path, kind: &str, input: &[u8]) -> PathBuf {
    let _ = std::fs::create_dir_all(dir);
    let path = dir.join(format!("{kind}-{:016x}", citewise::util::fnv1a64(input)));
    let _ = std::fs::write(&path, input);
    path
}

fn text(bytes: &[u8]) -> String {
    source::decode_text(bytes).text
}

#[test]
fn fuzz_bibtex() {
    fuzz("bibtex", seeds("bibtex", &[".bib"], &["data/bib/acm-dl"]), |b| {
        let text = text(b);
        for block in bibtex::split_blocks(&text).into_iter().flatten() {
            assert!(text.contains(block.text));
        }
        let _ = bibtex::parse_source(&text);
    });
}

#[test]
fn fuzz_jsonl_papers() {
    fuzz("jsonl", seeds("jsonl", &["papers.jsonl", ".jsonl"], &[]), |b| {
        for line in text(b).lines() {
            let _ = jsonl::parse_line(line);
        }
    });
}

/// A library with the fixture papers, for the readers that link citations.
fn fixture_library() -> (tempfile::TempDir, Arc<Library>) {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let opts = citewise::library::import::ImportOptions::default();
    citewise::library::import::import(&lib, &[common::fixture("papers.jsonl")], opts, &citewise::library::import::Quiet).unwrap();
    (dir, Arc::new(lib))
}

#[test]
fn fuzz_fulltext_and_contexts() {
    let (_dir, lib) = fixture_library();
    let linker = Linker::new(lib.papers());
    fuzz("fulltext", seeds("fulltext", &[".jsonl"], &[]), |b| {
        let text = text(b);
        let _ = citewise::evidence::sources::parse_sentences(Path::new("input.jsonl"), &text, None, &linker, &|_| Some(2001));
    });
}

#[test]
fn fuzz_markers_and_spans() {
    fuzz("spans", seeds("spans", &[".jsonl", ".txt", ".md", ".tex"], &["data/pdf/citances.jsonl"]), |b| {
        let text = text(b);
        let markers = find_markers(&text, &["p1".to_string()]);
        let protected: Vec<(usize, usize)> = markers.iter().map(|m| (m.start, m.end)).collect();
        for (s, e) in split_sentences(&text, &protected) {
            let sentence = &text[s..e];
            let markers = find_markers(sentence, &["p1".to_string()]);
            let _ = group_markers(sentence, &markers);
            for span in extract_spans(sentence, &markers) {
                assert!(!span.text.is_empty());
            }
        }
        let _ = normalize(&text);
        let _ = citewise::pipeline::query::strip_citations(&text, &CiteGrammar::PLAIN);
    });
}

#[test]
fn fuzz_latex() {
    fuzz("latex", seeds("latex", &[".tex", ".bib"], &[]), |b| {
        let mut members = std::collections::BTreeMap::new();
        members.insert("main.tex".to_string(), b.to_vec());
        members.insert("refs.bib".to_string(), b"@article{a, title={A Paper}}\n@article{x, title={X}}".to_vec());
        let files = Files::Bundle(members);
        if let Ok((doc, _)) = read_latex(&files, "main.tex", Path::new("main.tex"), &CiteGrammar::PLAIN) {
            let citing = CitingPaper { id: "d".into(), title: doc.title.clone(), year: None, file: None };
            for s in doc.citing_sentences(&citing) {
                let _ = extract_spans(&s.text, &s.markers);
            }
        }
    });
}

#[test]
fn fuzz_markdown() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("refs.bib"), "@article{a, title={A Paper}}\n@article{b, title={B}}").unwrap();
    let path = dir.path().join("draft.md");
    let project = citewise::project::Project::new(dir.path()).unwrap();
    fuzz("markdown", seeds("markdown", &[".md"], &[]), |b| {
        std::fs::write(&path, b).unwrap();
        if let Ok((doc, _)) = citewise::evidence::markdown::read_markdown(&path, &project) {
            let citing = CitingPaper { id: "d".into(), title: doc.title.clone(), year: None, file: None };
            let _ = doc.citing_sentences(&citing);
        }
    });
}

#[test]
fn fuzz_pdf() {
    let mut seeds = seeds("pdf", &[".pdf"], &["data/pdf"]);
    seeds.push(common::pdf::pdf(&[common::pdf::column(
        72.0,
        760.0,
        &["A Title", "Tagging is solved [1]. Parsing is not (Smith et al., 2001).", "References", "[1] T. Brants. TnT. 2000."],
    )]));
    fuzz("pdf", seeds, |b| {
        if let Ok(doc) = citewise::evidence::pdf::read_pdf(Path::new("input.pdf"), b.to_vec()) {
            let citing = CitingPaper { id: "d".into(), title: doc.title.clone(), year: None, file: None };
            let _ = doc.citing_sentences(&citing);
        }
    });
}

#[test]
fn fuzz_queries() {
    let (_dir, lib) = fixture_library();
    let rec = Recommender::with_stages(lib, &Models::none(), &["bm25", "evidence"]).unwrap();
    fuzz("query", seeds("query", &[".txt", ".md"], &[]), |b| {
        let text = text(b);
        let (context, global) = text.split_at(text.char_indices().nth(text.chars().count() / 2).map_or(0, |(i, _)| i));
        let query = Query::new(context).with_global(global, "").with_k(1 + b.len() % 50);
        if let Ok(r) = rec.recommend(&query) {
            assert!(r.candidates.len() <= query.k);
        }
    });
}

/// The language server's frame reader: every byte stream ends in a bounded
/// number of frames (each consumes input), none panics, and nothing is held
/// beyond the frame budget.
#[test]
fn fuzz_lsp_frames() {
    use citewise::lsp::transport::{Frame, FrameReader};
    let frame = |body: &str| format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes();
    let mut seeds = seeds("lsp-frames", &[], &[]);
    seeds.push(
        [
            frame(r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"capabilities":{}}}"#),
            frame(r#"{"jsonrpc":"2.0","method":"textDocument/didOpen","params":{"textDocument":{"uri":"file:///a.tex","languageId":"latex","version":1,"text":"\\cite{"}}}"#),
            frame(r#"{"jsonrpc":"2.0","id":2,"result":null}"#),
        ]
        .concat(),
    );
    seeds.push(b"Content-Length: -1\r\n\r\n{}Content-Length: 2\r\nContent-Type: x\r\n\r\n{}".to_vec());
    seeds.push(b"content-length: 4000000000\r\n\r\nContent-Length: 10\r\n\r\n{\"id\":\xff}".to_vec());
    fuzz("lsp-frames", seeds, |b| {
        let mut reader = FrameReader::with_limit(std::io::Cursor::new(b.to_vec()), 4096);
        let mut frames = 0;
        while let Some(f) = reader.next_frame() {
            frames += 1;
            assert!(frames <= b.len() + 1, "a frame without progress");
            if let Frame::Malformed { why, .. } = f {
                assert!(!why.is_empty());
            }
        }
    });
}

/// The path rule: whatever a document names, a path it resolves to lies
/// inside the project, links followed.
#[test]
fn fuzz_project_paths() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("project");
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(root.join("chapters/deep")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.bib"), "").unwrap();
    std::fs::write(root.join("refs.bib"), "").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&outside, root.join("away")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.bib"), root.join("chapters/alias.bib")).unwrap();
        std::os::unix::fs::symlink(&root, root.join("chapters/loop")).unwrap();
    }
    let project = citewise::project::Project::new(&root).unwrap();
    let real_root = root.canonicalize().unwrap();
    let mut seeds = seeds("project-paths", &[], &[]);
    for s in [
        "refs.bib",
        "../refs.bib",
        "../../outside/secret.bib",
        "away/secret.bib",
        "alias.bib",
        "loop/loop/refs.bib",
        "deep/../../refs",
        "/etc/passwd",
        "./././x.bib",
        "..\\..\\x.bib",
        "//server/share/x.bib",
    ] {
        seeds.push(s.as_bytes().to_vec());
    }
    let base = root.join("chapters");
    fuzz("project-paths", seeds, |b| {
        let named = String::from_utf8_lossy(b);
        if let Ok(p) = project.resolve(&base, &named) {
            assert!(p.starts_with(&real_root), "{named:?} resolved to {} outside {}", p.display(), real_root.display());
            // What exists of it, links followed, is inside too.
            let mut existing = p.as_path();
            while !existing.exists() {
                existing = existing.parent().expect("the root exists");
            }
            assert!(existing.canonicalize().unwrap().starts_with(&real_root), "{named:?} → {}", p.display());
        }
    });
}

/// A Zotero data directory for the Zotero targets: a database of a few
/// items written as Zotero 7 writes them, and a file outside it that no
/// input may make citewise touch.
fn zotero_seed_dir() -> (tempfile::TempDir, PathBuf, PathBuf, Vec<u8>) {
    use citewise::testbed::zotero_db::{Era, NewItem, ZoteroDb};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    for (n, title) in ["A Paper", "Another Paper With a Long Title", "Third"].iter().enumerate() {
        let item = NewItem {
            key: format!("ITEM000{n}"),
            item_type: "journalArticle".into(),
            title: title.to_string(),
            abstract_note: "An abstract.".into(),
            date: "2020-01-01 2020".into(),
            creators: vec![("Ann".into(), "Author".into())],
            ..NewItem::default()
        };
        let id = db.add_item(&item).unwrap();
        db.add_stored_pdf(Some(id), &format!("ATTACH0{n}"), "paper.pdf").unwrap();
    }
    drop(db);
    let sentinel = dir.path().join("sentinel.txt");
    std::fs::write(&sentinel, "keep").unwrap();
    let bytes = std::fs::read(data.join("zotero.sqlite")).unwrap();
    (dir, data, sentinel, bytes)
}

/// Reads the Zotero directory `data` as `import --zotero` does: every
/// item's head and record, every PDF attachment's file.
fn read_zotero(data: &Path) {
    use citewise::corpus::zotero::Zotero;
    if let Ok(z) = Zotero::open(data) {
        if let Ok(heads) = z.heads() {
            for batch in heads.chunks(64) {
                let _ = z.items(batch);
            }
        }
        let _ = z.pdfs();
    }
}

/// The Zotero reader on mutated databases: no panic, no hang, and nothing
/// outside the folder touched.
#[test]
fn fuzz_zotero_database() {
    let (_dir, data, sentinel, bytes) = zotero_seed_dir();
    let mut seeds = seeds("zotero", &[".sqlite"], &["data/zotero/unlicense-zotero7/zotero.sqlite"]);
    seeds.push(bytes);
    fuzz("zotero", seeds, |b| {
        std::fs::write(data.join("zotero.sqlite"), b).unwrap();
        read_zotero(&data);
        assert!(sentinel.exists(), "a database made citewise delete a file outside the folder");
    });
}

/// A rollback journal beside a sound database: what SQLite replays from it
/// is in the copy only, and a super-journal it names is never deleted.
#[test]
fn fuzz_zotero_journal() {
    let (_dir, data, sentinel, _) = zotero_seed_dir();
    let name = sentinel.to_str().unwrap().as_bytes();
    let mut record = vec![0u8; 4];
    record.extend_from_slice(name);
    record.extend_from_slice(&(name.len() as u32).to_be_bytes());
    record.extend_from_slice(&name.iter().fold(0u32, |s, &b| s.wrapping_add(u32::from(b))).to_be_bytes());
    record.extend_from_slice(&[0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);
    let mut seeds = seeds("zotero-journal", &[], &[]);
    // A journal header (SQLite's magic, then counts and sizes) and the super-journal record.
    let header: Vec<u8> =
        [&[0xd9u8, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7][..], &[0, 0, 0, 1, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 16, 0]].concat();
    seeds.push([vec![1u8; 512], record.clone()].concat());
    seeds.push([header.clone(), vec![0u8; 512 - header.len()], record].concat());
    let journal = data.join("zotero.sqlite-journal");
    fuzz("zotero-journal", seeds, |b| {
        std::fs::write(&journal, b).unwrap();
        read_zotero(&data);
        assert!(sentinel.exists(), "a journal made citewise delete the file it names");
    });
}

/// The draft reader: what the editor, the language server and `check` read
/// of a draft in each syntax (its citations and their sentences, the local
/// context at a cursor, the global context, an open citation before the
/// cursor), on mutated drafts. Every citation's range lies in the draft, a
/// draft's citations stay within the budget, and nothing panics or hangs.
#[test]
fn fuzz_draft() {
    use citewise::check::citing::Draft;
    use citewise::corpus::citation_markup::{citation_groups, open_citation, CiteSyntax};
    use citewise::draft::{citing_sentence, cursor_context, global_context, ContextMode};
    let mut seeds = seeds("draft", &[".tex", ".md", ".typ"], &["data/fulltext"]);
    seeds.push(
        b"\\title{T}\n\\begin{abstract}A.\\end{abstract}\nTagging is solved~\\cite{a,b}. Parsing \\citep[p.~3]{c} is not.\n\n% \\cite{x}\n"
            .to_vec(),
    );
    seeds.push(b"---\ntitle: T\nbibliography: [a.bib, b.bib]\n---\n# H\nAs [@smith2020, p. 3; @doe] said. @jones2019 too.\n".to_vec());
    seeds.push(b"#set page(width: 10cm)\n= Head\nAs @smith2020[p. 3] said. #cite(<doe2019>)\n".to_vec());
    fuzz("draft", seeds, |b| {
        let text = text(b);
        for syntax in [CiteSyntax::Latex, CiteSyntax::Markdown, CiteSyntax::Typst] {
            // A wrapper command beside the `\cite` family, as a user's configuration names one.
            let grammar = &CiteGrammar::of(syntax).with_wrappers(["refp"]);
            let draft = Draft::read_up_to(&text, grammar, 64);
            assert!(draft.citations.len() <= 64);
            for group in citation_groups(&text, grammar).iter().take(64) {
                assert!(group.range.end <= text.len() && text.is_char_boundary(group.range.start), "{:?}", group.range);
                let _ = citing_sentence(&text, group.range.clone());
            }
            // The prose is as long as the draft, and its citations stand where they stood.
            let reading = citewise::draft::read(&text, grammar, 64);
            assert_eq!(reading.prose.len(), text.len());
            for group in &reading.scan.groups {
                assert!(reading.prose.get(group.range.clone()).is_some(), "{:?}", group.range);
                let _ = citing_sentence(&reading.prose, group.range.clone());
            }
            let cut = text.char_indices().nth(text.chars().count() / 2).map_or(0, |(i, _)| i);
            let _ = open_citation(&text[..cut], grammar);
        }
        let lines: Vec<String> = text.lines().map(str::to_string).collect();
        for row in [0, lines.len() / 2, lines.len().saturating_sub(1)] {
            let col = lines.get(row).map_or(0, |l| l.chars().count() / 2);
            for mode in [ContextMode::Sentence, ContextMode::Paragraph] {
                for syntax in [CiteSyntax::Latex, CiteSyntax::Markdown, CiteSyntax::Typst] {
                    let _ = cursor_context(&lines, (row, col), mode, &CiteGrammar::of(syntax));
                }
            }
        }
        let _ = global_context(&text, &CiteGrammar::PLAIN);
    });
}
