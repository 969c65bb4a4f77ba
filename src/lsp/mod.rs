//! The language server (`citewise lsp`): citewise in any editor that speaks
//! the Language Server Protocol. A front end over `pipeline`, like `tui` and
//! `cli`: the same recommender, library, configuration and BibTeX export.
//!
//! The message loop only keeps the open documents and hands work on:
//! recommendations (completion, code actions) go to one worker thread that
//! owns the `Recommender` (a newer request for the same document, or
//! `$/cancelRequest`, cancels an older one); hovers, diagnostics and
//! bibliography writes run on threads of their own. A completion is
//! answered with the fused list when the rerank stage has not finished
//! within [`RERANK_WAIT`] (120 ms), marked incomplete, so the next keystroke
//! gets the reranked one (its pair scores are kept meanwhile).

pub mod answer;
pub mod documents;
pub mod latency;
pub mod slots;
pub mod transport;

use std::collections::{HashMap, HashSet};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

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

use self::answer::{cite_actions, completion_item, hover_markdown, offered, resolved, ADD_TO_BIBLIOGRAPHY};
use self::documents::{Document, MAX_TEXT};
use self::slots::{query_at, sentence_end, slot_at};
use crate::corpus::bibtex::{parse_source, EntryOutcome};
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::export::keys::KeyStyle;
use crate::library::Library;
use crate::pipeline::background::{BackgroundEncoding, EncodingEvent, EncodingOptions, Phase};
use crate::pipeline::worker::{reopen_all, Reopen};
use crate::pipeline::{Candidate, Models, Recommendations, Recommender};
use std::sync::atomic::{AtomicBool, Ordering};

/// How long a completion waits for the rerank stage before it answers with
/// the fused list. The fused list is ready in ~30 ms on the benchmark pool
/// (2 CPU cores) and the rerank stage takes ~0.9 s there, so a longer wait
/// would only delay the first answer; on a GPU the rerank stage can finish
/// within it.
pub const RERANK_WAIT: Duration = Duration::from_millis(120);

/// Recommendations offered as "Cite …" code actions.
const CODE_ACTIONS: usize = 5;

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
        execute_command_provider: Some(ExecuteCommandOptions { commands: vec![ADD_TO_BIBLIOGRAPHY.into()], ..Default::default() }),
        ..Default::default()
    };
    let caps = serde_json::to_value(capabilities).map_err(Error::Encode)?;
    let params = connection.initialize(caps).map_err(|e| Error::Input(format!("language server: {e}")))?;
    let roots = workspace_roots(&params);
    let Options { library, models, stages, key_style, results, background } = options;
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
    let jobs = JobState { busy: Arc::default(), reload: Arc::default(), reopen: None };
    let (jobs, encoding) = if stages.is_none() && !background.is_empty() {
        let options = EncodingOptions { phases: background, ..EncodingOptions::default() };
        let encoding = BackgroundEncoding::spawn(library.clone(), models.clone(), jobs.busy.clone(), options);
        (JobState { reopen: Some(reopen_all(&library, &models)), ..jobs }, Some(encoding))
    } else {
        (jobs, None)
    };
    let settings = ServerSettings { library, key_style, results, roots };
    let stop_encoding = encoding.as_ref().map(BackgroundEncoding::stopper);
    let mut server = Server::new(connection.sender.clone(), settings, recommender, jobs, encoding);
    let mut shutting_down = false;
    // Ok once the stream ends; set by `exit`.
    let mut ended = Ok(());
    for msg in &connection.receiver {
        match msg {
            Message::Request(req) if req.method == lsp_types::request::Shutdown::METHOD => {
                shutting_down = true;
                server.shared.send(Response::new_ok(req.id, ()));
            }
            Message::Request(req) if shutting_down => {
                server.shared.send(Response::new_err(req.id, ErrorCode::InvalidRequest as i32, "the server is shutting down".into()));
            }
            Message::Request(req) => server.request(req),
            Message::Notification(n) if n.method == lsp_types::notification::Exit::METHOD => {
                // The protocol: exit code 1 unless `shutdown` came first.
                if !shutting_down {
                    ended = Err(Error::Input("the client said `exit` without `shutdown` first".into()));
                }
                break;
            }
            Message::Notification(n) => server.notification(n),
            Message::Response(_) => {}
        }
    }
    // `exit`, or the client closed the stream: background encoding stops
    // at its next piece (and is not waited for).
    if let Some(stop) = stop_encoding {
        stop.stop();
    }
    ended
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

/// A recommendation the worker computes.
struct Job {
    id: RequestId,
    doc: Document,
    generation: u64,
    query: crate::pipeline::Query,
    work: Work,
}

enum Work {
    /// Completion items replacing `edit` (what was typed of the key).
    Complete { edit: lsp_types::Range, typed: String },
    /// "Cite …" actions inserting at `at`.
    Actions { at: lsp_types::Position },
}

/// What the message loop and the threads share.
#[derive(Clone)]
struct Shared {
    sender: crossbeam_channel::Sender<Message>,
    library: Arc<Library>,
    key_style: KeyStyle,
    /// The newest request per document (older ones are superseded).
    generations: Arc<Mutex<HashMap<Url, u64>>>,
    cancelled: Arc<Mutex<HashSet<RequestId>>>,
    /// Papers offered per document, by key (for the bibliography, resolve).
    offered: Arc<Mutex<HashMap<Url, HashMap<String, Candidate>>>>,
    /// What the user was already shown (a refused write, a document too
    /// large), so that typing does not repeat it.
    told: Arc<Mutex<HashSet<String>>>,
}

/// What the server was started with.
struct ServerSettings {
    library: Arc<Library>,
    key_style: KeyStyle,
    results: usize,
    /// The workspace folders: the projects of the documents in them.
    roots: Vec<crate::project::Project>,
}

/// The recommender thread's state beside its queue.
struct JobState {
    /// Set while it answers (the background encoding waits on it).
    busy: Arc<AtomicBool>,
    /// Set when a channel's vectors came to cover the library.
    reload: Arc<AtomicBool>,
    /// Makes the recommender again (none: never reloaded).
    reopen: Option<Reopen>,
}

struct Server {
    shared: Shared,
    docs: HashMap<Url, Document>,
    jobs: mpsc::Sender<Job>,
    results: usize,
    roots: Vec<crate::project::Project>,
}

impl Server {
    fn new(
        sender: crossbeam_channel::Sender<Message>,
        options: ServerSettings,
        recommender: Recommender,
        state: JobState,
        encoding: Option<BackgroundEncoding>,
    ) -> Server {
        let shared = Shared {
            sender,
            library: options.library.clone(),
            key_style: options.key_style,
            generations: Arc::default(),
            cancelled: Arc::default(),
            offered: Arc::default(),
            told: Arc::default(),
        };
        let (jobs, queue) = mpsc::channel::<Job>();
        let worker = shared.clone();
        let reload = state.reload.clone();
        std::thread::Builder::new()
            .name("lsp-recommender".into())
            .spawn(move || run_jobs(&worker, recommender, &queue, state))
            .expect("spawning the recommender thread");
        if let Some(encoding) = encoding {
            let (shared, reload) = (shared.clone(), reload.clone());
            let _ = std::thread::Builder::new().name("lsp-encoding".into()).spawn(move || report_encoding(&shared, &encoding, &reload));
        }
        Server { shared, docs: HashMap::new(), jobs, results: options.results, roots: options.roots }
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
            self.shared.log(MessageType::WARNING, &message);
            self.shared.send(Response::new_err(id, code as i32, message));
        }
    }

    fn notification(&mut self, n: Notification) {
        let outcome = match n.method.as_str() {
            lsp_types::notification::DidOpenTextDocument::METHOD => notification_params(n).map(|p: DidOpenTextDocumentParams| {
                let d = p.text_document;
                let doc = Document::new(d.uri.clone(), &d.language_id, d.text, d.version).in_workspace(&self.roots);
                self.docs.insert(d.uri.clone(), doc);
                self.changed(&d.uri);
            }),
            lsp_types::notification::DidChangeTextDocument::METHOD => notification_params(n).map(|p: DidChangeTextDocumentParams| {
                if let Some(doc) = self.docs.get_mut(&p.text_document.uri) {
                    // Full sync: the last change holds the whole text.
                    if let Some(change) = p.content_changes.into_iter().last() {
                        doc.text = change.text;
                        doc.version = p.text_document.version;
                    }
                    self.changed(&p.text_document.uri);
                }
            }),
            lsp_types::notification::DidSaveTextDocument::METHOD => {
                notification_params(n).map(|p: DidSaveTextDocumentParams| self.changed(&p.text_document.uri))
            }
            lsp_types::notification::DidCloseTextDocument::METHOD => notification_params(n).map(|p: DidCloseTextDocumentParams| {
                self.docs.remove(&p.text_document.uri);
                self.shared.offered.lock().unwrap_or_else(|e| e.into_inner()).remove(&p.text_document.uri);
                self.shared.notify::<lsp_types::notification::PublishDiagnostics>(PublishDiagnosticsParams {
                    uri: p.text_document.uri,
                    diagnostics: Vec::new(),
                    version: None,
                });
            }),
            lsp_types::notification::Cancel::METHOD => notification_params(n).map(|p: lsp_types::CancelParams| {
                let id = match p.id {
                    lsp_types::NumberOrString::Number(n) => RequestId::from(n),
                    lsp_types::NumberOrString::String(s) => RequestId::from(s),
                };
                self.shared.cancelled.lock().unwrap_or_else(|e| e.into_inner()).insert(id);
            }),
            _ => Ok(()),
        };
        if let Err((_, message)) = outcome {
            self.shared.log(MessageType::WARNING, &message);
        }
    }

    /// A document's text changed (or it was opened or saved): papers
    /// offered earlier whose key it now cites go to its bibliography, and
    /// its diagnostics are computed again.
    fn changed(&self, uri: &Url) {
        let Some(doc) = self.docs.get(uri).cloned() else { return };
        let shared = self.shared.clone();
        std::thread::spawn(move || {
            shared.add_cited_offers(&doc);
            shared.publish_diagnostics(&doc);
        });
    }

    fn document(&self, uri: &Url) -> std::result::Result<&Document, (ErrorCode, String)> {
        self.docs.get(uri).ok_or_else(|| (ErrorCode::InvalidParams, format!("{uri} is not open")))
    }

    /// A new request for `uri`: older ones for it are superseded.
    fn next_generation(&self, uri: &Url) -> u64 {
        let mut g = self.shared.generations.lock().unwrap_or_else(|e| e.into_inner());
        let n = g.entry(uri.clone()).or_default();
        *n += 1;
        *n
    }

    fn completion(&mut self, id: RequestId, p: CompletionParams) {
        let pos = p.text_document_position;
        let Ok(doc) = self.document(&pos.text_document.uri) else {
            return self.shared.reply(id, Err((ErrorCode::InvalidParams, format!("{} is not open", pos.text_document.uri))));
        };
        if doc.text.len() > MAX_TEXT {
            let name =
                doc.path.as_deref().and_then(|p| p.file_name()).map_or_else(|| doc.uri.to_string(), |n| n.to_string_lossy().into_owned());
            let message = format!(
                "{name} is {}, over the {} citewise reads for recommendations; no citations are offered in it",
                crate::limits::human(doc.text.len() as u64),
                crate::limits::human(MAX_TEXT as u64)
            );
            self.shared.tell_once(MessageType::WARNING, &message);
            return self.shared.reply(id, Ok(serde_json::Value::Null));
        }
        let slot = doc.offset(pos.position).and_then(|cursor| slot_at(doc, cursor));
        let Some(slot) = slot else {
            // Not in a citation: nothing to offer.
            return self.shared.reply(id, Ok(serde_json::Value::Null));
        };
        let cursor = slot.key_start + slot.typed.len();
        let query = query_at(doc, slot.command, cursor, self.results);
        let edit = doc.range(slot.key_start, cursor);
        let doc = doc.clone();
        let generation = self.next_generation(&doc.uri);
        let _ = self.jobs.send(Job { id, doc, generation, query, work: Work::Complete { edit, typed: slot.typed } });
    }

    fn resolve(&mut self, id: RequestId, item: CompletionItem) {
        let found = item.data.as_ref().and_then(|d| {
            let uri: Url = serde_json::from_value(d.get("uri")?.clone()).ok()?;
            let offered = self.shared.offered.lock().unwrap_or_else(|e| e.into_inner());
            offered.get(&uri)?.get(&item.label).cloned()
        });
        let item = match found {
            Some(c) => resolved(item, &c),
            None => item,
        };
        self.shared.reply(id, serde_json::to_value(item).map_err(|e| (ErrorCode::InternalError, e.to_string())));
    }

    fn code_action(&mut self, id: RequestId, p: CodeActionParams) {
        let Ok(doc) = self.document(&p.text_document.uri) else {
            return self.shared.reply(id, Err((ErrorCode::InvalidParams, format!("{} is not open", p.text_document.uri))));
        };
        let end = doc.offset(p.range.start).filter(|_| doc.text.len() <= MAX_TEXT).and_then(|at| sentence_end(doc, at));
        let Some(end) = end else {
            return self.shared.reply(id, Ok(serde_json::json!([])));
        };
        let query = query_at(doc, end, end, CODE_ACTIONS);
        let at = doc.position(end);
        let doc = doc.clone();
        let generation = self.next_generation(&doc.uri);
        let _ = self.jobs.send(Job { id, doc, generation, query, work: Work::Actions { at } });
    }

    fn hover(&mut self, id: RequestId, p: HoverParams) {
        let pos = p.text_document_position_params;
        let Ok(doc) = self.document(&pos.text_document.uri) else {
            return self.shared.reply(id, Err((ErrorCode::InvalidParams, format!("{} is not open", pos.text_document.uri))));
        };
        let Some(at) = doc.offset(pos.position) else {
            return self.shared.reply(id, Ok(serde_json::Value::Null));
        };
        let Some((key, range)) = doc.citations().into_iter().find(|(_, r)| r.start <= at && at <= r.end) else {
            return self.shared.reply(id, Ok(serde_json::Value::Null));
        };
        let range = doc.range(range.start, range.end);
        let (doc, shared) = (doc.clone(), self.shared.clone());
        std::thread::spawn(move || {
            let answer = shared.paper_for_key(&doc, &key).map(|(paper, evidence)| Hover {
                contents: HoverContents::Markup(MarkupContent {
                    kind: MarkupKind::Markdown,
                    value: hover_markdown(&paper, &evidence, &doc.bibliography().unwrap_or_else(|_| "the bibliography".into())),
                }),
                range: Some(range),
            });
            shared.reply(id, serde_json::to_value(answer).map_err(|e| (ErrorCode::InternalError, e.to_string())));
        });
    }

    fn execute(&mut self, id: RequestId, p: ExecuteCommandParams) {
        if p.command != ADD_TO_BIBLIOGRAPHY {
            return self.shared.reply(id, Err((ErrorCode::InvalidParams, format!("unknown command `{}`", p.command))));
        }
        let args: Option<(Url, String)> = match p.arguments.as_slice() {
            [uri, key] => serde_json::from_value(uri.clone()).ok().zip(key.as_str().map(str::to_string)),
            _ => None,
        };
        let Some((uri, key)) = args else {
            return self.shared.reply(id, Err((ErrorCode::InvalidParams, format!("{ADD_TO_BIBLIOGRAPHY} takes a document URI and a key"))));
        };
        let Ok(doc) = self.document(&uri).cloned() else {
            return self.shared.reply(id, Err((ErrorCode::InvalidParams, format!("{uri} is not open"))));
        };
        let shared = self.shared.clone();
        std::thread::spawn(move || {
            let paper =
                shared.offered.lock().unwrap_or_else(|e| e.into_inner()).get(&uri).and_then(|o| o.get(&key)).and_then(|c| c.paper.clone());
            let outcome = match paper {
                Some(p) => shared.export(&doc, &[p], true).map(|_| serde_json::Value::Null),
                None => Err((ErrorCode::InvalidParams, format!("`{key}` was not offered for {uri}"))),
            };
            shared.reply(id, outcome);
        });
    }
}

/// The file papers for `doc` may be written to: its bibliography, inside
/// its project, and a BibTeX file (a `.bib` name, or an existing file that
/// reads as BibTeX). Else why not.
fn writable_bibliography(doc: &Document) -> std::result::Result<std::path::PathBuf, String> {
    let bib = doc.bibliography().map_err(|e| format!("{e}; it writes only inside the project"))?;
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

/// The keys a BibTeX text declares (`@type{key,`), entries read or not.
fn bib_keys(text: &str) -> HashSet<String> {
    static KEY: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"@[A-Za-z]+\s*[{(]\s*([^,\s{}()]+)\s*,").unwrap());
    KEY.captures_iter(text).map(|c| c[1].to_string()).collect()
}

type Outcome = std::result::Result<serde_json::Value, (ErrorCode, String)>;

fn parse<P: serde::de::DeserializeOwned>(req: Request) -> std::result::Result<P, (ErrorCode, String)> {
    serde_json::from_value(req.params).map_err(|e| (ErrorCode::InvalidParams, format!("{}: {e}", req.method)))
}

fn notification_params<P: serde::de::DeserializeOwned>(n: Notification) -> std::result::Result<P, (ErrorCode, String)> {
    serde_json::from_value(n.params).map_err(|e| (ErrorCode::InvalidParams, format!("{}: {e}", n.method)))
}

impl Shared {
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

    fn is_current(&self, job: &Job) -> bool {
        let newest = self.generations.lock().unwrap_or_else(|e| e.into_inner()).get(&job.doc.uri).copied().unwrap_or(0);
        newest == job.generation && !self.cancelled.lock().unwrap_or_else(|e| e.into_inner()).contains(&job.id)
    }

    fn cancel(&self, job: &Job) {
        self.cancelled.lock().unwrap_or_else(|e| e.into_inner()).remove(&job.id);
        self.reply(job.id.clone(), Err((ErrorCode::RequestCanceled, "superseded by a newer request".into())));
    }

    /// Writes papers to the document's bibliography (atomic, de-duplicated,
    /// with a backup: the editor's export): only a BibTeX file inside the
    /// document's project. A refusal or failure is shown to the user
    /// (`explicit`: every time; else once per document and reason).
    fn export(&self, doc: &Document, papers: &[Paper], explicit: bool) -> std::result::Result<(), (ErrorCode, String)> {
        let bib = match writable_bibliography(doc) {
            Ok(bib) => bib,
            Err(why) => {
                let message = format!("citewise did not add to the bibliography: {why}");
                self.log(MessageType::ERROR, &message);
                if explicit {
                    self.show(MessageType::ERROR, &message);
                } else {
                    self.tell_once(MessageType::ERROR, &message);
                }
                return Err((ErrorCode::RequestFailed, message));
            }
        };
        match crate::export::bibfile::export(&bib, papers, self.key_style) {
            Ok(report) => {
                if report.added() > 0 {
                    self.log(MessageType::INFO, &format!("added {} to {}", report.keys().join(", "), bib.display()));
                }
                Ok(())
            }
            Err(e) => {
                let message = format!("could not add to {}: {e}", bib.display());
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

    /// A message the user sees (`window/showMessage`).
    fn show(&self, kind: MessageType, message: &str) {
        self.notify::<lsp_types::notification::ShowMessage>(lsp_types::ShowMessageParams { typ: kind, message: message.to_string() });
    }

    /// [`Shared::show`], once per message for the server's life.
    fn tell_once(&self, kind: MessageType, message: &str) {
        if self.told.lock().unwrap_or_else(|e| e.into_inner()).insert(message.to_string()) {
            self.show(kind, message);
        }
    }

    /// Offered papers the document now cites go to its bibliography.
    fn add_cited_offers(&self, doc: &Document) {
        let papers: Vec<Paper> = {
            let offered = self.offered.lock().unwrap_or_else(|e| e.into_inner());
            let Some(offers) = offered.get(&doc.uri) else { return };
            let cited: HashSet<String> = doc.citations().into_iter().map(|(k, _)| k).collect();
            offers.iter().filter(|(k, _)| cited.contains(*k)).filter_map(|(_, c)| c.paper.clone()).collect()
        };
        if !papers.is_empty() {
            let _ = self.export(doc, &papers, false);
        }
    }

    /// Warnings for keys neither the bibliography nor the library knows,
    /// hints for bibliography entries without a title.
    fn publish_diagnostics(&self, doc: &Document) {
        let mut diagnostics = Vec::new();
        let (bib, entries, declared) = match doc.bibliography() {
            Ok(bib) => {
                let entries = crate::export::bibfile::entries_of(&bib).unwrap_or_default();
                // Every key the file declares, read or not (an entry without
                // a title is not read as a paper).
                let declared = crate::corpus::source::read_bytes(&bib)
                    .map(|b| bib_keys(&crate::corpus::source::decode_text(&b).text))
                    .unwrap_or_default();
                (bib, entries, declared)
            }
            Err(refused) => {
                // Said where the document names it; nothing is read from it.
                let range = doc.bibliography_named().map_or(0..0, |(_, r)| r);
                diagnostics.push(Diagnostic {
                    range: doc.range(range.start, range.end),
                    severity: Some(DiagnosticSeverity::WARNING),
                    source: Some("citewise".into()),
                    message: format!("{refused}: citewise neither reads nor writes it"),
                    ..Default::default()
                });
                let named = doc.bibliography_named().map_or_else(|| "references.bib".into(), |(n, _)| n);
                (std::path::PathBuf::from(named), Vec::new(), HashSet::new())
            }
        };
        let offered: HashSet<String> =
            self.offered.lock().unwrap_or_else(|e| e.into_inner()).get(&doc.uri).map(|o| o.keys().cloned().collect()).unwrap_or_default();
        for (key, range) in doc.citations() {
            let entry = entries.iter().find(|(k, _, _)| *k == key);
            let (severity, message) = match entry {
                Some((_, _, title)) if !title.is_empty() => continue,
                Some(_) => (DiagnosticSeverity::HINT, format!("`{key}` has no title in {}", bib.display())),
                None if declared.contains(&key) => (DiagnosticSeverity::HINT, format!("`{key}` has no title in {}", bib.display())),
                None if offered.contains(&key) => continue,
                None => match self.library.papers().paper_by_id(&format!("bib:{key}")) {
                    Ok(Some(_)) => continue,
                    _ => (DiagnosticSeverity::WARNING, format!("`{key}` is in neither {} nor the library", bib.display())),
                },
            };
            diagnostics.push(Diagnostic {
                range: doc.range(range.start, range.end),
                severity: Some(severity),
                source: Some("citewise".into()),
                message,
                ..Default::default()
            });
        }
        self.notify::<lsp_types::notification::PublishDiagnostics>(PublishDiagnosticsParams {
            uri: doc.uri.clone(),
            diagnostics,
            version: Some(doc.version),
        });
    }

    /// The paper a key stands for (the bibliography's entry, with the
    /// library's record when it has one) and what other papers cited it for.
    fn paper_for_key(&self, doc: &Document, key: &str) -> Option<(Paper, Vec<crate::pipeline::channel::EvidenceSnippet>)> {
        let from_bib = doc.bibliography().ok().and_then(|bib| crate::corpus::source::read_bytes(&bib).ok()).and_then(|bytes| {
            let text = crate::corpus::source::decode_text(&bytes).text;
            parse_source(&text).into_iter().find_map(|o| match o {
                EntryOutcome::Paper(p) if p.key == key => Some(*p),
                _ => None,
            })
        });
        let papers = self.library.papers();
        let in_library = from_bib
            .as_ref()
            .filter(|p| !p.doi.is_empty())
            .and_then(|p| papers.paper_by_id(&format!("doi:{}", p.doi.to_lowercase())).ok().flatten())
            .or_else(|| papers.paper_by_id(&format!("bib:{key}")).ok().flatten())
            .or_else(|| {
                let offered = self.offered.lock().unwrap_or_else(|e| e.into_inner());
                offered.get(&doc.uri)?.get(key)?.paper.clone()
            });
        let paper = in_library.clone().or(from_bib)?;
        let evidence = match &in_library {
            Some(p) => self
                .library
                .evidence()
                .spans_citing(&p.id, &[], 3, &[])
                .map(|spans| spans.iter().map(|r| crate::pipeline::evidence_channel::snippet(r, &p.id)).collect())
                .unwrap_or_default(),
            None => Vec::new(),
        };
        Some((paper, evidence))
    }

    /// The answer to a job, from the recommender's answer.
    fn answer(&self, job: &Job, r: &Recommendations, incomplete: bool) -> Outcome {
        let offered = offered(&job.doc, &r.candidates, self.key_style);
        {
            let mut all = self.offered.lock().unwrap_or_else(|e| e.into_inner());
            let entry = all.entry(job.doc.uri.clone()).or_default();
            for (key, c) in &offered {
                entry.insert(key.clone(), c.clone());
            }
        }
        let value = match &job.work {
            Work::Complete { edit, typed } => {
                let items: Vec<CompletionItem> =
                    offered.iter().enumerate().map(|(i, (key, c))| completion_item(&job.doc, i, key, c, *edit, typed)).collect();
                serde_json::to_value(CompletionList { is_incomplete: incomplete, items })
            }
            Work::Actions { at } => {
                let actions: Vec<CodeActionOrCommand> = cite_actions(&job.doc, &offered[..offered.len().min(CODE_ACTIONS)], *at)
                    .into_iter()
                    .map(CodeActionOrCommand::CodeAction)
                    .collect();
                serde_json::to_value(actions)
            }
        };
        value.map_err(|e| (ErrorCode::InternalError, e.to_string()))
    }
}

/// The recommender's thread: superseded and cancelled jobs are answered as
/// cancelled; the others run, stopping at the next stage boundary once a
/// newer request for the document comes.
/// Tells the client what the background encoding does (log lines: every
/// tenth of a phase, and when a channel covers the library) and marks the
/// recommender for reopening when one does.
fn report_encoding(shared: &Shared, encoding: &BackgroundEncoding, reload: &AtomicBool) {
    let mut told: Option<(Phase, u64)> = None;
    while let Some(event) = encoding.recv() {
        match &event {
            EncodingEvent::Progress { phase, done, total, .. } => {
                let tenth = if *total == 0 { 10 } else { done * 10 / total };
                if told != Some((*phase, tenth)) {
                    told = Some((*phase, tenth));
                    shared.log(MessageType::LOG, &event.status().unwrap_or_default());
                }
            }
            EncodingEvent::Covered { phase, encoded } => {
                reload.store(true, Ordering::SeqCst);
                shared.log(MessageType::INFO, &format!("{} now cover the library ({encoded} papers encoded)", phase.label()));
            }
            EncodingEvent::Skipped { phase, why } => shared.log(MessageType::LOG, &format!("{} not encoded: {why}", phase.label())),
            EncodingEvent::Finished => return,
        }
    }
}

fn run_jobs(shared: &Shared, mut recommender: Recommender, queue: &mpsc::Receiver<Job>, state: JobState) {
    while let Ok(first) = queue.recv() {
        let mut jobs = vec![first];
        jobs.extend(queue.try_iter());
        state.busy.store(true, Ordering::SeqCst);
        if let (true, Some(reopen)) = (state.reload.swap(false, Ordering::SeqCst), &state.reopen) {
            recommender = reopen();
        }
        let recommender = &recommender;
        for job in jobs {
            if !shared.is_current(&job) {
                shared.cancel(&job);
                continue;
            }
            if let Err(e) = recommender.library().refresh() {
                shared.log(MessageType::WARNING, &format!("library: {e}"));
            }
            run_job(shared, recommender, job);
        }
        state.busy.store(false, Ordering::SeqCst);
    }
}

fn run_job(shared: &Shared, recommender: &Recommender, job: Job) {
    let started = Instant::now();
    let wait = match job.work {
        Work::Complete { .. } => Some(RERANK_WAIT),
        Work::Actions { .. } => None,
    };
    let (tx, rx) = mpsc::channel::<Recommendations>();
    let job = Arc::new(job);
    let replier = {
        let (shared, job) = (shared.clone(), job.clone());
        std::thread::spawn(move || reply_when_ready(&shared, &job, &rx, wait.map(|w| started + w)))
    };
    let mut timings = Vec::new();
    let outcome = recommender.recommend_streaming(&job.query, &mut |r| {
        timings = r.timings.iter().map(|(stage, d)| format!("{stage} {:.1} ms", d.as_secs_f64() * 1000.0)).collect();
        let _ = tx.send(r);
        shared.is_current(&job)
    });
    drop(tx);
    match outcome {
        // Where the time went (the latency benchmark reads these lines).
        Ok(()) => shared.log(MessageType::LOG, &format!("request {}: {}", job.id, timings.join(", "))),
        // An empty query, say: nothing to offer, and a line in the log.
        Err(e) => shared.log(MessageType::INFO, &format!("request {}: no recommendations: {e}", job.id)),
    }
    let _ = replier.join();
}

/// Answers once: with the complete answer when it comes by `deadline`,
/// else with the latest early one (incomplete); a job stopped before any
/// answer is cancelled.
fn reply_when_ready(shared: &Shared, job: &Job, rx: &mpsc::Receiver<Recommendations>, deadline: Option<Instant>) {
    let mut latest: Option<Recommendations> = None;
    loop {
        let next = match deadline {
            Some(d) if latest.is_some() => rx.recv_timeout(d.saturating_duration_since(Instant::now())),
            _ => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
        };
        match next {
            Ok(r) if r.complete => return shared.reply(job.id.clone(), shared.answer(job, &r, false)),
            Ok(r) => {
                latest = Some(r);
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    return shared.reply(job.id.clone(), shared.answer(job, latest.as_ref().expect("just set"), true));
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {
                return shared.reply(job.id.clone(), shared.answer(job, latest.as_ref().expect("waited with an answer"), true));
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return match (&latest, shared.is_current(job)) {
                    (Some(r), true) => shared.reply(job.id.clone(), shared.answer(job, r, true)),
                    (None, true) => shared.reply(job.id.clone(), shared.answer(job, &Recommendations::default(), false)),
                    (_, false) => shared.cancel(job),
                };
            }
        }
    }
}
