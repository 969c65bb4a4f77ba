//! The language server's stdio transport: `Content-Length` frames read
//! under a budget. A frame over [`limits::LSP_FRAME`] is answered with an
//! error and skipped without being allocated; a frame that does not parse
//! (a wrong or negative length, a body that is not JSON, invalid UTF-8) is
//! answered with `ParseError` where it can be, and the reader finds the
//! next `Content-Length` header and goes on. One bad message never ends
//! the server.
//!
//! Messages read wait for the server in a queue of [`QUEUED`] at most: a
//! client that writes faster than the server takes messages up waits (its
//! pipe fills), so what is read ahead is bounded by [`QUEUED`] frames of
//! [`limits::LSP_FRAME`] each, however many edits a client sends. The
//! server's loop takes every queued message at once and keeps only each
//! document's newest text.

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
use lsp_server::{Connection, ErrorCode, Message, RequestId, Response};

use crate::limits;

/// The header every frame starts with (compared without case).
const HEADER: &[u8] = b"content-length:";
/// A header block longer than this is not one.
const MAX_HEADER: usize = 8 << 10;

/// Messages read and waiting for the server, at most (a document's full
/// text is one message).
pub const QUEUED: usize = 8;

/// What the reader found in the stream.
#[derive(Debug)]
pub enum Frame {
    Message(Message),
    /// A frame that cannot be used: why, and the request's id when the
    /// body was read far enough to tell.
    Malformed {
        why: String,
        code: ErrorCode,
        id: Option<RequestId>,
    },
}

/// Reads frames from a byte stream.
pub struct FrameReader<R> {
    inner: R,
    /// Bytes read but not used yet.
    pending: Vec<u8>,
    limit: u64,
    /// After a malformed frame: skip to the next `Content-Length` header.
    resync: bool,
    eof: bool,
}

impl<R: Read> FrameReader<R> {
    pub fn new(inner: R) -> FrameReader<R> {
        FrameReader::with_limit(inner, limits::LSP_FRAME)
    }

    pub fn with_limit(inner: R, limit: u64) -> FrameReader<R> {
        FrameReader { inner, pending: Vec::new(), limit, resync: false, eof: false }
    }

    /// The next frame; `None` at the end of the stream.
    pub fn next_frame(&mut self) -> Option<Frame> {
        if self.resync && !self.skip_to_header() {
            return None;
        }
        self.resync = false;
        let header_end = loop {
            if let Some(i) = find(&self.pending, b"\r\n\r\n") {
                break i;
            }
            if self.pending.len() > MAX_HEADER {
                self.resync = true;
                self.pending.drain(..1);
                return Some(malformed(
                    ErrorCode::ParseError,
                    "a message header without its end; skipped to the next message".into(),
                    None,
                ));
            }
            if !self.fill() {
                // The stream ended inside a header: nothing more comes.
                return None;
            }
        };
        let header = String::from_utf8_lossy(&self.pending[..header_end]).into_owned();
        self.pending.drain(..header_end + 4);
        let length = header.lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().to_string())
        });
        let length = match length.as_deref().map(str::parse::<i128>) {
            None => {
                self.resync = true;
                return Some(malformed(ErrorCode::ParseError, "a message without a Content-Length header; skipped".into(), None));
            }
            Some(Err(_)) | Some(Ok(..0)) => {
                self.resync = true;
                let shown: String = length.unwrap_or_default().chars().take(40).collect();
                return Some(malformed(ErrorCode::ParseError, format!("Content-Length `{shown}` is not a length; skipped"), None));
            }
            Some(Ok(n)) => n as u128,
        };
        if length > u128::from(self.limit) {
            // Not read: the next header is looked for instead.
            self.resync = true;
            let n = u64::try_from(length).unwrap_or(u64::MAX);
            let why = format!(
                "a message of {} declared, over the {} limit for one message; skipped",
                limits::human(n),
                limits::human(self.limit)
            );
            return Some(malformed(ErrorCode::InvalidRequest, why, None));
        }
        let length = length as usize;
        while self.pending.len() < length {
            if !self.fill() {
                break;
            }
        }
        let body: Vec<u8> = self.pending.drain(..length.min(self.pending.len())).collect();
        match serde_json::from_slice::<Message>(&body) {
            Ok(message) => Some(Frame::Message(message)),
            Err(e) => {
                // A length longer than the body swallows the next
                // frame's header: read on from there.
                if let Some(at) = find_header(&body, 1) {
                    let mut rest = body[at..].to_vec();
                    rest.append(&mut self.pending);
                    self.pending = rest;
                } else {
                    self.resync = true;
                }
                let id = request_id(&body);
                let why = if std::str::from_utf8(&body).is_err() {
                    "a message that is not valid UTF-8; skipped".to_string()
                } else {
                    format!("a message that does not parse ({e}); skipped")
                };
                Some(malformed(ErrorCode::ParseError, why, id))
            }
        }
    }

    /// Reads more bytes; false at the end of the stream.
    fn fill(&mut self) -> bool {
        if self.eof {
            return false;
        }
        let mut buf = [0u8; 64 << 10];
        loop {
            match self.inner.read(&mut buf) {
                Ok(0) => {
                    self.eof = true;
                    return false;
                }
                Ok(n) => {
                    self.pending.extend_from_slice(&buf[..n]);
                    return true;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => {
                    self.eof = true;
                    return false;
                }
            }
        }
    }

    /// Drops bytes up to the next `Content-Length` header (holding no more
    /// than a few bytes of what is skipped); false at the end of the stream.
    fn skip_to_header(&mut self) -> bool {
        loop {
            if let Some(at) = find_header(&self.pending, 0) {
                self.pending.drain(..at);
                return true;
            }
            // Keep what could be the start of a header cut by the read.
            let keep = HEADER.len().min(self.pending.len());
            self.pending.drain(..self.pending.len() - keep);
            if !self.fill() {
                return false;
            }
        }
    }
}

fn malformed(code: ErrorCode, why: String, id: Option<RequestId>) -> Frame {
    Frame::Malformed { why, code, id }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Where a `Content-Length` header starts in `bytes` at or after `from`.
fn find_header(bytes: &[u8], from: usize) -> Option<usize> {
    let end = bytes.len().checked_sub(HEADER.len())?;
    let mut i = from;
    while i <= end {
        // Jump to the next `c` or `C` (most skipped bytes are not).
        i += bytes[i..=end].iter().position(|b| b.eq_ignore_ascii_case(&b'c'))?;
        if bytes[i..i + HEADER.len()].eq_ignore_ascii_case(HEADER) {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// The `id` of a body that reads as JSON (even with bad bytes in it).
fn request_id(body: &[u8]) -> Option<RequestId> {
    let text = String::from_utf8_lossy(body);
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    match value.get("id")? {
        serde_json::Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()).map(RequestId::from),
        serde_json::Value::String(s) => Some(RequestId::from(s.clone())),
        _ => None,
    }
}

/// The error answer to a frame without a usable id (`"id": null`).
fn null_id_error(code: ErrorCode, why: &str) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": code as i32, "message": why}}).to_string()
}

/// The threads of the stdio transport.
pub struct Transport {
    writer: std::thread::JoinHandle<()>,
    outgoing: Sender<Message>,
    /// Asks the writer to say when what it took is written.
    written: Sender<Sender<()>>,
}

impl Transport {
    /// Waits (at most `timeout`) until what was sent before now is written
    /// (the last message too, not only taken by the writer: the answer to
    /// `shutdown` is not cut off by the process's end). The writer itself
    /// ends only when every sender is gone, which the server's background
    /// threads need not wait for.
    pub fn flush(self, timeout: Duration) {
        let deadline = Instant::now() + timeout;
        while !self.outgoing.is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        // The writer answers between two messages: the one it took is out.
        let (ack, done) = crossbeam_channel::bounded::<()>(1);
        if self.written.send(ack).is_ok() {
            let _ = done.recv_deadline(deadline);
        }
        drop(self.outgoing);
        if self.writer.is_finished() {
            let _ = self.writer.join();
        }
    }
}

/// A connection over stdin and stdout with frames read under budget.
pub fn stdio() -> (Connection, Transport) {
    let (to_writer, outgoing) = crossbeam_channel::unbounded::<Message>();
    let (raw_tx, raw) = crossbeam_channel::unbounded::<String>();
    let (written, flushes) = crossbeam_channel::unbounded::<Sender<()>>();
    let writer = std::thread::Builder::new()
        .name("lsp-writer".into())
        .spawn(move || {
            let stdout = std::io::stdout();
            write_all(&mut stdout.lock(), &outgoing, &raw, &flushes);
        })
        .expect("spawning the writer thread");
    // Bounded: the reader waits for the server rather than reading ahead.
    let (to_server, incoming) = crossbeam_channel::bounded::<Message>(QUEUED);
    let log = to_writer.clone();
    std::thread::Builder::new()
        .name("lsp-reader".into())
        .spawn(move || {
            let mut frames = FrameReader::new(std::io::stdin().lock());
            read_all(&mut frames, &to_server, &log, &raw_tx);
        })
        .expect("spawning the reader thread");
    let transport = Transport { writer, outgoing: to_writer.clone(), written };
    (Connection { sender: to_writer, receiver: incoming }, transport)
}

/// Hands each message to the server and answers each malformed frame;
/// returns at the end of the stream (the server then sees its channel
/// close) or when the server is gone.
pub fn read_all<R: Read>(frames: &mut FrameReader<R>, server: &Sender<Message>, writer: &Sender<Message>, raw: &Sender<String>) {
    while let Some(frame) = frames.next_frame() {
        match frame {
            Frame::Message(m) => {
                if server.send(m).is_err() {
                    return;
                }
            }
            Frame::Malformed { why, code, id } => {
                match id {
                    Some(id) => {
                        let _ = writer.send(Response::new_err(id, code as i32, why.clone()).into());
                    }
                    None => {
                        let _ = raw.send(null_id_error(code, &why));
                    }
                }
                let log = lsp_server::Notification::new(
                    "window/logMessage".into(),
                    lsp_types::LogMessageParams { typ: lsp_types::MessageType::WARNING, message: format!("citewise lsp: {why}") },
                );
                let _ = writer.send(log.into());
                eprintln!("citewise lsp: {why}");
            }
        }
    }
}

/// Writes messages and raw frames as they come, until both channels close;
/// answers each of `flushes` once what it took before is written.
fn write_all(out: &mut impl Write, messages: &Receiver<Message>, raw: &Receiver<String>, flushes: &Receiver<Sender<()>>) {
    let (mut messages_open, mut raw_open, mut flushes_open) = (true, true, true);
    while messages_open || raw_open {
        let mut select = crossbeam_channel::Select::new();
        let m = messages_open.then(|| select.recv(messages));
        let r = raw_open.then(|| select.recv(raw));
        let f = flushes_open.then(|| select.recv(flushes));
        let op = select.select();
        let i = op.index();
        if Some(i) == f {
            match op.recv(flushes) {
                Ok(ack) => {
                    let _ = out.flush();
                    let _ = ack.send(());
                }
                Err(_) => flushes_open = false,
            }
        } else if Some(i) == m {
            match op.recv(messages) {
                Ok(message) => {
                    if message.write(out).is_err() {
                        return;
                    }
                }
                Err(_) => messages_open = false,
            }
        } else if Some(i) == r {
            match op.recv(raw) {
                Ok(text) => {
                    if write!(out, "Content-Length: {}\r\n\r\n{text}", text.len()).and_then(|_| out.flush()).is_err() {
                        return;
                    }
                }
                Err(_) => raw_open = false,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(body: &str) -> Vec<u8> {
        format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
    }

    const COMPLETION: &str = r#"{"jsonrpc":"2.0","id":9,"method":"textDocument/completion","params":{}}"#;

    fn frames(bytes: Vec<u8>) -> Vec<Frame> {
        let mut r = FrameReader::with_limit(std::io::Cursor::new(bytes), 1 << 20);
        std::iter::from_fn(|| r.next_frame()).collect()
    }

    fn is_completion(f: &Frame) -> bool {
        matches!(f, Frame::Message(Message::Request(r)) if r.method == "textDocument/completion")
    }

    #[test]
    fn malformed_frames_are_answered_and_the_next_one_is_read() {
        let good = frame(COMPLETION);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("a negative length", [b"Content-Length: -5\r\n\r\n{}".to_vec(), good.clone()].concat()),
            ("a length that is not a number", [b"Content-Length: lots\r\n\r\n{}".to_vec(), good.clone()].concat()),
            (
                "a length too short",
                [b"Content-Length: 4\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"x\"}".to_vec(), good.clone()].concat(),
            ),
            ("a length too long", [b"Content-Length: 60\r\n\r\n{\"id\":3}".to_vec(), good.clone()].concat()),
            (
                "invalid UTF-8",
                [
                    frame("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":\"\u{1}\"}")
                        .into_iter()
                        .map(|b| if b == 1 { 0xff } else { b })
                        .collect(),
                    good.clone(),
                ]
                .concat(),
            ),
            ("over the budget", [b"Content-Length: 4000000000\r\n\r\n{\"id\":5}".to_vec(), good.clone()].concat()),
            ("no length at all", [b"Content-Type: x\r\n\r\n{}".to_vec(), good.clone()].concat()),
        ];
        for (what, bytes) in cases {
            let got = frames(bytes);
            assert!(matches!(got.first(), Some(Frame::Malformed { .. })), "{what}: {got:?}");
            assert!(got.last().is_some_and(is_completion), "{what}: the next message is read: {got:?}");
        }
        // The id of a request whose body breaks is answered.
        let bad = frames(
            [frame("{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"x\",\"params\":\"\u{1}\"}")
                .into_iter()
                .map(|b| if b == 1 { 0xff } else { b })
                .collect::<Vec<u8>>()]
            .concat(),
        );
        assert!(
            matches!(&bad[0], Frame::Malformed { id: Some(id), code: ErrorCode::ParseError, .. } if *id == RequestId::from(4)),
            "{bad:?}"
        );
    }

    #[test]
    fn a_frame_over_budget_is_never_allocated() {
        // 3 GB declared, 300 MB sent: skipped by scanning, a chunk at a time.
        struct Endless(u64);
        impl Read for Endless {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                if self.0 == 0 {
                    return Ok(0);
                }
                let n = (buf.len() as u64).min(self.0) as usize;
                buf[..n].fill(b' ');
                self.0 -= n as u64;
                Ok(n)
            }
        }
        let head = std::io::Cursor::new(b"Content-Length: 3000000000\r\n\r\n".to_vec());
        let body = Endless(300 << 20);
        let tail = std::io::Cursor::new(frame(COMPLETION));
        let mut r = FrameReader::with_limit(head.chain(body).chain(tail), 1 << 20);
        assert!(matches!(r.next_frame(), Some(Frame::Malformed { code: ErrorCode::InvalidRequest, .. })));
        assert!(r.next_frame().is_some_and(|f| is_completion(&f)));
        assert!(r.pending.capacity() < 1 << 20, "held {} bytes", r.pending.capacity());
        assert!(r.next_frame().is_none());
    }
}
