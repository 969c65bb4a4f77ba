//! Zotero's database as a source of records: every regular item (not
//! attachments, notes, annotations, nor what is in the trash) with its
//! creators in order, date, venue, DOI, abstract, URL, type, tags,
//! collection paths and citation key, and every PDF attachment with the
//! item it belongs to.
//!
//! Read from a copy ([`snapshot`]): Zotero's file is never opened, locked or
//! written. Every schema era seen in real data directories reads the same
//! way: Zotero 4 (`creatorData`, `sourceItemID`, `mimeType`, user items in
//! library `NULL`), Zotero 5–6, Zotero 7–8 (the native `citationKey` field,
//! annotation items). Field and type ids differ between databases: both
//! are looked up by name.

pub mod data_dir;
pub mod keys;
mod snapshot;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

use rusqlite::types::Value;
use rusqlite::Row;
use serde::{Deserialize, Serialize};

pub use self::data_dir::{default_data_dir, DATABASE};
pub use self::keys::KeySource;
use self::keys::{extra_field, has_table, key_in_extra, BetterBibtexKeys};
use crate::corpus::Paper;
use crate::error::{Error, Result};

/// The schema generation of a database.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Era {
    Zotero4,
    Zotero5,
    Zotero7,
}

impl Era {
    pub fn name(self) -> &'static str {
        match self {
            Era::Zotero4 => "Zotero 4",
            Era::Zotero5 => "Zotero 5–6",
            Era::Zotero7 => "Zotero 7–8",
        }
    }
}

/// An item's place: its library and its eight-letter key (what Zotero's
/// sync, its links and Better BibTeX call it).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ItemRef {
    pub library: i64,
    pub key: String,
}

impl std::fmt::Display for ItemRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.library, self.key)
    }
}

/// A regular item as listed: enough to tell whether it changed.
#[derive(Debug, Clone)]
pub struct Head {
    pub item_id: i64,
    pub at: ItemRef,
    pub modified: String,
    /// Collection paths (`Parent/Child`).
    pub collections: Vec<String>,
    /// Zotero flagged it retracted (`retractedItems`).
    pub retracted: bool,
    /// A fingerprint of what changes without `dateModified` changing:
    /// collection membership, the retraction flag, Better BibTeX's key.
    pub aside: u64,
}

/// A regular item read in full.
#[derive(Debug, Clone)]
pub struct Item {
    pub head: Head,
    /// Title, abstract, creators, year, venue, DOI, URL, entry type, tags as
    /// keywords; `id` and `key` are the caller's to set.
    pub paper: Paper,
    /// The citation key and where it came from (none: the caller makes one).
    pub key: Option<(String, KeySource)>,
    pub tags: Vec<String>,
}

/// A PDF attachment that is not in the trash.
#[derive(Debug, Clone)]
pub struct Attachment {
    pub at: ItemRef,
    /// The regular item it belongs to (none: a standalone PDF).
    pub parent: Option<i64>,
    pub modified: String,
    /// The file, when it exists: `storage/<key>/<name>` for a stored file
    /// (refused if the name leads out of that folder), the path itself for a
    /// linked file.
    pub file: std::result::Result<PathBuf, String>,
}

/// An open copy of a Zotero database.
pub struct Zotero {
    dir: PathBuf,
    db: snapshot::Copied,
    torn: bool,
    /// Where `attachments:` paths are relative to (none: not known).
    attachment_base: Option<PathBuf>,
    era: Era,
    fields_table: &'static str,
    types_table: &'static str,
    better_bibtex: BetterBibtexKeys,
    notes: Vec<String>,
}

impl Zotero {
    /// Opens (a copy of) the database of the data directory `dir`.
    pub fn open(dir: &Path) -> Result<Zotero> {
        let file = dir.join(DATABASE);
        if !file.is_file() {
            return Err(Error::Zotero {
                path: dir.to_path_buf(),
                reason: format!(
                    "no {DATABASE} here: not a Zotero data directory (Zotero shows its own under Settings → Advanced → Files and Folders)"
                ),
            });
        }
        let copy = snapshot::copy_and_open(&file)?;
        let mut notes: Vec<String> = copy.torn.clone().into_iter().collect();
        let torn = copy.torn.is_some();
        let conn = &copy.conn;
        for table in ["items", "itemData", "itemDataValues", "itemTypes", "fields", "itemAttachments"] {
            if !has_table(conn, table) {
                return Err(Error::Zotero { path: file, reason: format!("no table {table}: not a Zotero database") });
            }
        }
        let fields_table = if has_table(conn, "fieldsCombined") { "fieldsCombined" } else { "fields" };
        let types_table = if has_table(conn, "itemTypesCombined") { "itemTypesCombined" } else { "itemTypes" };
        let native_keys = conn.query_row(&format!("SELECT 1 FROM {fields_table} WHERE fieldName = 'citationKey'"), [], |_| Ok(())).is_ok();
        let era = if has_table(conn, "creatorData") {
            Era::Zotero4
        } else if native_keys {
            Era::Zotero7
        } else {
            Era::Zotero5
        };
        let better_bibtex = BetterBibtexKeys::read(dir);
        notes.extend(better_bibtex.notes.iter().cloned());
        Ok(Zotero { dir: dir.to_path_buf(), db: copy, torn, attachment_base: None, era, fields_table, types_table, better_bibtex, notes })
    }

    /// Linked files stored relative to `base` (`attachments:` paths) are
    /// read from there, inside it.
    pub fn with_attachment_base(mut self, base: Option<PathBuf>) -> Zotero {
        self.attachment_base = base;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn era(&self) -> Era {
        self.era
    }

    /// What did not stop the read (a copy taken while Zotero wrote, a
    /// Better BibTeX database that does not read).
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// The copy may miss Zotero's latest write (it changed at every try):
    /// what is missing from it is not to be taken as removed.
    pub fn torn(&self) -> bool {
        self.torn
    }

    /// A Better BibTeX database is there but did not read: its keys are
    /// unknown this time, not gone.
    pub fn better_bibtex_failed(&self) -> bool {
        self.better_bibtex.failed
    }

    /// How many keys Better BibTeX's databases hold.
    pub fn better_bibtex_keys(&self) -> usize {
        self.better_bibtex.len()
    }

    fn sql_err(&self, e: rusqlite::Error) -> Error {
        Error::Zotero { path: self.dir.join(DATABASE), reason: e.to_string() }
    }

    /// Every regular item not in the trash, with its collections and
    /// retraction flag (read once here, for the fingerprint and the record).
    pub fn heads(&self) -> Result<Vec<Head>> {
        let sql = format!(
            "SELECT i.itemID, COALESCE(i.libraryID, 1) AS libraryID, i.key, COALESCE(i.dateModified, '') AS dateModified FROM items i \
             JOIN {types} t ON t.itemTypeID = i.itemTypeID \
             WHERE t.typeName NOT IN ('attachment', 'note', 'annotation') {not_trashed} ORDER BY i.itemID",
            types = self.types_table,
            not_trashed = self.not_trashed("i.itemID"),
        );
        let mut heads = self.rows(&sql, |r| {
            Ok(Head {
                item_id: int(r, 0)?,
                at: ItemRef { library: int(r, 1)?, key: text(r, 2)? },
                modified: text(r, 3)?,
                collections: Vec::new(),
                retracted: false,
                aside: 0,
            })
        })?;
        let all: HashSet<i64> = heads.iter().map(|h| h.item_id).collect();
        let mut collections = self.collections(&all)?;
        let retracted = self.retracted()?;
        for h in &mut heads {
            h.collections = collections.remove(&h.item_id).map(|c| c.into_iter().collect()).unwrap_or_default();
            h.retracted = retracted.contains(&h.item_id);
            let mut aside = String::new();
            if let Some((key, source)) = self.better_bibtex.get(h.at.library, &h.at.key) {
                aside.push_str(&format!("{key}\u{1f}{}", source.name()));
            }
            for c in &h.collections {
                aside.push_str(&format!("\u{1e}{c}"));
            }
            if h.retracted {
                aside.push_str("\u{1d}retracted");
            }
            h.aside = crate::util::fnv1a64(aside.as_bytes());
        }
        Ok(heads)
    }

    fn not_trashed(&self, column: &str) -> String {
        if has_table(&self.db.conn, "deletedItems") {
            format!("AND {column} NOT IN (SELECT itemID FROM deletedItems)")
        } else {
            String::new()
        }
    }

    /// Every row of `sql` through `f`; a value `f` cannot take is an error
    /// that names the row (its first column: the item) and the column.
    fn rows<T>(&self, sql: &str, mut f: impl FnMut(&Row<'_>) -> rusqlite::Result<T>) -> Result<Vec<T>> {
        let mut stmt = self.db.conn.prepare(sql).map_err(|e| self.sql_err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.sql_err(e))?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(|e| self.sql_err(e))? {
            out.push(f(r).map_err(|e| self.row_err(r, e))?);
        }
        Ok(out)
    }

    /// A value of row `r` that does not read: which row (by its first
    /// column, the item's id in every query here) and why.
    fn row_err(&self, r: &Row<'_>, e: rusqlite::Error) -> Error {
        let column = |i: usize| r.as_ref().column_name(i).map_or_else(|_| format!("column {i}"), |n| format!("`{n}`"));
        let first = match r.get::<_, Value>(0) {
            Ok(Value::Integer(n)) => n.to_string(),
            Ok(Value::Text(t)) => format!("{:?}", t.chars().take(40).collect::<String>()),
            Ok(v) => format!("{v:?}"),
            Err(_) => "?".into(),
        };
        let why = match e {
            rusqlite::Error::FromSqlConversionFailure(i, _, why) => format!("{}: {why}", column(i)),
            rusqlite::Error::InvalidColumnType(i, _, kind) => format!("{}: holds {kind}, which is not what Zotero writes there", column(i)),
            e => e.to_string(),
        };
        Error::Zotero { path: self.dir.join(DATABASE), reason: format!("the row of {} {first}: {why}", column(0)) }
    }

    /// The items of `heads`, read in full.
    pub fn items(&self, heads: &[Head]) -> Result<Vec<Item>> {
        let wanted: HashSet<i64> = heads.iter().map(|h| h.item_id).collect();
        self.want(&wanted)?;
        let mut fields = self.fields(&wanted)?;
        let mut creators = self.creators(&wanted)?;
        let mut tags = self.tags(&wanted)?;
        let types = self.item_types(&wanted)?;
        let mut out = Vec::with_capacity(heads.len());
        for h in heads {
            let f = fields.remove(&h.item_id).unwrap_or_default();
            let get = |name: &str| f.get(name).map(|s| s.trim().to_string()).unwrap_or_default();
            let extra = get("extra");
            let mut doi = get("DOI");
            if doi.is_empty() {
                doi = extra_field(&extra, "DOI").unwrap_or_default();
            }
            let item_tags = tags.remove(&h.item_id).unwrap_or_default();
            let key = Some(get("citationKey"))
                .filter(|k| !k.is_empty())
                .map(|k| (k, KeySource::Native))
                .or_else(|| self.better_bibtex.get(h.at.library, &h.at.key).cloned())
                .or_else(|| key_in_extra(&extra).map(|k| (k, KeySource::Extra)));
            // Rich text (`<i>`, `<span class="nocase">`) and entities read as text.
            let plain = |s: &str| crate::corpus::html_text::html_to_text(s).trim().to_string();
            let paper = Paper {
                doi: crate::corpus::paper::normalize_doi(&doi),
                title: plain(&get("title")),
                abstract_text: plain(&get("abstractNote")),
                keywords: item_tags.iter().map(|t| plain(t)).collect(),
                authors: creators.remove(&h.item_id).unwrap_or_default().iter().map(|a| plain(a)).collect(),
                year: year_of(&get("date")),
                venue: VENUE_FIELDS.iter().map(|n| plain(&get(n))).find(|v| !v.is_empty()).unwrap_or_default(),
                url: get("url"),
                entry_type: entry_type(types.get(&h.item_id).map_or("", String::as_str)).to_string(),
                ..Paper::default()
            };
            out.push(Item { head: h.clone(), paper, key, tags: item_tags });
        }
        Ok(out)
    }

    /// Puts the ids of the items to read in the temporary table `wanted`
    /// (of the copy's connection), which the queries of a batch join: a
    /// batch reads its own rows, not the whole database's.
    fn want(&self, wanted: &HashSet<i64>) -> Result<()> {
        let conn = &self.db.conn;
        conn.execute_batch("CREATE TEMP TABLE IF NOT EXISTS wanted(itemID INTEGER PRIMARY KEY); DELETE FROM wanted;")
            .map_err(|e| self.sql_err(e))?;
        let tx = conn.unchecked_transaction().map_err(|e| self.sql_err(e))?;
        {
            let mut insert = tx.prepare("INSERT OR IGNORE INTO wanted VALUES (?1)").map_err(|e| self.sql_err(e))?;
            for id in wanted {
                insert.execute([id]).map_err(|e| self.sql_err(e))?;
            }
        }
        tx.commit().map_err(|e| self.sql_err(e))
    }

    fn item_types(&self, wanted: &HashSet<i64>) -> Result<HashMap<i64, String>> {
        let sql = format!(
            "SELECT i.itemID, t.typeName FROM wanted w JOIN items i ON i.itemID = w.itemID JOIN {} t ON t.itemTypeID = i.itemTypeID",
            self.types_table
        );
        let rows = self.rows(&sql, |r| Ok((int(r, 0)?, text(r, 1)?)))?;
        Ok(rows.into_iter().filter(|(i, _)| wanted.contains(i)).collect())
    }

    /// The fields citewise keeps, by item and field name.
    fn fields(&self, wanted: &HashSet<i64>) -> Result<HashMap<i64, HashMap<String, String>>> {
        let names: Vec<String> = KEPT_FIELDS.iter().chain(VENUE_FIELDS).map(|n| format!("'{n}'")).collect();
        let sql = format!(
            "SELECT d.itemID, f.fieldName, substr(v.value, 1, {value}) FROM itemData d \
             JOIN {fields} f ON f.fieldID = d.fieldID JOIN itemDataValues v ON v.valueID = d.valueID \
             JOIN wanted w ON w.itemID = d.itemID WHERE f.fieldName IN ({names})",
            value = crate::limits::ZOTERO_VALUE,
            fields = self.fields_table,
            names = names.join(", ")
        );
        let mut out: HashMap<i64, HashMap<String, String>> = HashMap::new();
        let mut sizes: HashMap<i64, usize> = HashMap::new();
        let mut stmt = self.db.conn.prepare(&sql).map_err(|e| self.sql_err(e))?;
        let mut rows = stmt.query([]).map_err(|e| self.sql_err(e))?;
        // Row by row: only the wanted items' values are kept, each item's within its budget.
        while let Some(r) = rows.next().map_err(|e| self.sql_err(e))? {
            let item: i64 = int(r, 0).map_err(|e| self.row_err(r, e))?;
            if !wanted.contains(&item) {
                continue;
            }
            let (name, value) = (text(r, 1).map_err(|e| self.row_err(r, e))?, text(r, 2).map_err(|e| self.row_err(r, e))?);
            // Title, date and DOI always count (each is within its own budget).
            let size = sizes.entry(item).or_default();
            let essential = matches!(name.as_str(), "title" | "date" | "DOI");
            if !essential {
                *size += value.chars().count();
            }
            if essential || *size <= crate::limits::ZOTERO_ITEM {
                out.entry(item).or_default().insert(name, value);
            }
        }
        Ok(out)
    }

    /// Display names ("Given Family") in order: the authors, else every
    /// creator (an edited book's editors).
    fn creators(&self, wanted: &HashSet<i64>) -> Result<HashMap<i64, Vec<String>>> {
        let names = if self.era == Era::Zotero4 {
            "JOIN creators c ON c.creatorID = ic.creatorID JOIN creatorData n ON n.creatorDataID = c.creatorDataID"
        } else {
            "JOIN creators n ON n.creatorID = ic.creatorID"
        };
        let types = if has_table(&self.db.conn, "creatorTypes") {
            "LEFT JOIN creatorTypes ct ON ct.creatorTypeID = ic.creatorTypeID"
        } else {
            "LEFT JOIN (SELECT NULL AS creatorTypeID, NULL AS creatorType) ct ON 0"
        };
        let sql = format!(
            "SELECT ic.itemID, COALESCE(n.firstName, ''), COALESCE(n.lastName, ''), COALESCE(ct.creatorType, 'author') \
             FROM wanted w JOIN itemCreators ic ON ic.itemID = w.itemID {names} {types} ORDER BY ic.itemID, ic.orderIndex"
        );
        let mut all: HashMap<i64, Vec<(String, bool)>> = HashMap::new();
        for (item, first, last, kind) in self.rows(&sql, |r| Ok((int(r, 0)?, text(r, 1)?, text(r, 2)?, text(r, 3)?)))? {
            if wanted.contains(&item) {
                let name = format!("{} {}", first.trim(), last.trim()).trim().to_string();
                if !name.is_empty() {
                    all.entry(item).or_default().push((name, kind == "author"));
                }
            }
        }
        Ok(all
            .into_iter()
            .map(|(item, names)| {
                let authors: Vec<String> = names.iter().filter(|n| n.1).map(|n| n.0.clone()).collect();
                (item, if authors.is_empty() { names.into_iter().map(|n| n.0).collect() } else { authors })
            })
            .collect())
    }

    fn tags(&self, wanted: &HashSet<i64>) -> Result<HashMap<i64, Vec<String>>> {
        if !has_table(&self.db.conn, "itemTags") {
            return Ok(HashMap::new());
        }
        let sql = "SELECT it.itemID, t.name FROM wanted w JOIN itemTags it ON it.itemID = w.itemID JOIN tags t ON t.tagID = it.tagID \
                   ORDER BY it.itemID, t.name"
            .to_string();
        let mut out: HashMap<i64, Vec<String>> = HashMap::new();
        for (item, tag) in self.rows(&sql, |r| Ok((int(r, 0)?, text(r, 1)?)))? {
            let tag = tag.trim().to_string();
            if wanted.contains(&item) && !tag.is_empty() {
                out.entry(item).or_default().push(tag);
            }
        }
        Ok(out)
    }

    /// Every collection: id → (name, parent).
    fn collection_tree(&self) -> Result<HashMap<i64, (String, Option<i64>)>> {
        if !has_table(&self.db.conn, "collections") {
            return Ok(HashMap::new());
        }
        let sql = "SELECT collectionID, collectionName, parentCollectionID FROM collections";
        let rows = self.rows(sql, |r| Ok((int(r, 0)?, text(r, 1)?, opt_int(r, 2)?)))?;
        Ok(rows.into_iter().map(|(id, name, parent)| (id, (name, parent))).collect())
    }

    fn collection_path(tree: &HashMap<i64, (String, Option<i64>)>, mut id: i64) -> String {
        let mut parts = Vec::new();
        // A parent loop (a damaged database) ends at the depth of the tree.
        for _ in 0..=tree.len() {
            let Some((name, parent)) = tree.get(&id) else { break };
            parts.push(name.clone());
            match parent {
                Some(p) => id = *p,
                None => break,
            }
        }
        parts.reverse();
        parts.join("/")
    }

    fn collection_items(&self) -> Result<Vec<(i64, i64)>> {
        if !has_table(&self.db.conn, "collectionItems") {
            return Ok(Vec::new());
        }
        self.rows("SELECT collectionID, itemID FROM collectionItems", |r| Ok((int(r, 0)?, int(r, 1)?)))
    }

    fn collections(&self, wanted: &HashSet<i64>) -> Result<HashMap<i64, BTreeSet<String>>> {
        let tree = self.collection_tree()?;
        let mut out: HashMap<i64, BTreeSet<String>> = HashMap::new();
        for (collection, item) in self.collection_items()? {
            if wanted.contains(&item) && tree.contains_key(&collection) {
                out.entry(item).or_default().insert(Self::collection_path(&tree, collection));
            }
        }
        Ok(out)
    }

    /// The items of the collections named `name` (by name or by path) and
    /// of their sub-collections; `None` when no collection has that name.
    pub fn collection_members(&self, name: &str) -> Result<Option<HashSet<i64>>> {
        let tree = self.collection_tree()?;
        let chosen: HashSet<i64> = tree
            .iter()
            .filter(|(id, (n, _))| n.eq_ignore_ascii_case(name) || Self::collection_path(&tree, **id).eq_ignore_ascii_case(name))
            .map(|(id, _)| *id)
            .collect();
        if chosen.is_empty() {
            return Ok(None);
        }
        let within = |mut id: i64| {
            for _ in 0..=tree.len() {
                if chosen.contains(&id) {
                    return true;
                }
                match tree.get(&id).and_then(|(_, p)| *p) {
                    Some(p) => id = p,
                    None => return false,
                }
            }
            false
        };
        Ok(Some(self.collection_items()?.into_iter().filter(|(c, _)| within(*c)).map(|(_, i)| i).collect()))
    }

    fn retracted(&self) -> Result<HashSet<i64>> {
        if !has_table(&self.db.conn, "retractedItems") {
            return Ok(HashSet::new());
        }
        // Flag 1 is a notice the user hid; the item is still retracted.
        Ok(self.rows("SELECT itemID FROM retractedItems", |r| int(r, 0))?.into_iter().collect())
    }

    /// Every PDF attachment not in the trash (stored or linked files; a
    /// linked URL has no file).
    pub fn pdfs(&self) -> Result<Vec<Attachment>> {
        let (parent, content_type) = if self.era == Era::Zotero4 { ("sourceItemID", "mimeType") } else { ("parentItemID", "contentType") };
        let sql = format!(
            "SELECT a.itemID, a.{parent}, COALESCE(a.linkMode, 0) AS linkMode, COALESCE(a.{content_type}, '') AS contentType, \
             COALESCE(a.path, '') AS path, COALESCE(i.libraryID, 1) AS libraryID, i.key, COALESCE(i.dateModified, '') AS dateModified \
             FROM itemAttachments a JOIN items i ON i.itemID = a.itemID WHERE 1 {not_trashed}",
            not_trashed = self.not_trashed("a.itemID")
        );
        type Row8 = (i64, Option<i64>, i64, String, String, i64, String, String);
        let rows: Vec<Row8> = self
            .rows(&sql, |r| Ok((int(r, 0)?, opt_int(r, 1)?, int(r, 2)?, text(r, 3)?, text(r, 4)?, int(r, 5)?, text(r, 6)?, text(r, 7)?)))?;
        let mut out = Vec::new();
        for (_, parent, link_mode, content_type, path, library, key, modified) in rows {
            let pdf = content_type.eq_ignore_ascii_case("application/pdf") || path.to_ascii_lowercase().ends_with(".pdf");
            if !pdf || link_mode == LINKED_URL {
                continue;
            }
            let file = self.attachment_file(&key, &path);
            out.push(Attachment { at: ItemRef { library, key }, parent, modified, file });
        }
        Ok(out)
    }

    /// Where an attachment's file is. The database is the data directory's,
    /// not the user's word: a file is read only where the user's choices
    /// put it — inside the data directory (stored files, `storage/KEY/…`)
    /// or inside the linked attachment base directory (Zotero's setting, or
    /// `import --attachment-base`) — once symbolic links are followed, so
    /// neither a linked path nor a link in `storage/` leads elsewhere. The
    /// file itself is not opened here.
    fn attachment_file(&self, key: &str, path: &str) -> std::result::Result<PathBuf, String> {
        use crate::project::Project;
        let data_dir = Project::new(&self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))?;
        if let Some(name) = path.strip_prefix("storage:") {
            if key.is_empty() || !key.chars().all(|c| c.is_ascii_alphanumeric()) {
                return Err(format!("{path}: attachment key `{key}` is not a Zotero key"));
            }
            let folder = self.dir.join("storage").join(key);
            return data_dir.existing(&folder, name).map_err(|refused| format!("{}: {refused}", folder.display()));
        }
        let base = match &self.attachment_base {
            Some(base) => {
                Some(Project::new(base).map_err(|e| format!("{path}: the linked attachment base directory {}: {e}", base.display()))?)
            }
            None => None,
        };
        if let Some(relative) = path.strip_prefix("attachments:") {
            let (Some(base), Some(dir)) = (&base, &self.attachment_base) else {
                return Err(format!("{path}: relative to a linked attachment base directory that Zotero's settings do not name"));
            };
            return base.existing(dir, relative).map_err(|refused| format!("{path}: {refused}"));
        }
        let file = PathBuf::from(path);
        if !file.is_absolute() {
            return Err(format!("{path}: the linked file is not there"));
        }
        let within = |p: &Project| p.existing(Path::new("/"), path).ok();
        match within(&data_dir).or_else(|| base.as_ref().and_then(within)) {
            Some(real) => Ok(real),
            None if file.symlink_metadata().is_err() => Err(format!("{path}: the linked file is not there")),
            None => Err(format!(
                "{path}: a linked file outside the Zotero data directory{}; not read (set Zotero's linked attachment base directory, \
                 Settings → Advanced → Files and Folders, or pass --attachment-base DIR)",
                match &self.attachment_base {
                    Some(b) => format!(" and the linked attachment base directory ({})", b.display()),
                    None => String::new(),
                }
            )),
        }
    }
}

/// `itemAttachments.linkMode` of a link to a web page (no file).
const LINKED_URL: i64 = 3;

/// The fields read besides the venue's, by Zotero's names.
const KEPT_FIELDS: &[&str] = &["title", "abstractNote", "date", "DOI", "url", "extra", "citationKey"];

/// Where the venue is, in order of preference.
const VENUE_FIELDS: &[&str] = &[
    "publicationTitle",
    "proceedingsTitle",
    "bookTitle",
    "conferenceName",
    "university",
    "institution",
    "repository",
    "websiteTitle",
    "publisher",
];

/// A column as a number: an integer, or text or a real that is one
/// (SQLite's columns take any type); anything else is an error that says
/// what the column holds.
fn int(r: &Row<'_>, i: usize) -> rusqlite::Result<i64> {
    opt_int(r, i)?.ok_or_else(|| conversion(i, rusqlite::types::Type::Null, "empty where a number is expected".into()))
}

/// [`int`], where the column may be empty (NULL).
fn opt_int(r: &Row<'_>, i: usize) -> rusqlite::Result<Option<i64>> {
    use rusqlite::types::Type;
    match r.get::<_, Value>(i)? {
        Value::Null => Ok(None),
        Value::Integer(n) => Ok(Some(n)),
        Value::Real(x) if x.fract() == 0.0 && x.abs() < 9e15 => Ok(Some(x as i64)),
        Value::Real(x) => Err(conversion(i, Type::Real, format!("{x} where a whole number is expected"))),
        Value::Text(t) => match t.trim().parse() {
            Ok(n) => Ok(Some(n)),
            Err(_) => {
                Err(conversion(i, Type::Text, format!("the text {:?} where a number is expected", t.chars().take(40).collect::<String>())))
            }
        },
        Value::Blob(b) => Err(conversion(i, Type::Blob, format!("{} bytes of binary data where a number is expected", b.len()))),
    }
}

fn conversion(i: usize, kind: rusqlite::types::Type, why: String) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(i, kind, why.into())
}

/// A column as text whatever SQLite stored it as (Zotero's values are untyped).
fn text(r: &Row<'_>, i: usize) -> rusqlite::Result<String> {
    Ok(match r.get::<_, Value>(i)? {
        Value::Null => String::new(),
        Value::Integer(n) => n.to_string(),
        Value::Real(x) => x.to_string(),
        Value::Text(s) => s,
        Value::Blob(b) => String::from_utf8_lossy(&b).into_owned(),
    })
}

/// The year of a Zotero date (`YYYY-MM-DD original`, `0000` unknown), or of
/// a date Zotero could not parse (the first plausible four-digit year).
pub fn year_of(date: &str) -> Option<i32> {
    let date = date.trim();
    let leading: String = date.chars().take(4).collect();
    if leading.len() == 4 && leading.chars().all(|c| c.is_ascii_digit()) && date[4..].starts_with(['-', ' ']) || date.len() == 4 {
        return leading.parse().ok().filter(|&y| y > 0);
    }
    crate::corpus::bibtex::parse_year(date)
}

/// The BibTeX entry type of a Zotero item type (as Better BibTeX exports it).
pub fn entry_type(item_type: &str) -> &'static str {
    match item_type {
        "journalArticle" | "magazineArticle" | "newspaperArticle" => "article",
        "conferencePaper" => "inproceedings",
        "book" => "book",
        "bookSection" | "encyclopediaArticle" | "dictionaryEntry" => "incollection",
        "thesis" => "phdthesis",
        "report" => "techreport",
        "manuscript" => "unpublished",
        _ => "misc",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zotero_dates_give_years() {
        assert_eq!(year_of("2021-09-01 2021-09-01"), Some(2021));
        assert_eq!(year_of("2019-00-00 2019"), Some(2019));
        assert_eq!(year_of("0000-00-00 spring"), None);
        assert_eq!(year_of("2007"), Some(2007));
        assert_eq!(year_of("Spring 1998"), Some(1998));
        assert_eq!(year_of("12345"), None);
        assert_eq!(year_of(""), None);
    }
}
