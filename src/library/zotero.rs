//! Keeping a library current with a Zotero data directory.
//!
//! `sync` reads a copy of `zotero.sqlite` ([`crate::corpus::zotero`]),
//! upserts the items that are new or whose `dateModified` changed, removes
//! the records (and the evidence of their PDFs) of items trashed or deleted
//! since, and reads the PDF attachments that are new or changed as
//! evidence whose citing paper is their parent item. What it saw is kept in
//! `LIBRARY/zotero.json` (the data directory, each item's record id, key and
//! where the key came from, each PDF's file and stamp), which is what makes
//! the next sync incremental and keys stable across syncs.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::evidence_import::{forget_documents, import_inputs, EvidenceImportSummary, EvidenceOptions};
use super::Library;
use crate::corpus::paper::ZoteroOrigin;
use crate::corpus::zotero::{Era, Head, Item, KeySource, Zotero, DATABASE};
use crate::corpus::Paper;
use crate::error::{Error, Result};
use crate::evidence::inputs::EvidenceInput;

/// The state file in the library directory.
pub const STATE_FILE: &str = "zotero.json";

/// What a library knows of the Zotero data directory it was imported from.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ZoteroState {
    /// The data directory.
    pub dir: PathBuf,
    pub era: Option<Era>,
    /// The collection imported (none: the whole library).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collection: Option<String>,
    /// When the database was last read (seconds since the epoch).
    pub last_read: u64,
    /// The database file as it was when last read (none: a read that may
    /// have missed a write, which the next look reads again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<DbStamp>,
    /// Imported without PDFs (a watch syncs the same way).
    #[serde(default)]
    pub no_pdfs: bool,
    /// Every item imported, by `library/key`.
    pub items: BTreeMap<String, ItemState>,
    /// Every PDF read as evidence, by the attachment's `library/key`.
    #[serde(default)]
    pub pdfs: BTreeMap<String, PdfState>,
    /// The paper index the items' records were written to (its identity
    /// and record count then; none: written before states recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<super::journal::IndexStamp>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ItemState {
    /// The record's id in the library.
    pub id: String,
    pub key: String,
    pub key_source: KeySource,
    pub modified: String,
    /// [`Head::aside`] when last read.
    #[serde(default)]
    pub aside: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub former_keys: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PdfState {
    pub file: PathBuf,
    /// The parent item's `library/key` (none: a standalone PDF).
    pub parent: Option<String>,
    /// The record its evidence was read for (empty: identified by its first page).
    #[serde(default)]
    pub owner: String,
    pub modified: String,
    /// The file's length and modification time (nanoseconds since the epoch).
    pub len: u64,
    pub mtime: u128,
}

impl ZoteroState {
    /// The library's state (none: never imported from Zotero).
    pub fn load(lib_dir: &Path) -> Result<Option<ZoteroState>> {
        let path = lib_dir.join(STATE_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map(Some).map_err(|e| Error::Parse { path, line: e.line(), reason: e.to_string() }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    fn save(&self, lib_dir: &Path) -> Result<()> {
        crate::util::write_atomic(&lib_dir.join(STATE_FILE), serde_json::to_string_pretty(self)?.as_bytes())
    }

    /// Why the items listed here may not be in the paper index `now` any
    /// more (it was created anew since, or holds fewer records than the
    /// items listed): then every item is read again.
    pub fn lost_records(&self, now: &super::journal::IndexStamp) -> Option<String> {
        let then = self.index.as_ref()?;
        let items = crate::util::counted(self.items.len(), "item");
        if !then.id.is_empty() && then.id != now.id {
            Some(format!("the paper index was created anew since the last Zotero import of {items}"))
        } else if now.records < self.items.len() as u64 {
            Some(format!("the paper index holds {} but the last Zotero import wrote {items}", crate::util::counted(now.records, "paper")))
        } else {
            None
        }
    }

    /// How many items have a key from each source.
    pub fn key_sources(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for i in self.items.values() {
            *out.entry(i.key_source.name()).or_default() += 1;
        }
        out
    }
}

/// A paper's citation key in the configured style, before it is made
/// unique among the library's keys ([`crate::corpus::unique_key`]); the
/// front ends give `export::keys::make_key` of the configured key style.
pub type MakeKey = dyn Fn(&Paper) -> String + Send + Sync;

/// How to sync.
#[derive(Debug, Clone, Default)]
pub struct ZoteroOptions {
    /// Only this collection (by name or path) and its sub-collections.
    pub collection: Option<String>,
    /// Read every item and PDF again.
    pub force: bool,
    /// Do not read PDFs.
    pub no_pdfs: bool,
    /// Where linked files stored relative to a base directory are (none:
    /// the base Zotero's settings name, if any).
    pub attachment_base: Option<PathBuf>,
}

/// What a sync did.
#[derive(Debug, Default, Serialize)]
pub struct ZoteroSummary {
    pub dir: PathBuf,
    pub era: Option<Era>,
    /// Regular items in the database (not in the trash; in the collection).
    pub items: usize,
    pub added: usize,
    pub updated: usize,
    pub unchanged: usize,
    /// Records removed (items trashed, deleted, or out of the collection).
    pub removed: usize,
    /// Keys that changed since the last sync (`old → new`).
    pub renamed: Vec<(String, String)>,
    /// Items by where their key came from.
    pub key_sources: BTreeMap<&'static str, usize>,
    /// PDFs read (new or changed) and PDFs whose evidence was removed.
    pub pdfs_read: usize,
    pub pdfs_removed: usize,
    /// PDF attachments whose file is not read: not there, or where a
    /// file is not read (outside the data directory), and why.
    pub pdfs_missing: Vec<String>,
    /// The copy may miss Zotero's latest write: nothing was removed, and the
    /// next sync reads the database again.
    pub torn: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<EvidenceImportSummary>,
    pub notes: Vec<String>,
    pub seconds: f64,
}

impl ZoteroSummary {
    /// Whether the sync changed anything in the library.
    pub fn changed(&self) -> bool {
        self.added + self.updated + self.removed + self.pdfs_read + self.pdfs_removed > 0
    }
}

/// The database file as Zotero last wrote it: length and modification
/// time of `zotero.sqlite`, and its log's length. What a watcher polls.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DbStamp {
    pub len: u64,
    pub mtime_ns: u128,
    pub wal_len: u64,
    /// SQLite's file change counter (header bytes 24..28): it moves with
    /// every commit, also where the length and a coarse time do not.
    #[serde(default)]
    pub counter: u32,
    /// Better BibTeX's databases beside it (lengths and times): its keys change there.
    #[serde(default)]
    pub better_bibtex: u128,
}

impl DbStamp {
    pub fn of(dir: &Path) -> Option<DbStamp> {
        let file = dir.join(DATABASE);
        let m = std::fs::metadata(&file).ok()?;
        let nanos = |m: &std::fs::Metadata| m.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
        let wal_len = std::fs::metadata(dir.join(format!("{DATABASE}-wal"))).map_or(0, |w| w.len());
        let mut header = [0u8; 28];
        let counter = crate::limits::open_regular(&file)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut header))
            .map_or(0, |()| u32::from_be_bytes([header[24], header[25], header[26], header[27]]));
        let better_bibtex = ["better-bibtex.sqlite", "better-bibtex.migrated"]
            .iter()
            .filter_map(|n| std::fs::metadata(dir.join(n)).ok())
            .map(|m| nanos(&m) ^ u128::from(m.len()))
            .fold(0u128, |a, b| a.wrapping_mul(31).wrapping_add(b));
        Some(DbStamp { len: m.len(), mtime_ns: nanos(&m), wal_len, counter, better_bibtex })
    }
}

/// Syncs the library with the Zotero data directory `dir`; `make_key`
/// gives an item without a citation key one (the configured key style), not
/// one of those `taken` says are taken.
pub fn sync(lib: &Library, dir: &Path, options: &ZoteroOptions, make_key: &MakeKey) -> Result<ZoteroSummary> {
    lib.writing().during(|| {
        let t = std::time::Instant::now();
        let stamp = DbStamp::of(dir);
        let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
        let base = options.attachment_base.clone().or_else(|| crate::corpus::zotero::data_dir::attachment_base_dir(&home?));
        let zotero = Zotero::open(dir)?.with_attachment_base(base);
        let mut summary = ZoteroSummary { dir: dir.to_path_buf(), era: Some(zotero.era()), ..Default::default() };
        summary.notes.extend(zotero.notes().iter().cloned());
        let mut state = ZoteroState::load(lib.dir())?.unwrap_or_default();
        let same_source = state.dir.as_os_str().is_empty() || same_dir(&state.dir, dir);
        if !same_source {
            summary.notes.push(format!(
                "the library was imported from {} before; items not in {} are removed",
                state.dir.display(),
                dir.display()
            ));
        }
        let mut heads = zotero.heads()?;
        if let Some(name) = &options.collection {
            let members = zotero
                .collection_members(name)?
                .ok_or_else(|| Error::Zotero { path: dir.to_path_buf(), reason: format!("no collection named `{name}`") })?;
            heads.retain(|h| members.contains(&h.item_id));
        }
        summary.items = heads.len();
        summary.torn = zotero.torn();
        let lost = state.lost_records(&super::import::index_stamp(lib));
        if let Some(why) = &lost {
            summary.notes.push(format!("{why}: every item is read again"));
        }
        let force = options.force || state.collection != options.collection || !same_source || lost.is_some();
        let changed: Vec<Head> = heads
            .iter()
            .filter(|h| force || state.items.get(&h.at.to_string()).is_none_or(|s| s.modified != h.modified || s.aside != h.aside))
            .cloned()
            .collect();
        summary.unchanged = heads.len() - changed.len();

        // Records: upserts, then removals, in one commit; items read a batch at
        // a time. An item's record keeps the id it was first given, so nothing
        // upserted here is another item's old id.
        let present: HashSet<String> = heads.iter().map(|h| h.at.to_string()).collect();
        // A copy that may miss a write is no proof that an item is gone.
        let gone: Vec<String> =
            if zotero.torn() { Vec::new() } else { state.items.keys().filter(|k| !present.contains(*k)).cloned().collect() };
        let mut writer = None;
        if !changed.is_empty() || !gone.is_empty() {
            let w = writer.insert(lib.papers().writer()?);
            for at in &gone {
                if let Some(old) = state.items.remove(at) {
                    w.delete(&old.id);
                    summary.removed += 1;
                }
            }
            let context = Context { papers: lib.papers(), bbt_failed: zotero.better_bibtex_failed(), make_key };
            let mut taken = Taken::of(&state, &present);
            for batch in changed.chunks(crate::limits::ZOTERO_ITEMS_AT_ONCE) {
                for (at, paper, item_state) in records_of(zotero.items(batch)?, &state, &context, &mut taken, &mut summary) {
                    w.replace(&paper)?;
                    state.items.insert(at, item_state);
                }
            }
        }
        if let Some(w) = writer {
            w.finish()?;
        }
        lib.refresh()?;
        state.index = Some(super::import::index_stamp(lib));
        state.dir = dir.to_path_buf();
        state.era = Some(zotero.era());
        state.collection = options.collection.clone();
        state.no_pdfs = options.no_pdfs;
        state.stamp = if zotero.torn() { None } else { stamp };
        state.last_read = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        // The records are durable: say so before reading PDFs (an interrupted
        // PDF read resumes: what was not read is not in `pdfs` yet).
        state.save(lib.dir())?;

        if !options.no_pdfs {
            sync_pdfs(lib, &zotero, &heads, &mut state, options.force, &mut summary)?;
            state.save(lib.dir())?;
            lib.refresh()?;
        }
        summary.key_sources = state.key_sources();
        summary.seconds = t.elapsed().as_secs_f64();
        Ok(summary)
    })
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// What deciding records needs besides the items.
struct Context<'a> {
    papers: &'a crate::index::PaperIndex,
    /// Better BibTeX's keys did not read this time.
    bbt_failed: bool,
    make_key: &'a MakeKey,
}

impl Context<'_> {
    /// Whether the library holds a record of `id` that is not item `at`'s
    /// and not the same work (another import's record of another paper, or
    /// another Zotero item's).
    fn id_held_by_another(&self, id: &str, at: &str, paper: &Paper) -> bool {
        match self.papers.paper_by_id(id) {
            Ok(Some(p)) => match &p.zotero {
                Some(z) => z.item != at,
                // A record another import made of the same work is taken over.
                None => !crate::corpus::work::same_work(&p, paper, crate::corpus::work::Strictness::Exact),
            },
            _ => false,
        }
    }

    /// Whether another record of the library has citation key `key`.
    fn key_held_by_another(&self, key: &str, at: &str) -> bool {
        self.papers.paper_by_key(key).ok().flatten().is_some_and(|p| p.zotero.as_ref().is_none_or(|z| z.item != at))
    }
}

/// Where a key comes from in Better BibTeX.
fn from_better_bibtex(s: KeySource) -> bool {
    matches!(s, KeySource::BetterBibtex | KeySource::BetterBibtexMigrated | KeySource::BetterBibtexJson)
}

/// The keys and ids that an item's new key or id must not take: those of
/// the items of the last sync (each held for its item, which may keep it)
/// and those given in this sync. Made once per sync, so a sync's cost
/// grows with its items, not with its items times its batches.
struct Taken {
    /// Key → the item (`library/key`) that holds it.
    keys: HashMap<String, String>,
    ids: HashSet<String>,
    /// Per base key, the first suffix not yet found taken this sync.
    next_suffix: HashMap<String, usize>,
}

impl Taken {
    fn of(state: &ZoteroState, present: &HashSet<String>) -> Taken {
        let keys = state.items.iter().filter(|(at, _)| present.contains(*at)).map(|(at, s)| (s.key.clone(), at.clone())).collect();
        Taken { keys, ids: state.items.values().map(|s| s.id.clone()).collect(), next_suffix: HashMap::new() }
    }

    /// Whether `key` is held by another item than `at`.
    fn key(&self, key: &str, at: &str) -> bool {
        self.keys.get(key).is_some_and(|holder| holder != at)
    }
}

/// The key of an item: the one Zotero's sources give; a key citewise made
/// stays; a Better BibTeX key stays while Better BibTeX's database does not
/// read; else one made, free among the library's keys.
fn key_of(item: &Item, before: Option<&ItemState>, taken: &mut Taken, context: &Context<'_>, at: &str) -> (String, KeySource) {
    match (&item.key, before) {
        (Some((_, s)), Some(b)) if context.bbt_failed && from_better_bibtex(b.key_source) && *s != KeySource::Native => {
            (b.key.clone(), b.key_source)
        }
        (Some((k, s)), _) => (k.clone(), *s),
        (None, Some(b)) if b.key_source == KeySource::Generated || (context.bbt_failed && from_better_bibtex(b.key_source)) => {
            (b.key.clone(), b.key_source)
        }
        (None, _) => {
            let base = (context.make_key)(&item.paper);
            let mut next = taken.next_suffix.get(&base).copied().unwrap_or(0);
            let key =
                crate::corpus::unique_key::unique_key_from(&base, &mut next, |k| taken.key(k, at) || context.key_held_by_another(k, at));
            taken.next_suffix.insert(base, next);
            (key, KeySource::Generated)
        }
    }
}

/// The records of changed items: keys (found, kept from an earlier sync,
/// or made; unique among the library's keys), ids (kept once given), and
/// where they stand in Zotero.
fn records_of(
    items: Vec<Item>,
    state: &ZoteroState,
    context: &Context<'_>,
    taken: &mut Taken,
    summary: &mut ZoteroSummary,
) -> Vec<(String, Paper, ItemState)> {
    // Items whose key Zotero knows come first, so a made key never takes one.
    let mut items = items;
    items.sort_by_key(|i| i.key.is_none());
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let at = item.head.at.to_string();
        let before = state.items.get(&at);
        let (key, source) = key_of(&item, before, taken, context, &at);
        taken.keys.insert(key.clone(), at.clone());
        let mut former_keys = before.map(|b| b.former_keys.clone()).unwrap_or_default();
        if let Some(b) = before.filter(|b| b.key != key) {
            summary.renamed.push((b.key.clone(), key.clone()));
            if !former_keys.contains(&b.key) {
                former_keys.push(b.key.clone());
            }
        }
        former_keys.retain(|k| *k != key);
        let id = match before {
            Some(b) => b.id.clone(),
            None => {
                let id = Paper::bibtex_id(&item.paper.doi, &key);
                if taken.ids.contains(&id) || context.id_held_by_another(&id, &at, &item.paper) {
                    // Two items of one DOI or one key: each keeps its own record.
                    format!("zotero:{at}")
                } else {
                    id
                }
            }
        };
        taken.ids.insert(id.clone());
        if before.is_some() {
            summary.updated += 1;
        } else {
            summary.added += 1;
        }
        let mut paper = item.paper;
        paper.id = id.clone();
        paper.key = key.clone();
        paper.retracted = item.head.retracted;
        paper.zotero = Some(ZoteroOrigin {
            item: at.clone(),
            key_source: source.name().to_string(),
            collections: item.head.collections.clone(),
            tags: item.tags,
            former_keys: former_keys.clone(),
        });
        let s = ItemState { id, key, key_source: source, modified: item.head.modified.clone(), aside: item.head.aside, former_keys };
        out.push((at, paper, s));
    }
    out
}

/// Reads the PDFs that are new or changed (also those whose parent's
/// record changed: a PDF moved to another item), and removes the evidence
/// of those gone (trashed, deleted, or their parent gone). A PDF to read is
/// forgotten first (its old evidence out, the journal's entry too), so that
/// it is read again even where its bytes did not change; it enters
/// `state.pdfs` only once read, so an interrupted sync reads it next time.
fn sync_pdfs(
    lib: &Library,
    zotero: &Zotero,
    heads: &[Head],
    state: &mut ZoteroState,
    force: bool,
    summary: &mut ZoteroSummary,
) -> Result<()> {
    let parents: HashMap<i64, String> = heads.iter().map(|h| (h.item_id, h.at.to_string())).collect();
    let mut now: BTreeMap<String, PdfState> = BTreeMap::new();
    let mut inputs = Vec::new();
    let mut listed: HashSet<PathBuf> = HashSet::new();
    for a in zotero.pdfs()? {
        // Attachments of items out of the import (trashed, another collection) are not read.
        let parent = match a.parent {
            Some(p) => match parents.get(&p) {
                Some(at) => Some(at.clone()),
                None => continue,
            },
            None if state.collection.is_some() => continue,
            None => None,
        };
        let file = match a.file {
            Ok(f) => f,
            Err(why) => {
                summary.pdfs_missing.push(why);
                continue;
            }
        };
        let file = std::fs::canonicalize(&file).unwrap_or(file);
        let Ok(meta) = std::fs::metadata(&file) else { continue };
        let mtime = meta.modified().ok().and_then(|m| m.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
        let owner = parent.as_ref().and_then(|p| state.items.get(p)).map(|s| s.id.clone()).unwrap_or_default();
        let pdf = PdfState { file: file.clone(), parent, owner: owner.clone(), modified: a.modified.clone(), len: meta.len(), mtime };
        let at = a.at.to_string();
        // A file two attachments name is read once (for the first).
        if !listed.contains(&file) && (force || state.pdfs.get(&at) != Some(&pdf)) {
            listed.insert(file.clone());
            inputs.push(if owner.is_empty() { EvidenceInput::Pdf(file) } else { EvidenceInput::AttachedPdf { file, owner } });
        }
        now.insert(at, pdf);
    }
    let torn = zotero.torn();
    if torn {
        // Attachments the copy may have missed stay as they were.
        for (at, pdf) in &state.pdfs {
            now.entry(at.clone()).or_insert_with(|| pdf.clone());
        }
    }
    // Files no attachment names any more, and files to read again.
    let kept: HashSet<&PathBuf> = now.values().map(|p| &p.file).collect();
    let gone: Vec<PathBuf> = state.pdfs.values().map(|p| p.file.clone()).filter(|f| !kept.contains(f)).collect();
    summary.pdfs_removed = forget_documents(lib, &gone)?;
    if !inputs.is_empty() {
        let again: Vec<PathBuf> = inputs.iter().map(|i| i.path().to_path_buf()).collect();
        forget_documents(lib, &again)?;
        let evidence = import_inputs(lib, &inputs, &EvidenceOptions::default(), &|_, _| {})?;
        summary.pdfs_read = inputs.len();
        summary.evidence = Some(evidence);
    }
    state.pdfs = now;
    Ok(())
}

/// How often a front end's [`Watch`] looks at Zotero's database (a
/// metadata read; a change is synced once it has held for one more look).
pub const WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// What a [`Watch`] reports.
#[derive(Debug)]
pub enum WatchEvent {
    /// Zotero's database changed and the library now has the changes.
    Synced(Box<ZoteroSummary>),
    /// Another process (an import, another editor) brought Zotero's changes
    /// into the library: reopen what reads it.
    Refreshed,
    /// A sync failed; it is tried again in [`RETRY_AFTER`] (said once per
    /// distinct failure).
    Failed(String),
}

/// How long a watch waits after a failed sync (another import writing,
/// a database that did not read) before it tries again.
pub const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// The least time between two syncs of one watch: Zotero writes in bursts
/// (indexing full text), and each sync copies the database.
pub const SYNC_GAP: std::time::Duration = std::time::Duration::from_secs(5);

/// Watches the Zotero database a library was imported from (polling its
/// stamp) and syncs the library when it changed and then stayed the same
/// for one poll (Zotero writes in bursts), on a thread of its own. Dropping
/// the watch stops the thread at its next poll.
pub struct Watch {
    events: crossbeam_channel::Receiver<WatchEvent>,
    _stop: crossbeam_channel::Sender<()>,
}

/// The watch thread's memory between polls.
struct Looker {
    state: ZoteroState,
    /// `zotero.json` as this watch last saw it (another process's sync changes it).
    state_seen: Option<SystemTime>,
    last_poll: Option<DbStamp>,
    /// The database as last synced (none: read it again).
    synced: Option<DbStamp>,
    last_sync: Option<std::time::Instant>,
    retry_at: Option<std::time::Instant>,
    told: Option<String>,
}

fn state_mtime(lib: &Library) -> Option<SystemTime> {
    std::fs::metadata(lib.dir().join(STATE_FILE)).and_then(|m| m.modified()).ok()
}

impl Looker {
    fn look(&mut self, lib: &Library, make_key: &MakeKey) -> Option<WatchEvent> {
        if state_mtime(lib) != self.state_seen {
            // Another process synced (or imported from elsewhere): read what it did.
            self.state_seen = state_mtime(lib);
            if let Ok(Some(state)) = ZoteroState::load(lib.dir()) {
                self.synced = state.stamp;
                self.state = state;
            }
            return lib.refresh().ok().map(|()| WatchEvent::Refreshed);
        }
        let now = DbStamp::of(&self.state.dir);
        let settled = now.is_some() && now == self.last_poll;
        self.last_poll = now;
        let waiting =
            self.retry_at.is_some_and(|t| std::time::Instant::now() < t) || self.last_sync.is_some_and(|t| t.elapsed() < SYNC_GAP);
        if !settled || now == self.synced || waiting {
            return None;
        }
        self.last_sync = Some(std::time::Instant::now());
        let options = ZoteroOptions { collection: self.state.collection.clone(), no_pdfs: self.state.no_pdfs, ..ZoteroOptions::default() };
        let dir = self.state.dir.clone();
        let outcome = sync(lib, &dir, &options, make_key);
        // Its own write of `zotero.json` is not another process's.
        self.state_seen = state_mtime(lib);
        match outcome {
            Ok(summary) => {
                self.retry_at = None;
                self.told = None;
                // A copy that may miss a write is read again.
                self.synced = if summary.torn { None } else { now };
                if let Ok(Some(state)) = ZoteroState::load(lib.dir()) {
                    self.state = state;
                }
                summary.changed().then(|| WatchEvent::Synced(Box::new(summary)))
            }
            Err(e) => {
                self.retry_at = Some(std::time::Instant::now() + RETRY_AFTER);
                let why = e.to_string();
                (self.told.as_ref() != Some(&why)).then(|| {
                    self.told = Some(why.clone());
                    WatchEvent::Failed(why)
                })
            }
        }
    }
}

impl Watch {
    /// Starts watching; none when the library was never imported from Zotero.
    pub fn spawn(lib: std::sync::Arc<Library>, make_key: Box<MakeKey>, every: std::time::Duration) -> Result<Option<Watch>> {
        let Some(state) = ZoteroState::load(lib.dir())? else { return Ok(None) };
        let (tx, events) = crossbeam_channel::unbounded();
        let (_stop, stop) = crossbeam_channel::bounded::<()>(0);
        let mut looker = Looker {
            synced: state.stamp,
            state,
            state_seen: state_mtime(&lib),
            last_poll: None,
            last_sync: None,
            retry_at: None,
            told: None,
        };
        let spawned = std::thread::Builder::new().name("zotero-watch".into()).spawn(move || {
            // A closed `stop` (the watch dropped) ends the loop; a timeout is a poll.
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
                if let Some(event) = looker.look(&lib, &*make_key) {
                    if tx.send(event).is_err() {
                        break;
                    }
                }
            }
        });
        spawned.map_err(|e| Error::io("zotero-watch thread", e))?;
        Ok(Some(Watch { events, _stop }))
    }

    pub fn events(&self) -> &crossbeam_channel::Receiver<WatchEvent> {
        &self.events
    }

    pub fn try_recv(&self) -> Option<WatchEvent> {
        self.events.try_recv().ok()
    }
}

impl ZoteroSummary {
    /// One line: what changed.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        for (n, what) in [(self.added, "added"), (self.updated, "updated"), (self.removed, "removed")] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        if self.pdfs_read > 0 {
            parts.push(format!("{} PDFs read", self.pdfs_read));
        }
        if parts.is_empty() {
            parts.push("no change".into());
        }
        format!("Zotero: {}", parts.join(", "))
    }
}
