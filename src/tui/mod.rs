//! The writing assistant: a full-screen editor with recommendations from a
//! background worker, evidence, and BibTeX export.
//!
//! `app` holds the state and turns keys into [`app::Effect`]s; `screen`
//! draws it; this module runs the terminal, the worker and the effects.

pub mod app;
pub mod autosave;
pub mod crash;
pub mod demo;
pub mod draft_file;
pub mod encoding;
pub mod exporter;
pub mod keymap;
pub mod opener;
pub mod placement;
pub mod screen;
pub mod text;
pub mod theme;

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{self, Event, KeyEventKind};

use self::app::{reranker_device, App, AppSettings, Effect};
use self::crash::CrashSaver;
use self::draft_file::DraftFormat;
use self::exporter::{ExportEvent, Exporter};
use self::theme::Theme;
use crate::check::{Bibliography, Checker, SupportCache};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::export::bibfile::entries_of;
use crate::library::zotero::{Watch, WatchEvent, WATCH_EVERY};
use crate::library::Library;
use crate::pipeline::background::{BackgroundWork, EncodingOptions};
use crate::pipeline::{Models, Recommender};
use crate::runtime::{reopen_all, Worker, WorkerEvent};

/// What the editor opens on.
pub struct Options {
    pub draft: Option<PathBuf>,
    pub bib: Option<PathBuf>,
    pub library: PathBuf,
    pub config: Option<PathBuf>,
    pub autosave_dir: PathBuf,
    /// The models the editor's recommender uses.
    pub models: Models,
}

/// Everything the editor needs, loaded and checked before the terminal is
/// taken over (so errors print normally).
pub struct Session {
    pub app: App,
    pub library: Arc<Library>,
    pub config: Config,
    pub autosave: PathBuf,
    pub models: Models,
    /// How the draft file spells line ends (kept when it is saved).
    pub format: DraftFormat,
}

/// Loads config, theme, keymap, library and draft.
pub fn prepare(opts: Options) -> Result<Session> {
    let config = Config::of_user(opts.config.as_deref())?;
    crate::neural::parallel::use_compute_threads(config.threads, 1)?;
    let theme = Theme::load(&config.theme, crate::dirs::config_path("themes").as_deref())?;
    let library = Arc::new(Library::open(&opts.library)?);
    let (text, format, note) = match &opts.draft {
        Some(p) => {
            let loaded = draft_file::load(p)?;
            (loaded.text, loaded.format, loaded.note)
        }
        None => (String::new(), DraftFormat::default(), None),
    };
    let bib = opts.bib.clone().unwrap_or_else(|| {
        let dir = opts.draft.as_ref().and_then(|d| d.parent()).map(PathBuf::from).unwrap_or_default();
        dir.join("references.bib")
    });
    let mut settings = AppSettings::from_config(&config, theme, opts.draft.as_deref(), library.papers().num_papers());
    settings.library_dir = Some(opts.library.clone());
    let mut app = App::new(&text, opts.draft.clone(), bib.clone(), settings);
    app.set_bib_entries(entries_of(&bib).unwrap_or_default());
    app.cursor_to_end();
    if let Some(note) = note {
        app.set_status(note);
    }
    let autosave = autosave::path_for(&opts.autosave_dir, opts.draft.as_deref());
    if let Some(saved) = autosave::read(&autosave) {
        if saved.text != text {
            app.offer_restore(saved.text, autosave::format_time(saved.saved_at));
        }
    }
    Ok(Session { app, library, config, autosave, models: opts.models, format })
}

/// Runs the editor until the user quits.
pub fn run(session: Session) -> Result<()> {
    let Session { mut app, library, config, autosave, models, format } = session;
    let models = Arc::new(models);
    let recommender = Recommender::new(library.clone(), &models);
    if let Some(r) = recommender.reranker() {
        app.set_reranker_device(reranker_device(r.on_gpu, &r.backend));
    }
    let worker = Worker::spawn_reopening(recommender, reopen_all(&library, &models));
    let phases = config.background_phases();
    let work = BackgroundWork::start(
        library.clone(),
        models.clone(),
        worker.busy_flag(),
        EncodingOptions { phases, learners: crate::check::calibration::learners(), ..EncodingOptions::default() },
    );
    let exporter = Exporter::spawn();
    warm_evidence_vectors(&library, &models);
    // A library imported from Zotero follows Zotero's changes while the editor runs.
    let make_key = Box::new(crate::export::keys::make_key(config.key_style));
    let zotero = match Watch::spawn(library.clone(), make_key, WATCH_EVERY) {
        Ok(w) => w,
        Err(e) => {
            app.set_status(format!("Zotero's changes are not followed: {e}"));
            None
        }
    };
    app.set_renamed_keys(renamed_keys(&library, &app));
    let mut terminal = ratatui::init();
    let saver = CrashSaver::new(autosave.clone(), app.draft().map(PathBuf::from));
    crash::install_panic_hook(saver.clone(), ratatui::restore);
    let mut rt = Runtime {
        worker: &worker,
        exporter: &exporter,
        work,
        zotero: zotero.as_ref(),
        library: &library,
        autosave: &autosave,
        format,
        saver,
    };
    let result = rt.event_loop(&mut terminal, &mut app, &config);
    ratatui::restore();
    result
}

/// The keys the draft cites whose paper the library now knows under
/// another key (old, new): the checker's finding ([`Checker`]'s record
/// checks of the draft against its bibliography file, without near misses,
/// so that it answers at once).
fn renamed_keys(library: &Library, app: &App) -> Vec<(String, String)> {
    let Ok(bib) = Bibliography::read(app.bib()) else { return Vec::new() };
    let checker = Checker::new(library).without_near_misses();
    let report = checker.check(&draft_name(app), &app.text(), &app.settings().grammar, &bib, &mut SupportCache::default());
    report.map(|r| r.renamed_keys()).unwrap_or_default()
}

/// The draft as a check names it: its file, else "draft".
fn draft_name(app: &App) -> String {
    app.draft().map_or_else(|| "draft".into(), |p| p.display().to_string())
}

/// Encodes the evidence spans for semantic ranking on a thread of its own,
/// so that the first long queries need not (results never wait for it).
fn warm_evidence_vectors(library: &Arc<Library>, models: &Models) {
    let Ok(semantic) = models.span_cosines() else { return };
    let library = library.clone();
    let _ = std::thread::Builder::new().name("evidence-vectors".into()).spawn(move || {
        let _ = semantic.warm(&library, &|_, _| {});
    });
}

/// What the event loop works with besides the app.
struct Runtime<'a> {
    worker: &'a Worker,
    exporter: &'a Exporter,
    /// What the library lacks, encoded in the background, and its evidence
    /// trust learned.
    work: BackgroundWork,
    /// Zotero's changes, synced into the library (none: not from Zotero).
    zotero: Option<&'a Watch>,
    library: &'a Arc<Library>,
    autosave: &'a std::path::Path,
    /// How the draft file spells line ends.
    format: DraftFormat,
    /// The text a panic saves.
    saver: CrashSaver,
}

impl Runtime<'_> {
    fn event_loop(&mut self, terminal: &mut ratatui::DefaultTerminal, app: &mut App, config: &Config) -> Result<()> {
        let mut last_autosave = Instant::now();
        let mut autosaved_text = app.text();
        let autosave_every = Duration::from_secs(config.autosave_seconds.max(1));
        let mut last_spin = Instant::now();
        let mut revision = app.revision();
        loop {
            terminal.draw(|f| screen::draw(f, app)).map_err(|e| Error::io("terminal", e))?;
            // Input first: typing never waits for anything else.
            if event::poll(Duration::from_millis(50)).map_err(|e| Error::io("terminal", e))? {
                while event::poll(Duration::ZERO).map_err(|e| Error::io("terminal", e))? {
                    let Event::Key(key) = event::read().map_err(|e| Error::io("terminal", e))? else { continue };
                    if key.kind == KeyEventKind::Release {
                        continue;
                    }
                    for effect in app.on_key(key) {
                        if !self.perform(effect, app)? {
                            if !app.is_dirty() {
                                autosave::remove(self.autosave);
                            }
                            return Ok(());
                        }
                    }
                }
            }
            while let Some(ev) = self.worker.try_recv() {
                match ev {
                    WorkerEvent::Stage { id, results, .. } => {
                        // The runner read the library again before the request: as many papers as it holds now.
                        app.set_library_papers(self.library.papers().num_papers());
                        app.on_results(id, results);
                    }
                    WorkerEvent::Failed { id, message, .. } => app.on_failed(id, message),
                    WorkerEvent::Checked { id, report, .. } => app.on_checked(id, *report),
                    WorkerEvent::Stopped { .. } | WorkerEvent::Finished { .. } => {}
                }
            }
            while let Some(ev) = self.exporter.try_recv() {
                self.on_export_event(ev, app);
            }
            while let Some(ev) = self.work.try_recv() {
                encoding::apply(&ev, app, self.worker);
                self.work.saw(Some(&ev));
            }
            while let Some(ev) = self.zotero.and_then(Watch::try_recv) {
                let new_sentences = matches!(&ev, WatchEvent::Synced(s) if s.evidence.is_some());
                encoding::apply_zotero(ev, app, self.worker);
                app.set_renamed_keys(renamed_keys(self.library, app));
                if new_sentences {
                    self.work.new_sentences();
                }
            }
            if app.revision() != revision {
                revision = app.revision();
                self.saver.update(app.is_dirty().then(|| app.text()));
            }
            if last_spin.elapsed() >= Duration::from_millis(100) {
                app.tick();
                last_spin = Instant::now();
            }
            if last_autosave.elapsed() >= autosave_every {
                last_autosave = Instant::now();
                let text = app.text();
                if app.is_dirty() && text != autosaved_text {
                    if let Err(e) = autosave::write(self.autosave, app.draft(), &text) {
                        app.set_status(format!("autosave failed: {e}"));
                    }
                    autosaved_text = text;
                }
            }
        }
    }

    fn on_export_event(&mut self, ev: ExportEvent, app: &mut App) {
        match ev {
            ExportEvent::Exported { result, cite, entries } => {
                app.on_exported(result, cite);
                if let Some(entries) = entries {
                    app.set_bib_entries(entries);
                }
            }
            ExportEvent::Keys(Ok(keys)) => {
                // Keys go on the clipboard to be pasted into the draft: only keys.
                let syntax = app.settings().grammar.syntax();
                if let Some(refused) = keys.iter().find_map(|k| crate::corpus::citation_markup::citation_key(k, syntax).err()) {
                    app.set_status(format!("nothing copied: {refused}"));
                    return;
                }
                let text = keys.join(",");
                // OSC 52: the terminal puts the text on the clipboard where it supports it.
                let mut out = std::io::stdout();
                let _ = write!(out, "\x1b]52;c;{}\x07", base64(text.as_bytes()));
                let _ = out.flush();
                app.set_status(format!("copied {text}"));
            }
            ExportEvent::Keys(Err(e)) => app.set_status(e),
            ExportEvent::ExportedFor { result, citation, entries } => {
                if let Some(entries) = entries {
                    app.set_bib_entries(entries);
                }
                app.on_added_from_library(result, &citation);
            }
        }
    }

    /// Carries out an effect; false means quit.
    fn perform(&mut self, effect: Effect, app: &mut App) -> Result<bool> {
        match effect {
            Effect::Request(q) => {
                let id = self.worker.request(q);
                app.on_requested(id);
            }
            Effect::Check => {
                let request = crate::runtime::CheckRequest {
                    file: draft_name(app),
                    text: app.text(),
                    grammar: app.settings().grammar.clone(),
                    bibliography: crate::runtime::BibliographyOf::File(app.bib().to_path_buf()),
                };
                let id = self.worker.check_for((), request);
                app.on_check_requested(id);
            }
            Effect::Save => match app.draft().map(PathBuf::from) {
                Some(path) => match draft_file::save(&path, &app.text(), &self.format) {
                    Ok(()) => {
                        app.on_saved(&path);
                        autosave::remove(self.autosave);
                    }
                    Err(e) => app.set_status(format!("not saved: {e}")),
                },
                None => app.set_status("this draft has no file name: start citewise with a FILE to save"),
            },
            Effect::Export(papers) | Effect::ExportAndCite(papers) if papers.is_empty() => {}
            Effect::Export(papers) => {
                app.on_export_started(papers.len());
                self.exporter.export(app.bib().to_path_buf(), papers, app.settings().key_style, false);
            }
            Effect::ExportAndCite(papers) => {
                app.on_export_started(papers.len());
                self.exporter.export(app.bib().to_path_buf(), papers, app.settings().key_style, true);
            }
            Effect::CopyKeys(papers) => self.exporter.keys(app.bib().to_path_buf(), papers, app.settings().key_style),
            Effect::AddFromLibrary { id, citation } => match self.library.papers().paper_by_id(&id) {
                Ok(Some(paper)) => self.exporter.export_for(app.bib().to_path_buf(), vec![paper], app.settings().key_style, citation),
                Ok(None) => app.set_status(format!("the library no longer holds `{id}`: nothing was added")),
                Err(e) => app.set_status(format!("not added to the bibliography: {e}")),
            },
            Effect::Open(link) => {
                app.set_status(opener::spawn(&[opener::system_opener().to_string(), link.clone()], &link));
            }
            Effect::OpenFile { path, page } => {
                let shown = match page {
                    Some(p) => format!("{path} (p. {p})"),
                    None => path.clone(),
                };
                let message = if std::path::Path::new(&path).exists() {
                    opener::spawn(&opener::viewer_command(app.settings().pdf_viewer.as_deref(), &path, page), &shown)
                } else {
                    format!("{path} is no longer there")
                };
                app.set_status(message);
            }
            Effect::Quit => return Ok(false),
        }
        Ok(true)
    }
}

fn base64(bytes: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_known_values() {
        assert_eq!(super::base64(b""), "");
        assert_eq!(super::base64(b"f"), "Zg==");
        assert_eq!(super::base64(b"fo"), "Zm8=");
        assert_eq!(super::base64(b"foo"), "Zm9v");
        assert_eq!(super::base64(b"shokouhi2013learning,b"), "c2hva291aGkyMDEzbGVhcm5pbmcsYg==");
    }
}
