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
    /// The database file as it was when last read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<DbStamp>,
    /// Every item imported, by `library/key`.
    pub items: BTreeMap<String, ItemState>,
    /// Every PDF read as evidence, by the attachment's `library/key`.
    #[serde(default)]
    pub pdfs: BTreeMap<String, PdfState>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ItemState {
    /// The record's id in the library.
    pub id: String,
    pub key: String,
    pub key_source: KeySource,
    pub modified: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub former_keys: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PdfState {
    pub file: PathBuf,
    /// The parent item's `library/key` (none: a standalone PDF).
    pub parent: Option<String>,
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

    /// How many items have a key from each source.
    pub fn key_sources(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for i in self.items.values() {
            *out.entry(i.key_source.name()).or_default() += 1;
        }
        out
    }
}

/// Makes a citation key for a paper, given which keys are taken.
pub type MakeKey = dyn Fn(&Paper, &dyn Fn(&str) -> bool) -> String + Send + Sync;

/// How to sync.
#[derive(Debug, Clone, Default)]
pub struct ZoteroOptions {
    /// Only this collection (by name or path) and its sub-collections.
    pub collection: Option<String>,
    /// Read every item and PDF again.
    pub force: bool,
    /// Do not read PDFs.
    pub no_pdfs: bool,
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
    /// PDF attachments whose file is not there.
    pub pdfs_missing: Vec<String>,
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
}

impl DbStamp {
    pub fn of(dir: &Path) -> Option<DbStamp> {
        let m = std::fs::metadata(dir.join(DATABASE)).ok()?;
        let wal_len = std::fs::metadata(dir.join(format!("{DATABASE}-wal"))).map_or(0, |w| w.len());
        let mtime_ns = m.modified().ok()?.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Some(DbStamp { len: m.len(), mtime_ns, wal_len })
    }
}

/// Syncs the library with the Zotero data directory `dir`; `make_key`
/// gives an item without a citation key one (the configured key style), not
/// one of those `taken` says are taken.
pub fn sync(lib: &Library, dir: &Path, options: &ZoteroOptions, make_key: &MakeKey) -> Result<ZoteroSummary> {
    let t = std::time::Instant::now();
    let stamp = DbStamp::of(dir);
    let zotero = Zotero::open(dir)?;
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
    let force = options.force || state.collection != options.collection || !same_source;
    let changed: Vec<Head> =
        heads.iter().filter(|h| force || state.items.get(&h.at.to_string()).is_none_or(|s| s.modified != h.modified)).cloned().collect();
    summary.unchanged = heads.len() - changed.len();

    // Records: upserts, then removals, in one commit; items read a batch at a time.
    let present: HashSet<String> = heads.iter().map(|h| h.at.to_string()).collect();
    let gone: Vec<String> = state.items.keys().filter(|k| !present.contains(*k)).cloned().collect();
    let mut writer = None;
    // Items whose record id changed (a new key, a DOI added): their PDFs are read again.
    let mut reidentified: HashSet<String> = HashSet::new();
    if !changed.is_empty() || !gone.is_empty() {
        let w = writer.insert(lib.papers().writer()?);
        for batch in changed.chunks(crate::limits::ZOTERO_ITEMS_AT_ONCE) {
            let records = records_of(zotero.items(batch)?, &state, make_key, &mut summary);
            for (at, paper, item_state) in records {
                if let Some(old) = state.items.get(&at) {
                    if old.id != paper.id {
                        w.delete(&old.id);
                        reidentified.insert(at.clone());
                    }
                }
                w.upsert(&paper)?;
                state.items.insert(at, item_state);
            }
        }
        for at in &gone {
            if let Some(old) = state.items.remove(at) {
                w.delete(&old.id);
                summary.removed += 1;
            }
        }
    }
    if let Some(w) = writer {
        w.finish()?;
        lib.papers().reload()?;
    }
    state.dir = dir.to_path_buf();
    state.era = Some(zotero.era());
    state.collection = options.collection.clone();
    state.stamp = stamp;
    state.last_read = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    // The records are durable: say so before reading PDFs (an interrupted
    // PDF read resumes from the evidence journal).
    state.save(lib.dir())?;

    if !options.no_pdfs {
        sync_pdfs(lib, &zotero, &heads, &reidentified, &mut state, options.force, &mut summary)?;
        state.save(lib.dir())?;
    }
    summary.key_sources = state.key_sources();
    summary.seconds = t.elapsed().as_secs_f64();
    Ok(summary)
}

fn same_dir(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The records of changed items: keys (found, kept from an earlier sync,
/// or made; unique among the items), ids, and where they stand in Zotero.
fn records_of(items: Vec<Item>, state: &ZoteroState, make_key: &MakeKey, summary: &mut ZoteroSummary) -> Vec<(String, Paper, ItemState)> {
    let changing: HashSet<String> = items.iter().map(|i| i.head.at.to_string()).collect();
    // Keys and ids of the items that stay as they are.
    let mut taken_keys: HashSet<String> =
        state.items.iter().filter(|(at, _)| !changing.contains(*at)).map(|(_, s)| s.key.clone()).collect();
    let mut taken_ids: HashSet<String> = state.items.iter().filter(|(at, _)| !changing.contains(*at)).map(|(_, s)| s.id.clone()).collect();
    // Items whose key Zotero knows come first, so a made key never takes one.
    let mut items = items;
    items.sort_by_key(|i| i.key.is_none());
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let at = item.head.at.to_string();
        let before = state.items.get(&at);
        let (key, source) = match (&item.key, before) {
            (Some((k, s)), _) => (k.clone(), *s),
            // A key citewise made stays the item's key.
            (None, Some(b)) if b.key_source == KeySource::Generated => (b.key.clone(), KeySource::Generated),
            (None, _) => (make_key(&item.paper, &|k| taken_keys.contains(k)), KeySource::Generated),
        };
        taken_keys.insert(key.clone());
        let mut former_keys = before.map(|b| b.former_keys.clone()).unwrap_or_default();
        if let Some(b) = before.filter(|b| b.key != key) {
            summary.renamed.push((b.key.clone(), key.clone()));
            if !former_keys.contains(&b.key) {
                former_keys.push(b.key.clone());
            }
        }
        former_keys.retain(|k| *k != key);
        let mut id = Paper::bibtex_id(&item.paper.doi, &key);
        if taken_ids.contains(&id) {
            // Two Zotero items of one DOI or one key: each keeps its own record.
            id = format!("zotero:{at}");
        }
        taken_ids.insert(id.clone());
        if before.is_some() {
            summary.updated += 1;
        } else {
            summary.added += 1;
        }
        let mut paper = item.paper;
        paper.id = id.clone();
        paper.key = key.clone();
        paper.retracted = item.retracted;
        paper.zotero = Some(ZoteroOrigin {
            item: at.clone(),
            key_source: source.name().to_string(),
            collections: item.collections,
            tags: item.tags,
            former_keys: former_keys.clone(),
        });
        let s = ItemState { id, key, key_source: source, modified: item.head.modified.clone(), former_keys };
        out.push((at, paper, s));
    }
    out
}

/// Reads the PDFs that are new or changed, and removes the evidence of
/// those gone (trashed, deleted, or their parent gone). The PDFs of items
/// in `reidentified` are read again (their citing paper's id changed).
fn sync_pdfs(
    lib: &Library,
    zotero: &Zotero,
    heads: &[Head],
    reidentified: &HashSet<String>,
    state: &mut ZoteroState,
    force: bool,
    summary: &mut ZoteroSummary,
) -> Result<()> {
    let parents: HashMap<i64, String> = heads.iter().map(|h| (h.item_id, h.at.to_string())).collect();
    let mut now: BTreeMap<String, PdfState> = BTreeMap::new();
    let mut inputs = Vec::new();
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
        let pdf = PdfState { file: file.clone(), parent: parent.clone(), modified: a.modified.clone(), len: meta.len(), mtime };
        let at = a.at.to_string();
        let new_owner = parent.as_ref().is_some_and(|p| reidentified.contains(p));
        if new_owner {
            // Its evidence names the old record: taken out, then read again.
            forget_documents(lib, std::slice::from_ref(&file))?;
        }
        if force || new_owner || state.pdfs.get(&at) != Some(&pdf) {
            let owner = parent.as_ref().and_then(|p| state.items.get(p)).map(|s| s.id.clone());
            inputs.push(match owner {
                Some(owner) => EvidenceInput::AttachedPdf { file, owner },
                None => EvidenceInput::Pdf(file),
            });
        }
        now.insert(at, pdf);
    }
    // Files no attachment names any more (or that another attachment now names).
    let kept: HashSet<&PathBuf> = now.values().map(|p| &p.file).collect();
    let gone: Vec<PathBuf> = state.pdfs.values().map(|p| p.file.clone()).filter(|f| !kept.contains(f)).collect();
    summary.pdfs_removed = forget_documents(lib, &gone)?;
    if !inputs.is_empty() {
        let options = EvidenceOptions { force, ..EvidenceOptions::default() };
        let evidence = import_inputs(lib, &inputs, &options, &|_, _| {})?;
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
    /// A sync failed (the next change tries again).
    Failed(String),
}

/// Watches the Zotero database a library was imported from (polling its
/// stamp) and syncs the library when it changed and then stayed the same
/// for one poll (Zotero writes in bursts), on a thread of its own. Dropping
/// the watch stops the thread at its next poll.
pub struct Watch {
    events: crossbeam_channel::Receiver<WatchEvent>,
    _stop: crossbeam_channel::Sender<()>,
}

impl Watch {
    /// Starts watching; none when the library was never imported from Zotero.
    pub fn spawn(lib: std::sync::Arc<Library>, make_key: Box<MakeKey>, every: std::time::Duration) -> Result<Option<Watch>> {
        let Some(state) = ZoteroState::load(lib.dir())? else { return Ok(None) };
        let (tx, events) = crossbeam_channel::unbounded();
        let (_stop, stop) = crossbeam_channel::bounded::<()>(0);
        let options = ZoteroOptions { collection: state.collection.clone(), ..ZoteroOptions::default() };
        let mut synced = state.stamp;
        let mut last_poll = None;
        let spawned = std::thread::Builder::new().name("zotero-watch".into()).spawn(move || {
            // A closed `stop` (the watch dropped) ends the loop; a timeout is a poll.
            while let Err(crossbeam_channel::RecvTimeoutError::Timeout) = stop.recv_timeout(every) {
                let now = DbStamp::of(&state.dir);
                let settled = now.is_some() && now == last_poll;
                last_poll = now;
                if !settled || now == synced {
                    continue;
                }
                let event = match sync(&lib, &state.dir, &options, &*make_key) {
                    Ok(summary) => {
                        synced = now;
                        if !summary.changed() {
                            continue;
                        }
                        WatchEvent::Synced(Box::new(summary))
                    }
                    Err(e) => {
                        // Tried again at the next change.
                        synced = now;
                        WatchEvent::Failed(e.to_string())
                    }
                };
                if tx.send(event).is_err() {
                    break;
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
