//! The editor's state and how keys change it. Pure: no terminal, no
//! threads, no files. What needs the outside world comes back as
//! [`Effect`]s for the runtime to carry out.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui_textarea::{CursorMove, TextArea, WrapMode};

use super::keymap::{Action, Key, Keymap};
use super::placement::placed_citation;
use super::theme::Theme;
use crate::config::{CiteSyntaxSetting, Config};
use crate::corpus::citation_markup::{citation_key, CiteGrammar, CiteSyntax, NotAKey};
use crate::corpus::Paper;
use crate::draft::{cursor_context, global_context, selection_context, ContextMode};
use crate::export::bibfile::Entries;
use crate::export::{ExportReport, KeyStyle};
use crate::pipeline::already_cited::AlreadyCited;
use crate::pipeline::stage::StageTimings;
use crate::pipeline::{Candidate, Query, Recommendations, Stage};
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
    /// The highlighted suggestion of the selected citation (an index into
    /// [`CheckView::suggestions`]), which `a` applies.
    pub suggestion: usize,
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
        CheckView { report, order, selected: 0, details: false, suggestion: 0 }
    }

    /// The highlighted citation.
    pub fn current(&self) -> Option<&crate::check::CitationReport> {
        self.order.get(self.selected).map(|&i| &self.report.citations[i])
    }

    /// The papers and keys offered for the highlighted citation, in the
    /// order its details show them (finding by finding).
    pub fn suggestions(&self) -> Vec<&crate::check::Suggestion> {
        self.current().map(|c| c.findings.iter().flat_map(|f| &f.suggestions).collect()).unwrap_or_default()
    }
}

/// A citation of the draft as the check found it: its key and where the
/// key stands (1-based line and column, in characters). The text may have
/// changed since: [`App`] finds the citation again before it rewrites it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedAt {
    pub key: String,
    pub line: usize,
    pub column: usize,
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
    /// Export the library's paper `id` to the bibliography file, then cite
    /// it in `citation`'s place under the key the file holds it by
    /// ([`App::on_added_from_library`]).
    AddFromLibrary {
        id: String,
        citation: CitedAt,
    },
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
    pub stage: Stage,
    pub complete: bool,
    pub candidates: Vec<Candidate>,
    pub timings: StageTimings,
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
    /// The user chose the highlighted paper (moved to it, marked, or went
    /// to its evidence) since the request's results began to arrive: later
    /// stages keep it highlighted; otherwise the highlight stays on #1.
    moved: bool,
    evidence_selected: usize,
    /// How far the help overlay is scrolled (rows), where it does not fit.
    help_scroll: u16,
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
    /// The bibliography file's entries, as export reads them.
    bib_entries: Entries,
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
    /// How the draft's citations are read and written: its syntax (by
    /// the draft's extension under `cite_syntax = "auto"`) and the
    /// configuration's wrapper commands.
    pub grammar: CiteGrammar,
    pub key_style: KeyStyle,
    /// Papers shown per request.
    pub k: usize,
    /// Where the reranker runs, as the status bar shows it ([`reranker_device`]).
    pub device: String,
    pub library_papers: u64,
    /// The library's directory, for the commands the editor suggests
    /// (none: the default library).
    pub library_dir: Option<PathBuf>,
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
            CiteSyntaxSetting::Auto => crate::draft::syntax_of("", draft),
        };
        AppSettings {
            keymap: Keymap::with_overrides(&config.keys),
            theme,
            context_mode: config.context,
            grammar: config.grammar(cite_syntax),
            key_style: config.key_style,
            k: config.results,
            device: reranker_device(false, ""),
            library_papers,
            library_dir: None,
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
            global: global_context(&editor.lines().join("\n"), &s.grammar),
            editor,
            draft,
            bib,
            focus: Focus::Editor,
            overlay: Overlay::None,
            results: None,
            selected: 0,
            moved: false,
            evidence_selected: 0,
            help_scroll: 0,
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
            bib_entries: Entries::default(),
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
        self.global = global_context(&self.text(), &self.settings.grammar);
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

    /// How far the help overlay is scrolled, in rows (drawing stops at its
    /// last row).
    pub fn help_scroll(&self) -> u16 {
        self.help_scroll
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

    /// How many papers the library holds now (another process may import
    /// while the editor runs).
    pub fn set_library_papers(&mut self, papers: u64) {
        self.settings.library_papers = papers;
    }

    /// Cited keys whose paper the library now knows under another key (the
    /// check's finding: [`crate::check::Report::renamed_keys`]); the status
    /// bar says so and the rewrite action ([`Action::RewriteKeys`])
    /// replaces them. A new key that is not a citation key
    /// ([`citation_key`]) is never written: the status bar says why.
    pub fn set_renamed_keys(&mut self, renamed: Vec<(String, String)>) {
        let syntax = self.settings.grammar.syntax();
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
        let syntax = self.settings.grammar.syntax();
        let text = self.text();
        let mut out = text.clone();
        let mut n = 0;
        let mut refused: Option<(String, NotAKey)> = None;
        let citations = crate::corpus::citation_markup::citations(&text, &self.settings.grammar);
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

    /// The entries of the bibliography file, read again after each export:
    /// the keys papers have there or would get, and what the keys the draft
    /// cites stand for (papers it cites are left out of the results).
    pub fn set_bib_entries(&mut self, entries: Entries) {
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

    /// Keys of the check view: up and down (in a citation's details: among
    /// its suggestions), Enter for a citation's details (again: back to the
    /// list), `a` applies the highlighted suggestion (in the details), `b`
    /// adds the cited paper from the library to the bibliography file, Esc
    /// closes.
    fn on_check_key(&mut self, ev: KeyEvent) -> Vec<Effect> {
        let Some(view) = &mut self.check else {
            self.overlay = Overlay::None;
            return Vec::new();
        };
        match ev.code {
            KeyCode::Esc | KeyCode::Char('q') if !view.details => self.overlay = Overlay::None,
            KeyCode::Esc | KeyCode::Enter if view.details => view.details = false,
            KeyCode::Enter => {
                view.details = true;
                view.suggestion = 0;
            }
            KeyCode::Down | KeyCode::Char('j') if view.details => view.suggestion = step(view.suggestion, view.suggestions().len(), true),
            KeyCode::Up | KeyCode::Char('k') if view.details => view.suggestion = step(view.suggestion, view.suggestions().len(), false),
            KeyCode::Down | KeyCode::Char('j') => view.selected = step(view.selected, view.order.len(), true),
            KeyCode::Up | KeyCode::Char('k') => view.selected = step(view.selected, view.order.len(), false),
            KeyCode::Char('a') => return self.apply_suggestion(),
            KeyCode::Char('b') => return self.add_cited_paper(),
            _ => {}
        }
        Vec::new()
    }

    /// The bibliography file's name, as the status bar says it.
    fn bib_name(&self) -> String {
        self.bib.file_name().map_or_else(|| self.bib.display().to_string(), |n| n.to_string_lossy().into_owned())
    }

    /// The first key bound to `action`, as the status bar names it.
    fn key_label(&self, action: Action) -> String {
        self.settings.keymap.keys_of(action).first().cloned().unwrap_or_else(|| format!("{action:?}"))
    }

    /// `a` in a citation's details: the highlighted suggestion takes the
    /// citation's place. A paper of the library is exported to the
    /// bibliography file first, and cited under the key the file holds it
    /// by ([`App::on_added_from_library`]); a key alone (one the file holds,
    /// a letter off the cited one) is written as it is, when it is a
    /// citation key ([`citation_key`]).
    fn apply_suggestion(&mut self) -> Vec<Effect> {
        let Some(view) = &self.check else { return Vec::new() };
        let Some(c) = view.current() else { return Vec::new() };
        if !view.details {
            self.status = "Enter shows the citation's suggestions; a applies the highlighted one".into();
            return Vec::new();
        }
        let citation = CitedAt { key: c.key.clone(), line: c.line, column: c.column };
        let Some(suggestion) = view.suggestions().get(view.suggestion).map(|s| (*s).clone()) else {
            self.status = format!("nothing to apply: no paper or key is offered for `{}`", citation.key);
            return Vec::new();
        };
        if !suggestion.id.is_empty() {
            self.status = format!("adding `{}` from the library to {}…", suggestion.key, self.bib_name());
            return vec![Effect::AddFromLibrary { id: suggestion.id, citation }];
        }
        let (rewritten, said) = self.rewrite_citation(&citation, &suggestion.key);
        self.status = said;
        if rewritten && self.overlay == Overlay::Check {
            self.overlay = Overlay::None;
        }
        Vec::new()
    }

    /// `b` in the check view: the highlighted citation's paper, which the
    /// library holds, is added to the bibliography file (and cited under
    /// the key the file holds it by, where that is another).
    fn add_cited_paper(&mut self) -> Vec<Effect> {
        let Some(c) = self.check.as_ref().and_then(CheckView::current) else { return Vec::new() };
        let citation = CitedAt { key: c.key.clone(), line: c.line, column: c.column };
        let id = c.paper.as_ref().map(|p| p.id.clone());
        let file = self.bib_name();
        match id {
            Some(id) => {
                self.status = format!("adding `{}` from the library to {file}…", citation.key);
                vec![Effect::AddFromLibrary { id, citation }]
            }
            None => {
                self.status = format!("`{}` is not in the library: there is no entry to add to {file}", citation.key);
                Vec::new()
            }
        }
    }

    /// A paper asked for with `a` or `b` was exported to the bibliography
    /// file (or not): the citation `citation` then cites it under the key
    /// the file holds it by, and the check view closes on the draft (F8
    /// checks it again).
    pub fn on_added_from_library(&mut self, result: Result<ExportReport, String>, citation: &CitedAt) {
        let report = match result {
            Ok(report) => report,
            Err(e) => {
                self.status = "not added to the bibliography (nothing was written)".into();
                self.overlay = Overlay::Message { title: "Export failed".into(), lines: vec![e] };
                return;
            }
        };
        let Some(entry) = report.entries.first() else { return };
        let (key, file) = (entry.key().to_string(), self.bib_name());
        let added = matches!(entry, crate::export::Exported::Added(_));
        if key == citation.key {
            self.status = if added { format!("added `{key}` to {file}") } else { format!("`{key}` is already in {file}") };
        } else {
            let (_, said) = self.rewrite_citation(citation, &key);
            let entry = if added { format!("added `{key}` to {file}") } else { format!("{file} holds it as `{key}`") };
            self.status = format!("{entry}; {said}");
        }
        if self.overlay == Overlay::Check {
            self.overlay = Overlay::None;
        }
    }

    /// Rewrites the citation `at` with the key `new`, when `new` is a
    /// citation key ([`citation_key`]) and the citation is still where the
    /// check found it: whether it did, and the status bar's words on it.
    fn rewrite_citation(&mut self, at: &CitedAt, new: &str) -> (bool, String) {
        if let Err(refused) = citation_key(new, self.settings.grammar.syntax()) {
            return (false, format!("`{}` on line {} is left as it is: {refused}", at.key, at.line));
        }
        let Some(range) = self.find_citation(at) else {
            return (false, format!("the citation of `{}` on line {} is no longer there: cite `{new}`", at.key, at.line));
        };
        self.replace_in_text(range, new);
        (true, format!("`{}` → `{new}` on line {} ({} checks again)", at.key, at.line, self.key_label(Action::CheckCitations)))
    }

    /// The byte range of the key of the citation `at` in the text as it is
    /// now: the citation of its key on its line at its column, else the
    /// only one of its key on that line.
    fn find_citation(&self, at: &CitedAt) -> Option<std::ops::Range<usize>> {
        let text = self.text();
        let starts: Vec<usize> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i + 1)).collect();
        let mut on_line = Vec::new();
        for (key, range) in crate::corpus::citation_markup::citations(&text, &self.settings.grammar) {
            let line = starts.partition_point(|&s| s <= range.start);
            if key != at.key || line != at.line {
                continue;
            }
            if text[starts[line - 1]..range.start].chars().count() + 1 == at.column {
                return Some(range);
            }
            on_line.push(range);
        }
        if on_line.len() == 1 {
            on_line.pop()
        } else {
            None
        }
    }

    /// Writes `new` over the text's bytes `range` (within a line) as an
    /// edit of the text area, which the editor's undo takes back.
    fn replace_in_text(&mut self, range: std::ops::Range<usize>, new: &str) {
        let text = self.text();
        let row = text[..range.start].matches('\n').count();
        let line_start = text[..range.start].rfind('\n').map_or(0, |i| i + 1);
        let col = text[line_start..range.start].chars().count();
        let old = text[range.clone()].chars().count();
        self.editor.cancel_selection();
        if let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(col)) {
            self.editor.move_cursor(CursorMove::Jump(r, c));
        }
        if self.editor.cursor() == (row, col) {
            self.editor.delete_str(old);
            self.editor.insert_str(new);
        } else {
            // Past where a jump reaches: the text is made again.
            let mut out = text;
            out.replace_range(range, new);
            self.editor = TextArea::new(to_lines(&out));
            self.editor.set_wrap_mode(WrapMode::WordOrGlyph);
            self.editor.set_max_histories(1000);
        }
        self.edited();
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
                cursor_context(lines, (c.0, c.1), self.settings.context_mode, &self.settings.grammar)
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

    /// Leaves out the candidates the draft already cites ([`AlreadyCited`]:
    /// its keys, read through the bibliography file, against the key each
    /// paper has there or would get).
    fn leave_out_cited(&self, candidates: &mut Vec<Candidate>) {
        let cited =
            AlreadyCited::in_draft(&self.text(), &self.settings.grammar).through(|k| self.bib_entries.entry(k).map(|e| e.work.clone()));
        if cited.is_empty() {
            return;
        }
        let papers = candidates.iter().filter_map(|c| c.paper.as_ref());
        let mut keys = self.bib_entries.planned_keys(papers, self.settings.key_style).into_iter();
        let cites: Vec<bool> =
            candidates.iter().map(|c| c.paper.as_ref().is_some_and(|p| cited.cites(p, keys.next().as_deref()))).collect();
        let mut cites = cites.into_iter();
        candidates.retain(|_| cites.next() != Some(true));
    }

    /// Results of a stage arrived (with the query's terms, to highlight).
    pub fn on_results(&mut self, id: u64, r: Recommendations) {
        if Some(id) != self.pending && self.results.as_ref().is_none_or(|v| v.request != id) {
            return; // superseded
        }
        // A new request starts at #1, and so does each later stage of it
        // (the first result of the answer so far), unless the user chose
        // another paper meanwhile: that one stays highlighted where the
        // stage puts it.
        let same_request = self.results.as_ref().is_some_and(|v| v.request == id);
        if !same_request {
            self.moved = false;
        }
        let keep = self.current().map(|c| (c.id.clone(), self.evidence_selected)).filter(|_| same_request && self.moved);
        let r = r.noting_empty_library(self.settings.library_papers, self.settings.library_dir.as_deref());
        let mut view = ResultsView {
            request: id,
            stage: r.stage,
            complete: r.complete,
            candidates: r.candidates,
            timings: r.timings,
            notices: r.notices,
            query_terms: r.terms,
        };
        self.leave_out_cited(&mut view.candidates);
        self.results = Some(view);
        if r.complete {
            self.pending = None;
        }
        match keep.and_then(|(id, evidence)| self.visible().iter().position(|c| c.id == id).map(|i| (i, evidence))) {
            Some((i, evidence)) => {
                self.selected = i;
                let n = self.current().map_or(0, |c| c.evidence.len());
                self.evidence_selected = evidence.min(n.saturating_sub(1));
            }
            None => {
                self.selected = 0;
                self.evidence_selected = 0;
                self.moved = false;
            }
        }
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
                let refused = keys.iter().find_map(|k| citation_key(k, self.settings.grammar.syntax()).err());
                if let (true, Some(refused)) = (cite, &refused) {
                    // A key that is not one is never written into the draft.
                    self.status = format!("exported, but no citation inserted: {refused}");
                    lines.push(format!("no citation inserted: {refused}"));
                    self.overlay = Overlay::Message { title: "Exported".into(), lines };
                } else if cite {
                    let citation = self.settings.grammar.syntax().format(&keys);
                    self.insert_citation(&citation);
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
            Overlay::Help => {
                self.on_help_key(ev);
                return Vec::new();
            }
            Overlay::Message { .. } => {
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
            Overlay::Check => return self.on_check_key(ev),
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
            Action::Help => {
                self.overlay = Overlay::Help;
                self.help_scroll = 0;
            }
            Action::CheckCitations => return vec![Effect::Check],
            Action::FocusResults => {
                if self.results.is_some() {
                    self.focus = Focus::Results;
                }
            }
            // Back one pane: from the evidence to the results, from the results to the draft.
            Action::FocusEditor => self.focus = if self.focus == Focus::Evidence { Focus::Results } else { Focus::Editor },
            Action::Down | Action::Up => {
                let down = a == Action::Down;
                self.moved = true;
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
                // Reading a paper's evidence chooses it: later stages keep it highlighted.
                self.moved |= self.focus == Focus::Evidence;
            }
            Action::Mark => self.mark(),
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

    /// Marks or unmarks the highlighted paper; in the results list the
    /// highlight then moves to the next paper (a list's idiom: Space, Space
    /// marks two), in the evidence pane it stays.
    fn mark(&mut self) {
        let Some(id) = self.current().map(|c| c.id.clone()) else { return };
        if !self.marked.remove(&id) {
            self.marked.insert(id);
        }
        self.moved = true;
        if self.focus != Focus::Evidence {
            self.selected = step(self.selected, self.visible().len(), true);
            self.evidence_selected = 0;
        }
    }

    /// Keys of the help overlay: ↓/↑ (j/k) scroll it where it does not fit;
    /// any other key closes it.
    fn on_help_key(&mut self, ev: KeyEvent) {
        // Drawing stops at the help's last row; this bounds the count.
        let most = u16::try_from(2 * self.settings.keymap.help().len() + 8).unwrap_or(u16::MAX);
        match ev.code {
            KeyCode::Down | KeyCode::Char('j') => self.help_scroll = (self.help_scroll + 1).min(most),
            KeyCode::Up | KeyCode::Char('k') => self.help_scroll = self.help_scroll.saturating_sub(1),
            _ => {
                self.overlay = Overlay::None;
                self.help_scroll = 0;
            }
        }
    }

    /// Inserts `citation` at the cursor where the draft's syntax puts one
    /// ([`placed_citation`]: before the full stop the cursor follows, tied
    /// to the word before it: `text~\cite{x}.`). With text selected (the
    /// query's context), it goes at the end of the selection, which stays
    /// in the text.
    fn insert_citation(&mut self, citation: &str) {
        if let Some((_, (row, col))) = self.editor.selection_range() {
            self.editor.cancel_selection();
            if let (Ok(r), Ok(c)) = (u16::try_from(row), u16::try_from(col)) {
                self.editor.move_cursor(CursorMove::Jump(r, c));
            }
        }
        let c = self.editor.cursor();
        let (row, col) = (c.0, c.1);
        let before: String = self.editor.lines().get(row).map(|l| l.chars().take(col).collect::<String>()).unwrap_or_default();
        let (replaced, written) = placed_citation(&before, citation, self.settings.grammar.syntax());
        for _ in 0..replaced {
            self.editor.move_cursor(CursorMove::Back);
        }
        self.editor.delete_str(replaced);
        self.editor.insert_str(&written);
        self.edited();
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
        Recommendations { stage: Stage::Channel(crate::pipeline::ChannelId::Bm25), complete: true, candidates: c, ..Default::default() }
    }

    /// The draft's citations leave their papers out of the results, by the
    /// one rule ([`AlreadyCited`]): the key a paper gets in the bibliography
    /// file, or a cited entry of its work.
    #[test]
    fn papers_the_draft_cites_are_left_out() {
        let draft = "As shown by \\cite{shokouhi2013learning} and \\cite{mine}, completions help.";
        let mut app = App::new(draft, None, "refs.bib".into(), settings());
        // `mine` is in the bibliography file with this DOI.
        app.set_bib_entries(Entries::of_text("@article{mine, title = {Other title}, doi = {10.1/b}}"));
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
        let (title, abstract_text) = global_context(&app.text(), &app.settings().grammar);
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
        assert_eq!(s.grammar.syntax(), CiteSyntax::Latex, "auto, without a file name");
        let app = App::new("Text.", None, "refs.bib".into(), s);
        assert_eq!(app.query().k, config.results);
        let md = AppSettings::from_config(&config, Theme::load("light", None).unwrap(), Some(Path::new("draft.md")), 0);
        assert_eq!(md.grammar.syntax(), CiteSyntax::Markdown);
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

    fn stage(name: &str, complete: bool, c: Vec<Candidate>) -> Recommendations {
        Recommendations { stage: Stage::from_name(name).unwrap(), complete, candidates: c, ..Default::default() }
    }

    fn ids(app: &App) -> Vec<&str> {
        app.visible().iter().map(|c| c.id.as_str()).collect()
    }

    /// After F5 the highlight (and so the evidence pane) is on #1 of the
    /// answer as each stage arrives, not on the paper BM25 put first;
    /// a paper the user moved to stays highlighted where the stage puts it.
    #[test]
    fn the_highlight_follows_the_first_result_unless_the_user_moved() {
        let mut app = App::new("Query completion.", None, "refs.bib".into(), settings());
        let papers = |order: &[&str]| -> Vec<Candidate> {
            order.iter().map(|id| candidate(id, id, "A B", 2000, &format!("Paper {id}"), "")).collect()
        };
        app.on_requested(1);
        app.on_results(1, stage("bm25", false, papers(&["a", "b", "c"])));
        assert_eq!(app.current().unwrap().id, "a");
        app.on_results(1, stage("rerank", true, papers(&["c", "a", "b"])));
        assert_eq!((app.selected(), app.current().unwrap().id.as_str()), (0, "c"), "#1 of the final answer");
        // The user moves to another paper while the stages come: it stays chosen.
        app.on_requested(2);
        app.on_results(2, stage("bm25", false, papers(&["a", "b", "c"])));
        app.on_key(key(KeyCode::Tab));
        app.on_key(key(KeyCode::Down));
        assert_eq!(app.current().unwrap().id, "b");
        app.on_results(2, stage("rerank", true, papers(&["c", "a", "b"])));
        assert_eq!((app.selected(), app.current().unwrap().id.as_str()), (2, "b"));
        // A new request starts at #1 again.
        app.on_requested(3);
        app.on_results(3, stage("bm25", false, papers(&["b", "a"])));
        app.on_results(3, stage("rerank", true, papers(&["a", "b"])));
        assert_eq!(app.current().unwrap().id, "a");
        assert_eq!(ids(&app), ["a", "b"]);
    }

    /// Esc goes back one pane: from the evidence to the results (where
    /// letters are keys, not text), from the results to the draft.
    #[test]
    fn esc_in_the_evidence_pane_goes_back_to_the_results() {
        let mut app = App::new("Text.", None, "refs.bib".into(), settings());
        app.on_requested(1);
        app.on_results(1, results(vec![candidate("a", "k", "A B", 2000, "One", ""), candidate("b", "k2", "C D", 2001, "Two", "")]));
        app.on_key(key(KeyCode::Tab));
        app.on_key(key(KeyCode::Enter));
        assert_eq!(app.focus(), Focus::Evidence);
        app.on_key(key(KeyCode::Esc));
        assert_eq!(app.focus(), Focus::Results);
        app.on_key(key(KeyCode::Char('x')));
        assert_eq!(app.text(), "Text.", "nothing typed into the draft");
        app.on_key(key(KeyCode::Esc));
        assert_eq!(app.focus(), Focus::Editor);
        app.on_key(key(KeyCode::Char('x')));
        assert_eq!(app.text(), "xText.");
    }

    /// Space marks the paper and moves to the next one in the results (the
    /// help says so); in the evidence pane it marks and stays.
    #[test]
    fn space_marks_and_moves_on_in_the_results_and_the_help_says_so() {
        let mut app = App::new("Text.", None, "refs.bib".into(), settings());
        app.on_requested(1);
        let three = vec![
            candidate("a", "k", "A B", 2000, "One", ""),
            candidate("b", "k2", "C D", 2001, "Two", ""),
            candidate("c", "k3", "E F", 2002, "Three", ""),
        ];
        app.on_results(1, results(three));
        app.on_key(key(KeyCode::Tab));
        app.on_key(key(KeyCode::Char(' ')));
        assert!(app.is_marked("a"));
        assert_eq!(app.current().unwrap().id, "b", "marking moved on");
        app.on_key(key(KeyCode::Enter));
        app.on_key(key(KeyCode::Char(' ')));
        assert!(app.is_marked("b"));
        assert_eq!(app.current().unwrap().id, "b", "in the evidence pane the paper stays");
        let help = app.settings().keymap.help();
        let (_, mark) = help.iter().find(|(k, _)| k == "Space").unwrap();
        assert!(mark.contains("then the next"), "{mark}");
    }

    fn exported(keys: &[&str]) -> ExportReport {
        let entries = keys.iter().map(|k| crate::export::Exported::Added((*k).into())).collect();
        ExportReport { file: "refs.bib".into(), entries, backup: None }
    }

    /// The inserted citation goes before the full stop the cursor follows,
    /// tied to its word (`text~\cite{x}.`), in LaTeX; Pandoc's and Typst's
    /// with a space.
    #[test]
    fn an_inserted_citation_goes_before_the_full_stop_tied_to_its_word() {
        let mut app = App::new("Completion helps.", None, "refs.bib".into(), settings());
        app.cursor_to_end();
        app.on_exported(Ok(exported(&["a1", "b2"])), true);
        assert_eq!(app.text(), "Completion helps~\\cite{a1,b2}.");
        assert_eq!(app.status(), "inserted \\cite{a1,b2}");
        // Typing goes on after the full stop.
        type_text(&mut app, " More");
        assert_eq!(app.text(), "Completion helps~\\cite{a1,b2}. More");
        // Mid-sentence, after a word and its space.
        let mut app = App::new("as in BM25 and more", None, "refs.bib".into(), settings());
        app.cursor_to_end();
        for _ in 0.."and more".len() {
            app.on_key(key(KeyCode::Left));
        }
        app.on_exported(Ok(exported(&["x"])), true);
        assert_eq!(app.text(), "as in BM25~\\cite{x} and more");
        let mut md = AppSettings::defaults(2);
        md.grammar = CiteGrammar::of(CiteSyntax::Markdown);
        let mut app = App::new("Completion helps.", None, "refs.bib".into(), md);
        app.cursor_to_end();
        app.on_exported(Ok(exported(&["a1"])), true);
        assert_eq!(app.text(), "Completion helps [@a1].");
    }

    /// F5 on a library of no papers says so, and what fills it, not that
    /// the query's words matched nothing.
    #[test]
    fn f5_on_an_empty_library_says_the_library_is_empty() {
        let no_match = || Recommendations { notices: vec![crate::pipeline::answer::NO_MATCH.into()], ..results(Vec::new()) };
        let mut app = App::new("Text.", None, "refs.bib".into(), AppSettings::defaults(0));
        app.on_requested(1);
        app.on_results(1, no_match());
        assert_eq!(
            app.status(),
            "the library holds no papers yet: import some with `citewise import refs.bib` (or `citewise import --zotero`)"
        );
        // Once an import beside the editor filled it, the words are to blame.
        app.set_library_papers(12);
        app.on_requested(2);
        app.on_results(2, no_match());
        assert_eq!(app.status(), crate::pipeline::answer::NO_MATCH);
    }

    /// A check of `text` as the runner reports it: one citation of `key`
    /// (the library's paper `paper`, or none) with one finding that offers
    /// `offered`.
    fn check_of(text: &str, key: &str, paper: Option<&str>, offered: Vec<crate::check::Suggestion>) -> crate::check::Report {
        use crate::check::{CitationReport, Finding, Kind, PaperRef, Report, Severity};
        let start = text.find(key).unwrap();
        let line = text[..start].matches('\n').count() + 1;
        let column = text[..start].rsplit('\n').next().unwrap().chars().count() + 1;
        let finding = Finding {
            kind: Kind::UnknownKey,
            severity: Severity::Error,
            key: key.into(),
            line,
            column,
            range: start..start + key.len(),
            message: format!("`{key}` is not in refs.bib"),
            fix: "cite a key refs.bib holds".into(),
            suggestions: offered,
            library_title: None,
            keep: None,
            best_match: None,
        };
        let paper = paper.map(|id| PaperRef { id: id.into(), title: "Neural Query Auto-Completion".into(), year: Some(2017) });
        let citation = CitationReport {
            key: key.into(),
            line,
            column,
            sentence: "Ranking [CIT] helps.".into(),
            paper,
            support: None,
            signals: None,
            findings: vec![finding.clone()],
        };
        Report { file: "draft.tex".into(), citations: vec![citation], findings: vec![finding], notices: Vec::new() }
    }

    fn offered(key: &str, id: &str) -> crate::check::Suggestion {
        let why = "near miss".to_string();
        crate::check::Suggestion { key: key.into(), id: id.into(), title: String::new(), why, support: None, evidence: Vec::new() }
    }

    /// F8's view applies a suggestion (`a`, in a citation's details) and
    /// adds the cited paper from the library to the bibliography file
    /// (`b`), citing it under the key the file then holds it by.
    #[test]
    fn the_check_view_applies_suggestions_and_adds_papers_from_the_library() {
        let text = "Ranking \\cite{mihalcea2004textrnk} helps.\nAgain \\cite{10.1145/3077136.3080758}.";
        let mut app = App::new(text, None, "refs.bib".into(), settings());
        let library_paper = offered("park2017neural", "doi:10.1145/3077136.3080758");
        app.on_check_requested(1);
        app.on_checked(1, check_of(text, "mihalcea2004textrnk", None, vec![library_paper, offered("mihalcea2004textrank", "")]));
        assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
        assert!(app.status().starts_with("Enter shows the citation's suggestions"), "{}", app.status());
        app.on_key(key(KeyCode::Enter));
        // A paper of the library: exported first.
        let first = CitedAt { key: "mihalcea2004textrnk".into(), line: 1, column: 15 };
        let effects = app.on_key(key(KeyCode::Char('a')));
        assert_eq!(effects, [Effect::AddFromLibrary { id: "doi:10.1145/3077136.3080758".into(), citation: first }]);
        // A key alone: written at once.
        app.on_key(key(KeyCode::Char('j')));
        assert_eq!(app.check_view().unwrap().suggestion, 1);
        assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
        assert_eq!(app.text(), "Ranking \\cite{mihalcea2004textrank} helps.\nAgain \\cite{10.1145/3077136.3080758}.");
        assert_eq!(app.status(), "`mihalcea2004textrnk` → `mihalcea2004textrank` on line 1 (F8 checks again)");
        assert_eq!(*app.overlay(), Overlay::None);
        assert!(app.is_dirty());

        // `b`: the cited paper goes to the bibliography file, and the citation takes the key it got there.
        let doi = "10.1145/3077136.3080758";
        app.on_check_requested(2);
        app.on_checked(2, check_of(&app.text(), doi, Some("doi:10.1145/3077136.3080758"), Vec::new()));
        let second = CitedAt { key: doi.into(), line: 2, column: 13 };
        let effects = app.on_key(key(KeyCode::Char('b')));
        assert_eq!(effects, [Effect::AddFromLibrary { id: "doi:10.1145/3077136.3080758".into(), citation: second.clone() }]);
        app.on_added_from_library(Ok(exported(&["park2017neural"])), &second);
        assert_eq!(app.text(), "Ranking \\cite{mihalcea2004textrank} helps.\nAgain \\cite{park2017neural}.");
        assert_eq!(app.status(), format!("added `park2017neural` to refs.bib; `{doi}` → `park2017neural` on line 2 (F8 checks again)"));
        assert_eq!(*app.overlay(), Overlay::None);

        // A citation the library lacks has nothing to add; a key that is no key is not written.
        let text = app.text();
        app.on_check_requested(3);
        app.on_checked(3, check_of(&text, "park2017neural", None, vec![offered("new}\\input{x", "")]));
        assert!(app.on_key(key(KeyCode::Char('b'))).is_empty());
        assert_eq!(app.status(), "`park2017neural` is not in the library: there is no entry to add to refs.bib");
        app.on_key(key(KeyCode::Enter));
        app.on_key(key(KeyCode::Char('a')));
        assert_eq!(app.text(), text);
        let said = "`park2017neural` on line 2 is left as it is: `new}\\input{x` is not a citation key";
        assert!(app.status().starts_with(said), "{}", app.status());
        assert_eq!(*app.overlay(), Overlay::Check, "the view stays open");
    }
}
