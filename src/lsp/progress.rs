//! The background work's progress as the client shows it, where the client
//! can (`window.workDoneProgress` in its capabilities): each phase (an
//! encoding, the learning of the evidence trust) is one server-initiated
//! work-done progress, asked for with `window/workDoneProgress/create` and
//! reported with `$/progress` (begin, a report per percent, end) once the
//! client has answered. Log lines (`window/logMessage`) tell the same to
//! every client.

use lsp_server::{Message, Notification, Request, RequestId, Response};
use serde_json::json;

use crate::pipeline::background::{EncodingEvent, Phase};

/// The progress of the phase running, as the client was told it.
#[derive(Debug, Default)]
pub struct WorkProgress {
    /// The client shows server-initiated progress.
    supported: bool,
    /// Tokens asked for so far (each phase's is new).
    asked: u64,
    current: Option<Current>,
}

#[derive(Debug)]
struct Current {
    phase: Phase,
    token: String,
    /// The client answered the create request: `$/progress` may go.
    created: bool,
    begun: bool,
    /// The latest percentage and message, and the percentage last sent.
    percent: u32,
    message: String,
    sent: Option<u32>,
}

impl WorkProgress {
    /// For a client whose capabilities are `capabilities` (the initialize
    /// request's).
    pub fn for_client(capabilities: &serde_json::Value) -> WorkProgress {
        WorkProgress { supported: capabilities["window"]["workDoneProgress"] == json!(true), ..WorkProgress::default() }
    }

    /// What to send the client for `event`.
    pub fn on_event(&mut self, event: &EncodingEvent) -> Vec<Message> {
        if !self.supported {
            return Vec::new();
        }
        match event {
            EncodingEvent::Progress { phase, done, total, .. } => {
                let percent = if *total == 0 { 100 } else { (done * 100 / total) as u32 };
                let message = event.status().unwrap_or_default();
                let mut out = Vec::new();
                if self.current.as_ref().is_none_or(|c| c.phase != *phase) {
                    out.extend(self.end(""));
                    self.asked += 1;
                    let token = format!("citewise/background/{}", self.asked);
                    out.push(Message::Request(Request::new(
                        RequestId::from(token.clone()),
                        "window/workDoneProgress/create".into(),
                        json!({ "token": token }),
                    )));
                    self.current = Some(Current { phase: *phase, token, created: false, begun: false, percent, message, sent: None });
                } else if let Some(c) = self.current.as_mut() {
                    c.percent = percent;
                    c.message = message;
                }
                out.extend(self.flush());
                out
            }
            EncodingEvent::Covered { phase, .. } | EncodingEvent::Skipped { phase, .. }
                if self.current.as_ref().is_some_and(|c| c.phase == *phase) =>
            {
                self.end("done")
            }
            EncodingEvent::Learned { line, .. } => self.end(line),
            EncodingEvent::Finished => self.end("done"),
            _ => Vec::new(),
        }
    }

    /// The client answered a create request (ours if its id is the token
    /// asked for): what to send now.
    pub fn on_response(&mut self, response: &Response) -> Vec<Message> {
        match self.current.as_mut() {
            Some(c) if response.id == RequestId::from(c.token.clone()) => {
                // A client that refused a token is not asked again.
                if response.error.is_some() {
                    self.current = None;
                    self.supported = false;
                    return Vec::new();
                }
                c.created = true;
                self.flush()
            }
            _ => Vec::new(),
        }
    }

    /// The begin or a report, where the client can take it and the
    /// percentage moved.
    fn flush(&mut self) -> Vec<Message> {
        let Some(c) = self.current.as_mut() else { return Vec::new() };
        if !c.created || c.sent == Some(c.percent) {
            return Vec::new();
        }
        let value = if c.begun {
            json!({ "kind": "report", "message": c.message, "percentage": c.percent })
        } else {
            c.begun = true;
            let title = format!("citewise: {}", c.phase.doing());
            json!({ "kind": "begin", "title": title, "message": c.message, "percentage": c.percent, "cancellable": false })
        };
        c.sent = Some(c.percent);
        vec![progress(&c.token, value)]
    }

    /// Ends the running phase's progress (if the client began it).
    fn end(&mut self, message: &str) -> Vec<Message> {
        match self.current.take() {
            Some(c) if c.begun => vec![progress(&c.token, json!({ "kind": "end", "message": message }))],
            _ => Vec::new(),
        }
    }
}

fn progress(token: &str, value: serde_json::Value) -> Message {
    Message::Notification(Notification::new("$/progress".into(), json!({ "token": token, "value": value })))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn progress(phase: Phase, done: u64) -> EncodingEvent {
        EncodingEvent::Progress { phase, done, total: 200, per_second: 10.0 }
    }

    fn values(out: &[Message]) -> Vec<serde_json::Value> {
        out.iter()
            .map(|m| match m {
                Message::Notification(n) => n.params["value"].clone(),
                Message::Request(r) => json!({ "create": r.params["token"] }),
                Message::Response(_) => json!(null),
            })
            .collect()
    }

    #[test]
    fn a_phase_is_one_progress_begun_once_the_client_made_its_token_reported_per_percent_and_ended() {
        let mut p = WorkProgress::for_client(&json!({"window": {"workDoneProgress": true}}));
        let out = p.on_event(&progress(Phase::Trust, 2));
        assert_eq!(values(&out), [json!({"create": "citewise/background/1"})], "nothing before the token is made");
        assert!(p.on_event(&progress(Phase::Trust, 4)).is_empty());
        let begun = values(&p.on_response(&Response::new_ok(RequestId::from("citewise/background/1".to_string()), ())));
        assert_eq!(begun[0]["kind"], "begin");
        assert_eq!(begun[0]["percentage"], 2);
        assert_eq!(begun[0]["title"], "citewise: learning the evidence trust");
        assert!(p.on_event(&progress(Phase::Trust, 5)).is_empty(), "the same percent is not sent twice");
        let report = values(&p.on_event(&progress(Phase::Trust, 100)));
        assert_eq!((report[0]["kind"].clone(), report[0]["percentage"].clone()), (json!("report"), json!(50)));
        assert!(report[0]["message"].as_str().unwrap().starts_with("learning the evidence trust 50%"), "{report:?}");
        let end = values(&p.on_event(&EncodingEvent::Learned { sentences: 200, line: "evidence trusted at 0.1".into() }));
        assert_eq!(end, [json!({"kind": "end", "message": "evidence trusted at 0.1"})]);
        assert!(p.on_event(&EncodingEvent::Finished).is_empty(), "ended once");
        // The next phase asks for a token of its own.
        assert_eq!(values(&p.on_event(&progress(Phase::Dense, 1))), [json!({"create": "citewise/background/2"})]);
    }

    #[test]
    fn a_client_without_the_capability_or_that_refuses_the_token_is_sent_no_progress() {
        let mut p = WorkProgress::for_client(&json!({}));
        assert!(p.on_event(&progress(Phase::Dense, 1)).is_empty());
        let mut p = WorkProgress::for_client(&json!({"window": {"workDoneProgress": true}}));
        assert_eq!(p.on_event(&progress(Phase::Dense, 1)).len(), 1);
        let refused = Response::new_err(RequestId::from("citewise/background/1".to_string()), -32603, "no".into());
        assert!(p.on_response(&refused).is_empty());
        assert!(p.on_event(&progress(Phase::Dense, 150)).is_empty(), "nor asked again");
    }
}
