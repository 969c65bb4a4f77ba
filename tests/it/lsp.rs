#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! `citewise lsp` driven over stdio with real JSON-RPC messages.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// A client speaking to one server process.
struct Client {
    child: Child,
    stdin: ChildStdin,
    incoming: Receiver<Value>,
    /// Messages read while waiting for something else.
    seen: Vec<Value>,
}

impl Client {
    fn start(library: &Path, config: &Path) -> Client {
        Client::start_with(library, config, &["--stages", "bm25,evidence"])
    }

    fn start_with(library: &Path, config: &Path, args: &[&str]) -> Client {
        Client::start_in(library, config, args, &[])
    }

    /// With `env` set for the server.
    fn start_in(library: &Path, config: &Path, args: &[&str], env: &[(&str, &Path)]) -> Client {
        let mut child = common::citewise_command()
            .args(["--library", library.to_str().unwrap(), "lsp", "--config", config.to_str().unwrap()])
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("the binary runs");
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let (tx, incoming) = mpsc::channel();
        std::thread::spawn(move || loop {
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if stdout.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim();
                if line.is_empty() {
                    break;
                }
                if let Some(v) = line.strip_prefix("Content-Length: ") {
                    len = v.parse().unwrap();
                }
            }
            let mut body = vec![0; len];
            if stdout.read_exact(&mut body).is_err() {
                return;
            }
            if tx.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        });
        Client { child, stdin, incoming, seen: Vec::new() }
    }

    fn send(&mut self, msg: Value) {
        self.send_text(&msg.to_string());
    }

    /// A message's JSON text, framed.
    fn send_text(&mut self, body: &str) {
        write!(self.stdin, "Content-Length: {}\r\n\r\n{body}", body.len()).unwrap();
        self.stdin.flush().unwrap();
    }

    /// Bytes as they are, framed or not.
    fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin.write_all(bytes).unwrap();
        self.stdin.flush().unwrap();
    }

    fn request(&mut self, id: i64, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    }

    fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// The first message (read now or before) that `pick` accepts.
    fn wait_for(&mut self, what: &str, pick: impl Fn(&Value) -> bool) -> Value {
        self.wait_for_within(what, Duration::from_secs(60), pick)
    }

    fn wait_for_within(&mut self, what: &str, limit: Duration, pick: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&pick) {
            return self.seen.remove(i);
        }
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let msg = self.incoming.recv_timeout(left).unwrap_or_else(|_| panic!("no {what} within {limit:?}; seen: {:#?}", self.seen));
            if pick(&msg) {
                return msg;
            }
            self.seen.push(msg);
        }
    }

    fn response(&mut self, id: i64) -> Value {
        self.wait_for(&format!("response {id}"), |m| m["id"] == json!(id) && m.get("method").is_none())
    }

    fn call(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.request(id, method, params);
        self.response(id)
    }

    fn initialize(&mut self) {
        self.initialize_in(None);
    }

    /// Initializes with `root` as the workspace folder.
    fn initialize_in(&mut self, root: Option<&Path>) {
        let root_uri = root.map_or(Value::Null, |r| json!(uri(r)));
        let r = self.call(1, "initialize", json!({"processId": null, "rootUri": root_uri, "capabilities": {}}));
        assert_eq!(r["result"]["capabilities"]["completionProvider"]["resolveProvider"], json!(true), "{r}");
        self.notify("initialized", json!({}));
    }

    fn open(&mut self, uri: &str, language: &str, text: &str) {
        self.notify("textDocument/didOpen", json!({"textDocument": {"uri": uri, "languageId": language, "version": 1, "text": text}}));
    }

    fn change(&mut self, uri: &str, version: i64, text: &str) {
        self.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
    }

    fn diagnostics(&mut self, uri: &str, version: i64) -> Vec<Value> {
        let m = self.wait_for("diagnostics", |m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == uri && m["params"]["version"] == json!(version)
        });
        m["params"]["diagnostics"].as_array().unwrap().clone()
    }

    fn shutdown(mut self) {
        let r = self.call(999, "shutdown", Value::Null);
        assert!(r.get("error").is_none(), "{r}");
        self.notify("exit", Value::Null);
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
    }
}

/// The fixture library, a config and a draft directory.
fn setup() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let lib = common::fixture_library(dir.path());
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "key_style = \"authorYear\"\nresults = 5\n").unwrap();
    (dir, lib, config)
}

fn uri(path: &Path) -> String {
    format!("file://{}", path.display())
}

/// Line and UTF-16 column of the end of `text`.
fn end_of(text: &str) -> Value {
    let line = text.matches('\n').count();
    let col: usize = text.rsplit('\n').next().unwrap().encode_utf16().count();
    json!({"line": line, "character": col})
}

#[test]
fn completion_resolve_bibliography_hover_diagnostics_and_actions() {
    let (dir, lib, config) = setup();
    let draft = dir.path().join("paper.tex");
    let bib = dir.path().join("refs.bib");
    let doc = uri(&draft);
    let mut c = Client::start(&lib, &config);
    c.initialize();

    // Completion inside \cite{: the papers for the sentence, in citewise's order.
    let head = "\\title{Tagging}\n\\bibliography{refs}\n\nWe tag every word with a trigram hidden Markov model tagger \\cite{";
    let text = format!("{head}}} trained on news.\n");
    c.open(&doc, "latex", &text);
    let r = c.call(2, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": end_of(head)}));
    let items = r["result"]["items"].as_array().unwrap_or_else(|| panic!("{r}")).clone();
    assert!(!items.is_empty(), "{r}");
    let first = &items[0];
    assert_eq!(first["label"], "brants2000", "{first}");
    assert!(first["detail"].as_str().unwrap().starts_with("TnT – A Statistical Part-of-Speech Tagger · Thorsten Brants · 2000"), "{first}");
    assert_eq!(first["sortText"], "0000");
    assert_eq!(first["filterText"], "", "nothing typed: the client keeps every item");
    assert_eq!(first["textEdit"]["newText"], "brants2000");
    assert_eq!(r["result"]["isIncomplete"], json!(false), "no rerank stage: the answer is complete");

    // Resolve adds the documentation.
    let resolved = c.call(3, "completionItem/resolve", first.clone());
    let docs = resolved["result"]["documentation"]["value"].as_str().unwrap_or_else(|| panic!("{resolved}"));
    assert!(docs.contains("**TnT – A Statistical Part-of-Speech Tagger**"), "{docs}");

    // Accepting it: the key lands in the text, and the entry in refs.bib.
    let accepted = format!("{head}brants2000}} trained on news.\n");
    c.change(&doc, 2, &accepted);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&bib).is_ok_and(|b| b.contains("@inproceedings{brants2000,")) {
        assert!(Instant::now() < deadline, "refs.bib never got the entry: {:?}", std::fs::read_to_string(&bib));
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(c.diagnostics(&doc, 2).is_empty(), "the key is known");
    // Now cited, the paper is no longer offered.
    let r = c.call(4, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": end_of(head)}));
    assert!(r["result"]["items"].as_array().unwrap().iter().all(|i| i["label"] != "brants2000"), "{r}");

    // Hover on the key: the paper.
    let at = end_of(&format!("{head}Bra"));
    let h = c.call(5, "textDocument/hover", json!({"textDocument": {"uri": doc}, "position": at}));
    let shown = h["result"]["contents"]["value"].as_str().unwrap_or_else(|| panic!("{h}"));
    assert!(shown.contains("TnT – A Statistical Part-of-Speech Tagger") && shown.contains("Thorsten Brants (2000)"), "{shown}");

    // Diagnostics: an unknown key is a warning, an entry without a title a hint.
    std::fs::write(&bib, format!("{}\n@misc{{untitled, author = {{Nobody}}, year = {{2020}}}}\n", std::fs::read_to_string(&bib).unwrap()))
        .unwrap();
    let with_unknown = format!("{accepted}As \\cite{{nosuchkey2099}} and \\cite{{untitled}} say.\n");
    c.change(&doc, 3, &with_unknown);
    let d = c.diagnostics(&doc, 3);
    let severity = |key: &str| d.iter().find(|x| x["message"].as_str().unwrap().contains(key)).map(|x| x["severity"].clone());
    assert_eq!(severity("nosuchkey2099"), Some(json!(2)), "{d:?}");
    assert_eq!(severity("untitled"), Some(json!(4)), "{d:?}");
    assert_eq!(d.len(), 2, "{d:?}");

    // A code action on a sentence without a citation.
    let plain = format!("{with_unknown}BLEU compares n-gram precision of translations with references.\n");
    c.change(&doc, 4, &plain);
    let line = plain.matches('\n').count() - 1;
    let r = c.call(
        6,
        "textDocument/codeAction",
        json!({"textDocument": {"uri": doc},
        "range": {"start": {"line": line, "character": 3}, "end": {"line": line, "character": 3}}, "context": {"diagnostics": []}}),
    );
    let actions = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert!(!actions.is_empty() && actions.len() <= 5, "{r}");
    assert!(actions[0]["title"].as_str().unwrap().starts_with("Cite papineni2002: BLEU"), "{r}");
    let edit = &actions[0]["edit"]["changes"][&doc][0];
    assert_eq!(edit["newText"], " \\cite{papineni2002}");
    assert_eq!(
        edit["range"]["start"],
        json!({"line": line, "character": "BLEU compares n-gram precision of translations with references".len()})
    );
    // The same on a sentence that cites already: nothing.
    let r = c.call(
        7,
        "textDocument/codeAction",
        json!({"textDocument": {"uri": doc},
        "range": {"start": {"line": 3, "character": 5}, "end": {"line": 3, "character": 5}}, "context": {"diagnostics": []}}),
    );
    assert_eq!(r["result"], json!([]), "{r}");
    c.shutdown();
}

#[test]
fn markdown_and_typst_slots_and_cancelled_requests() {
    let (dir, lib, config) = setup();
    let mut c = Client::start(&lib, &config);
    c.initialize();
    let md = uri(&dir.path().join("notes.md"));
    let head = "---\nbibliography: refs.bib\n---\nCompletions of a typed query prefix are personalised [@";
    c.open(&md, "markdown", &format!("{head}]\n"));
    let r = c.call(2, "textDocument/completion", json!({"textDocument": {"uri": md}, "position": end_of(head)}));
    assert_eq!(r["result"]["items"][0]["label"], "shokouhi2013", "{r}");
    let typ = uri(&dir.path().join("paper.typ"));
    let head = "Machine translation is scored by n-gram overlap with references @";
    c.open(&typ, "typst", head);
    let r = c.call(3, "textDocument/completion", json!({"textDocument": {"uri": typ}, "position": end_of(head)}));
    assert_eq!(r["result"]["items"][0]["label"], "papineni2002", "{r}");
    // Outside a citation: nothing.
    let r = c.call(4, "textDocument/completion", json!({"textDocument": {"uri": typ}, "position": {"line": 0, "character": 3}}));
    assert_eq!(r["result"], Value::Null, "{r}");

    // Two requests for one document, the first cancelled: each gets one
    // answer, the newer a list; the older a list or "cancelled" (-32800).
    c.request(10, "textDocument/completion", json!({"textDocument": {"uri": typ}, "position": end_of(head)}));
    c.notify("$/cancelRequest", json!({"id": 10}));
    c.request(11, "textDocument/completion", json!({"textDocument": {"uri": typ}, "position": end_of(head)}));
    let newer = c.response(11);
    assert!(newer["result"]["items"].is_array(), "{newer}");
    let older = c.response(10);
    assert!(older["result"]["items"].is_array() || older["error"]["code"] == json!(-32800), "{older}");
    c.shutdown();
}

#[test]
fn bad_input_gets_an_error_or_nothing_and_the_server_stays_up() {
    let (dir, lib, config) = setup();
    let mut c = Client::start(&lib, &config);
    c.initialize();
    // A document that was never opened.
    let r = c.call(
        2,
        "textDocument/completion",
        json!({"textDocument": {"uri": "file:///nowhere.tex"}, "position": {"line": 0, "character": 0}}),
    );
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    // Malformed parameters.
    let r = c.call(3, "textDocument/hover", json!({"nonsense": true}));
    assert_eq!(r["error"]["code"], json!(-32602), "{r}");
    // An unknown method.
    let r = c.call(4, "workspace/symbol", json!({"query": "x"}));
    assert_eq!(r["error"]["code"], json!(-32601), "{r}");
    // Positions past the end, in the middle of a surrogate pair, in binary junk.
    let junk = uri(&dir.path().join("junk.tex"));
    let text = "\u{0}\u{7}\u{1b}[2J 😀 \\cite{\n\u{fffd}\u{202e}";
    c.open(&junk, "latex", text);
    // (0, 8) falls between the two UTF-16 units of the emoji.
    for (id, line, character) in [(5, 99, 0), (6, 0, 8), (7, 0, 9999), (8, 1, 1)] {
        let r = c.call(
            id,
            "textDocument/completion",
            json!({"textDocument": {"uri": junk}, "position": {"line": line, "character": character}}),
        );
        assert!(r.get("error").is_none(), "{r}");
    }
    // A 10 MB document: no recommendations read from it, and quickly.
    let big = uri(&dir.path().join("big.tex"));
    let huge = format!("{}\\cite{{", "word ".repeat(2_000_000));
    c.open(&big, "latex", &huge);
    let t = Instant::now();
    let r = c.call(9, "textDocument/completion", json!({"textDocument": {"uri": big}, "position": end_of(&huge)}));
    assert_eq!(r["result"], Value::Null, "{r}");
    assert!(t.elapsed() < Duration::from_secs(30));
    // ... and the user is told why.
    let told = c.wait_for("why nothing is offered", |m| m["method"] == "window/showMessage");
    assert!(told["params"]["message"].as_str().unwrap().starts_with("big.tex is 9.5 MiB, over the 4 MiB citewise reads"), "{told}");
    // A bibliography that cannot be written: an error, a log line, no exit.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    std::fs::write(ro.join("references.bib"), "").unwrap();
    let mut perms = std::fs::metadata(ro.join("references.bib")).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(ro.join("references.bib"), perms).unwrap();
    let doc = uri(&ro.join("paper.tex"));
    let head = "We tag every word with a trigram hidden Markov model tagger \\cite{";
    c.open(&doc, "latex", head);
    let r = c.call(10, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": end_of(head)}));
    let key = r["result"]["items"][0]["label"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    let r = c.call(11, "workspace/executeCommand", json!({"command": "citewise.addToBibliography", "arguments": [doc, key]}));
    assert!(r["error"]["message"].as_str().unwrap_or_default().contains("read-only"), "{r}");
    let log = c.wait_for("a log message", |m| m["method"] == "window/logMessage" && m["params"]["type"] == json!(1));
    assert!(log["params"]["message"].as_str().unwrap().contains("references.bib"), "{log}");
    // Still answering.
    let r = c.call(12, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": end_of(head)}));
    assert!(r["result"]["items"].is_array(), "{r}");
    c.shutdown();
}

#[test]
fn with_every_stage_the_server_encodes_the_library_in_the_background_and_uses_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::benchmark_library(dir.path(), 400) else { return };
    if !common::models_or_fail("encoding in the background") {
        return;
    }
    drop(lib);
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "background_encoding = \"fast\"\n").unwrap();
    let mut c = Client::start_with(&dir.path().join("lib"), &config, &[]);
    c.initialize();
    // The client hears of each channel's vectors as they come to cover the library.
    let log = |m: &Value| m["method"] == "window/logMessage";
    let text = |m: &Value| m["params"]["message"].as_str().unwrap_or_default().to_string();
    for label in ["citation vectors (student)", "dense vectors"] {
        let m = c.wait_for(label, |m| log(m) && text(m).starts_with(label) && text(m).contains("now cover the library"));
        assert!(text(&m).ends_with("(400 papers encoded)"), "{m}");
    }
    // The next answer runs the channels those vectors opened.
    let draft = dir.path().join("paper.tex");
    let doc = uri(&draft);
    let head = "We translate with a phrase-based statistical machine translation system \\cite{";
    c.open(&doc, "latex", &format!("{head}}} trained on parallel text.\n"));
    let r = c.call(2, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": end_of(head)}));
    assert!(!r["result"]["items"].as_array().unwrap_or_else(|| panic!("{r}")).is_empty(), "{r}");
    let m = c.wait_for("the request's stages", |m| m["method"] == "citewise/timings" && m["params"]["request"] == json!(2));
    let stages: Vec<&str> = m["params"]["stages"].as_array().unwrap().iter().filter_map(|s| s[0].as_str()).collect();
    assert!(stages.contains(&"citation") && stages.contains(&"hatten"), "{m}");
}

/// A library whose citing sentences came without their trust learned (as
/// an `import --evidence --no-embed` or a Zotero sync leaves it): the
/// server learns it in the background, shows its progress where the client
/// can (`window/workDoneProgress`) and logs what it learned.
#[test]
fn the_server_learns_the_evidence_trust_in_the_background_and_shows_its_progress() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::acm_library_with_documents(dir.path()) else { return };
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "background_encoding = \"off\"\n").unwrap();
    let no_models = dir.path().join("no-models");
    let mut c = Client::start_in(&lib, &config, &[], &[("CITEWISE_MODELS", &no_models)]);
    let r = c.call(1, "initialize", json!({"processId": null, "capabilities": {"window": {"workDoneProgress": true}}}));
    assert!(r.get("error").is_none(), "{r}");
    c.notify("initialized", json!({}));
    let create = c.wait_for("a progress token", |m| m["method"] == "window/workDoneProgress/create");
    let token = create["params"]["token"].clone();
    c.send(json!({"jsonrpc": "2.0", "id": create["id"], "result": null}));
    let is = |m: &Value, kind: &str| m["method"] == "$/progress" && m["params"]["token"] == token && m["params"]["value"]["kind"] == kind;
    let begin = c.wait_for("its begin", |m| is(m, "begin"));
    assert_eq!(begin["params"]["value"]["title"], "citewise: learning the evidence trust", "{begin}");
    let end = c.wait_for_within("its end", Duration::from_secs(300), |m| is(m, "end"));
    let said = end["params"]["value"]["message"].as_str().unwrap().to_string();
    let learned = citewise::pipeline::learned_fusion::read(&citewise::library::Library::open(&lib).unwrap()).unwrap().expect("kept");
    assert!(learned.adopted() && learned.documents == 14, "{learned:?}");
    assert_eq!(said, learned.describe());
    let log = c.wait_for("the log line", |m| {
        m["method"] == "window/logMessage" && m["params"]["message"].as_str().unwrap_or_default().starts_with(&said)
    });
    let line = log["params"]["message"].as_str().unwrap();
    assert!(line.ends_with(&format!("(learned from {} of the library's citing sentences)", learned.sentences)), "{log}");
    c.shutdown();
}

/// Waits (at most `limit`) for the server to end; its exit code and how
/// long it took.
fn exits_within(child: &mut Child, limit: Duration) -> (Option<i32>, Duration) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code(), start.elapsed());
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("the server did not exit within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_document_never_makes_the_server_write_outside_its_project() {
    let (dir, lib, config) = setup();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // Files a hostile document names: outside the workspace, and inside it
    // but not BibTeX.
    let outside = dir.path().join("outside.bib");
    std::fs::write(&outside, "% someone else's file\n").unwrap();
    let notes = ws.join("notes.txt");
    std::fs::write(&notes, "my notes, not a bibliography\n").unwrap();
    let mut c = Client::start(&lib, &config);
    c.initialize_in(Some(&ws));
    let cases = [
        ("relative", "\\addbibresource{../outside.bib}\n".to_string(), "`../outside.bib`".to_string()),
        ("absolute", format!("\\addbibresource{{{}}}\n", outside.display()), format!("`{}`", outside.display())),
        ("bibliography", "\\bibliography{../outside}\n".to_string(), "`../outside.bib`".to_string()),
        ("not BibTeX", "\\addbibresource{notes.txt}\n".to_string(), "notes.txt is not a BibTeX file".to_string()),
    ];
    for (n, (what, preamble, named)) in cases.iter().enumerate() {
        let id = 10 * (n as i64 + 1);
        let doc = uri(&ws.join(format!("paper{n}.tex")));
        let head = format!("{preamble}We tag every word with a trigram hidden Markov model tagger \\cite{{");
        c.open(&doc, "latex", &head);
        let r = c.call(id, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": end_of(&head)}));
        let key = r["result"]["items"][0]["label"].as_str().unwrap_or_else(|| panic!("{what}: {r}")).to_string();
        // Accepting through the command: refused, and the user is told.
        let r = c.call(id + 1, "workspace/executeCommand", json!({"command": "citewise.addToBibliography", "arguments": [doc, key]}));
        let message = r["error"]["message"].as_str().unwrap_or_else(|| panic!("{what}: {r}")).to_string();
        let expected = if *what == "not BibTeX" { "is not a BibTeX file" } else { "outside the project" };
        assert!(message.contains(expected), "{what}: {message}");
        let shown = c.wait_for("a shown message", |m| {
            m["method"] == "window/showMessage"
                && m["params"]["type"] == json!(1)
                && m["params"]["message"].as_str().unwrap().contains(named)
        });
        assert!(shown["params"]["message"].as_str().unwrap().contains(expected), "{what}: {shown}");
        // Accepting by typing the key: refused too.
        c.change(&doc, 2, &format!("{head}{key}}} trained on news.\n"));
        let d = c.diagnostics(&doc, 2);
        if *what != "not BibTeX" {
            assert!(d.iter().any(|x| x["message"].as_str().unwrap().contains("outside the project")), "{what}: {d:?}");
        }
    }
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "% someone else's file\n", "byte-identical");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "my notes, not a bibliography\n", "byte-identical");
    let left: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(!left.iter().any(|n| n.ends_with(".bak")), "no backup beside anything: {left:?}");
    assert!(!ws.join("notes.txt.bak").exists());
    // Inside the workspace, a subfolder's document may name the project's bibliography.
    std::fs::create_dir_all(ws.join("chapters")).unwrap();
    let doc = uri(&ws.join("chapters/intro.tex"));
    let head = "\\bibliography{../refs}\nWe tag every word with a trigram hidden Markov model tagger \\cite{";
    c.open(&doc, "latex", head);
    let r = c.call(90, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": end_of(head)}));
    let key = r["result"]["items"][0]["label"].as_str().unwrap_or_else(|| panic!("{r}")).to_string();
    let r = c.call(91, "workspace/executeCommand", json!({"command": "citewise.addToBibliography", "arguments": [doc, key]}));
    assert!(r.get("error").is_none(), "{r}");
    assert!(std::fs::read_to_string(ws.join("refs.bib")).unwrap().contains(&key));
    c.shutdown();
}

/// The check's quick fixes edit only the document and its bibliography
/// inside the project: a bibliography outside is neither read (no mismatch
/// found in it) nor named by any edit.
#[test]
fn check_fixes_never_read_or_edit_a_bibliography_outside_the_project() {
    let (dir, lib, config) = setup();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // BERT's DOI under another title: a mismatch, where it may be read.
    let entry = "@inproceedings{devlin2019,\n  title = {Deep Residual Learning for Image Recognition},\n  year = {2019},\n  doi = {10.18653/v1/N19-1423}\n}\n";
    let outside = dir.path().join("outside.bib");
    std::fs::write(&outside, entry).unwrap();
    std::fs::write(ws.join("refs.bib"), entry).unwrap();
    let mut c = Client::start(&lib, &config);
    c.initialize_in(Some(&ws));
    let sentence = "Transformers are pre-trained in both directions \\cite{devlin2019}.\n";
    let edits_of = |c: &mut Client, id: i64, doc: &str, text: &str| -> Vec<String> {
        let at = end_of(&text[..text.find("devlin2019}").unwrap() + 3]);
        let r = c.call(
            id,
            "textDocument/codeAction",
            json!({"textDocument": {"uri": doc}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}),
        );
        let actions = r["result"].as_array().cloned().unwrap_or_default();
        actions
            .iter()
            .flat_map(|a| a["edit"]["changes"].as_object().map(|m| m.keys().cloned().collect::<Vec<_>>()).unwrap_or_default())
            .collect()
    };
    // Outside: refused, nothing read from it, no edit names it.
    let doc = uri(&ws.join("outside.tex"));
    let text = format!("\\addbibresource{{../outside.bib}}\n{sentence}");
    c.open(&doc, "latex", &text);
    let d = c.diagnostics(&doc, 1);
    assert!(d.iter().any(|x| x["message"].as_str().unwrap().contains("outside the project")), "{d:?}");
    assert!(!d.iter().any(|x| x["message"].as_str().unwrap().contains("its DOI")), "the outside file was not read: {d:?}");
    let edited = edits_of(&mut c, 10, &doc, &text);
    assert!(edited.iter().all(|u| *u == doc), "{edited:?}");
    // Inside: the mismatch is found and its fix edits the project's file.
    let doc = uri(&ws.join("inside.tex"));
    let text = format!("\\addbibresource{{refs.bib}}\n{sentence}");
    c.open(&doc, "latex", &text);
    let d = c.diagnostics(&doc, 1);
    assert!(d.iter().any(|x| x["message"].as_str().unwrap().contains("its DOI 10.18653/v1/n19-1423 is “BERT")), "{d:?}");
    let edited = edits_of(&mut c, 11, &doc, &text);
    let refs = uri(&ws.join("refs.bib"));
    assert!(edited.contains(&refs), "the title fix edits refs.bib: {edited:?}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), entry, "byte-identical");
    c.shutdown();
}

#[test]
fn malformed_frames_are_answered_or_skipped_and_the_server_goes_on() {
    let (dir, lib, config) = setup();
    let mut c = Client::start(&lib, &config);
    c.initialize();
    let doc = uri(&dir.path().join("paper.tex"));
    let head = "We tag every word with a trigram hidden Markov model tagger \\cite{";
    c.open(&doc, "latex", head);
    let completion = |id: i64| {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/completion",
            "params": {"textDocument": {"uri": doc}, "position": end_of(head)}})
        .to_string();
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    };
    let mut invalid_utf8 = br#"{"jsonrpc":"2.0","id":21,"method":"textDocument/hover","params":"X"}"#.to_vec();
    let x = invalid_utf8.iter().position(|&b| b == b'X').unwrap();
    invalid_utf8[x] = 0xff;
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("a negative Content-Length", b"Content-Length: -12\r\n\r\n{\"id\": 1}".to_vec()),
        ("a Content-Length too long", b"Content-Length: 90\r\n\r\n{\"id\": 1}".to_vec()),
        ("a Content-Length too short", b"Content-Length: 3\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"x\"}".to_vec()),
        ("invalid UTF-8", [format!("Content-Length: {}\r\n\r\n", invalid_utf8.len()).into_bytes(), invalid_utf8].concat()),
        ("4 GB declared", b"Content-Length: 4000000000\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":22,\"method\":\"x\"}".to_vec()),
    ];
    for (n, (what, bytes)) in cases.into_iter().enumerate() {
        let id = 100 + n as i64;
        // The bad frame and a completion right behind it.
        c.send_raw(&[bytes, completion(id)].concat());
        let r = c.response(id);
        assert!(r["result"]["items"].as_array().is_some_and(|i| !i.is_empty()), "{what}: then a completion is answered: {r}");
    }
    // The broken request whose id could be read was answered as a parse error.
    let r = c.response(21);
    assert_eq!(r["error"]["code"], json!(-32700), "{r}");
    let logged = c.wait_for("the log of the 4 GB frame", |m| {
        m["method"] == "window/logMessage" && m["params"]["message"].as_str().unwrap_or_default().contains("over the 64 MiB limit")
    });
    assert!(logged["params"]["message"].as_str().unwrap().contains("3.7 GiB declared"), "{logged}");
    c.shutdown();
}

#[test]
fn the_server_exits_on_exit_and_on_end_of_input() {
    let (_dir, lib, config) = setup();
    // `exit` alone (no shutdown first): ends at once, with code 1 as the
    // protocol says.
    let mut c = Client::start(&lib, &config);
    c.initialize();
    c.notify("exit", Value::Null);
    assert_eq!(exits_within(&mut c.child, Duration::from_secs(2)).0, Some(1));
    // `shutdown`, a request after it (refused), then `exit`: code 0.
    let mut c = Client::start(&lib, &config);
    c.initialize();
    assert!(c.call(2, "shutdown", Value::Null).get("error").is_none());
    let r = c.call(3, "textDocument/hover", json!({}));
    assert_eq!(r["error"]["code"], json!(-32600), "{r}");
    c.notify("exit", Value::Null);
    assert_eq!(exits_within(&mut c.child, Duration::from_secs(2)).0, Some(0));
    // The client goes away: end of input.
    let mut c = Client::start(&lib, &config);
    c.initialize();
    let Client { mut child, stdin, .. } = c;
    drop(stdin);
    assert_eq!(exits_within(&mut child, Duration::from_secs(2)).0, Some(0));
}

#[test]
fn exit_during_background_encoding_ends_the_process_promptly_and_what_it_committed_stays() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = common::benchmark_library(dir.path(), 3000) else { return };
    if !common::models_or_fail("exit during background encoding") {
        return;
    }
    drop(lib);
    let lib = dir.path().join("lib");
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "background_encoding = \"all\"\n").unwrap();
    let mut c = Client::start_with(&lib, &config, &[]);
    c.initialize();
    let log = |m: &Value| m["method"] == "window/logMessage";
    c.wait_for("encoding progress", |m| log(m) && m["params"]["message"].as_str().unwrap_or_default().contains("encoding"));
    // Until a first piece is committed (what the next start builds on).
    let committed = || citewise::library::health::inspect(&lib).stores.iter().filter_map(|(_, s)| s.map(|s| s.live)).sum::<usize>();
    let deadline = Instant::now() + Duration::from_secs(120);
    while committed() == 0 {
        assert!(Instant::now() < deadline, "nothing was committed within 120 s");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(c.call(2, "shutdown", Value::Null).get("error").is_none());
    c.notify("exit", Value::Null);
    let (code, took) = exits_within(&mut c.child, Duration::from_secs(2));
    assert_eq!(code, Some(0));
    eprintln!("exited {took:?} after `exit`");
    // What was committed is sound and stays: the next start goes on from there.
    let report = citewise::library::health::inspect(&lib);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    let encoded: usize = report.stores.iter().filter_map(|(_, s)| s.map(|s| s.live)).sum();
    assert!(encoded > 0 && encoded < 3 * 3000, "{:?}", report.stores);
}

/// A library imported from Zotero: when a paper's key changes in Zotero
/// while the server runs, the server syncs, a draft still citing the old
/// key gets a diagnostic naming the new one, and a quick fix rewrites it.
#[test]
fn a_key_renamed_in_zotero_is_diagnosed_and_rewritten() {
    use citewise::testbed::zotero_db::{Era, NewItem, ZoteroDb};
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    let item = NewItem {
        key: "RENAMED1".into(),
        item_type: "journalArticle".into(),
        title: "Trigram Tagging of Unknown Words".into(),
        date: "2001".into(),
        citation_key: "old2001".into(),
        creators: vec![("Ann".into(), "Tagger".into())],
        ..NewItem::default()
    };
    let id = db.add_item(&item).unwrap();
    let lib = dir.path().join("lib");
    let library = citewise::library::Library::open_or_create(&lib).unwrap();
    let make_key = citewise::export::keys::make_key(citewise::export::keys::KeyStyle::AuthorYear);
    citewise::library::zotero::sync(&library, &data, &Default::default(), &make_key).unwrap();
    drop(library);
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "results = 5\n").unwrap();
    let draft = dir.path().join("paper.tex");
    let doc = uri(&draft);
    let text = "\\bibliography{refs}\n\nUnknown words are tagged by their suffixes \\cite{old2001}.\n";
    std::fs::write(dir.path().join("refs.bib"), "@misc{other2000, title = {Another Paper}, year = {2000}}\n").unwrap();
    let mut c = Client::start(&lib, &config);
    c.initialize();
    c.open(&doc, "latex", text);
    // The library has the key and refs.bib has not: LaTeX would not find it.
    let d = c.diagnostics(&doc, 1);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0]["message"].as_str().unwrap().contains("`old2001` is not in "), "{d:?}");

    db.set_field(id, "citationKey", "new2001", "2030-01-01 00:00:00").unwrap();
    let m = c.wait_for("the renamed key's diagnostic", |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["diagnostics"].to_string().contains("is now")
    });
    let all = m["params"]["diagnostics"].as_array().unwrap();
    let d = all.iter().find(|d| d["message"].as_str().unwrap().contains("is now")).unwrap();
    assert!(d["message"].as_str().unwrap().contains("`old2001` is now `new2001`"), "{d}");
    let start = text.find("old2001").unwrap();
    assert_eq!(d["range"]["start"], json!({"line": 2, "character": start - text.find("Unknown").unwrap()}), "{d}");

    let r =
        c.call(5, "textDocument/codeAction", json!({"textDocument": {"uri": doc}, "range": d["range"], "context": {"diagnostics": [d]}}));
    let actions = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
    let fix =
        actions.iter().find(|a| a["title"].as_str().unwrap().starts_with("Rewrite old2001 as new2001")).unwrap_or_else(|| panic!("{r}"));
    let edit = &fix["edit"]["changes"][doc.as_str()][0];
    assert_eq!(edit["newText"], "new2001");
    assert_eq!(edit["range"], d["range"]);
    c.shutdown();
}

/// The title fix edits the entry BibTeX reads, not a commented-out copy
/// above it, at the right line of a bibliography with classic Mac (CR-only)
/// line ends.
#[test]
fn the_title_fix_edits_the_real_entry_of_a_cr_only_bibliography() {
    let (dir, lib, config) = setup();
    let ws = dir.path().join("ws");
    std::fs::create_dir_all(&ws).unwrap();
    // BERT's DOI under another title: a mismatch, and a commented-out copy first.
    let wrong = "Deep Residual Learning for Image Recognition";
    let bib = format!(
        "@comment{{@inproceedings{{devlin2019, title = {{Commented Copy}}}}}}\r\
         @inproceedings{{devlin2019,\r  title = {{{wrong}}},\r  year = {{2019}},\r  doi = {{10.18653/v1/N19-1423}}\r}}\r"
    );
    std::fs::write(ws.join("refs.bib"), &bib).unwrap();
    let mut c = Client::start(&lib, &config);
    c.initialize_in(Some(&ws));
    let doc = uri(&ws.join("paper.tex"));
    let text = "\\addbibresource{refs.bib}\nTransformers are pre-trained in both directions \\cite{devlin2019}.\n";
    c.open(&doc, "latex", text);
    let d = c.diagnostics(&doc, 1);
    assert!(d.iter().any(|x| x["message"].as_str().unwrap().contains("its DOI 10.18653/v1/n19-1423 is “BERT")), "{d:?}");
    let at = end_of(&text[..text.find("devlin2019}").unwrap() + 3]);
    let r = c.call(
        2,
        "textDocument/codeAction",
        json!({"textDocument": {"uri": doc}, "range": {"start": at, "end": at}, "context": {"diagnostics": []}}),
    );
    let actions = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
    let fix = actions
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with("Fix the title of devlin2019 in refs.bib"))
        .unwrap_or_else(|| panic!("{r}"));
    let edit = &fix["edit"]["changes"][uri(&ws.join("refs.bib")).as_str()][0];
    let line = 2;
    let start = "  title = {".len();
    assert_eq!(
        edit["range"],
        json!({"start": {"line": line, "character": start}, "end": {"line": line, "character": start + wrong.len()}}),
        "{fix}"
    );
    assert!(edit["newText"].as_str().unwrap().starts_with("BERT"), "{fix}");
    c.shutdown();
}

/// Full-text changes in the storm, of a document of about [`STORM_BYTES`]
/// (a server that queued them all held 2.9 GB for 3,000, and `exit` waited
/// 32 s for 500).
const STORM_CHANGES: usize = 1000;
const STORM_BYTES: usize = 1 << 20;
/// The server's peak memory through the storm, at most.
const STORM_PEAK: u64 = 512 << 20;

/// A client that sends 1,000 full texts of a 1 MB draft as fast as its pipe
/// takes them, asking for a completion every hundredth: the server works
/// on the newest text only, keeps its memory bounded, answers every
/// completion, and answers `shutdown` and ends on `exit` promptly.
#[cfg(target_os = "linux")]
#[test]
fn a_storm_of_full_text_changes_keeps_memory_bounded_and_exit_prompt() {
    let (dir, lib, config) = setup();
    let doc = uri(&dir.path().join("storm.tex"));
    // Paragraphs citing the library's papers, and a key it lacks.
    let paragraph = "We tag every word with a trigram hidden Markov model tagger \\cite{brants2000}, and translations are \
                     scored by n-gram overlap with references \\cite{papineni2002, nosuchkey2099}. Between its citations \
                     an author writes text of their own, about as much as this.\n\n";
    let base = paragraph.repeat(STORM_BYTES / paragraph.len());
    let line = base.matches('\n').count();
    let tail = |v: usize| format!("Version {v}: phrase tables translate phrases \\cite{{");
    let quoted = |s: &str| serde_json::to_string(s).unwrap();
    let mut c = Client::start(&lib, &config);
    c.initialize();
    c.open(&doc, "latex", &format!("{base}{}", tail(1)));
    // Each change framed as it is sent: the text's JSON made once.
    let (doc_json, base_json) = (quoted(&doc), quoted(&base));
    let base_json = &base_json[..base_json.len() - 1];
    let started = Instant::now();
    let mut completions = Vec::new();
    for v in 2..=STORM_CHANGES {
        let tail_json = quoted(&tail(v));
        let body = format!(
            r#"{{"jsonrpc":"2.0","method":"textDocument/didChange","params":{{"textDocument":{{"uri":{doc_json},"version":{v}}},"contentChanges":[{{"text":{base_json}{}}}]}}}}"#,
            &tail_json[1..]
        );
        c.send_text(&body);
        // Now and then a completion at the end, as the user types on.
        if v % 100 == 0 {
            let id = v as i64;
            let position = json!({"line": line, "character": tail(v).len()});
            c.request(id, "textDocument/completion", json!({"textDocument": {"uri": doc}, "position": position}));
            completions.push(id);
        }
    }
    let sent = started.elapsed();
    let stopping = Instant::now();
    let r = c.call(999, "shutdown", Value::Null);
    assert!(r.get("error").is_none(), "{r}");
    let answered = stopping.elapsed();
    let threads = threads_of(&c.child);
    // Its peak through the storm and the shutdown, read while it still runs.
    let peak = citewise::util::peak_rss_bytes_of(c.child.id()).unwrap();
    c.notify("exit", Value::Null);
    let (code, after_exit) = exits_within(&mut c.child, Duration::from_secs(20));
    let to_exit = stopping.elapsed();
    eprintln!(
        "{STORM_CHANGES} changes of {} KiB sent in {sent:.1?}; `shutdown` answered {answered:.1?} after the last, the process \
         gone {to_exit:.1?} after it ({after_exit:.1?} after `exit`); peak memory {} MiB; {threads} threads",
        base.len() >> 10,
        peak >> 20
    );
    assert_eq!(code, Some(0));
    assert!(to_exit < Duration::from_secs(20), "shutdown and exit took {to_exit:?}");
    assert!(peak > 0 && peak < STORM_PEAK, "peak memory {} MiB, over {} MiB", peak >> 20, STORM_PEAK >> 20);
    assert!(threads <= thread_bound(), "{threads} threads");
    // Every completion asked during the storm was answered: a list, or
    // cancelled by the next one for the document.
    for id in completions {
        let r = c.response(id);
        assert!(r["result"]["items"].is_array() || r["error"]["code"] == json!(-32800), "{r}");
    }
}

/// A 290 KB draft of 10,000 citations, changed 20 times: once made each
/// change cost ~29 s of the server's loop (shutdown and exit 81 s). The
/// loop answers at once; its checks run beside it, on the newest text.
#[test]
fn a_draft_of_ten_thousand_citations_never_holds_up_the_server() {
    let (dir, lib, config) = setup();
    let doc = uri(&dir.path().join("cited.tex"));
    let mut text = String::from("\\bibliography{refs}\n\n");
    for i in 0..10_000 {
        let key = if i % 10 == 0 { "brants2000tnt".to_string() } else { format!("missing{i:05}") };
        text.push_str(&format!("Claim \\cite{{{key}}}.\n"));
    }
    let mut c = Client::start(&lib, &config);
    c.initialize();
    c.open(&doc, "latex", &text);
    let started = Instant::now();
    for v in 2..=20 {
        c.change(&doc, v, &format!("{text}Claim {v}.\n"));
    }
    // A hover on the first citation (`brants2000tnt`, a key of the library), behind the changes.
    let r = c.call(2, "textDocument/hover", json!({"textDocument": {"uri": doc}, "position": {"line": 2, "character": 14}}));
    let hovered = started.elapsed();
    let shown = r["result"]["contents"]["value"].as_str().unwrap_or_else(|| panic!("{r}"));
    assert!(shown.contains("TnT – A Statistical Part-of-Speech Tagger"), "{shown}");
    assert!(hovered < Duration::from_secs(20), "the hover behind 19 changes took {hovered:?}");
    let stopping = Instant::now();
    let r = c.call(999, "shutdown", Value::Null);
    assert!(r.get("error").is_none(), "{r}");
    c.notify("exit", Value::Null);
    let (code, _) = exits_within(&mut c.child, Duration::from_secs(20));
    assert_eq!(code, Some(0));
    let to_exit = stopping.elapsed();
    eprintln!("hover answered {hovered:.1?} after 19 changes began; shutdown and exit took {to_exit:.1?}");
    assert!(to_exit < Duration::from_secs(20), "shutdown and exit took {to_exit:?}");
}

/// `threads = 100000` in config.toml: the threads for model work are
/// clamped (four per core at most), and `initialize` is answered.
#[test]
fn an_absurd_thread_count_is_clamped_and_initialize_is_answered() {
    let (dir, lib, _) = setup();
    let config = dir.path().join("threads.toml");
    std::fs::write(&config, "threads = 100000\n").unwrap();
    let mut c = Client::start(&lib, &config);
    c.initialize();
    #[cfg(target_os = "linux")]
    {
        let threads = threads_of(&c.child);
        assert!(threads <= thread_bound(), "{threads} threads");
    }
    c.shutdown();
}

/// The threads a server may have, at most: those for model work (four per
/// core at most) and a few dozen of its own (stdio, the runner, the
/// diagnostics lane, the index's searchers).
#[cfg(target_os = "linux")]
fn thread_bound() -> usize {
    let cores = citewise::neural::parallel::cores();
    citewise::neural::parallel::max_threads(cores) + 48
}

/// The threads of a running process (Linux: `/proc/PID/status`).
#[cfg(target_os = "linux")]
fn threads_of(child: &Child) -> usize {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("Threads:")).unwrap_or_else(|| panic!("{status}"));
    line["Threads:".len()..].trim().parse().unwrap()
}

/// Pandoc's `bibliography: [a.bib, b.bib]` names two files, and so does a
/// dash list: the server reads both (it took one file named
/// "[a.bib, b.bib]", or "- a.bib"), so keys of either are known and hovers
/// show their entries.
#[test]
fn a_markdown_front_matter_list_names_every_bibliography_file() {
    let (dir, lib, config) = setup();
    std::fs::write(dir.path().join("a.bib"), "@misc{onlyina2020, title = {Tagging Words Quickly}, author = {Ay, Ann}, year = {2020}}\n")
        .unwrap();
    std::fs::write(dir.path().join("b.bib"), "@misc{onlyinb2021, title = {Parsing Sentences Slowly}, author = {Bee, Bo}, year = {2021}}\n")
        .unwrap();
    let mut c = Client::start(&lib, &config);
    c.initialize();
    let body = "We tag words [@onlyina2020] and parse sentences [@onlyinb2021].\n";
    for (n, front) in ["bibliography: [a.bib, b.bib]", "bibliography:\n  - a.bib\n  - b.bib"].iter().enumerate() {
        let md = uri(&dir.path().join(format!("notes{n}.md")));
        let text = format!("---\n{front}\n---\n{body}");
        c.open(&md, "markdown", &text);
        let d = c.diagnostics(&md, 1);
        assert!(d.is_empty(), "{front}: {d:?}");
        let at = end_of(&text[..text.find("onlyinb2021").unwrap() + 3]);
        let h = c.call(10 + n as i64, "textDocument/hover", json!({"textDocument": {"uri": md}, "position": at}));
        let shown = h["result"]["contents"]["value"].as_str().unwrap_or_else(|| panic!("{front}: {h}"));
        assert!(shown.contains("Parsing Sentences Slowly"), "{front}: {shown}");
    }
    c.shutdown();
}

/// A key the library has and the bibliography lacks is an error (LaTeX
/// would not find it); its quick fix adds the library's entry to the
/// bibliography, and the error goes.
#[test]
fn a_key_the_bibliography_lacks_is_added_from_the_library() {
    let (dir, lib, config) = setup();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{other2000, title = {Another Paper}, year = {2000}}\n").unwrap();
    let doc = uri(&dir.path().join("paper.tex"));
    let text = "\\bibliography{refs}\nWe tag every word with a trigram hidden Markov model tagger \\cite{brants2000tnt}.\n";
    let mut c = Client::start(&lib, &config);
    c.initialize();
    c.open(&doc, "latex", text);
    let d = c.diagnostics(&doc, 1);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["severity"], json!(1), "an error: {d:?}");
    assert_eq!(d[0]["code"], "not-in-bibliography", "{d:?}");
    assert!(d[0]["message"].as_str().unwrap().contains("`brants2000tnt` is not in "), "{d:?}");
    let params = json!({"textDocument": {"uri": doc}, "range": d[0]["range"], "context": {"diagnostics": [d[0]]}});
    let r = c.call(2, "textDocument/codeAction", params);
    let actions = r["result"].as_array().unwrap_or_else(|| panic!("{r}"));
    let fix = actions.iter().find(|a| a["title"] == "Add brants2000tnt to refs.bib from the library").unwrap_or_else(|| panic!("{r}"));
    assert!(fix.get("edit").is_none_or(Value::is_null), "the citation stays as it is: {fix}");
    let command = &fix["command"];
    assert_eq!(command["command"], "citewise.addFromLibrary");
    let r = c.call(3, "workspace/executeCommand", json!({"command": command["command"], "arguments": command["arguments"]}));
    assert!(r.get("error").is_none(), "{r}");
    let written = std::fs::read_to_string(&bib).unwrap();
    assert!(written.contains("@inproceedings{brants2000tnt,") && written.contains("@misc{other2000"), "{written}");
    // Its diagnostics are made again: the key is found now.
    c.wait_for("diagnostics without the error", |m| {
        m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == doc && m["params"]["diagnostics"] == json!([])
    });
    c.shutdown();
}
