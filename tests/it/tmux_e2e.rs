#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The real binary in tmux: write, ask, mark, export, cite, save; and a
//! `kill -9` that loses nothing but the last autosave interval.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;

fn tmux_available() -> bool {
    Command::new("tmux").arg("-V").output().is_ok_and(|o| o.status.success())
}

struct Session {
    name: String,
    socket: PathBuf,
}

impl Session {
    fn start(dir: &Path, name: &str, args: &[&str]) -> Session {
        Session::start_with(dir, name, "", args)
    }

    /// With `env` (`NAME=value …`) before the command.
    fn start_with(dir: &Path, name: &str, env: &str, args: &[&str]) -> Session {
        let socket = dir.join(format!("{name}.sock"));
        let home = dir.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let mut cmd = format!(
            "{env} HOME={h} XDG_DATA_HOME={h}/data XDG_CONFIG_HOME={h}/config CITEWISE_LIBRARY={lib} {bin}",
            h = home.display(),
            lib = dir.join("lib").display(),
            bin = env!("CARGO_BIN_EXE_citewise")
        );
        for a in args {
            cmd.push(' ');
            cmd.push_str(a);
        }
        cmd.push_str("; sleep 60");
        let ok = Command::new("tmux")
            .args(["-S", socket.to_str().unwrap(), "new-session", "-d", "-s", name, "-x", "120", "-y", "32", &cmd])
            .status()
            .unwrap();
        assert!(ok.success());
        Session { name: name.into(), socket }
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").arg("-S").arg(&self.socket).args(args).output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            self.tmux(&["send-keys", "-t", &self.name, k]);
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-t", &self.name, "-l", text]);
        std::thread::sleep(Duration::from_millis(300));
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.name])
    }

    fn wait_for(&self, needle: &str, secs: u64) -> String {
        let t = Instant::now();
        loop {
            let s = self.screen();
            if s.contains(needle) {
                return s;
            }
            assert!(t.elapsed() < Duration::from_secs(secs), "waited {secs} s for {needle:?}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn pid(&self) -> u32 {
        self.tmux(&["list-panes", "-t", &self.name, "-F", "#{pane_pid}"]).trim().parse().unwrap()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        let _ = Command::new("tmux").arg("-S").arg(&self.socket).args(["kill-server"]).output();
    }
}

fn setup() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    import(&lib, &[common::fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    dir
}

#[test]
fn write_ask_mark_export_cite_save() {
    if !tmux_available() {
        common::skip_unless_ci("the end-to-end test", "tmux is not installed");
        return;
    }
    let dir = setup();
    let draft = dir.path().join("draft.tex");
    std::fs::write(&draft, "\\section{Related work}\n").unwrap();
    let bib = dir.path().join("refs.bib");
    // The library's channels stay as they are while the test asks (no
    // vectors are encoded meanwhile).
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "background_encoding = \"off\"\n").unwrap();
    let s =
        Session::start(dir.path(), "e2e", &[draft.to_str().unwrap(), "--bib", bib.to_str().unwrap(), "--config", config.to_str().unwrap()]);
    s.wait_for("draft.tex", 10);
    s.type_text("Completions of a typed query prefix can be ranked with BM25 ");
    s.keys(&["F5"]);
    let results = s.wait_for(" 2. ", 20);
    assert!(results.contains("Learning to Personalize Query Auto-Completion"), "{results}");
    s.keys(&["Tab", "Space", "Space", "e"]);
    let screen = s.wait_for("Exported", 10);
    assert!(screen.contains("2 added"), "{screen}");
    s.keys(&["Escape", "c"]);
    s.wait_for("inserted \\cite{", 10);
    s.keys(&["C-s"]);
    s.wait_for("saved", 10);
    s.keys(&["C-q"]);

    let text = std::fs::read_to_string(&draft).unwrap();
    let bibtext = std::fs::read_to_string(&bib).unwrap();
    // Tied to the word before it, the space typed after the word moved after the citation.
    assert!(text.starts_with("\\section{Related work}\nCompletions of a typed query prefix can be ranked with BM25~\\cite{"), "{text}");
    let keys: Vec<&str> = bibtext.lines().filter(|l| l.starts_with('@')).map(|l| l.split(['{', ',']).nth(1).unwrap()).collect();
    assert_eq!(keys.len(), 2, "{bibtext}");
    assert!(text.contains(&format!("~\\cite{{{},{}}} ", keys[0], keys[1])), "{text}\n{bibtext}");
    assert!(keys.contains(&"shokouhi2013learning") && keys.contains(&"robertson2009probabilistic"), "{bibtext}");
    // Robertson's entry stands alone: its original text; Shokouhi's used an
    // @string macro of the library file: generated, with the venue resolved.
    assert!(bibtext.contains("  author  = {Robertson, Stephen and Zaragoza, Hugo},"), "original entry text: {bibtext}");
    assert!(bibtext.contains("booktitle = {Proceedings of the International ACM SIGIR"), "{bibtext}");
}

#[test]
fn kill_9_loses_at_most_the_autosave_interval() {
    if !tmux_available() {
        common::skip_unless_ci("the end-to-end test", "tmux is not installed");
        return;
    }
    let dir = setup();
    let draft = dir.path().join("notes.md");
    std::fs::write(&draft, "# Notes\n").unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "autosave_seconds = 1\n").unwrap();
    let args = [draft.to_str().unwrap(), "--config", config.to_str().unwrap()];
    {
        let s = Session::start(dir.path(), "crash", &args);
        s.wait_for("notes.md", 10);
        s.type_text("Text typed before the crash.");
        std::thread::sleep(Duration::from_millis(2500));
        // The shell's child is citewise: kill it without warning.
        let shell = s.pid();
        let out = Command::new("pgrep").args(["-P", &shell.to_string()]).output().unwrap();
        let pid = String::from_utf8_lossy(&out.stdout).split_whitespace().next().unwrap().to_string();
        assert!(Command::new("kill").args(["-9", &pid]).status().unwrap().success());
    }
    assert_eq!(std::fs::read_to_string(&draft).unwrap(), "# Notes\n", "the file itself was not saved");
    let s = Session::start(dir.path(), "restore", &args);
    s.wait_for("Restore it? (y / n)", 10);
    s.keys(&["y"]);
    s.wait_for("Text typed before the crash.", 10);
    s.keys(&["C-s"]);
    s.wait_for("saved", 10);
    s.keys(&["C-q"]);
    assert_eq!(std::fs::read_to_string(&draft).unwrap(), "# Notes\nText typed before the crash.\n");
}

/// The pid of the `citewise` the session's shell runs.
fn citewise_pid(s: &Session) -> String {
    let out = Command::new("pgrep").args(["-P", &s.pid().to_string()]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).split_whitespace().next().expect("citewise is running").to_string()
}

/// The rows a vector store's manifest lists and how many are live (0, 0
/// before its first commit).
fn store_rows(dir: &Path) -> (usize, usize) {
    let state = citewise::index::vectors::VectorStore::inspect(dir).expect("the vectors are not damaged");
    state.map_or((0, 0), |s| (s.rows, s.live))
}

#[test]
fn the_editors_background_encoding_resumes_after_kill_9() {
    if !tmux_available() {
        common::skip_unless_ci("the end-to-end test", "tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // More papers than one commit (2,048), without vectors.
    let Some(lib) = common::benchmark_library(dir.path(), 3000) else { return };
    if !common::models_or_fail("encoding in the background") {
        return;
    }
    drop(lib);
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "background_encoding = \"fast\"\n").unwrap();
    let draft = dir.path().join("draft.md");
    std::fs::write(&draft, "# Related work\n").unwrap();
    let args = [draft.to_str().unwrap(), "--config", config.to_str().unwrap()];
    let (student, dense) = (dir.path().join("lib/citation-vectors-student"), dir.path().join("lib/vectors"));
    let committed = {
        let s = Session::start(dir.path(), "encode", &args);
        s.wait_for("encoding citation vectors (student)", 60);
        let t = Instant::now();
        while store_rows(&student).1 == 0 {
            assert!(t.elapsed() < Duration::from_secs(120), "no stand-ins committed; screen:\n{}", s.screen());
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(Command::new("kill").args(["-9", &citewise_pid(&s)]).status().unwrap().success());
        store_rows(&student).1
    };
    assert!(committed < 3000, "killed mid-run: {committed} committed");
    let s = Session::start(dir.path(), "resume", &args);
    let t = Instant::now();
    while store_rows(&student).1 < 3000 || store_rows(&dense).1 < 3000 {
        assert!(t.elapsed() < Duration::from_secs(300), "the encoding did not finish; screen:\n{}", s.screen());
        std::thread::sleep(Duration::from_millis(200));
    }
    // The rest was encoded, nothing twice.
    assert_eq!(store_rows(&student), (3000, 3000));
    assert_eq!(store_rows(&dense), (3000, 3000));
    // The answers now come from the channels those vectors opened.
    s.type_text("Statistical machine translation systems learn phrase tables from parallel corpora ");
    s.keys(&["F5"]);
    let t = Instant::now();
    loop {
        let screen = s.screen();
        let status = screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().to_string();
        if status.contains("citation ") && status.contains("hatten ") {
            assert!(!screen.contains("encoding "), "{screen}");
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "no citation and hatten stages in the status bar:\n{screen}");
        std::thread::sleep(Duration::from_millis(200));
    }
    s.keys(&["C-q"]);
}

/// After an import of citing sentences that did not learn (`--no-embed`),
/// the editor learns the library's evidence trust in the background: the
/// status bar shows it, F5 is answered meanwhile, and once it is learned
/// the editor says what it learned (and reopens its recommender with it). Real in-field data: the ACM-CR
/// pool with 14 of its citing papers as the library's documents (where the
/// library learns to trust its evidence less, `tests/it/learned_fusion.rs`).
#[test]
fn the_editor_learns_the_evidence_trust_in_the_background_after_an_import() {
    if !tmux_available() {
        common::skip_unless_ci("the end-to-end test", "tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::acm_library_with_documents(dir.path()) else { return };
    // Word channels only: the learning does not wait on models.
    let no_models = dir.path().join("no-models");
    let learned = || citewise::pipeline::learned_fusion::read(&Library::open(&lib).unwrap()).unwrap();
    assert_eq!(learned(), None, "the import did not learn");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "background_encoding = \"off\"\n").unwrap();
    let draft = dir.path().join("draft.md");
    std::fs::write(&draft, "# Related work\n").unwrap();
    let env = format!("CITEWISE_MODELS={}", no_models.display());
    let s = Session::start_with(dir.path(), "learn", &env, &[draft.to_str().unwrap(), "--config", config.to_str().unwrap()]);
    s.wait_for("learning the evidence trust", 120);
    s.type_text("Query suggestions mined from search engine logs help users reformulate their queries ");
    s.keys(&["F5"]);
    // Answered while the learning goes on: the stage's time in the status
    // bar, the learning's progress still beside it.
    let t = Instant::now();
    loop {
        let screen = s.screen();
        let status = screen.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default().to_string();
        if status.contains("bm25 ") {
            assert!(status.contains("learning the evidence trust"), "answered after the learning ended:\n{screen}");
            assert_eq!(learned(), None);
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(60), "no answer while learning:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let screen = s.wait_for("evidence trusted at", 300);
    let kept = learned().expect("the learned trust is kept");
    assert!(kept.adopted() && kept.evidence_trust < 1.0 && kept.documents == 14, "{kept:?}");
    assert!(screen.contains(&format!("evidence trusted at {}", kept.evidence_trust)), "{screen}");
    assert!(!screen.contains("learning the evidence trust"), "{screen}");
    s.keys(&["C-q"]);
}

/// A draft with Windows line ends behind a symbolic link: saving writes the
/// file the link points to, with its line ends, and the link stays.
#[cfg(unix)]
#[test]
fn a_linked_crlf_draft_is_saved_through_the_link_with_crlf() {
    if !tmux_available() {
        common::skip_unless_ci("the end-to-end test", "tmux is not installed");
        return;
    }
    let dir = setup();
    let real_dir = dir.path().join("project");
    std::fs::create_dir(&real_dir).unwrap();
    let real = real_dir.join("paper.tex");
    std::fs::write(&real, "\\section{Intro}\r\nFirst line.\r\n").unwrap();
    let link = dir.path().join("draft.tex");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let s = Session::start(dir.path(), "crlf", &[link.to_str().unwrap()]);
    s.wait_for("draft.tex", 10);
    s.type_text("Second line.");
    s.keys(&["C-s"]);
    s.wait_for("saved", 10);
    s.keys(&["C-q"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    assert_eq!(std::fs::read(&real).unwrap(), b"\\section{Intro}\r\nFirst line.\r\nSecond line.\r\n");
}

/// A library imported from Zotero: a paper added in Zotero while the
/// editor runs is in the next recommendation, without a restart.
#[test]
fn a_paper_added_in_zotero_appears_in_the_running_editor() {
    use citewise::testbed::zotero_db::{Era, NewItem, ZoteroDb};
    if !tmux_available() {
        common::skip_unless_ci("the end-to-end test", "tmux is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    let article = |key: &str, title: &str, abstract_note: &str, last: &str| NewItem {
        key: key.into(),
        item_type: "journalArticle".into(),
        title: title.into(),
        abstract_note: abstract_note.into(),
        date: "2021".into(),
        creators: vec![("Ann".into(), last.into())],
        ..NewItem::default()
    };
    db.add_item(&article("FIRST001", "Coral Reef Bleaching Under Heat Stress", "Reefs bleach when the sea warms.", "Reef")).unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let make_key = citewise::export::keys::make_key(citewise::export::keys::KeyStyle::AuthorYear);
    citewise::library::zotero::sync(&lib, &data, &Default::default(), &make_key).unwrap();
    drop(lib);
    let draft = dir.path().join("draft.md");
    std::fs::write(&draft, "").unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "background_encoding = \"off\"\n").unwrap();
    let s = Session::start(dir.path(), "zotero", &[draft.to_str().unwrap(), "--config", config.to_str().unwrap()]);
    s.wait_for("draft.md", 10);
    s.type_text("Zebrafish regrow amputated fins through blastema signalling ");
    s.keys(&["F5"]);
    let before = s.wait_for("no paper", 20);
    assert!(!before.contains("Zebrafish Fin Regeneration"), "{before}");

    // One transaction, as Zotero writes an item.
    let zebra = article(
        "ZEBRA001",
        "Zebrafish Fin Regeneration Through Blastema Signalling",
        "Amputated zebrafish fins regrow from a blastema.",
        "Fish",
    );
    db.batch(|db| db.add_item(&zebra)).unwrap();
    s.wait_for("Zotero: 1 added", 30);
    s.keys(&["F5"]);
    let after = s.wait_for("Zebrafish Fin Regeneration", 20);
    assert!(after.contains(" 1. "), "{after}");
    s.keys(&["C-q", "C-q"]);
}

/// The README's main command, run as a new user runs it (a fresh data
/// directory; the shared benchmark papers and PDFs): after one F5 the
/// results are reranked and the first paper shows sentences of the PDFs
/// that cite it.
#[test]
fn the_readmes_main_command_shows_reranked_papers_with_pdf_evidence() {
    if !tmux_available() {
        common::skip_unless_ci("the README's main command", "tmux is not installed");
        return;
    }
    let Some(shared) = common::shared_or_fail("the README's main command") else { return };
    if !common::models_or_fail("the README's main command") {
        return;
    }
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let block = readme.split("## On a fresh machine").nth(1).unwrap().split("```sh\n").nth(1).unwrap().split("\n```").next().unwrap();
    let steps: Vec<&str> = block.split("&&").map(str::trim).collect();
    assert_eq!(steps[0], "cargo build --release", "{block}");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    // A fresh data directory; the models where this machine keeps them.
    let models = citewise::neural::models::models_dir().unwrap();
    let bin = env!("CARGO_BIN_EXE_citewise");
    let shared = shared.display().to_string();
    // Each step as written, with this build and the shared data where the README names them.
    let words = |step: &str| -> Vec<String> { step.split_whitespace().skip(1).map(|w| w.replace("../shared", &shared)).collect() };
    for step in &steps[1..steps.len() - 1] {
        assert!(step.starts_with("./target/release/citewise import"), "{step}");
        let o = common::citewise_command()
            .args(words(step))
            .env("CITEWISE_DATA_DIR", &data)
            .env("CITEWISE_MODELS", &models)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(o.status.success(), "{step}: {}", String::from_utf8_lossy(&o.stderr));
    }
    let editor = steps.last().unwrap();
    assert!(editor.starts_with("./target/release/citewise ") && editor.ends_with(".tex"), "{editor}");
    let socket = dir.path().join("readme.sock");
    let command = format!(
        "cd {d} && CITEWISE_DATA_DIR={data} CITEWISE_MODELS={models} CITEWISE_CONFIG_DIR={d}/no-config {bin} {args}; sleep 60",
        d = dir.path().display(),
        data = data.display(),
        models = models.display(),
        args = words(editor).join(" ")
    );
    assert!(Command::new("tmux")
        .args(["-S", socket.to_str().unwrap(), "new-session", "-d", "-s", "readme", "-x", "160", "-y", "45", &command])
        .status()
        .unwrap()
        .success());
    let s = Session { name: "readme".into(), socket };
    s.wait_for("draft.tex", 20);
    s.type_text(
        "The most popular statistical models for named entity recognition are hidden Markov models, maximum entropy models \
         and conditional random fields.",
    );
    s.keys(&["F5"]);
    // The rerank stage ran (its time is in the status bar) and answered.
    let screen = s.wait_for("rerank ", 60);
    assert!(screen.contains(" 1. ") && screen.contains("Named Entity Recognition"), "{screen}");
    // The first paper's evidence: sentences of the PDFs, each with its citing paper.
    let evidence = screen.split("Evidence").nth(1).unwrap_or_default();
    assert!(evidence.contains("· support "), "no citing sentence beside the first paper:\n{screen}");
    assert!(!evidence.contains("no citing sentence in the evidence database"), "{screen}");
    s.keys(&["C-q"]);
}
