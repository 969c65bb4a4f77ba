//! Completion latency of the language server, measured in process over an
//! in-memory connection (the same server as `citewise lsp`, without the
//! pipes): each context becomes a LaTeX document with the cursor inside
//! `\cite{`, asked twice (the second request stands for the next
//! keystroke, which gets the reranked list when the first was early). The
//! server's timings notifications give each request's stage times.
//!
//! [`storm`] measures the real server process under a flood of edits, as
//! an editor sends them: full texts of a large document as fast as the
//! server's pipe takes them, completions asked meanwhile, then `shutdown`
//! and `exit` (`citewise bench lsp-storm`).

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::Receiver;
use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde::Serialize;
use serde_json::json;

use crate::error::{Error, Result};
use crate::lsp::{serve, Options, Timings, TIMINGS};
use crate::pipeline::Stage;

/// One context's timings, in milliseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionTiming {
    /// The first answer of the server (the fused list when the rerank
    /// stage took longer than the wait).
    pub first_ms: f64,
    /// Whether that answer was marked incomplete.
    pub early: bool,
    /// The answer to the same request again.
    pub again_ms: f64,
    /// The first request's stage times as the server logged them
    /// (`bm25`, `evidence`, ..., `fuse`, `records`, `rerank`).
    pub stages: Vec<(Stage, f64)>,
}

/// Times completions for `contexts` (local contexts with `[CIT]`).
pub fn completion_latency(options: Options, contexts: &[String]) -> Result<Vec<CompletionTiming>> {
    let (server, client) = Connection::memory();
    let handle = std::thread::spawn(move || serve(server, options));
    let broken = |e: &dyn std::fmt::Display| Error::Input(format!("language server: {e}"));
    let send = |m: Message| client.sender.send(m).map_err(|e| broken(&e));
    // Log lines that come while an answer is awaited, for `logged_stages`.
    let logged = std::cell::RefCell::new(Vec::<Notification>::new());
    let answer = |id: i32| -> Result<serde_json::Value> {
        loop {
            match client.receiver.recv_timeout(Duration::from_secs(120)).map_err(|e| broken(&e))? {
                Message::Response(r) if r.id == RequestId::from(id) => return Ok(r.result.unwrap_or_default()),
                Message::Notification(n) => logged.borrow_mut().push(n),
                _ => continue,
            }
        }
    };
    send(Message::Request(Request::new(0.into(), "initialize".into(), json!({"capabilities": {}}))))?;
    answer(0)?;
    send(Message::Notification(Notification::new("initialized".into(), json!({}))))?;
    // One request untimed first: the models load on first use.
    if let Some(first) = contexts.first() {
        let head = format!("{} \\cite{{", first.split("[CIT]").next().unwrap_or_default().trim_end());
        let uri = "file:///citewise-bench/warm-up.tex";
        send(Message::Notification(Notification::new(
            "textDocument/didOpen".into(),
            json!({"textDocument": {"uri": uri, "languageId": "latex", "version": 1, "text": format!("{head}}}")}}),
        )))?;
        let position = json!({"line": 0, "character": head.encode_utf16().count()});
        send(Message::Request(Request::new(
            (-1).into(),
            "textDocument/completion".into(),
            json!({"textDocument": {"uri": uri}, "position": position}),
        )))?;
        answer(-1)?;
        logged_stages(&client, &mut logged.borrow_mut(), -1)?;
    }
    let mut out = Vec::with_capacity(contexts.len());
    for (i, context) in contexts.iter().enumerate() {
        let (before, after) = context.split_once("[CIT]").unwrap_or((context, ""));
        let head = format!("{} \\cite{{", before.trim_end());
        let text = format!("{head}}}{after}\n");
        let uri = format!("file:///citewise-bench/{i}.tex");
        send(Message::Notification(Notification::new(
            "textDocument/didOpen".into(),
            json!({"textDocument": {"uri": uri, "languageId": "latex", "version": 1, "text": text}}),
        )))?;
        let position = json!({"line": 0, "character": head.encode_utf16().count()});
        let params = json!({"textDocument": {"uri": uri}, "position": position});
        let ask = |id: i32| -> Result<(f64, bool)> {
            let t = Instant::now();
            send(Message::Request(Request::new(id.into(), "textDocument/completion".into(), params.clone())))?;
            let r = answer(id)?;
            Ok((t.elapsed().as_secs_f64() * 1000.0, r["isIncomplete"] == json!(true)))
        };
        let (first_ms, early) = ask(2 * i as i32 + 1)?;
        let (again_ms, _) = ask(2 * i as i32 + 2)?;
        let stages = logged_stages(&client, &mut logged.borrow_mut(), 2 * i as i32 + 1)?;
        // The next context starts with the worker idle.
        logged_stages(&client, &mut logged.borrow_mut(), 2 * i as i32 + 2)?;
        out.push(CompletionTiming { first_ms, early, again_ms, stages });
        send(Message::Notification(Notification::new("textDocument/didClose".into(), json!({"textDocument": {"uri": uri}}))))?;
    }
    send(Message::Request(Request::new(i32::MAX.into(), "shutdown".into(), serde_json::Value::Null)))?;
    answer(i32::MAX)?;
    send(Message::Notification(Notification::new("exit".into(), serde_json::Value::Null)))?;
    drop(client);
    handle.join().map_err(|_| Error::Input("language server thread panicked".into()))??;
    Ok(out)
}

/// The stage times the server sent for request `id` ([`TIMINGS`];
/// other messages are dropped).
fn logged_stages(client: &Connection, seen: &mut Vec<Notification>, id: i32) -> Result<Vec<(Stage, f64)>> {
    let want = RequestId::from(id);
    loop {
        let n = if seen.is_empty() {
            match client.receiver.recv_timeout(Duration::from_secs(120)).map_err(|e| Error::Input(format!("language server: {e}")))? {
                Message::Notification(n) => n,
                _ => continue,
            }
        } else {
            seen.remove(0)
        };
        if n.method != TIMINGS {
            continue;
        }
        let Ok(t) = serde_json::from_value::<Timings>(n.params) else { continue };
        if t.request == want {
            return Ok(t.stages);
        }
    }
}

/// A storm of edits: full texts of one LaTeX document, sent as fast as the
/// server takes them, with a completion asked now and then.
#[derive(Debug, Clone)]
pub struct Storm {
    /// Full-text changes sent.
    pub changes: usize,
    /// The document's size, about (bytes).
    pub bytes: usize,
    /// A completion is asked after every this many changes (0: none).
    pub completion_every: usize,
    /// Keys the document cites, in turn (the library's, say), besides one
    /// that no library has.
    pub keys: Vec<String>,
}

/// What a storm cost the server.
#[derive(Debug, Clone, Serialize)]
pub struct StormFigures {
    pub changes: usize,
    pub document_bytes: usize,
    /// Seconds the client took to send every change (its pipe fills when
    /// the server reads no faster).
    pub sent_s: f64,
    /// Each completion asked during the storm, in milliseconds from when
    /// the client began to write it (as a keystroke asks it: the write
    /// waits while the server reads no faster) to its answer read.
    pub completion_ms: Vec<f64>,
    /// Of those, the ones answered `RequestCancelled` (a newer completion
    /// of the document superseded them).
    pub cancelled: usize,
    /// Completions never answered (by the time the process was gone).
    pub unanswered: usize,
    /// From the last change sent to `shutdown` answered (none: not within
    /// [`STORM_WAIT`]; the process was then killed).
    pub shutdown_s: Option<f64>,
    /// From the last change sent to the process gone (`exit` sent once
    /// `shutdown` was answered).
    pub exit_s: f64,
    /// The server's peak memory (`VmHWM` as `shutdown` is answered; Linux).
    pub peak_rss_bytes: Option<u64>,
    /// The server's threads as `shutdown` is answered (Linux).
    pub threads: Option<usize>,
    /// None: killed after waiting [`STORM_WAIT`].
    pub exit_code: Option<i32>,
}

/// How long a stormed server is waited for, at each step, before it is
/// taken as never answering.
pub const STORM_WAIT: Duration = Duration::from_secs(300);

/// A response the server sent: its id, whether it says "cancelled", and
/// when it was read.
type Answer = (i64, bool, Instant);

/// The document of `storm` but its last line: paragraphs citing its keys.
fn storm_base(storm: &Storm) -> String {
    let mut text = String::from("\\title{A storm of edits}\n\n");
    let mut keys = storm.keys.iter().cycle();
    while text.len() < storm.bytes {
        let key = keys.next().map_or("brants2000", String::as_str);
        text.push_str(&format!(
            "We tag every word with a trigram hidden Markov model tagger \\cite{{{key}}}, and score translations by their \
             n-gram overlap with references \\cite{{{key}, nosuchkey2099}}. Between its citations an author writes text \
             of their own, about as much as this.\n\n"
        ));
    }
    text
}

/// The document at version `v`: `base`, then a last line that ends inside
/// `\cite{` (the completions' place, and what changes from version to
/// version); the column of its end.
fn storm_text(base: &str, v: usize) -> (String, u32) {
    let last = format!("Version {v}: phrase tables translate phrases \\cite{{");
    let column = last.encode_utf16().count() as u32;
    (format!("{base}{last}"), column)
}

fn write_frame(w: &mut impl Write, body: &str) -> std::io::Result<()> {
    write!(w, "Content-Length: {}\r\n\r\n{body}", body.len())?;
    w.flush()
}

/// Reads the server's frames and hands on each response (other messages
/// are dropped), until its output ends.
fn read_answers(out: impl std::io::Read, answers: &crossbeam_channel::Sender<Answer>) {
    let mut out = std::io::BufReader::new(out);
    loop {
        let mut length = None;
        loop {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.trim().eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let mut body = vec![0; length.unwrap_or(0)];
        if std::io::Read::read_exact(&mut out, &mut body).is_err() {
            return;
        }
        let Ok(v) = serde_json::from_slice::<serde_json::Value>(&body) else { continue };
        if v.get("method").is_none() {
            if let Some(id) = v["id"].as_i64() {
                let cancelled = v["error"]["code"] == json!(lsp_server::ErrorCode::RequestCanceled as i32);
                if answers.send((id, cancelled, Instant::now())).is_err() {
                    return;
                }
            }
        }
    }
}

/// The answer to request `id` (kept in `seen` while others come first),
/// within `wait`.
fn answer_to(answers: &Receiver<Answer>, seen: &mut HashMap<i64, Answer>, id: i64, wait: Duration) -> Result<Answer> {
    let deadline = Instant::now() + wait;
    loop {
        if let Some(a) = seen.remove(&id) {
            return Ok(a);
        }
        let a = answers
            .recv_deadline(deadline)
            .map_err(|_| Error::Input(format!("language server: no answer to request {id} within {} s", wait.as_secs())))?;
        seen.insert(a.0, a);
    }
}

/// The peak memory (bytes) and `Threads` of a running process (Linux).
fn peak_and_threads(child: &Child) -> (Option<u64>, Option<usize>) {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap_or_default();
    let threads = status.lines().find_map(|l| l.strip_prefix("Threads:")).and_then(|v| v.trim().parse::<usize>().ok());
    (crate::util::peak_rss_bytes_of(child.id()), threads)
}

/// Waits for the process to end, up to `limit` (then kills it): its exit
/// code.
fn wait_for_exit(child: &mut Child, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.code(),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// Storms the language server that `server` starts (a `citewise lsp`
/// command line, spoken to over its stdin and stdout) with `storm`, then
/// says `shutdown` and, once it is answered, `exit`.
pub fn storm(mut server: std::process::Command, storm: &Storm) -> Result<StormFigures> {
    let mut child = server
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::io("the language server (citewise lsp)", e))?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(Error::Input("language server: no pipes".into()));
    };
    let (tx, answers) = crossbeam_channel::unbounded();
    std::thread::spawn(move || read_answers(output, &tx));
    let broken = |e: std::io::Error| Error::io("the language server's input", e);
    let wait = STORM_WAIT;
    let mut seen = HashMap::new();
    let request = |id: i64, method: &str, params: serde_json::Value| {
        json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    };
    let notification = |method: &str, params: serde_json::Value| json!({"jsonrpc": "2.0", "method": method, "params": params}).to_string();
    write_frame(&mut input, &request(0, "initialize", json!({"processId": null, "rootUri": null, "capabilities": {}}))).map_err(broken)?;
    answer_to(&answers, &mut seen, 0, wait)?;
    write_frame(&mut input, &notification("initialized", json!({}))).map_err(broken)?;
    let uri = "file:///citewise-bench/storm.tex";
    let base = storm_base(storm);
    let line = base.matches('\n').count() as u32;
    let (text, _) = storm_text(&base, 1);
    let document_bytes = text.len();
    let open = json!({"textDocument": {"uri": uri, "languageId": "latex", "version": 1, "text": text}});
    write_frame(&mut input, &notification("textDocument/didOpen", open)).map_err(broken)?;
    let started = Instant::now();
    let mut asked: Vec<(i64, Instant)> = Vec::new();
    for v in 2..=storm.changes.max(1) {
        let (text, column) = storm_text(&base, v);
        let change = json!({"textDocument": {"uri": uri, "version": v}, "contentChanges": [{"text": text}]});
        write_frame(&mut input, &notification("textDocument/didChange", change)).map_err(broken)?;
        if storm.completion_every > 0 && v % storm.completion_every == 0 {
            let id = v as i64;
            let at = json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": column}});
            // From the keystroke: a client's write waits while the server reads no faster.
            asked.push((id, Instant::now()));
            write_frame(&mut input, &request(id, "textDocument/completion", at)).map_err(broken)?;
        }
    }
    let sent_s = started.elapsed().as_secs_f64();
    let stopping = Instant::now();
    // Ids are 32-bit in the protocol's library.
    let shutdown = i64::from(i32::MAX);
    write_frame(&mut input, &request(shutdown, "shutdown", serde_json::Value::Null)).map_err(broken)?;
    let shutdown_s = answer_to(&answers, &mut seen, shutdown, wait).ok().map(|_| stopping.elapsed().as_secs_f64());
    let (peak_rss_bytes, threads) = peak_and_threads(&child);
    let exit_code = if shutdown_s.is_some() {
        write_frame(&mut input, &notification("exit", serde_json::Value::Null)).map_err(broken)?;
        wait_for_exit(&mut child, wait)
    } else {
        wait_for_exit(&mut child, Duration::ZERO)
    };
    let exit_s = stopping.elapsed().as_secs_f64();
    let mut completion_ms = Vec::with_capacity(asked.len());
    let (mut cancelled, mut unanswered) = (0, 0);
    for (id, at) in asked {
        // What was answered is read by now (the process is gone).
        match answer_to(&answers, &mut seen, id, Duration::from_secs(1)) {
            Ok((_, was_cancelled, when)) => {
                completion_ms.push(when.saturating_duration_since(at).as_secs_f64() * 1000.0);
                cancelled += usize::from(was_cancelled);
            }
            Err(_) => unanswered += 1,
        }
    }
    Ok(StormFigures {
        changes: storm.changes,
        document_bytes,
        sent_s,
        completion_ms,
        cancelled,
        unanswered,
        shutdown_s,
        exit_s,
        peak_rss_bytes,
        threads,
        exit_code,
    })
}
