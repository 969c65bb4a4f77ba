//! The editor's state and how keys change it. Pure: no terminal, no
//! threads, no files. What needs the outside world comes back as
//! [`Effect`]s for the runtime to carry out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

use super::config::{CiteSyntaxSetting, Config};
use super::keymap::{Action, Key, Keymap};
use super::theme::Theme;
use crate::corpus::citation_markup::{citation_key, CiteSyntax, NotAKey};
use crate::corpus::Paper;
use crate::draft::{cursor_context, global_context, selection_context, ContextMode};
use crate::evidence::link::normalize_title;
use crate::export::keys::base_key;
use crate::export::{ExportReport, KeyStyle};
use crate::pipeline::{Candidate, Query, Recommendations};
use crate::util::counted;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Editor,
    Results,
    Evidence,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    None,
    Help,
    /// A message box (export confirmation, errors); any key closes it.
    Message {
        title: String,
        lines: Vec<String>,
    },
    /// An autosave newer than the file was found.
    Restore {
        text: String,
        when: String,
    },
    /// Typing the results filter.
    Filter,
    /// The draft's citations as checked, weakest support first.
    Check,
}

/// The last check of the draft's citations.
#[derive(Debug, Clone, Default)]
pub struct CheckView {
    pub report: crate::check::Report,
    /// Citations in the order shown: those with findings first, then by
    /// support, weakest first (unscored last), as indices into
    /// `report.citations`.
    pub order: Vec<usize>,
    pub selected: usize,
    /// Enter showed the selected citation's findings, evidence and
    /// alternatives.
    pub details: bool,
}

impl CheckView {
    pub fn new(report: crate::check::Report) -> CheckView {
        let mut order: Vec<usize> = (0..report.citations.len()).collect();
        let key = |i: &usize| {
            let c = &report.citations[*i];
            (c.findings.is_empty(), c.support.map_or(f32::INFINITY, |s| s), c.line)
        };
        order.sort_by(|a, b| {
            let (fa, sa, la) = key(a);
            let (fb, sb, lb) = key(b);
            fa.cmp(&fb).then(sa.total_cmp(&sb)).then(la.cmp(&lb))
        });
        CheckView { report, order, selected: 0, details: false }
    }

    /// The highlighted citation.
    pub fn current(&self) -> Option<&crate::check::CitationReport> {
        self.order.get(self.selected).map(|&i| &self.report.citations[i])
    }
}

/// Work for the runtime.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Request(Query),
    Save,
    Export(Vec<Paper>),
    /// Export, then insert the citation of these papers at the cursor.
    ExportAndCite(Vec<Paper>),
    CopyKeys(Vec<Paper>),
    Open(String),
    /// Check the draft's citations (off the UI thread).
    Check,
    /// Opens a citing document (at a page, where the viewer takes one).
    OpenFile {
        path: String,
        page: Option<u32>,
    },
    Quit,
}

/// The results of the newest request.
#[derive(Debug, Clone, Default)]
pub struct ResultsView {
    pub request: u64,
    pub stage: String,
    pub complete: bool,
    pub candidates: Vec<Candidate>,
    pub timings: Vec<(String, std::time::Duration)>,
    pub notices: Vec<String>,
    /// Analyzed query terms, for highlighting evidence.
    pub query_terms: Vec<String>,
}

/// The editor's state. The runtime reads it through the accessors below and
/// changes it only by reporting what happened (`on_key`, `on_results`,
/// `on_requested`, ...), so that the draft's title and abstract, the
/// selection and the pending request stay consistent.
pub struct App {
    editor: TextArea<'static>,
    /// The draft's title and abstract ([`global_context`] of the text),
    /// recomputed whenever the text changes.
    global: (String, String),
    draft: Option<PathBuf>,
    bib: PathBuf,
    focus: Focus,
    overlay: Overlay,
    results: Option<ResultsView>,
    /// Index into the visible (filtered) results.
    selected: usize,
    evidence_selected: usize,
    marked: BTreeSet<String>,
    filter: String,
    pending: Option<u64>,
    status: String,
    /// What the background encoding is doing, when it is.
    encoding: Option<String>,
    dirty: bool,
    /// Counts changes of the text and of `dirty`.
    revision: u64,
    quit_armed: bool,
    spinner: usize,
    settings: AppSettings,
    /// (key, DOI, normalised title) of the bibliography file's entries.
    bib_entries: Vec<(String, String, String)>,
    /// Keys the draft cites whose paper has another key in the library now
    /// (old, new).
    renamed_keys: Vec<(String, String)>,
    /// The last check of the draft's citations, and the check under way.
    check: Option<CheckView>,
    check_pending: Option<u64>,
}

/// What the configuration and the library decide for the editor.
pub struct AppSettings {
    pub keymap: Keymap,
    pub theme: Theme,
    pub context_mode: ContextMode,
    pub cite_syntax: CiteSyntax,
    pub key_style: KeyStyle,
    /// Papers shown per request.
    pub k: usize,
    /// Where the reranker runs, as the status bar shows it ([`reranker_device`]).
    pub device: String,
    pub library_papers: u64,
    /// Command that opens a citing PDF at a page (`pdf_viewer` in the config).
    pub pdf_viewer: Option<String>,
}

impl AppSettings {
    /// What `config` decides, with its theme already loaded, for a draft (whose
    /// extension picks the citation syntax under `cite_syntax = "auto"`) and a
    /// library of `library_papers` papers.
    pub fn from_config(config: &Config, theme: Theme, draft: Option<&Path>, library_papers: u64) -> AppSettings {
        let cite_syntax = match config.cite_syntax {
            CiteSyntaxSetting::Latex => CiteSyntax::Latex,
            CiteSyntaxSetting::Markdown => CiteSyntax::Markdown,
            CiteSyntaxSetting::Typst => CiteSyntax::Typst,
            CiteSyntaxSetting::Auto => draft.map(CiteSyntax::for_file).unwrap_or_default(),
        };
        AppSettings {
            keymap: Keymap::with_overrides(&config.keys),
            theme,
            context_mode: config.context,
            cite_syntax,
            key_style: config.key_style,
            k: config.results,
            device: reranker_device(false, ""),
            library_papers,
            pdf_viewer: config.pdf_viewer.clone(),
        }
    }

    /// The settings of an empty configuration, for a library of this size.
    pub fn defaults(library_papers: u64) -> AppSettings {
        let config = Config::default();
        let theme = Theme::load(&config.theme, None).expect("the default theme is built in");
        AppSettings::from_config(&config, theme, None, library_papers)
    }
}

/// Where the reranker runs, as the status bar names it: `CPU`, or on a
/// hardware GPU `GPU: ` and the backend and adapter (`wgpu on …`).
pub fn reranker_device(on_gpu: bool, backend: &str) -> String {
    match (on_gpu, backend) {
        (false, _) => "CPU".into(),
        (true, "") => "GPU".into(),
        (true, backend) => format!("GPU: {backend}"),
    }
}

impl App {
    pub fn new(text: &str, draft: Option<PathBuf>, bib: PathBuf, s: AppSettings) -> App {
        let mut editor = TextArea::new(to_lines(text));
        editor.set_wrap_mode(WrapMode::WordOrGlyph);
        editor.set_max_histories(1000);
        App {
            // Of the text as the editor holds it (no `\r`), as after each edit.
            global: global_context(&editor.lines().join("\n")),
            editor,
            draft,
            bib,
            focus: Focus::Editor,
            overlay: Overlay::None,
            results: None,
            selected: 0,
            evidence_selected: 0,
            marked: BTreeSet::new(),
            filter: String::new(),
            pending: None,
            status: String::new(),
            encoding: None,
            dirty: false,
            revision: 0,
            quit_armed: false,
            spinner: 0,
            settings: s,
            bib_entries: Vec::new(),
            renamed_keys: Vec::new(),
            check: None,
            check_pending: None,
        }
    }

    pub fn text(&self) -> String {
        self.editor.lines().join("\n")
    }

    /// The draft's title and abstract, read from LaTeX (`\title{..}`,
    /// `abstract` environment) or Markdown front matter (`title:`, `abstract:`).
    pub fn global_context(&self) -> (&str, &str) {
        (&self.global.0, &self.global.1)
    }

    /// The text changed (typing, a restored autosave, an inserted citation).
    fn edited(&mut self) {
        self.dirty = true;
        self.revision += 1;
        self.global = global_context(&self.text());
    }

    pub fn editor(&self) -> &TextArea<'static> {
        &self.editor
    }

    /// The draft's file, if it has one.
    pub fn draft(&self) -> Option<&Path> {
        self.draft.as_deref()
    }

    /// The bibliography file exports go to.
    pub fn bib(&self) -> &Path {
        &self.bib
    }

    pub fn focus(&self) -> Focus {
        self.focus
    }

    pub fn overlay(&self) -> &Overlay {
        &self.overlay
    }

    /// The results of the newest request that sent any.
    pub fn results(&self) -> Option<&ResultsView> {
        self.results.as_ref()
    }

    /// Index of the highlighted paper among the visible results.
    pub fn selected(&self) -> usize {
        self.selected
    }

    /// Index of the highlighted evidence of the highlighted paper.
    pub fn evidence_selected(&self) -> usize {
        self.evidence_selected
    }

    pub fn is_marked(&self, id: &str) -> bool {
        self.marked.contains(id)
    }

    pub fn marked_count(&self) -> usize {
        self.marked.len()
    }

    /// The results filter as typed.
    pub fn filter(&self) -> &str {
        &self.filter
    }

    /// Whether a request is out and its complete results have not arrived.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The status bar's message.
    pub fn status(&self) -> &str {
        &self.status
    }

    pub fn set_status(&mut self, message: impl Into<String>) {
        self.status = message.into();
    }

    /// What the background encoding is doing (shown in the status bar).
    pub fn encoding(&self) -> Option<&str> {
        self.encoding.as_deref()
    }

    pub fn set_encoding(&mut self, progress: Option<String>) {
        self.encoding = progress;
    }

    /// Whether the text changed since it was opened or saved.
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    /// A number that changes whenever the text or [`App::is_dirty`] does.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// The frame of the busy spinner.
    pub fn spinner(&self) -> usize {
        self.spinner
    }

    /// Advances the busy spinner.
    pub fn tick(&mut self) {
        self.spinner = self.spinner.wrapping_add(1);
    }

    pub fn settings(&self) -> &AppSettings {
        &self.settings
    }

    /// Names where the reranker runs in the status bar ([`reranker_device`]).
    pub fn set_reranker_device(&mut self, device: String) {
        self.settings.device = device;
    }

    /// The entries of the bibliography file (key, DOI, normalised title),
    /// read again after each export: papers they stand for and the draft
    /// cites are left out of the results.
    /// The keys the draft cites that its bibliography file does not hold.
    pub fn keys_outside_bibliography(&self) -> Vec<String> {
        let cited = crate::corpus::citation_markup::cited_keys(&self.text(), self.settings.cite_syntax);
        cited.into_iter().filter(|k| !self.bib_entries.iter().any(|(bk, _, _)| bk == k)).collect()
    }

    /// Cited keys whose paper the library now knows under another key; the
    /// status bar says so and the rewrite action ([`Action::RewriteKeys`])
    /// replaces them. A new key that is not a citation key
    /// ([`citation_key`]) is never written: the status bar says why.
    pub fn set_renamed_keys(&mut self, renamed: Vec<(String, String)>) {
        let syntax = self.settings.cite_syntax;
        let writable: Vec<&(String, String)> = renamed.iter().filter(|(_, new)| citation_key(new, syntax).is_ok()).collect();
        let action = self.rewrite_keys_key();
        if let Some((old, new)) = writable.first() {
            let more = if writable.len() > 1 { format!(" (and {} more)", writable.len() - 1) } else { String::new() };
            self.status = format!("`{old}` is now `{new}` in the library{more}: {action} rewrites the citations");
        } else if let Some((old, refused)) = renamed.iter().find_map(|(old, new)| citation_key(new, syntax).err().map(|e| (old, e))) {
            self.status = not_rewritten(old, &refused, &action);
        }
        self.renamed_keys = renamed;
    }

    /// The key that rewrites renamed keys, as the status bar names it.
    fn rewrite_keys_key(&self) -> String {
        self.settings.keymap.keys_of(Action::RewriteKeys).first().cloned().unwrap_or_else(|| "the rewrite-keys action".into())
    }

    /// Rewrites every citation of a renamed key with its new key, when the
    /// new key is a citation key ([`citation_key`]).
    fn rewrite_keys(&mut self) {
        let syntax = self.settings.cite_syntax;
        let text = self.text();
        let mut out = text.clone();
        let mut n = 0;
        let mut refused: Option<(String, NotAKey)> = None;
        let citations = crate::corpus::citation_markup::citations(&text, syntax);
        for (key, range) in citations.iter().rev() {
            let Some((_, new)) = self.renamed_keys.iter().find(|(old, _)| old == key) else { continue };
            match citation_key(new, syntax) {
                Err(e) => refused = Some((key.clone(), e)),
                Ok(()) if out.get(range.clone()) == Some(key.as_str()) => {
                    out.replace_range(range.clone(), new);
                    n += 1;
                }
                Ok(()) => {}
            }
        }
        let action = self.rewrite_keys_key();
        let left = refused.map(|(old, e)| not_rewritten(&old, &e, &action));
        if n == 0 {
            self.status = left.unwrap_or_else(|| "no citation key to rewrite".into());
            return;
        }
        let c = self.editor.cursor();
        let (row, col) = (c.0, c.1);
        self.editor = TextArea::new(to_lines(&out));
        self.editor.set_wrap_mode(WrapMode::WordOrGlyph);
        self.editor.move_cursor(CursorMove::Jump(row.min(u16::MAX as usize) as u16, col.min(u16::MAX as usize) as u16));
        self.edited();
        self.renamed_keys.retain(|(_, new)| citation_key(new, syntax).is_err());
        self.status = match left {
            Some(left) => format!("rewrote {}; {left}", counted(n, "citation")),
            None => format!("rewrote {}", counted(n, "citation")),
        };
    }

    pub fn set_bib_entries(&mut self, entries: Vec<(String, String, String)>) {
        self.bib_entries = entries;
    }

    /// Asks whether to restore an autosave (`text`, from `when`) that differs
    /// from the file.
    pub fn offer_restore(&mut self, text: String, when: String) {
        self.overlay = Overlay::Restore { text, when };
    }

    /// The last check of the draft's citations.
    pub fn check_view(&self) -> Option<&CheckView> {
        self.check.as_ref()
    }

    /// A check of the draft went out as `id`.
    pub fn on_check_requested(&mut self, id: u64) {
        self.check_pending = Some(id);
        self.status = "checking the draft's citations…".into();
    }

    /// A check arrived: shown when it is the one asked last.
    pub fn on_checked(&mut self, id: u64, report: crate::check::Report) {
        if self.check_pending != Some(id) {
            return;
        }
        self.check_pending = None;
        let errors = report.findings.iter().filter(|f| f.severity == crate::check::Severity::Error).count();
        let warnings = report.findings.iter().filter(|f| f.severity == crate::check::Severity::Warning).count();
        self.status = format!("{} citations checked: {errors} errors, {warnings} warnings", report.citations.len());
        self.check = Some(CheckView::new(report));
        self.overlay = Overlay::Check;
    }

    /// Keys of the check view: up and down, Enter for a citation's details
    /// (again: back to the list), Esc closes.
    fn on_check_key(&mut self, ev: KeyEvent) {
        let Some(view) = &mut self.check else {
            self.overlay = Overlay::None;
            return;
        };
        match ev.code {
            KeyCode::Esc | KeyCode::Char('q') if !view.details => self.overlay = Overlay::None,
            KeyCode::Esc | KeyCode::Enter if view.details => view.details = false,
            KeyCode::Enter => view.details = true,
            KeyCode::Down | KeyCode::Char('j') => view.selected = step(view.selected, view.order.len(), true),
            KeyCode::Up | KeyCode::Char('k') => view.selected = step(view.selected, view.order.len(), false),
            _ => {}
        }
    }

    /// A request for the text went out as `id`: from now on results of
    /// older requests are ignored.
    pub fn on_requested(&mut self, id: u64) {
        self.pending = Some(id);
    }

    /// The text was written to `path`.
    pub fn on_saved(&mut self, path: &Path) {
        self.dirty = false;
        self.revision += 1;
        self.status = format!("saved {}", path.display());
    }

    /// The request for the text at the cursor.
    pub fn query(&self) -> Query {
        let lines = self.editor.lines();
        let context = match self.editor.selection_range() {
            Some((start, end)) if start != end => selection_context(lines, start, end),
            _ => {
                let c = self.editor.cursor();
                cursor_context(lines, (c.0, c.1), self.settings.context_mode)
            }
        };
        let (title, abstract_text) = self.global_context();
        Query::new(context).with_global(title, abstract_text).with_k(self.settings.k)
    }

    /// Candidates after removing papers the draft already cites and
    /// applying the filter.
    pub fn visible(&self) -> Vec<&Candidate> {
        let Some(r) = &self.results else { return Vec::new() };
        let f = self.filter.to_lowercase();
        r.candidates
            .iter()
            .filter(|c| {
                f.is_empty()
                    || c.paper.as_ref().is_some_and(|p| {
                        p.title.to_lowercase().contains(&f)
                            || p.authors.iter().any(|a| a.to_lowercase().contains(&f))
                            || p.venue.to_lowercase().contains(&f)
                            || p.keywords.iter().any(|k| k.to_lowercase().contains(&f))
                            || p.zotero.iter().flat_map(|z| &z.collections).any(|c| c.to_lowercase().contains(&f))
                    })
            })
            .collect()
    }

    pub fn current(&self) -> Option<&Candidate> {
        self.visible().get(self.selected).copied()
    }

    fn marked_papers(&self) -> Vec<Paper> {
        let Some(r) = &self.results else { return Vec::new() };
        let mut papers: Vec<Paper> = r.candidates.iter().filter(|c| self.marked.contains(&c.id)).filter_map(|c| c.paper.clone()).collect();
        if papers.is_empty() {
            papers.extend(self.current().and_then(|c| c.paper.clone()));
        }
        papers
    }

    /// Keys the draft cites (`cited`), resolved to the papers they stand
    /// for through the bibliography file, decide which candidates are
    /// already cited.
    fn already_cited(&self, c: &Candidate, cited: &[String]) -> bool {
        let Some(p) = &c.paper else { return false };
        let title = normalize_title(&p.title);
        cited.iter().any(|k| {
            *k == p.key
                || *k == base_key(p, self.settings.key_style)
                || self.bib_entries.iter().any(|(bk, doi, t)| bk == k && ((!doi.is_empty() && *doi == p.doi) || *t == title))
        })
    }

    /// Results of a stage arrived (with the query's terms, to highlight).
    pub fn on_results(&mut self, id: u64, r: Recommendations) {
        if Some(id) != self.pending && self.results.as_ref().is_none_or(|v| v.request != id) {
            return; // superseded
        }
        // Keep the highlighted paper highlighted when a later stage of the
        // same request reorders; a new request starts at the top.
        let same_request = self.results.as_ref().is_some_and(|v| v.request == id);
        let keep = self.current().map(|c| c.id.clone()).filter(|_| same_request);
        let mut view = ResultsView {
            request: id,
            stage: r.stage.clone(),
            complete: r.complete,
            candidates: r.candidates,
            timings: r.timings,
            notices: r.notices,
            query_terms: r.terms,
        };
        let cited = crate::corpus::citation_markup::cited_keys(&self.text(), self.settings.cite_syntax);
        if !cited.is_empty() {
            view.candidates.retain(|c| !self.already_cited(c, &cited));
        }
        self.results = Some(view);
        if r.complete {
            self.pending = None;
        }
        self.selected = keep.and_then(|id| self.visible().iter().position(|c| c.id == id)).unwrap_or(0);
        self.evidence_selected = 0;
        if let Some(n) = self.results.as_ref().and_then(|v| v.notices.first()) {
            self.status = n.clone();
        }
    }

    pub fn on_failed(&mut self, id: u64, message: String) {
        if Some(id) == self.check_pending {
            self.check_pending = None;
            self.status = format!("citations not checked: {message}");
        }
        if Some(id) == self.pending {
            self.pending = None;
            self.status = message;
        }
    }

    /// An export of `papers` papers went to the export thread; its result
    /// comes to [`App::on_exported`].
    pub fn on_export_started(&mut self, papers: usize) {
        let file = self.bib.file_name().map_or_else(|| self.bib.display().to_string(), |n| n.to_string_lossy().into_owned());
        self.status = format!("exporting {} to {file}…", counted(papers, "paper"));
    }

    pub fn on_exported(&mut self, result: Result<ExportReport, String>, cite: bool) {
        match result {
            Ok(report) => {
                let keys = report.keys();
                let mut lines =
                    vec![format!("{} added, {} already there, in {}", report.added(), keys.len() - report.added(), report.file.display())];
                lines.extend(report.entries.iter().map(|e| match e {
                    crate::export::Exported::Added(k) => format!("  + {k}"),
                    crate::export::Exported::Present(k) => format!("  = {k} (already there)"),
                }));
                if let Some(b) = &report.backup {
                    lines.push(format!("previous version saved as {}", b.display()));
                }
                let refused = keys.iter().find_map(|k| citation_key(k, self.settings.cite_syntax).err());
                if let (true, Some(refused)) = (cite, &refused) {
                    // A key that is not one is never written into the draft.
                    self.status = format!("exported, but no citation inserted: {refused}");
                    lines.push(format!("no citation inserted: {refused}"));
                    self.overlay = Overlay::Message { title: "Exported".into(), lines };
                } else if cite {
                    let citation = self.settings.cite_syntax.format(&keys);
                    self.editor.insert_str(&citation);
                    self.edited();
                    self.focus = Focus::Editor;
                    self.status = format!("inserted {citation}");
                    self.marked.clear();
                } else {
                    let file =
                        report.file.file_name().map_or_else(|| report.file.display().to_string(), |n| n.to_string_lossy().into_owned());
                    self.status = format!("exported {} to {file}", counted(keys.len(), "paper"));
                    self.overlay = Overlay::Message { title: "Exported".into(), lines };
                }
            }
            Err(e) => {
                self.status = "export failed (nothing was written)".into();
                self.overlay = Overlay::Message { title: "Export failed".into(), lines: vec![e] };
            }
        }
    }

    /// A key was pressed.
    pub fn on_key(&mut self, ev: KeyEvent) -> Vec<Effect> {
        match &self.overlay {
            Overlay::Help | Overlay::Message { .. } => {
                self.overlay = Overlay::None;
                return Vec::new();
            }
            Overlay::Restore { text, .. } => {
                if let KeyCode::Char('y' | 'Y') = ev.code {
                    self.editor = TextArea::new(to_lines(text));
                    self.editor.set_wrap_mode(WrapMode::WordOrGlyph);
                    self.edited();
                    self.status = "restored the autosaved text (Ctrl-S saves it)".into();
                } else {
                    self.status = "kept the file as saved".into();
                }
                self.overlay = Overlay::None;
                return Vec::new();
            }
            Overlay::Filter => {
                match ev.code {
                    KeyCode::Enter | KeyCode::Esc => self.overlay = Overlay::None,
                    KeyCode::Backspace => {
                        self.filter.pop();
                    }
                    KeyCode::Char(c) if !ev.modifiers.contains(KeyModifiers::CONTROL) => self.filter.push(c),
                    _ => {}
                }
                self.selected = 0;
                return Vec::new();
            }
            Overlay::Check => {
                self.on_check_key(ev);
                return Vec::new();
            }
            Overlay::None => {}
        }
        let in_lists = self.focus != Focus::Editor;
        let action = Key::from_event(&ev).and_then(|k| self.settings.keymap.action(&k, in_lists));
        if action != Some(Action::Quit) {
            self.quit_armed = false;
        }
        match action {
            Some(a) => self.act(a),
            None if self.focus == Focus::Editor => {
                if self.editor.input(ev) {
                    self.edited();
                }
                Vec::new()
            }
            None => Vec::new(),
        }
    }

    fn act(&mut self, a: Action) -> Vec<Effect> {
        match a {
            Action::AskCitations => {
                let q = self.query();
                self.status.clear();
                return vec![Effect::Request(q)];
            }
            Action::CycleContext => {
                self.settings.context_mode = self.settings.context_mode.next();
                self.status = format!("context: {}", self.settings.context_mode.label());
            }
            Action::Save => return vec![Effect::Save],
            Action::Quit => {
                if self.dirty && !self.quit_armed {
                    self.quit_armed = true;
                    self.status = "unsaved changes: Ctrl-S saves; quit again to leave (the autosave keeps them)".into();
                } else {
                    return vec![Effect::Quit];
                }
            }
            Action::Help => self.overlay = Overlay::Help,
            Action::CheckCitations => return vec![Effect::Check],
            Action::FocusResults => {
                if self.results.is_some() {
                    self.focus = Focus::Results;
                }
            }
            Action::FocusEditor => self.focus = Focus::Editor,
            Action::Down | Action::Up => {
                let down = a == Action::Down;
                if self.focus == Focus::Evidence {
                    let n = self.current().map_or(0, |c| c.evidence.len());
                    self.evidence_selected = step(self.evidence_selected, n, down);
                } else {
                    self.selected = step(self.selected, self.visible().len(), down);
                    self.evidence_selected = 0;
                }
            }
            Action::ShowEvidence => {
                self.focus = if self.focus == Focus::Evidence { Focus::Results } else { Focus::Evidence };
            }
            Action::Mark => {
                if let Some(id) = self.current().map(|c| c.id.clone()) {
                    if !self.marked.remove(&id) {
                        self.marked.insert(id);
                    }
                    self.selected = step(self.selected, self.visible().len(), true);
                }
            }
            Action::Export => {
                let papers = self.marked_papers();
                if !papers.is_empty() {
                    return vec![Effect::Export(papers)];
                }
            }
            Action::InsertCitation => {
                let papers = self.marked_papers();
                if !papers.is_empty() {
                    return vec![Effect::ExportAndCite(papers)];
                }
            }
            Action::CopyKeys => {
                let papers = self.marked_papers();
                if !papers.is_empty() {
                    return vec![Effect::CopyKeys(papers)];
                }
            }
            Action::OpenLink if self.focus == Focus::Evidence => {
                let snippet = self.current().and_then(|c| c.evidence.get(self.evidence_selected));
                match snippet.and_then(|e| e.citing_file.clone().map(|f| (f, e.citing_page))) {
                    Some((path, page)) => return vec![Effect::OpenFile { path, page }],
                    None => self.status = "this evidence did not come from a file on this machine".into(),
                }
            }
            Action::OpenLink => {
                if let Some(p) = self.current().and_then(|c| c.paper.as_ref()) {
                    let link = if !p.doi.is_empty() { format!("https://doi.org/{}", p.doi) } else { p.url.clone() };
                    if link.is_empty() {
                        self.status = "this paper has no DOI or URL".into();
                    } else {
                        return vec![Effect::Open(link)];
                    }
                }
            }
            Action::Filter => self.overlay = Overlay::Filter,
            Action::RewriteKeys => self.rewrite_keys(),
        }
        Vec::new()
    }

    /// Moves the editor cursor to the end of the text.
    pub fn cursor_to_end(&mut self) {
        self.editor.move_cursor(CursorMove::Bottom);
        self.editor.move_cursor(CursorMove::End);
    }
}

/// The status bar's word on a renamed key whose new key is not a citation
/// key: it stays as it is.
fn not_rewritten(old: &str, refused: &NotAKey, action: &str) -> String {
    format!(
        "`{old}` is now `{}` in the library, which is not a key citewise writes into a draft ({}): {action} leaves it",
        refused.shown, refused.why
    )
}

/// Editor lines of a text; a final newline leaves an empty last line, so
/// that `text()` gives the same text back.
fn to_lines(text: &str) -> Vec<String> {
    text.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l).to_string()).collect()
}

fn step(i: usize, n: usize, down: bool) -> usize {
    if n == 0 {
        0
    } else if down {
        (i + 1).min(n - 1)
    } else {
        i.saturating_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> AppSettings {
        AppSettings::defaults(2)
    }

    fn candidate(id: &str, key: &str, author: &str, year: i32, title: &str, doi: &str) -> Candidate {
        let paper = Paper {
            id: id.into(),
            key: key.into(),
            authors: vec![author.into()],
            year: Some(year),
            title: title.into(),
            doi: doi.into(),
            ..Default::default()
        };
        Candidate { score: 1.0, paper: Some(paper), fused_rank: 1, ..Candidate::new(id) }
    }

    fn results(c: Vec<Candidate>) -> Recommendations {
        Recommendations { stage: "bm25".into(), complete: true, candidates: c, ..Default::default() }
    }

    #[test]
    fn papers_the_draft_cites_are_left_out() {
        let draft = "As shown by \\cite{shokouhi2013learning} and \\cite{mine}, completions help.";
        let mut app = App::new(draft, None, "refs.bib".into(), settings());
        // `mine` is in the bibliography file with this DOI.
        app.set_bib_entries(vec![("mine".into(), "10.1/b".into(), "other title".into())]);
        app.on_requested(1);
        app.on_results(
            1,
            results(vec![
                candidate("a", "x1", "Milad Shokouhi", 2013, "Learning to Personalize Query Auto-Completion", ""),
                candidate("b", "x2", "Ann Other", 2020, "Some Paper", "10.1/b"),
                candidate("c", "x3", "New Person", 2021, "Fresh Work", ""),
            ]),
        );
        let ids: Vec<&str> = app.visible().iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["c"]);
    }

    #[test]
    fn keys_renamed_in_the_library_are_said_and_rewritten_with_f7() {
        let draft = "Known \\cite{kept} and \\citep[p. 2]{old2001, other}; again \\cite{old2001}.\nMore text.";
        let mut app = App::new(draft, None, "refs.bib".into(), settings());
        app.set_bib_entries(vec![("kept".into(), String::new(), "kept".into())]);
        assert_eq!(app.keys_outside_bibliography(), ["old2001", "other"]);
        app.set_renamed_keys(vec![("old2001".into(), "new2001".into())]);
        assert!(app.status().contains("`old2001` is now `new2001`") && app.status().contains("F7"), "{}", app.status());
        app.on_key(KeyEvent::new(KeyCode::F(7), KeyModifiers::NONE));
        assert_eq!(app.text(), "Known \\cite{kept} and \\citep[p. 2]{new2001, other}; again \\cite{new2001}.\nMore text.");
        assert_eq!(app.status(), "rewrote 2 citations");
        assert!(app.is_dirty());
        app.on_key(KeyEvent::new(KeyCode::F(7), KeyModifiers::NONE));
        assert_eq!(app.status(), "no citation key to rewrite");
    }

    /// A new key that is not a citation key is never written into the
    /// draft: F7 leaves the citation, and the status bar says why.
    #[test]
    fn a_renamed_key_that_is_no_key_is_not_written_with_f7() {
        let hostile = r"new}\input{/etc/passwd}\cite{x";
        let draft = "As \\cite{old2001} and \\cite{old1999} show.";
        let mut app = App::new(draft, None, "refs.bib".into(), settings());
        app.set_renamed_keys(vec![("old2001".into(), hostile.into())]);
        let said = "`old2001` is now `new}\\input{/etc/passwd}\\cite{x` in the library, which is not a key citewise writes into a draft \
                    (`}` cannot be part of a key): F7 leaves it";
        assert_eq!(app.status(), said);
        app.on_key(KeyEvent::new(KeyCode::F(7), KeyModifiers::NONE));
        assert_eq!(app.text(), draft);
        assert!(!app.is_dirty());
        assert_eq!(app.status(), said);
        // Beside a key that is one: that one is rewritten, the other is said.
        app.set_renamed_keys(vec![("old2001".into(), hostile.into()), ("old1999".into(), "new1999".into())]);
        assert_eq!(app.status(), "`old1999` is now `new1999` in the library: F7 rewrites the citations");
        app.on_key(KeyEvent::new(KeyCode::F(7), KeyModifiers::NONE));
        assert_eq!(app.text(), "As \\cite{old2001} and \\cite{new1999} show.");
        assert_eq!(app.status(), format!("rewrote 1 citation; {said}"));
        // After an export, a key that is not one is not inserted either.
        let report = ExportReport { file: "refs.bib".into(), entries: vec![crate::export::Exported::Present("a b".into())], backup: None };
        app.on_exported(Ok(report), true);
        assert_eq!(app.text(), "As \\cite{old2001} and \\cite{new1999} show.");
        assert_eq!(app.status(), "exported, but no citation inserted: `a b` is not a citation key: a space cannot be part of a key");
    }

    #[test]
    fn stale_results_are_ignored_and_filters_apply() {
        let mut app = App::new("text", None, "refs.bib".into(), settings());
        app.on_requested(2);
        app.on_results(1, results(vec![candidate("old", "k", "A B", 2000, "Old", "")]));
        assert!(app.results().is_none(), "request 1 was superseded by 2");
        app.on_results(
            2,
            results(vec![candidate("a", "k", "A B", 2000, "Query Completion", ""), candidate("b", "k2", "C D", 2001, "Parsing", "")]),
        );
        assert_eq!(app.visible().len(), 2);
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        app.on_key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::NONE));
        for c in "pars".chars() {
            app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        assert_eq!(app.visible().iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn the_filter_matches_tags_and_zotero_collections() {
        let mut app = App::new("text", None, "refs.bib".into(), settings());
        let mut tagged = candidate("a", "k", "A B", 2000, "One", "");
        let mut filed = candidate("b", "k2", "C D", 2001, "Two", "");
        tagged.paper.as_mut().unwrap().keywords = vec!["Boron-Nitride".into()];
        filed.paper.as_mut().unwrap().zotero =
            Some(crate::corpus::paper::ZoteroOrigin { collections: vec!["Thesis/Chapter 2".into()], ..Default::default() });
        app.on_requested(1);
        app.on_results(1, results(vec![tagged, filed, candidate("c", "k3", "E F", 2002, "Three", "")]));
        app.on_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
        app.on_key(KeyEvent::new(KeyCode::Char('/'), KeyModifiers::NONE));
        for c in "boron".chars() {
            app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        assert_eq!(app.visible().iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["a"]);
        for _ in 0.."boron".len() {
            app.on_key(KeyEvent::new(KeyCode::Backspace, KeyModifiers::NONE));
        }
        for c in "chapter 2".chars() {
            app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
        assert_eq!(app.visible().iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["b"]);
    }

    #[test]
    fn typing_goes_to_the_editor_and_quit_asks_twice_when_dirty() {
        let mut app = App::new("", None, "refs.bib".into(), settings());
        for c in "j k".chars() {
            assert!(app.on_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)).is_empty());
        }
        assert_eq!(app.text(), "j k");
        assert!(app.is_dirty());
        let quit = KeyEvent::new(KeyCode::Char('q'), KeyModifiers::CONTROL);
        assert!(app.on_key(quit).is_empty(), "first Ctrl-Q warns");
        assert_eq!(app.on_key(quit), vec![Effect::Quit]);
        let ask = app.on_key(KeyEvent::new(KeyCode::F(5), KeyModifiers::NONE));
        assert!(matches!(&ask[..], [Effect::Request(q)] if q.context == "j k[CIT]"));
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn type_text(app: &mut App, text: &str) {
        for c in text.chars() {
            app.on_key(key(if c == '\n' { KeyCode::Enter } else { KeyCode::Char(c) }));
        }
    }

    /// The title and abstract shown above the editor and sent with each
    /// request follow every change of the text, and only changes.
    #[test]
    fn title_and_abstract_follow_the_text() {
        let mut app = App::new("\\title{Old}\nBody.", None, "refs.bib".into(), settings());
        assert_eq!(app.global_context(), ("Old", ""));
        // Typing inside the title.
        for k in [KeyCode::Up, KeyCode::End, KeyCode::Left] {
            assert!(app.on_key(key(k)).is_empty());
        }
        assert_eq!(app.global_context(), ("Old", ""), "moving the cursor changes nothing");
        type_text(&mut app, " and New");
        assert_eq!(app.text(), "\\title{Old and New}\nBody.");
        assert_eq!(app.global_context(), ("Old and New", ""));
        app.cursor_to_end();
        type_text(&mut app, "\n\\begin{abstract}We cite.\\end{abstract}");
        assert_eq!(app.global_context(), ("Old and New", "We cite."));
        let (title, abstract_text) = global_context(&app.text());
        assert_eq!(app.global_context(), (title.as_str(), abstract_text.as_str()));
        let ask = app.on_key(key(KeyCode::F(5)));
        assert!(matches!(&ask[..], [Effect::Request(q)] if q.title == "Old and New" && q.abstract_text == "We cite."), "{ask:?}");
        // Undo (Ctrl-U in the editor) takes the abstract back out.
        for _ in 0..100 {
            if !app.text().contains("abstract") {
                break;
            }
            assert!(app.on_key(KeyEvent::new(KeyCode::Char('u'), KeyModifiers::CONTROL)).is_empty());
        }
        assert_eq!(app.global_context(), ("Old and New", ""));

        // Windows line ends, as read from a file.
        let app = App::new("---\r\ntitle: Crlf\r\n---\r\nBody.", None, "refs.bib".into(), settings());
        assert_eq!(app.global_context(), ("Crlf", ""));

        // A restored autosave.
        let mut app = App::new("\\title{Saved}", None, "refs.bib".into(), settings());
        app.offer_restore("---\ntitle: Autosaved\n---\n".into(), "today".into());
        app.on_key(key(KeyCode::Char('y')));
        assert_eq!(app.global_context(), ("Autosaved", ""));
        assert!(app.is_dirty());
    }

    #[test]
    fn one_source_of_defaults() {
        let config = Config::default();
        let s = settings();
        assert_eq!((s.k, s.context_mode, s.key_style, s.pdf_viewer.as_deref()), (config.results, config.context, config.key_style, None));
        assert_eq!(s.cite_syntax, CiteSyntax::Latex, "auto, without a file name");
        let app = App::new("Text.", None, "refs.bib".into(), s);
        assert_eq!(app.query().k, config.results);
        let md = AppSettings::from_config(&config, Theme::load("light", None).unwrap(), Some(Path::new("draft.md")), 0);
        assert_eq!(md.cite_syntax, CiteSyntax::Markdown);
    }

    #[test]
    fn the_status_bar_names_where_the_reranker_runs() {
        assert_eq!(reranker_device(false, ""), "CPU");
        assert_eq!(reranker_device(false, "flex on CPU (burn flex)"), "CPU");
        assert_eq!(reranker_device(true, "wgpu on NVIDIA H100 (DiscreteGpu, Vulkan)"), "GPU: wgpu on NVIDIA H100 (DiscreteGpu, Vulkan)");
        assert_eq!(settings().device, "CPU");
        let mut app = App::new("", None, "refs.bib".into(), settings());
        app.set_reranker_device(reranker_device(true, "wgpu on Radeon (IntegratedGpu, Vulkan)"));
        let mut t = ratatui::Terminal::new(ratatui::backend::TestBackend::new(120, 10)).unwrap();
        t.draw(|f| super::super::screen::draw(f, &app)).unwrap();
        let screen = t.backend().to_string();
        assert!(screen.contains(" GPU: wgpu on Radeon (IntegratedGpu, Vulkan) · 2 papers"), "{screen}");
        assert!(!screen.contains("CPU"), "{screen}");
    }
}
