//! The language server (`citewise lsp`): citewise in any editor that speaks
//! the Language Server Protocol. A front end over `pipeline`, like `tui` and
//! `cli`: the same recommender, library, configuration and BibTeX export.
//!
//! One event loop owns the server's state ([`GlobalState`]: the open
//! documents, the papers offered in each, the parsed bibliographies, the
//! replies awaited) and waits on three sources at once ([`Event`]): the
//! client's messages, the recommendations the shared job runner
//! ([`crate::runtime::Runner`], keyed by document: a newer request for the
//! same document, or `$/cancelRequest`, stops an older one) streams back,
//! and the background encoding's news. Hovers and bibliography writes are
//! answered in the loop; they, the keys completions and "Cite" actions
//! offer and the check's suggestions read a bibliography parsed once per
//! change of the file. A completion is answered with the fused list when the rerank
//! stage has not finished within [`RERANK_WAIT`] (120 ms), marked
//! incomplete, so the next keystroke gets the reranked one (its pair scores
//! are kept meanwhile). Each request's stage times go to the client as a
//! typed notification ([`TIMINGS`]).
//!
//! Work follows what the user sees. The loop takes every message queued
//! at once: a text is replaced by the next (nothing keeps a superseded
//! one), and what a document's change costs is done after the batch, once,
//! at its newest text, and never in the loop: its diagnostics are made on
//! a [`runtime::Lane`] of their own (one job per document in flight; a
//! document changed meanwhile is diagnosed again at its newest text when
//! that job reports, and only diagnostics of the newest text are
//! published), and its support check goes to the runner once the text has
//! been left alone for [`QUIET`]. So the loop answers at once whatever is
//! queued: `shutdown` stops the work under way, and `exit` ends the
//! process without waiting for a check.
//!
//! **Architecture invariant:** no state is shared with another thread: the
//! runner, the diagnostics lane and the encoding are given copies and only
//! send events, and the loop alone reads and writes what the server knows.

pub mod answer;
pub mod documents;
pub mod progress;
pub mod slots;
pub mod transport;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crossbeam_channel::{select, Receiver, Sender};
use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::Notification as _;
use lsp_types::request::Request as _;
use lsp_types::{
    CodeActionOrCommand, CodeActionParams, CompletionItem, CompletionList, CompletionOptions, CompletionParams, Diagnostic,
    DiagnosticSeverity, DidChangeTextDocumentParams, DidCloseTextDocumentParams, DidOpenTextDocumentParams, DidSaveTextDocumentParams,
    ExecuteCommandOptions, ExecuteCommandParams, Hover, HoverContents, HoverParams, HoverProviderCapability, MarkupContent, MarkupKind,
    MessageType, PublishDiagnosticsParams, ServerCapabilities, TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions, Url,
};
use serde::{Deserialize, Serialize};

use self::answer::{cite_actions, completion_item, hover_markdown, offered, resolved, ADD_FROM_LIBRARY, ADD_TO_BIBLIOGRAPHY};
use self::documents::{Document, MAX_TEXT};
use self::slots::{query_at, sentence_end, slot_at};
use crate::check::{Bibliography, Checker, Finding, Kind, Report, SupportCache};
use crate::corpus::bibtex::{parse_source, EntryOutcome};
use crate::corpus::citation_markup::CiteGrammar;
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::export::bibfile::{export_keys, Entries};
use crate::export::keys::KeyStyle;
use crate::library::zotero::{Watch, WatchEvent, WATCH_EVERY};
use crate::library::Library;
use crate::pipeline::background::{BackgroundWork, EncodingEvent, EncodingOptions, Phase};
use crate::pipeline::channel::EvidenceSnippet;
use crate::pipeline::{Candidate, Models, Recommendations, Recommender, Stage};
use crate::runtime::{self, reopen_all, BibliographyOf, CheckRequest, Done, Lane, Runner};
use progress::WorkProgress;

/// How long a completion waits for the rerank stage before it answers with
/// the fused list. The fused list is ready in ~30 ms on the benchmark pool
/// (2 CPU cores) and the rerank stage takes ~0.9 s there, so a longer wait
/// would only delay the first answer; on a GPU the rerank stage can finish
/// within it.
pub const RERANK_WAIT: Duration = Duration::from_millis(120);

/// Recommendations offered as "Cite …" code actions.
const CODE_ACTIONS: usize = 5;

/// How long a document's text must be left unchanged before its support is
/// checked (each sentence scored by the recommender's stages): a text that
/// changes meanwhile would be checked for nothing.
pub const QUIET: Duration = Duration::from_millis(300);

/// Client messages taken at once, at most, before what they changed is
/// worked on.
const BATCH: usize = 256;

/// The notification that carries a request's stage times
/// ([`Timings`]), sent after every request that ran all its stages.
pub const TIMINGS: &str = "citewise/timings";

/// Where a request's time went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    /// The client's request id.
    pub request: RequestId,
    /// Each stage (`bm25`, `evidence`, …, `fuse`, `records`, `rerank`) and
    /// its wall time in milliseconds, in order.
    pub stages: Vec<(Stage, f64)>,
}

/// What the server runs with.
pub struct Options {
    pub library: Arc<Library>,
    pub models: Models,
    /// The stages to run (`--stages`); none: every stage that can run.
    pub stages: Option<Vec<String>>,
    pub key_style: KeyStyle,
    /// Papers per completion.
    pub results: usize,
    /// What the server encodes in the background while it runs (with every
    /// stage only: `--stages` fixes the channels); empty: nothing.
    pub background: Vec<Phase>,
    /// The citation grammar of the user's configuration (its wrapper
    /// commands); each document reads with it in its own syntax.
    pub grammar: CiteGrammar,
}

/// Serves on stdin/stdout until the client says `exit` or closes stdin.
/// Frames are read under a budget ([`transport`]); background work is not
/// waited for (what it committed stays; the next start resumes).
pub fn serve_stdio(options: Options) -> Result<()> {
    let (connection, transport) = transport::stdio();
    let served = serve(connection, options);
    transport.flush(Duration::from_secs(1));
    served
}

/// Serves on `connection` (stdio, or in memory for tests).
pub fn serve(connection: Connection, options: Options) -> Result<()> {
    let capabilities = ServerCapabilities {
        text_document_sync: Some(TextDocumentSyncCapability::Options(TextDocumentSyncOptions {
            open_close: Some(true),
            change: Some(TextDocumentSyncKind::FULL),
            save: Some(TextDocumentSyncSaveOptions::Supported(true)),
            ..Default::default()
        })),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["{".into(), ",".into(), "@".into(), "<".into()]),
            resolve_provider: Some(true),
            ..Default::default()
        }),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        code_action_provider: Some(lsp_types::CodeActionProviderCapability::Simple(true)),
        execute_command_provider: Some(ExecuteCommandOptions {
            commands: vec![ADD_TO_BIBLIOGRAPHY.into(), ADD_FROM_LIBRARY.into()],
            ..Default::default()
        }),
        ..Default::default()
    };
    let caps = serde_json::to_value(capabilities).map_err(Error::Encode)?;
    let params = connection.initialize(caps).map_err(|e| Error::Input(format!("language server: {e}")))?;
    let roots = workspace_roots(&params);
    let Options { library, models, stages, key_style, results, background, grammar } = options;
    let models = Arc::new(models);
    let recommender = match &stages {
        Some(stages) => {
            let names: Vec<&str> = stages.iter().map(String::as_str).collect();
            Recommender::with_stages(library.clone(), &models, &names)?
        }
        None => Recommender::new(library.clone(), &models),
    };
    // With every stage, what the library lacks is encoded in the background
    // and the recommender reopened as each channel comes to cover it.
    let encode = stages.is_none() && !background.is_empty();
    let runner = if encode { Runner::spawn_reopening(recommender, reopen_all(&library, &models)) } else { Runner::spawn(recommender) };
    let phases = if encode { background } else { Vec::new() };
    let work = BackgroundWork::start(
        library.clone(),
        models,
        runner.busy_flag(),
        EncodingOptions { phases, learners: crate::check::calibration::learners(), ..EncodingOptions::default() },
    );
    // Diagnostics are made off the loop, each document's at its newest text.
    let diagnostics = {
        let library = library.clone();
        let mut keys = None;
        Lane::spawn("citewise-diagnostics", move |job: Diagnose| diagnostics_for(&library, &mut keys, key_style, job))
            .map_err(|e| Error::io("the diagnostics thread", e))?
    };
    // A library imported from Zotero follows Zotero's changes while the server runs.
    let make_key = Box::new(crate::export::keys::make_key(key_style));
    let (zotero, zotero_error) = match Watch::spawn(library.clone(), make_key, WATCH_EVERY) {
        Ok(w) => (w, None),
        Err(e) => (None, Some(format!("Zotero's changes are not followed: {e}"))),
    };
    let mut state = GlobalState {
        sender: connection.sender.clone(),
        zotero,
        library,
        key_style,
        results,
        grammar,
        roots,
        runner,
        work,
        encoding_told: None,
        progress: WorkProgress::for_client(&params["capabilities"]),
        diagnostics,
        diagnosing: HashMap::new(),
        rediagnose: HashSet::new(),
        found: HashMap::new(),
        changed: HashSet::new(),
        check_due: HashMap::new(),
        docs: HashMap::new(),
        offered: HashMap::new(),
        told: HashSet::new(),
        bibliographies: HashMap::new(),
        checked: HashMap::new(),
        library_keys: None,
        awaited: HashMap::new(),
        checks: HashMap::new(),
        shutting_down: false,
    };
    // `exit`, or the client closed the stream: background encoding stops
    // at its next piece (and is not waited for) as `state` goes.
    if let Some(why) = zotero_error {
        state.log(MessageType::WARNING, &why);
    }
    state.run(&connection.receiver)
}

/// What the event loop waits for.
enum Event {
    /// A message from the client; none: the client closed the stream.
    Client(Option<Message>),
    /// The job runner's news of a recommendation.
    Job(runtime::Event<Url>),
    /// A document's diagnostics, made on the diagnostics lane.
    Diagnosed(Done<Url, Diagnosed>),
    /// The background encoding's news; none: it has ended.
    Encoding(Option<EncodingEvent>),
    /// The Zotero watch's news; none: it has ended.
    Zotero(Option<WatchEvent>),
    /// A completion's wait for the rerank stage ran out, or a document was
    /// left unchanged long enough for its support check.
    Deadline,
}

/// What a recommendation is for.
enum Work {
    /// Completion items replacing `edit` (what was typed of the key).
    Complete { edit: lsp_types::Range, typed: String },
    /// "Cite …" actions inserting at `at`.
    Actions { at: lsp_types::Position },
}

/// A request waiting on the runner.
struct Awaited {
    request: RequestId,
    doc: Document,
    work: Work,
    started: Instant,
    /// The newest early answer (before the rerank stage).
    early: Option<Recommendations>,
    /// Whether the client has its answer (the job may still run on).
    answered: bool,
}

impl Awaited {
    /// When the early answer is due: completions only, once one came.
    fn due(&self) -> Option<Instant> {
        match self.work {
            Work::Complete { .. } if !self.answered && self.early.is_some() => Some(self.started + RERANK_WAIT),
            _ => None,
        }
    }
}

/// A document's bibliography (its files) as last read, kept until one of
/// them changes.
struct ParsedBibliography {
    stamps: Vec<Option<(SystemTime, u64)>>,
    bib: Arc<Bibliography>,
    /// Its first file as export reads it: the keys papers have there or
    /// would get (completions, "Cite" actions, the check's suggestions).
    entries: Arc<Entries>,
}

/// A bibliography file a document names that is refused (outside the
/// project): why, and where the document names it.
type RefusedFile = (String, std::ops::Range<usize>);

/// A document to diagnose, as the loop knew it when it asked (copies: the
/// lane shares nothing with the loop).
struct Diagnose {
    doc: Document,
    /// Its bibliography (empty when refused), and the refusal.
    bib: Arc<Bibliography>,
    refused: Option<RefusedFile>,
    /// The file entries are added to, as export reads it (none: refused).
    entries: Option<Arc<Entries>>,
    /// The keys offered to it: not unknown (they go to the bibliography
    /// when cited).
    offered: HashSet<String>,
    /// Its last support check (its weak citations).
    last: Option<Arc<Report>>,
}

/// A document's diagnostics, made on the lane.
struct Diagnosed {
    /// The version of the text diagnosed.
    version: i32,
    bib: Arc<Bibliography>,
    diagnostics: Vec<Diagnostic>,
    findings: Arc<Vec<Finding>>,
    /// The keys the text cites.
    cited: HashSet<String>,
}

/// The findings a document's diagnostics were made of (its quick fixes
/// read them), with the version of the text and the bibliography they read.
struct Found {
    version: i32,
    bib: Arc<Bibliography>,
    findings: Arc<Vec<Finding>>,
}

/// Everything the server knows, owned by its event loop.
struct GlobalState {
    sender: Sender<Message>,
    /// Zotero's changes, synced into the library (none: not from Zotero).
    zotero: Option<Watch>,
    library: Arc<Library>,
    key_style: KeyStyle,
    /// Papers per completion.
    results: usize,
    /// The configuration's citation grammar (see [`Options::grammar`]).
    grammar: CiteGrammar,
    /// The workspace folders: the projects of the documents in them.
    roots: Vec<crate::project::Project>,
    runner: Runner<Url>,
    /// The encodings and the trust learning in the background.
    work: BackgroundWork,
    /// The last progress told (a phase and its tenth).
    encoding_told: Option<(Phase, u64)>,
    /// The background work's progress as the client shows it.
    progress: WorkProgress,
    /// Where diagnostics are made, off the loop.
    diagnostics: Lane<Url, Diagnose, Diagnosed>,
    /// Each document's diagnostics job in flight (the lane's id).
    diagnosing: HashMap<Url, u64>,
    /// Documents changed since their job in flight was asked: diagnosed
    /// again when it reports.
    rediagnose: HashSet<Url>,
    /// The findings of each document's last diagnostics.
    found: HashMap<Url, Found>,
    /// Documents changed by the messages of the batch being taken.
    changed: HashSet<Url>,
    /// When each changed document's support check is due (once left
    /// unchanged for [`QUIET`]).
    check_due: HashMap<Url, Instant>,
    docs: HashMap<Url, Document>,
    /// Papers offered per document, by key (for the bibliography, hovers).
    offered: HashMap<Url, HashMap<String, Candidate>>,
    /// What the user was already shown (a refused write, a document too
    /// large), so that typing does not repeat it.
    told: HashSet<String>,
    /// Each set of bibliography files (a document's) as last read.
    bibliographies: HashMap<Vec<PathBuf>, ParsedBibliography>,
    /// Each document's last check (support scored by the runner), and the
    /// version of the text it read.
    checked: HashMap<Url, (i32, Arc<Report>)>,
    /// The library's citation keys (for near-misses), with the index's
    /// generation when they were read.
    library_keys: Option<(u64, Arc<Vec<String>>)>,
    /// Requests the runner works on, by job id.
    awaited: HashMap<u64, Awaited>,
    /// Checks the runner works on, by job id: the document and its version.
    checks: HashMap<u64, (Url, i32)>,
    shutting_down: bool,
}

impl GlobalState {
    /// The loop: until `exit` (Ok after `shutdown`, else an error: exit
    /// code 1) or the end of the client's stream (Ok).
    fn run(&mut self, client: &Receiver<Message>) -> Result<()> {
        loop {
            match self.next_event(client) {
                Event::Client(None) => return Ok(()),
                Event::Client(Some(first)) => {
                    // Every message queued is taken with it; a document
                    // changed by them is worked on once, after them, at its
                    // newest text.
                    for message in std::iter::once(first).chain(client.try_iter().take(BATCH)) {
                        if is_exit(&message) {
                            // The protocol: exit code 1 unless `shutdown` came first.
                            return if self.shutting_down {
                                Ok(())
                            } else {
                                Err(Error::Input("the client said `exit` without `shutdown` first".into()))
                            };
                        }
                        self.on_message(message);
                    }
                    self.work_on_changed();
                }
                Event::Job(event) => self.on_job(event),
                Event::Diagnosed(done) => self.on_diagnosed(done),
                Event::Encoding(event) => self.on_encoding(event),
                Event::Zotero(event) => self.on_zotero(event),
                Event::Deadline => self.on_deadline(),
            }
        }
    }

    fn next_event(&self, client: &Receiver<Message>) -> Event {
        let never = crossbeam_channel::never();
        let encoding = self.work.events().unwrap_or(&never);
        let never_zotero = crossbeam_channel::never();
        let zotero = self.zotero.as_ref().map_or(&never_zotero, Watch::events);
        let due = self.awaited.values().filter_map(Awaited::due).chain(self.check_due.values().copied()).min();
        let deadline = due.map_or_else(crossbeam_channel::never, crossbeam_channel::at);
        select! {
            recv(client) -> m => Event::Client(m.ok()),
            recv(self.runner.events()) -> e => match e {
                Ok(e) => Event::Job(e),
                // The runner lives as long as the state: never disconnected.
                Err(_) => Event::Client(None),
            },
            recv(self.diagnostics.events()) -> d => match d {
                Ok(d) => Event::Diagnosed(d),
                // The lane lives as long as the state: never disconnected.
                Err(_) => Event::Client(None),
            },
            recv(encoding) -> e => Event::Encoding(e.ok()),
            recv(zotero) -> e => Event::Zotero(e.ok()),
            recv(deadline) -> _ => Event::Deadline,
        }
    }

    fn on_message(&mut self, message: Message) {
        match message {
            Message::Request(req) if req.method == lsp_types::request::Shutdown::METHOD => {
                self.shutting_down = true;
                self.stop_work();
                self.send(Response::new_ok(req.id, ()));
            }
            Message::Request(req) if self.shutting_down => {
                self.send(Response::new_err(req.id, ErrorCode::InvalidRequest as i32, "the server is shutting down".into()));
            }
            Message::Request(req) => self.request(req),
            Message::Notification(n) => self.notification(n),
            Message::Response(r) => {
                for m in self.progress.on_response(&r) {
                    self.send(m);
                }
            }
        }
    }

    fn request(&mut self, req: Request) {
        let id = req.id.clone();
        let outcome = match req.method.as_str() {
            lsp_types::request::Completion::METHOD => parse(req).map(|p| self.completion(id.clone(), p)),
            lsp_types::request::ResolveCompletionItem::METHOD => parse(req).map(|p| self.resolve(id.clone(), p)),
            lsp_types::request::CodeActionRequest::METHOD => parse(req).map(|p| self.code_action(id.clone(), p)),
            lsp_types::request::HoverRequest::METHOD => parse(req).map(|p| self.hover(id.clone(), p)),
            lsp_types::request::ExecuteCommand::METHOD => parse(req).map(|p| self.execute(id.clone(), p)),
            other => Err((ErrorCode::MethodNotFound, format!("citewise does not answer `{other}`"))),
        };
        if let Err((code, message)) = outcome {
            self.log(MessageType::WARNING, &message);
            self.send(Response::new_err(id, code as i32, message));
        }
    }

    fn notification(&mut self, n: Notification) {
        let outcome = match n.method.as_str() {
            lsp_types::notification::DidOpenTextDocument::METHOD => notification_params(n).map(|p: DidOpenTextDocumentParams| {
                let d = p.text_document;
                let doc = Document::new(d.uri.clone(), &d.language_id, d.text, d.version, &self.grammar).in_workspace(&self.roots);
                self.docs.insert(d.uri.clone(), doc);
                self.changed.insert(d.uri);
            }),
            lsp_types::notification::DidChangeTextDocument::METHOD => notification_params(n).map(|p: DidChangeTextDocumentParams| {
                if let Some(doc) = self.docs.get_mut(&p.text_document.uri) {
                    // Full sync: the last change holds the whole text; the
                    // text it replaces is dropped here, unread.
                    if let Some(change) = p.content_changes.into_iter().last() {
                        doc.draft.text = change.text;
                        doc.version = p.text_document.version;
                    }
                    self.changed.insert(p.text_document.uri);
                }
            }),
            lsp_types::notification::DidSaveTextDocument::METHOD => notification_params(n).map(|p: DidSaveTextDocumentParams| {
                if self.docs.contains_key(&p.text_document.uri) {
                    self.changed.insert(p.text_document.uri);
                }
            }),
            lsp_types::notification::DidCloseTextDocument::METHOD => notification_params(n).map(|p: DidCloseTextDocumentParams| {
                let uri = p.text_document.uri;
                self.docs.remove(&uri);
                self.offered.remove(&uri);
                self.checked.remove(&uri);
                self.checks.retain(|_, (u, _)| *u != uri);
                self.runner.forget(&uri);
                self.diagnostics.forget(&uri);
                self.diagnosing.remove(&uri);
                self.rediagnose.remove(&uri);
                self.found.remove(&uri);
                self.changed.remove(&uri);
                self.check_due.remove(&uri);
                self.notify::<lsp_types::notification::PublishDiagnostics>(PublishDiagnosticsParams {
                    uri,
                    diagnostics: Vec::new(),
                    version: None,
                });
            }),
            lsp_types::notification::Cancel::METHOD => notification_params(n).map(|p: lsp_types::CancelParams| {
                let id = match p.id {
                    lsp_types::NumberOrString::Number(n) => RequestId::from(n),
                    lsp_types::NumberOrString::String(s) => RequestId::from(s),
                };
                if let Some((job, a)) = self.awaited.iter().find(|(_, a)| a.request == id) {
                    self.runner.cancel(&a.doc.uri, *job);
                }
            }),
            _ => Ok(()),
        };
        if let Err((_, message)) = outcome {
            self.log(MessageType::WARNING, &message);
        }
    }

    /// After a batch of messages: each document they changed (opened,
    /// saved) is diagnosed again at its newest text, and its support check
    /// is due once it has been left alone for [`QUIET`]. Papers offered
    /// earlier whose key it now cites go to its bibliography when its
    /// diagnostics come ([`GlobalState::on_diagnosed`]).
    fn work_on_changed(&mut self) {
        if self.shutting_down {
            self.changed.clear();
            return;
        }
        let due = Instant::now() + QUIET;
        for uri in std::mem::take(&mut self.changed) {
            if self.docs.contains_key(&uri) {
                self.ask_diagnostics(&uri);
                self.check_due.insert(uri, due);
            }
        }
    }

    /// `shutdown`: nothing more is worked on (the runner stops at its next
    /// stage boundary or sentence; what waits is dropped), so that `exit`
    /// finds nothing to wait for; a request not yet answered is answered
    /// now, as cancelled.
    fn stop_work(&mut self) {
        for uri in self.docs.keys() {
            self.runner.forget(uri);
        }
        for (_, a) in std::mem::take(&mut self.awaited) {
            if !a.answered {
                self.reply(a.request, Err((ErrorCode::RequestCanceled, "the server is shutting down".into())));
            }
        }
        self.diagnostics.clear();
        self.diagnosing.clear();
        self.rediagnose.clear();
        self.changed.clear();
        self.check_due.clear();
    }

    /// Has `uri`'s diagnostics made at its text now, on the lane: unless a
    /// job of the document is in flight, which then asks again when it
    /// reports (the loop copies a text once per job, not once per change).
    fn ask_diagnostics(&mut self, uri: &Url) {
        if self.shutting_down {
            return;
        }
        if self.diagnosing.contains_key(uri) {
            self.rediagnose.insert(uri.clone());
            return;
        }
        let Some(doc) = self.docs.get(uri).cloned() else { return };
        let (bib, refused) = self.bibliography_of(&doc);
        let entries = self.export_entries(&doc);
        let offered = self.offered.get(uri).map(|o| o.keys().cloned().collect()).unwrap_or_default();
        let last = self.checked.get(uri).map(|(_, r)| r.clone());
        let id = self.diagnostics.ask(uri.clone(), Diagnose { doc, bib, refused, entries, offered, last });
        self.diagnosing.insert(uri.clone(), id);
    }

    /// A document's diagnostics are made: when the document changed since
    /// they were asked, it is diagnosed again and they are dropped; else
    /// the papers offered that it now cites go to its bibliography and the
    /// diagnostics are published.
    fn on_diagnosed(&mut self, done: Done<Url, Diagnosed>) {
        let Done { key: uri, id, result } = done;
        if self.diagnosing.get(&uri) != Some(&id) {
            // Closed, or shut down, since it was asked.
            return;
        }
        self.diagnosing.remove(&uri);
        if self.rediagnose.remove(&uri) {
            return self.ask_diagnostics(&uri);
        }
        let Some(result) = result else {
            return self.log(MessageType::WARNING, &format!("{uri}: diagnostics failed (a bug: the server's error output says where)"));
        };
        if self.docs.get(&uri).is_none_or(|d| d.version != result.version) {
            return;
        }
        self.add_cited_offers(&uri, &result.cited);
        self.found.insert(uri.clone(), Found { version: result.version, bib: result.bib, findings: result.findings });
        self.notify::<lsp_types::notification::PublishDiagnostics>(PublishDiagnosticsParams {
            uri,
            diagnostics: result.diagnostics,
            version: Some(result.version),
        });
    }

    fn document(&self, uri: &Url) -> std::result::Result<&Document, (ErrorCode, String)> {
        self.docs.get(uri).ok_or_else(|| (ErrorCode::InvalidParams, format!("{uri} is not open")))
    }

    /// Hands a recommendation to the runner (superseding the document's
    /// older one) and awaits its answer.
    fn ask(&mut self, request: RequestId, doc: Document, query: crate::pipeline::Query, work: Work) {
        let job = self.runner.request_for(doc.uri.clone(), query);
        self.awaited.insert(job, Awaited { request, doc, work, started: Instant::now(), early: None, answered: false });
    }

    fn completion(&mut self, id: RequestId, p: CompletionParams) {
        let pos = p.text_document_position;
        let Ok(doc) = self.document(&pos.text_document.uri) else {
            return self.reply(id, Err((ErrorCode::InvalidParams, format!("{} is not open", pos.text_document.uri))));
        };
        if doc.text().len() > MAX_TEXT {
            let name = doc
                .draft
                .path
                .as_deref()
                .and_then(|p| p.file_name())
                .map_or_else(|| doc.uri.to_string(), |n| n.to_string_lossy().into_owned());
            let message = format!(
                "{name} is {}, over the {} citewise reads for recommendations; no citations are offered in it",
                crate::limits::human(doc.text().len() as u64),
                crate::limits::human(MAX_TEXT as u64)
            );
            self.tell_once(MessageType::WARNING, &message);
            return self.reply(id, Ok(serde_json::Value::Null));
        }
        let slot = doc.offset(pos.position).and_then(|cursor| slot_at(doc, cursor));
        let Some(slot) = slot else {
            // Not in a citation: nothing to offer.
            return self.reply(id, Ok(serde_json::Value::Null));
        };
        let cursor = slot.key_start + slot.typed.len();
        let query = query_at(doc, slot.command, cursor, self.results);
        let edit = doc.range(slot.key_start, cursor);
        let doc = doc.clone();
        self.ask(id, doc, query, Work::Complete { edit, typed: slot.typed });
    }

    /// The documentation of an offered paper: stateless, from the item's
    /// `data` (the paper's library id, the query's terms).
    fn resolve(&mut self, id: RequestId, item: CompletionItem) {
        let data = item.data.clone().unwrap_or_default();
        let paper = data["id"].as_str().and_then(|pid| self.library.papers().paper_by_id(pid).ok().flatten());
        let item = match paper {
            Some(p) => {
                let terms: Vec<String> = serde_json::from_value(data["terms"].clone()).unwrap_or_default();
                let mut analyzer = crate::index::analyzer::english();
                let own_words = crate::pipeline::own_words::best_sentences(
                    &mut analyzer,
                    &p.abstract_text,
                    &terms,
                    crate::pipeline::own_words::OWN_SENTENCES,
                );
                let mut c = Candidate::new(p.id.clone());
                c.evidence = self.evidence_of(&p.id);
                c.own_words = own_words;
                c.paper = Some(p);
                resolved(item, &c)
            }
            None => item,
        };
        self.reply(id, serde_json::to_value(item).map_err(|e| (ErrorCode::InternalError, e.to_string())));
    }

    /// A broken citation's fixes (a renamed key) come at once, without a
    /// recommendation; elsewhere, "Cite …" actions for the sentence.
    fn code_action(&mut self, id: RequestId, p: CodeActionParams) {
        let Ok(doc) = self.document(&p.text_document.uri) else {
            return self.reply(id, Err((ErrorCode::InvalidParams, format!("{} is not open", p.text_document.uri))));
        };
        let doc = doc.clone();
        let fixes = self.check_fixes(&doc, p.range);
        let end = doc.offset(p.range.start).filter(|_| doc.text().len() <= MAX_TEXT).and_then(|at| sentence_end(&doc, at));
        let Some(end) = end.filter(|_| fixes.is_empty()) else {
            return self.reply(id, serde_json::to_value(fixes).map_err(|e| (ErrorCode::InternalError, e.to_string())));
        };
        let query = query_at(&doc, end, end, CODE_ACTIONS);
        let at = doc.position(end);
        self.ask(id, doc, query, Work::Actions { at });
    }

    fn hover(&mut self, id: RequestId, p: HoverParams) {
        let pos = p.text_document_position_params;
        let Ok(doc) = self.document(&pos.text_document.uri) else {
            return self.reply(id, Err((ErrorCode::InvalidParams, format!("{} is not open", pos.text_document.uri))));
        };
        let Some(at) = doc.offset(pos.position) else {
            return self.reply(id, Ok(serde_json::Value::Null));
        };
        let Some((key, range)) = doc.draft.citations().into_iter().find(|(_, r)| r.start <= at && at <= r.end) else {
            return self.reply(id, Ok(serde_json::Value::Null));
        };
        let range = doc.range(range.start, range.end);
        let doc = doc.clone();
        let answer = self.paper_for_key(&doc, &key).map(|(paper, evidence)| Hover {
            contents: HoverContents::Markup(MarkupContent {
                kind: MarkupKind::Markdown,
                value: hover_markdown(&paper, &evidence, &doc.draft.bibliography().unwrap_or_else(|_| "the bibliography".into())),
            }),
            range: Some(range),
        });
        self.reply(id, serde_json::to_value(answer).map_err(|e| (ErrorCode::InternalError, e.to_string())));
    }

    fn execute(&mut self, id: RequestId, p: ExecuteCommandParams) {
        if p.command == ADD_FROM_LIBRARY {
            let outcome = self.add_from_library(&p.arguments);
            return self.reply(id, outcome);
        }
        if p.command != ADD_TO_BIBLIOGRAPHY {
            return self.reply(id, Err((ErrorCode::InvalidParams, format!("unknown command `{}`", p.command))));
        }
        let args: Option<(Url, String)> = match p.arguments.as_slice() {
            [uri, key] => serde_json::from_value(uri.clone()).ok().zip(key.as_str().map(str::to_string)),
            _ => None,
        };
        let Some((uri, key)) = args else {
            return self.reply(id, Err((ErrorCode::InvalidParams, format!("{ADD_TO_BIBLIOGRAPHY} takes a document URI and a key"))));
        };
        let Ok(doc) = self.document(&uri).cloned() else {
            return self.reply(id, Err((ErrorCode::InvalidParams, format!("{uri} is not open"))));
        };
        let paper = self.offered.get(&uri).and_then(|o| o.get(&key)).and_then(|c| c.paper.clone());
        let outcome = match paper {
            Some(p) => self.export(&doc, &[p], self.key_style, true).map(|_| serde_json::Value::Null),
            None => Err((ErrorCode::InvalidParams, format!("`{key}` was not offered for {uri}"))),
        };
        self.reply(id, outcome);
    }

    /// [`ADD_FROM_LIBRARY`] (a document URI, a library id, a key): the
    /// library's entry of the paper goes to the document's bibliography
    /// under the key, through the editor's export; its diagnostics follow.
    fn add_from_library(&mut self, arguments: &[serde_json::Value]) -> Outcome {
        let args = match arguments {
            [uri, id, key] => {
                let uri: Option<Url> = serde_json::from_value(uri.clone()).ok();
                uri.zip(id.as_str()).zip(key.as_str()).map(|((u, i), k)| (u, i.to_string(), k.to_string()))
            }
            _ => None,
        };
        let Some((uri, id, key)) = args else {
            return Err((ErrorCode::InvalidParams, format!("{ADD_FROM_LIBRARY} takes a document URI, a library id and a key")));
        };
        let doc = self.document(&uri)?.clone();
        let Some(mut paper) = self.library.papers().paper_by_id(&id).ok().flatten() else {
            return Err((ErrorCode::InvalidParams, format!("no paper `{id}` in the library")));
        };
        if !crate::corpus::citation_markup::is_citation_key(&key, crate::corpus::citation_markup::CiteSyntax::Latex) || key.contains('/') {
            return Err((ErrorCode::InvalidParams, format!("`{key}` is not a key a bibliography can hold")));
        }
        // Written under the key asked for: the library's key style keeps a paper's own key.
        paper.key = key;
        self.export(&doc, &[paper], KeyStyle::Original, true)?;
        self.changed.insert(uri);
        self.work_on_changed();
        Ok(serde_json::Value::Null)
    }

    /// The runner's news: an answer, once, to the request awaiting it.
    fn on_job(&mut self, event: runtime::Event<Url>) {
        let job = event.id();
        if let Some((uri, version)) = self.checks.remove(&job) {
            match event {
                runtime::Event::Checked { report, .. } => {
                    // Its weak citations join the diagnostics.
                    self.checked.insert(uri.clone(), (version, Arc::from(report)));
                    self.ask_diagnostics(&uri);
                }
                runtime::Event::Failed { message, .. } => {
                    // Its weak citations are no longer known.
                    self.checked.remove(&uri);
                    self.log(MessageType::INFO, &format!("citations not checked: {message}"));
                }
                _ => {}
            }
            return;
        }
        let Some(awaited) = self.awaited.get_mut(&job) else { return };
        match event {
            runtime::Event::Stage { results, .. } if results.complete => {
                if !awaited.answered {
                    awaited.answered = true;
                    self.answer(job, &results, false);
                }
            }
            runtime::Event::Stage { results, .. } => {
                awaited.early = Some(results);
                if awaited.due().is_some_and(|d| Instant::now() >= d) {
                    self.answer_early(job);
                }
            }
            runtime::Event::Finished { timings, .. } => {
                let a = self.awaited.remove(&job).expect("looked up above");
                if !a.answered {
                    self.answer_with(&a, &a.early.clone().unwrap_or_default(), a.early.is_some());
                }
                self.send_timings(a.request, &timings);
            }
            runtime::Event::Stopped { timings, .. } => {
                let a = self.awaited.remove(&job).expect("looked up above");
                if !a.answered {
                    self.reply(a.request.clone(), Err((ErrorCode::RequestCanceled, "superseded by a newer request".into())));
                }
                if !timings.is_empty() {
                    self.send_timings(a.request, &timings);
                }
            }
            runtime::Event::Failed { message, .. } => {
                // An empty query, say: nothing to offer, and a line in the log.
                let a = self.awaited.remove(&job).expect("looked up above");
                self.log(MessageType::INFO, &format!("request {}: no recommendations: {message}", a.request));
                if !a.answered {
                    self.answer_with(&a, &Recommendations::default(), false);
                }
            }
            // Checks are answered above.
            runtime::Event::Checked { .. } => {}
        }
    }

    /// Completions whose wait for the rerank stage ran out get the fused
    /// list, marked incomplete; documents left unchanged for [`QUIET`] have
    /// their support checked.
    fn on_deadline(&mut self) {
        let now = Instant::now();
        let due: Vec<u64> = self.awaited.iter().filter(|(_, a)| a.due().is_some_and(|d| now >= d)).map(|(j, _)| *j).collect();
        for job in due {
            self.answer_early(job);
        }
        let quiet: Vec<Url> = self.check_due.iter().filter(|(_, at)| now >= **at).map(|(uri, _)| uri.clone()).collect();
        for uri in quiet {
            self.check_due.remove(&uri);
            if let Some(doc) = self.docs.get(&uri).cloned() {
                self.request_check(&doc);
            }
        }
    }

    fn answer_early(&mut self, job: u64) {
        let Some(a) = self.awaited.get_mut(&job) else { return };
        a.answered = true;
        let early = a.early.clone().unwrap_or_default();
        self.answer(job, &early, true);
    }

    fn answer(&mut self, job: u64, r: &Recommendations, incomplete: bool) {
        let Some(a) = self.awaited.remove(&job) else { return };
        self.answer_with(&a, r, incomplete);
        self.awaited.insert(job, a);
    }

    /// Replies to `a` from the recommender's answer `r`; the papers offered
    /// are remembered for the document.
    fn answer_with(&mut self, a: &Awaited, r: &Recommendations, incomplete: bool) {
        let (bib, _) = self.bibliography_of(&a.doc);
        let entries = self.export_entries(&a.doc);
        let offered = offered(&a.doc, &r.candidates, self.key_style, &bib, entries.as_deref());
        let entry = self.offered.entry(a.doc.uri.clone()).or_default();
        for (key, c) in &offered {
            entry.insert(key.clone(), c.clone());
        }
        let value = match &a.work {
            Work::Complete { edit, typed } => {
                let items: Vec<CompletionItem> =
                    offered.iter().enumerate().map(|(i, (key, c))| completion_item(&a.doc, i, key, c, *edit, typed, &r.terms)).collect();
                serde_json::to_value(CompletionList { is_incomplete: incomplete, items })
            }
            Work::Actions { at } => {
                let actions: Vec<CodeActionOrCommand> = cite_actions(&a.doc, &offered[..offered.len().min(CODE_ACTIONS)], *at)
                    .into_iter()
                    .map(CodeActionOrCommand::CodeAction)
                    .collect();
                serde_json::to_value(actions)
            }
        };
        self.reply(a.request.clone(), value.map_err(|e| (ErrorCode::InternalError, e.to_string())));
    }

    /// Tells the client what the background encoding does (log lines: every
    /// tenth of a phase, and when a channel covers the library) and has the
    /// recommender reopened when a channel does.
    fn on_encoding(&mut self, event: Option<EncodingEvent>) {
        self.work.saw(event.as_ref());
        let Some(event) = event else { return };
        for m in self.progress.on_event(&event) {
            self.send(m);
        }
        match &event {
            EncodingEvent::Progress { phase, done, total, .. } => {
                let tenth = if *total == 0 { 10 } else { done * 10 / total };
                if self.encoding_told != Some((*phase, tenth)) {
                    self.encoding_told = Some((*phase, tenth));
                    self.log(MessageType::LOG, &event.status().unwrap_or_default());
                }
            }
            EncodingEvent::Covered { phase, encoded } => {
                self.runner.reload();
                let by = if *encoded == 0 { "encoded by another front end".to_string() } else { format!("{encoded} papers encoded") };
                self.log(MessageType::INFO, &format!("{} now cover the library ({by})", phase.label()));
            }
            EncodingEvent::Learned { sentences, line } => {
                self.runner.reload();
                self.log(MessageType::INFO, &format!("{line} (learned from {sentences} of the library's citing sentences)"));
            }
            EncodingEvent::Skipped { phase, why } => self.log(MessageType::LOG, &format!("{} not done: {why}", phase.label())),
            EncodingEvent::Elsewhere { holder } => {
                self.log(MessageType::LOG, &format!("the library's vectors are encoded by {holder}; this server takes over if it ends"))
            }
            EncodingEvent::Waiting { .. } => self.log(MessageType::LOG, &event.status().unwrap_or_default()),
            EncodingEvent::Finished => {}
        }
    }

    /// Zotero's changes are in the library: answers use them from the next
    /// request on, and diagnostics are published again (a key may now
    /// resolve, or have changed).
    fn on_zotero(&mut self, event: Option<WatchEvent>) {
        match event {
            None => self.zotero = None,
            Some(event @ (WatchEvent::Synced(_) | WatchEvent::Refreshed)) => {
                self.runner.reload();
                if let WatchEvent::Synced(summary) = &event {
                    self.log(MessageType::INFO, &summary.line());
                    if summary.evidence.is_some() {
                        self.work.new_sentences();
                    }
                }
                // Findings of the library as it was.
                self.found.clear();
                let docs: Vec<Url> = self.docs.keys().cloned().collect();
                for uri in &docs {
                    self.ask_diagnostics(uri);
                }
            }
            Some(WatchEvent::Failed(why)) => self.log(MessageType::WARNING, &format!("Zotero's changes not read: {why}")),
        }
    }

    /// Where request `request`'s time went ([`TIMINGS`]).
    fn send_timings(&self, request: RequestId, timings: &[(Stage, Duration)]) {
        let stages = timings.iter().map(|(stage, d)| (*stage, d.as_secs_f64() * 1000.0)).collect();
        self.send(Notification::new(TIMINGS.into(), Timings { request, stages }));
    }

    fn send(&self, msg: impl Into<Message>) {
        let _ = self.sender.send(msg.into());
    }

    fn reply(&self, id: RequestId, outcome: Outcome) {
        self.send(match outcome {
            Ok(v) => Response::new_ok(id, v),
            Err((code, message)) => Response::new_err(id, code as i32, message),
        });
    }

    fn notify<N: lsp_types::notification::Notification>(&self, params: N::Params) {
        self.send(Notification::new(N::METHOD.to_string(), params));
    }

    /// A line in the client's log (and on stderr, but for `LOG` lines).
    fn log(&self, kind: MessageType, message: &str) {
        if kind != MessageType::LOG {
            eprintln!("citewise lsp: {message}");
        }
        self.notify::<lsp_types::notification::LogMessage>(lsp_types::LogMessageParams { typ: kind, message: message.to_string() });
    }

    /// A message the user sees (`window/showMessage`).
    fn show(&self, kind: MessageType, message: &str) {
        self.notify::<lsp_types::notification::ShowMessage>(lsp_types::ShowMessageParams { typ: kind, message: message.to_string() });
    }

    /// [`GlobalState::show`], once per message for the server's life.
    fn tell_once(&mut self, kind: MessageType, message: &str) {
        if self.told.insert(message.to_string()) {
            self.show(kind, message);
        }
    }

    /// Writes papers to the document's bibliography (atomic, de-duplicated,
    /// with a backup: the editor's export): only a BibTeX file inside the
    /// document's project. A refusal or failure is shown to the user
    /// (`explicit`: every time; else once per reason).
    fn export(
        &mut self,
        doc: &Document,
        papers: &[Paper],
        style: KeyStyle,
        explicit: bool,
    ) -> std::result::Result<(), (ErrorCode, String)> {
        let written =
            writable_bibliography(doc).map_err(|why| format!("citewise did not add to the bibliography: {why}")).and_then(|bib| {
                match crate::export::bibfile::export(&bib, papers, style) {
                    Ok(report) => Ok((bib, report)),
                    Err(e) => Err(format!("could not add to {}: {e}", bib.display())),
                }
            });
        match written {
            Ok((bib, report)) => {
                if report.added() > 0 {
                    self.log(MessageType::INFO, &format!("added {} to {}", report.keys().join(", "), bib.display()));
                }
                Ok(())
            }
            Err(message) => {
                self.log(MessageType::ERROR, &message);
                if explicit {
                    self.show(MessageType::ERROR, &message);
                } else {
                    self.tell_once(MessageType::ERROR, &message);
                }
                Err((ErrorCode::RequestFailed, message))
            }
        }
    }

    /// Offered papers the document now cites (`cited`: the keys of its
    /// text) go to its bibliography.
    fn add_cited_offers(&mut self, uri: &Url, cited: &HashSet<String>) {
        let Some(offers) = self.offered.get(uri) else { return };
        let papers: Vec<Paper> = offers.iter().filter(|(k, _)| cited.contains(*k)).filter_map(|(_, c)| c.paper.clone()).collect();
        if papers.is_empty() {
            return;
        }
        if let Some(doc) = self.docs.get(uri).cloned() {
            let _ = self.export(&doc, &papers, self.key_style, false);
        }
    }

    /// The bibliography of these files (each: as the document names it,
    /// and its path) as they are now, and its first file's entries as
    /// export reads them: parsed again only when one's modification time or
    /// length changed. A file over the one-file budget, or unreadable,
    /// reads as empty; one that does not exist, as missing.
    fn bibliography_files(&mut self, files: &[(String, PathBuf)]) -> (Arc<Bibliography>, Arc<Entries>) {
        let paths: Vec<PathBuf> = files.iter().map(|(_, p)| p.clone()).collect();
        let stamps: Vec<Option<(SystemTime, u64)>> = paths
            .iter()
            .map(|path| std::fs::metadata(path).ok().map(|m| (m.modified().unwrap_or(SystemTime::UNIX_EPOCH), m.len())))
            .collect();
        if let Some(parsed) = self.bibliographies.get(&paths).filter(|p| p.stamps == stamps) {
            return (parsed.bib.clone(), parsed.entries.clone());
        }
        let read: Vec<(String, PathBuf, Option<String>)> = files
            .iter()
            .zip(&stamps)
            .map(|((name, path), stamp)| {
                // `read_bytes` refuses a file over the one-file budget.
                let text = stamp.map(|_| {
                    crate::corpus::source::read_bytes(path).map(|b| crate::corpus::source::decode_text(&b).text).unwrap_or_default()
                });
                (name.clone(), path.clone(), text)
            })
            .collect();
        let first = read.first().and_then(|(_, _, text)| text.as_deref()).unwrap_or_default();
        let entries = Arc::new(Entries::of_text(first));
        let bib = Arc::new(Bibliography::of_files(read));
        self.bibliographies.insert(paths, ParsedBibliography { stamps, bib: bib.clone(), entries: entries.clone() });
        (bib, entries)
    }

    /// The file papers for `doc` are added to (the first bibliography file
    /// it reads) as export reads it, from [`GlobalState::bibliography_files`]
    /// (read again only when it changed); none when it is refused.
    fn export_entries(&mut self, doc: &Document) -> Option<Arc<Entries>> {
        let first = doc.draft.bibliographies().into_iter().next()?;
        let path = first.path.ok()?;
        Some(self.bibliography_files(&[(first.name, path)]).1)
    }

    /// The document's bibliography (every file it names, else
    /// `references.bib` beside it), or (one refused: outside the project)
    /// an empty one, with the refusal and where the document names it.
    fn bibliography_of(&mut self, doc: &Document) -> (Arc<Bibliography>, Option<RefusedFile>) {
        let mut files = Vec::new();
        for f in doc.draft.bibliographies() {
            match f.path {
                Ok(path) => files.push((f.name, path)),
                // Nothing is read from it, and no fix may name it.
                Err(refused) => return (Arc::new(Bibliography::default()), Some((refused.to_string(), f.named_at.unwrap_or(0..0)))),
            }
        }
        (self.bibliography_files(&files).0, None)
    }

    /// Asks the runner to check `doc` (support scores; only the sentences
    /// changed since its last check are scored again).
    fn request_check(&mut self, doc: &Document) {
        if doc.text().len() > MAX_TEXT || self.shutting_down {
            return;
        }
        let (bib, _) = self.bibliography_of(doc);
        let request = CheckRequest {
            file: doc.name(),
            text: doc.text().to_string(),
            grammar: doc.draft.grammar.clone(),
            bibliography: BibliographyOf::Shared(bib),
        };
        let id = self.runner.check_for(doc.uri.clone(), request);
        // An older check of the document is superseded (and never answered).
        self.checks.retain(|_, (uri, _)| *uri != doc.uri);
        self.checks.insert(id, (doc.uri.clone(), doc.version));
    }

    /// The quick fixes of the findings on the citations in `range`: a key
    /// replaced (a renamed key, a near-miss, a paper that fits better, the
    /// key kept of a duplicate) and an entry's title fixed from the library.
    /// The findings are those of the document's diagnostics when these are
    /// of its text and bibliography as they are now; else found now.
    fn check_fixes(&mut self, doc: &Document, range: lsp_types::Range) -> Vec<lsp_types::CodeAction> {
        let (Some(start), Some(end)) = (doc.offset(range.start), doc.offset(range.end)) else { return Vec::new() };
        let (bib, _) = self.bibliography_of(doc);
        let found = self.found.get(&doc.uri).filter(|f| f.version == doc.version && Arc::ptr_eq(&f.bib, &bib)).map(|f| f.findings.clone());
        let findings = match found {
            Some(findings) => findings,
            None => {
                let keys = library_keys(&self.library, &mut self.library_keys);
                let entries = self.export_entries(doc);
                let offered: HashSet<String> = self.offered.get(&doc.uri).map(|o| o.keys().cloned().collect()).unwrap_or_default();
                let last = self.checked.get(&doc.uri).map(|(_, r)| r.clone());
                let prior = Prior { keys, entries, offered: &offered, last: last.as_deref() };
                Arc::new(findings(&self.library, doc, &bib, self.key_style, prior))
            }
        };
        // The bibliography as the editor holds it, when it is open there.
        let open_bib = bib.path.as_ref().and_then(|p| Url::from_file_path(p).ok()).and_then(|u| self.docs.get(&u)).map(|d| d.text());
        let mut fixes = Vec::new();
        for f in findings.iter().filter(|f| f.range.end >= start && f.range.start <= end) {
            fixes.extend(answer::fixes(doc, f, &bib, open_bib));
        }
        fixes
    }

    /// What other papers cited library paper `id` for (its best-supported
    /// evidence).
    fn evidence_of(&self, id: &str) -> Vec<EvidenceSnippet> {
        self.library
            .evidence()
            .spans_citing(id, &[], 3, &[])
            .map(|spans| spans.iter().map(|r| crate::pipeline::evidence_channel::snippet(r, id)).collect())
            .unwrap_or_default()
    }

    /// The paper a key stands for (the bibliography's entry, with the
    /// library's record when it has one) and what other papers cited it for.
    fn paper_for_key(&mut self, doc: &Document, key: &str) -> Option<(Paper, Vec<EvidenceSnippet>)> {
        let from_bib = self.bibliography_of(doc).0.entry(key).cloned();
        let papers = self.library.papers();
        let in_library = from_bib
            .as_ref()
            .filter(|p| !p.doi.is_empty())
            .and_then(|p| papers.paper_by_id(&format!("doi:{}", p.doi.to_lowercase())).ok().flatten())
            .or_else(|| papers.paper_by_key(key).ok().flatten())
            .or_else(|| self.offered.get(&doc.uri)?.get(key)?.paper.clone());
        let paper = in_library.clone().or(from_bib)?;
        let evidence = in_library.as_ref().map(|p| self.evidence_of(&p.id)).unwrap_or_default();
        Some((paper, evidence))
    }
}

impl Drop for GlobalState {
    /// The runner's thread is let go, not waited for: it stops at its next
    /// stage boundary or sentence by itself, and `exit` need not wait for a
    /// check of a long draft (the diagnostics lane ends the same way).
    fn drop(&mut self) {
        self.runner.abandon();
    }
}

/// The library's keys (for near-misses), read again when its index
/// changed since `cache` was filled.
fn library_keys(library: &Library, cache: &mut Option<(u64, Arc<Vec<String>>)>) -> Arc<Vec<String>> {
    let n = library.papers().searcher().generation().generation_id();
    if let Some((at, keys)) = cache.as_ref() {
        if *at == n {
            return keys.clone();
        }
    }
    let keys = Arc::new(library.papers().keys(crate::check::KEYS_READ).unwrap_or_default());
    *cache = Some((n, keys.clone()));
    keys
}

/// What a document's record checks take besides it: the library's keys
/// (for near misses), the file entries are added to as export reads it
/// (the keys suggestions are offered under), the keys offered to it, and
/// its last support check.
struct Prior<'p> {
    keys: Arc<Vec<String>>,
    entries: Option<Arc<Entries>>,
    offered: &'p HashSet<String>,
    last: Option<&'p Report>,
}

/// The record checks of `doc` (unknown keys with near-misses, keys its
/// bibliography lacks, missing bibliography files, mismatches, duplicates,
/// retractions; suggestions keyed as export writes them in `key_style`),
/// without the keys offered to it (they go to the bibliography when
/// cited, which makes a missing file too), and the weak citations of its
/// last support check, placed on the same key's same occurrence. None for
/// a document over [`MAX_TEXT`].
fn findings(library: &Library, doc: &Document, bib: &Bibliography, key_style: KeyStyle, prior: Prior<'_>) -> Vec<Finding> {
    if doc.text().len() > MAX_TEXT {
        return Vec::new();
    }
    let Prior { keys, entries, offered, last } = prior;
    let key_of = export_keys(entries, key_style);
    let checker = Checker::new(library).with_known_keys(keys).keyed_by(key_of.clone());
    let report = checker.check(&doc.name(), doc.text(), &doc.draft.grammar, bib, &mut SupportCache::default()).unwrap_or_default();
    let all_offered = report.citations.iter().all(|c| offered.contains(&c.key));
    let mut findings: Vec<Finding> = report
        .findings
        .into_iter()
        .filter(|f| !(matches!(f.kind, Kind::UnknownKey | Kind::NotInBibliography) && offered.contains(&f.key)))
        .filter(|f| !(f.kind == Kind::MissingBibliography && all_offered))
        .collect();
    if let Some(last) = last {
        // A weak citation of the last check stays where its key's same
        // occurrence still stands in the same sentence.
        let now = crate::check::Draft::read(doc.text(), &doc.draft.grammar);
        for f in last.findings.iter().filter(|f| f.kind == Kind::WeakSupport) {
            let then = last.citations.iter().filter(|c| c.key == f.key);
            let Some(n) = then.clone().position(|c| c.line == f.line && c.column == f.column) else { continue };
            let Some(sentence) = then.clone().nth(n).map(|c| &c.sentence) else { continue };
            let Some(c) = now.citations.iter().filter(|c| c.key == f.key).nth(n) else { continue };
            if now.sentences[c.sentence].text == *sentence {
                let mut f = f.clone();
                (f.range, f.line, f.column) = (c.range.clone(), c.line, c.column);
                rekey(&mut f, library, &key_of);
                findings.push(f);
            }
        }
    }
    findings
}

/// A finding's papers that fit the sentence, keyed as export writes them
/// (a check on the runner's thread says the library's own keys).
fn rekey(f: &mut Finding, library: &Library, key_of: &crate::check::KeyOf) {
    for s in f.suggestions.iter_mut().filter(|s| !s.id.is_empty() && s.why == crate::check::finding::FITS) {
        if let Some(p) = library.papers().paper_by_id(&s.id).ok().flatten() {
            s.key = (**key_of)(&p);
        }
    }
}

/// A document's diagnostics (on the diagnostics lane): its findings
/// (unknown keys as warnings, a renamed key with its new key for the quick
/// fix), hints for bibliography entries without a title, and a
/// bibliography refused. `keys` keeps the library's keys between jobs.
fn diagnostics_for(library: &Library, keys: &mut Option<(u64, Arc<Vec<String>>)>, key_style: KeyStyle, job: Diagnose) -> Diagnosed {
    let Diagnose { doc, bib, refused, entries, offered, last } = job;
    let keys = library_keys(library, keys);
    let found = findings(library, &doc, &bib, key_style, Prior { keys, entries, offered: &offered, last: last.as_deref() });
    let mut diagnostics = Vec::new();
    if let Some((refused, range)) = refused {
        // Said where the document names it; nothing is read from it.
        diagnostics.push(Diagnostic {
            range: doc.range(range.start, range.end),
            severity: Some(DiagnosticSeverity::WARNING),
            source: Some("citewise".into()),
            message: format!("{refused}: citewise neither reads nor writes it"),
            ..Default::default()
        });
    }
    // Each key's first entry, looked up once per citation.
    let mut entries: HashMap<&str, &Paper> = HashMap::new();
    for p in &bib.papers {
        entries.entry(p.key.as_str()).or_insert(p);
    }
    let citations = doc.draft.citations();
    for (key, range) in &citations {
        if bib.declared.contains(key) && entries.get(key.as_str()).is_none_or(|p| p.title.trim().is_empty()) {
            diagnostics.push(Diagnostic {
                range: doc.range(range.start, range.end),
                severity: Some(DiagnosticSeverity::HINT),
                source: Some("citewise".into()),
                message: format!("`{key}` has no title in {}", bib.name()),
                ..Default::default()
            });
        }
    }
    for f in &found {
        diagnostics.push(answer::diagnostic(&doc, f));
    }
    let cited = citations.into_iter().map(|(k, _)| k).collect();
    Diagnosed { version: doc.version, bib, diagnostics, findings: Arc::new(found), cited }
}

/// Whether `message` is the client's `exit`.
fn is_exit(message: &Message) -> bool {
    matches!(message, Message::Notification(n) if n.method == lsp_types::notification::Exit::METHOD)
}

/// The workspace folders the client named (`workspaceFolders`, else
/// `rootUri`, else `rootPath`): the projects of the documents in them.
fn workspace_roots(params: &serde_json::Value) -> Vec<crate::project::Project> {
    let mut paths: Vec<std::path::PathBuf> = params["workspaceFolders"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| Url::parse(f["uri"].as_str()?).ok()?.to_file_path().ok())
        .collect();
    if paths.is_empty() {
        if let Some(root) = params["rootUri"].as_str().and_then(|u| Url::parse(u).ok()).and_then(|u| u.to_file_path().ok()) {
            paths.push(root);
        } else if let Some(root) = params["rootPath"].as_str() {
            paths.push(root.into());
        }
    }
    paths.iter().filter_map(|p| crate::project::Project::new(p).ok()).collect()
}

/// The file papers for `doc` may be written to: its bibliography, inside
/// its project, and a BibTeX file (a `.bib` name, or an existing file that
/// reads as BibTeX). Else why not.
fn writable_bibliography(doc: &Document) -> std::result::Result<std::path::PathBuf, String> {
    let bib = doc.draft.bibliography().map_err(|e| format!("{e}; it writes only inside the project"))?;
    if bib.extension().is_some_and(|e| e.eq_ignore_ascii_case("bib")) {
        return Ok(bib);
    }
    let is_bibtex = bib.is_file()
        && crate::corpus::source::read_bytes(&bib)
            .is_ok_and(|b| parse_source(&crate::corpus::source::decode_text(&b).text).iter().any(|o| matches!(o, EntryOutcome::Paper(_))));
    if is_bibtex {
        Ok(bib)
    } else {
        Err(format!("{} is not a BibTeX file (no .bib name, no entries in it); nothing was written", bib.display()))
    }
}

type Outcome = std::result::Result<serde_json::Value, (ErrorCode, String)>;

fn parse<P: serde::de::DeserializeOwned>(req: Request) -> std::result::Result<P, (ErrorCode, String)> {
    serde_json::from_value(req.params).map_err(|e| (ErrorCode::InvalidParams, format!("{}: {e}", req.method)))
}

fn notification_params<P: serde::de::DeserializeOwned>(n: Notification) -> std::result::Result<P, (ErrorCode, String)> {
    serde_json::from_value(n.params).map_err(|e| (ErrorCode::InvalidParams, format!("{}: {e}", n.method)))
}
