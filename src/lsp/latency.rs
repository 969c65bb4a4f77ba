//! Completion latency of the language server, measured in process over an
//! in-memory connection (the same server as `citewise lsp`, without the
//! pipes): each context becomes a LaTeX document with the cursor inside
//! `\cite{`, asked twice (the second request stands for the next
//! keystroke, which gets the reranked list when the first was early). The
//! server's timings notifications give each request's stage times.

use std::time::{Duration, Instant};

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use serde_json::json;

use super::{serve, Options};
use crate::error::{Error, Result};

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
    pub stages: Vec<(String, f64)>,
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

/// The stage times the server sent for request `id` ([`super::TIMINGS`];
/// other messages are dropped).
fn logged_stages(client: &Connection, seen: &mut Vec<Notification>, id: i32) -> Result<Vec<(String, f64)>> {
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
        if n.method != super::TIMINGS {
            continue;
        }
        let Ok(t) = serde_json::from_value::<super::Timings>(n.params) else { continue };
        if t.request == want {
            return Ok(t.stages);
        }
    }
}
