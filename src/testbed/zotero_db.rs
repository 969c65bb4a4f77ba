//! Zotero databases written for tests and benchmarks: the schemas of Zotero 4,
//! 5–6 and 7–8 as real data directories hold them (tables and columns by
//! name; ids differ between eras, as they do between real databases).
//!
//! Only the tables and columns a reader of a library touches are created.
//! Item types, fields and creator types are rows looked up by name, with ids
//! that differ between eras, so a reader that hard-codes an id breaks here as
//! it would on a real database. Better BibTeX's two database formats (the
//! `citationkey` table and the older LokiJS JSON) are written beside it.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::{params, Connection, OpenFlags};

use crate::corpus::Paper;

/// The database file in a Zotero data directory.
const DB_FILE: &str = "zotero.sqlite";
/// `dateModified` of items written without one.
const DEFAULT_MODIFIED: &str = "2024-01-01 00:00:00";
/// `itemAttachments.linkMode` of a file Zotero stores in `storage/<key>/`.
const LINK_IMPORTED_FILE: i64 = 1;
/// `itemAttachments.linkMode` of a file Zotero links to where it lies.
const LINK_LINKED_FILE: i64 = 2;
/// `itemAnnotations.position` of every annotation written here.
const ANNOTATION_POSITION: &str = r#"{"pageIndex":0,"rects":[[100,100,200,120]]}"#;
/// `retractedItems.data` of every retraction written here.
const RETRACTION_DATA: &str = r#"{"date":"2020-01-01","reasons":["Error in Data"],"urls":[]}"#;

pub use crate::corpus::zotero::Era;

impl Era {
    /// The position of this era's ids in the vocabulary tables below.
    fn column(self) -> usize {
        match self {
            Era::Zotero4 => 0,
            Era::Zotero5 => 1,
            Era::Zotero7 => 2,
        }
    }

    /// The `userdata` row of the `version` table.
    fn userdata_version(self) -> i64 {
        match self {
            Era::Zotero4 => 80,
            Era::Zotero5 => 100,
            Era::Zotero7 => 123,
        }
    }

    fn is_legacy(self) -> bool {
        self == Era::Zotero4
    }

    /// The column of attachments and notes that names their parent item.
    fn parent_column(self) -> &'static str {
        if self.is_legacy() {
            "sourceItemID"
        } else {
            "parentItemID"
        }
    }
}

/// Item types with their ids in Zotero 4, 5–6 and 7–8 (None: not in that era).
const ITEM_TYPES: &[(&str, [Option<i64>; 3])] = &[
    ("annotation", [None, None, Some(1)]),
    ("attachment", [Some(13), Some(14), Some(3)]),
    ("book", [Some(2), Some(2), Some(7)]),
    ("bookSection", [Some(3), Some(3), Some(8)]),
    ("conferencePaper", [Some(34), Some(33), Some(11)]),
    ("journalArticle", [Some(5), Some(4), Some(22)]),
    ("note", [Some(1), Some(1), Some(28)]),
    ("preprint", [Some(40), Some(37), Some(31)]),
    ("report", [Some(16), Some(15), Some(32)]),
    ("thesis", [Some(8), Some(7), Some(35)]),
];

/// Fields with their ids in Zotero 4, 5–6 and 7–8 (None: not in that era).
const FIELDS: &[(&str, [Option<i64>; 3])] = &[
    ("url", [Some(2), Some(1), Some(13)]),
    ("publicationTitle", [Some(13), Some(12), Some(38)]),
    ("date", [Some(15), Some(14), Some(6)]),
    ("extra", [Some(23), Some(22), Some(16)]),
    ("DOI", [Some(27), Some(26), Some(58)]),
    ("abstractNote", [Some(91), Some(90), Some(2)]),
    ("title", [Some(111), Some(110), Some(1)]),
    ("bookTitle", [Some(116), Some(115), Some(45)]),
    ("proceedingsTitle", [Some(117), Some(116), Some(44)]),
    ("citationKey", [None, None, Some(9)]),
];

/// Creator types (the same ids in every era, as in real databases).
const CREATOR_TYPES: &[(&str, i64)] = &[("author", 1), ("editor", 3)];

/// Tables of Zotero 5–6 and 7–8.
const MODERN_SCHEMA: &str = "
CREATE TABLE version (schema TEXT PRIMARY KEY, version INT NOT NULL);
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, type TEXT NOT NULL, editable INT NOT NULL, filesEditable INT NOT NULL,
    version INT NOT NULL DEFAULT 0, storageVersion INT NOT NULL DEFAULT 0, lastSync INT NOT NULL DEFAULT 0, archived INT NOT NULL DEFAULT 0);
CREATE TABLE groups (groupID INTEGER PRIMARY KEY, libraryID INT NOT NULL UNIQUE, name TEXT NOT NULL, description TEXT NOT NULL,
    version INT NOT NULL);
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT, display INT DEFAULT 1);
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
CREATE TABLE fieldsCombined (fieldID INT NOT NULL, fieldName TEXT NOT NULL, label TEXT, fieldFormatID INT, custom INT NOT NULL,
    PRIMARY KEY (fieldID));
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL, dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT NOT NULL, key TEXT NOT NULL, version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key));
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID));
CREATE INDEX itemData_fieldID ON itemData(fieldID);
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, fieldMode INT, UNIQUE (lastName, firstName, fieldMode));
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL, creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex));
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, parentItemID INT, linkMode INT, contentType TEXT, charsetID INT, path TEXT,
    syncState INT DEFAULT 0, storageModTime INT, storageHash TEXT, lastProcessedModificationTime INT);
CREATE INDEX itemAttachments_parentItemID ON itemAttachments(parentItemID);
CREATE TABLE itemNotes (itemID INTEGER PRIMARY KEY, parentItemID INT, note TEXT, title TEXT);
CREATE INDEX itemNotes_parentItemID ON itemNotes(parentItemID);
CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE itemTags (itemID INT NOT NULL, tagID INT NOT NULL, type INT NOT NULL, PRIMARY KEY (itemID, tagID));
CREATE INDEX itemTags_tagID ON itemTags(tagID);
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL, parentCollectionID INT DEFAULT NULL,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, libraryID INT NOT NULL, key TEXT NOT NULL,
    version INT NOT NULL DEFAULT 0, synced INT NOT NULL DEFAULT 0, UNIQUE (libraryID, key));
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL, orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID));
CREATE INDEX collectionItems_itemID ON collectionItems(itemID);
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
CREATE TABLE retractedItems (itemID INTEGER PRIMARY KEY, data TEXT, flag INT DEFAULT 0);
";

/// The table Zotero 7–8 adds to the modern schema.
const ANNOTATIONS_SCHEMA: &str = "
CREATE TABLE itemAnnotations (itemID INTEGER PRIMARY KEY, parentItemID INT NOT NULL, type INTEGER NOT NULL, authorName TEXT, text TEXT,
    comment TEXT, color TEXT, pageLabel TEXT, sortIndex TEXT NOT NULL, position TEXT NOT NULL, isExternal INT NOT NULL);
CREATE INDEX itemAnnotations_parentItemID ON itemAnnotations(parentItemID);
";

/// Tables of Zotero 4.
const LEGACY_SCHEMA: &str = "
CREATE TABLE version (schema TEXT PRIMARY KEY, version INT NOT NULL);
CREATE TABLE libraries (libraryID INTEGER PRIMARY KEY, libraryType TEXT NOT NULL);
CREATE TABLE groups (groupID INTEGER PRIMARY KEY, libraryID INT NOT NULL UNIQUE, name TEXT NOT NULL, description TEXT NOT NULL,
    editable INT NOT NULL, filesEditable INT NOT NULL);
CREATE TABLE itemTypes (itemTypeID INTEGER PRIMARY KEY, typeName TEXT, templateItemTypeID INT, display INT DEFAULT 1);
CREATE TABLE fields (fieldID INTEGER PRIMARY KEY, fieldName TEXT, fieldFormatID INT);
CREATE TABLE items (itemID INTEGER PRIMARY KEY, itemTypeID INT NOT NULL, dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT, key TEXT NOT NULL, UNIQUE (libraryID, key));
CREATE TABLE itemDataValues (valueID INTEGER PRIMARY KEY, value UNIQUE);
CREATE TABLE itemData (itemID INT, fieldID INT, valueID, PRIMARY KEY (itemID, fieldID));
CREATE INDEX itemData_fieldID ON itemData(fieldID);
CREATE TABLE creatorTypes (creatorTypeID INTEGER PRIMARY KEY, creatorType TEXT);
CREATE TABLE creatorData (creatorDataID INTEGER PRIMARY KEY, firstName TEXT, lastName TEXT, shortName TEXT, fieldMode INT, birthYear INT);
CREATE INDEX creatorData_name ON creatorData(lastName, firstName);
CREATE TABLE creators (creatorID INTEGER PRIMARY KEY, creatorDataID INT NOT NULL, dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT, key TEXT NOT NULL);
CREATE INDEX creators_creatorDataID ON creators(creatorDataID);
CREATE TABLE itemCreators (itemID INT NOT NULL, creatorID INT NOT NULL, creatorTypeID INT NOT NULL DEFAULT 1,
    orderIndex INT NOT NULL DEFAULT 0, PRIMARY KEY (itemID, creatorID, creatorTypeID, orderIndex));
CREATE TABLE itemAttachments (itemID INTEGER PRIMARY KEY, sourceItemID INT, linkMode INT, mimeType TEXT, charsetID INT, path TEXT,
    originalPath TEXT, syncState INT DEFAULT 0, storageModTime INT, storageHash TEXT);
CREATE INDEX itemAttachments_sourceItemID ON itemAttachments(sourceItemID);
CREATE TABLE itemNotes (itemID INTEGER PRIMARY KEY, sourceItemID INT, note TEXT, title TEXT);
CREATE INDEX itemNotes_sourceItemID ON itemNotes(sourceItemID);
CREATE TABLE tags (tagID INTEGER PRIMARY KEY, name TEXT NOT NULL, type INT NOT NULL, dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    libraryID INT, key TEXT NOT NULL);
CREATE TABLE itemTags (itemID INT, tagID INT, PRIMARY KEY (itemID, tagID));
CREATE INDEX itemTags_tagID ON itemTags(tagID);
CREATE TABLE collections (collectionID INTEGER PRIMARY KEY, collectionName TEXT NOT NULL, parentCollectionID INT,
    dateAdded TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, dateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    clientDateModified TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP, libraryID INT, key TEXT NOT NULL);
CREATE TABLE collectionItems (collectionID INT NOT NULL, itemID INT NOT NULL, orderIndex INT NOT NULL DEFAULT 0,
    PRIMARY KEY (collectionID, itemID));
CREATE INDEX collectionItems_itemID ON collectionItems(itemID);
CREATE TABLE deletedItems (itemID INTEGER PRIMARY KEY, dateDeleted DEFAULT CURRENT_TIMESTAMP NOT NULL);
";

/// Better BibTeX's `citationkey` table (Zotero 7 era).
const BETTER_BIBTEX_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS citationkey (itemID INTEGER NOT NULL, itemKey TEXT NOT NULL, libraryID INTEGER NOT NULL,
    citationKey TEXT NOT NULL, pinned INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (itemID));
CREATE INDEX IF NOT EXISTS citationkey_citationKey ON citationkey(citationKey);
";

/// One regular item to write.
#[derive(Debug, Clone, Default)]
pub struct NewItem {
    /// 8-character Zotero key, e.g. "ABCD2345".
    pub key: String,
    /// "journalArticle", "conferencePaper", ... (looked up by name).
    pub item_type: String,
    pub title: String,
    pub abstract_note: String,
    /// Stored as given, e.g. "2019-03-00 March 2019".
    pub date: String,
    /// Written to `proceedingsTitle` (conferencePaper), `bookTitle`
    /// (bookSection), else `publicationTitle`.
    pub venue: String,
    pub doi: String,
    pub url: String,
    pub extra: String,
    /// The native `citationKey` field: written in `Era::Zotero7` only
    /// (ignored otherwise); empty = not set.
    pub citation_key: String,
    /// (first, last) names of the authors, in order.
    pub creators: Vec<(String, String)>,
    pub tags: Vec<String>,
    /// "2024-08-29 16:55:53"; empty = "2024-01-01 00:00:00".
    pub date_modified: String,
    /// None = the user library (1 in modern eras, NULL in Zotero 4).
    pub library_id: Option<i64>,
}

/// (first name, last name, library in Zotero 4 / None in modern eras).
type CreatorKey = (String, String, Option<i64>);
/// (tag name, library in Zotero 4 / None in modern eras).
type TagKey = (String, Option<i64>);

/// A Zotero database being written, with the ids of its vocabulary.
pub struct ZoteroDb {
    conn: Connection,
    era: Era,
    /// typeName -> itemTypeID.
    item_types: HashMap<String, i64>,
    /// fieldName -> fieldID.
    fields: HashMap<String, i64>,
    /// creatorTypeID of "author".
    author_type: i64,
    /// Creators already written (a real library shares them between items).
    creators: HashMap<CreatorKey, i64>,
    /// Tags already written.
    tags: HashMap<TagKey, i64>,
}

impl ZoteroDb {
    /// Creates `dir/zotero.sqlite` (and `dir/storage/`) with the era's schema.
    pub fn create(dir: &Path, era: Era) -> rusqlite::Result<ZoteroDb> {
        std::fs::create_dir_all(dir.join("storage")).map_err(|e| rusqlite::Error::ToSqlConversionFailure(Box::new(e)))?;
        let mut conn = Connection::open(dir.join(DB_FILE))?;
        let tx = conn.transaction()?;
        tx.execute_batch(&schema(era))?;
        write_vocabulary(&tx, era)?;
        tx.commit()?;
        ZoteroDb::load(conn, era)
    }

    /// Opens an existing database written by `create` (to change it later in
    /// a test). The era is detected: Zotero 4 if table `creatorData` exists,
    /// Zotero 7 if a field named `citationKey` exists, else Zotero 5.
    pub fn open(dir: &Path) -> rusqlite::Result<ZoteroDb> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(dir.join(DB_FILE), flags)?;
        let era = detect_era(&conn)?;
        ZoteroDb::load(conn, era)
    }

    /// Reads the vocabulary and the caches of a database of `era`.
    fn load(conn: Connection, era: Era) -> rusqlite::Result<ZoteroDb> {
        conn.set_prepared_statement_cache_capacity(64);
        let item_types = name_map(&conn, "SELECT typeName, itemTypeID FROM itemTypes")?;
        let fields = name_map(&conn, "SELECT fieldName, fieldID FROM fields")?;
        let creator_types = name_map(&conn, "SELECT creatorType, creatorTypeID FROM creatorTypes")?;
        let author_type = *creator_types.get("author").ok_or_else(|| failure("no creator type 'author'"))?;
        let creators = load_creators(&conn, era)?;
        let tags = load_tags(&conn, era)?;
        Ok(ZoteroDb { conn, era, item_types, fields, author_type, creators, tags })
    }

    /// The era of this database's schema.
    pub fn era(&self) -> Era {
        self.era
    }

    /// The connection, for checks and changes this writer does not offer.
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// Writes a regular item with its fields, authors and tags; returns its
    /// itemID. Empty fields are not written (Zotero stores none).
    pub fn add_item(&mut self, item: &NewItem) -> rusqlite::Result<i64> {
        let library = self.library(item.library_id);
        let item_id = self.insert_item_row(&item.item_type, &item.key, library, modified_or_default(&item.date_modified))?;
        for (field, value) in self.item_fields(item) {
            self.put_field(item_id, field, value)?;
        }
        for (index, (first, last)) in item.creators.iter().enumerate() {
            self.link_creator(item_id, first, last, library, index)?;
        }
        for tag in &item.tags {
            self.tag_item(item_id, tag, library)?;
        }
        Ok(item_id)
    }

    /// A PDF attachment stored in `storage/<att_key>/<file_name>` (linkMode 1,
    /// imported_file; path "storage:<file_name>"); copies nothing: the test
    /// writes the file itself. `parent` None = standalone attachment.
    pub fn add_stored_pdf(&mut self, parent: Option<i64>, att_key: &str, file_name: &str) -> rusqlite::Result<i64> {
        self.add_attachment(parent, att_key, LINK_IMPORTED_FILE, &format!("storage:{file_name}"), file_name)
    }

    /// A linked file (linkMode 2; path is the absolute path as given).
    pub fn add_linked_pdf(&mut self, parent: Option<i64>, att_key: &str, path: &Path) -> rusqlite::Result<i64> {
        let title = path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default();
        self.add_attachment(parent, att_key, LINK_LINKED_FILE, &path.to_string_lossy(), &title)
    }

    /// A note (`text` is stored as given: pass HTML as Zotero writes it);
    /// its title is the first line of the text without markup.
    pub fn add_note(&mut self, parent: Option<i64>, key: &str, text: &str) -> rusqlite::Result<i64> {
        let library = self.child_library(parent)?;
        let item = self.insert_item_row("note", key, library, DEFAULT_MODIFIED)?;
        let sql = format!("INSERT INTO itemNotes (itemID, {}, note, title) VALUES (?1, ?2, ?3, ?4)", self.era.parent_column());
        self.conn.execute(&sql, params![item, parent, text, note_title(text)])?;
        Ok(item)
    }

    /// Zotero7 only: an annotation item (itemType annotation, a yellow
    /// highlight on page 1) on an attachment.
    pub fn add_annotation(&mut self, attachment: i64, key: &str, text: &str) -> rusqlite::Result<i64> {
        if self.era != Era::Zotero7 {
            return Err(failure(format!("annotation items exist only in Zotero 7, not in {:?}", self.era)));
        }
        let library = self.child_library(Some(attachment))?;
        let item = self.insert_item_row("annotation", key, library, DEFAULT_MODIFIED)?;
        self.conn.execute(
            "INSERT INTO itemAnnotations (itemID, parentItemID, type, authorName, text, comment, color, pageLabel, sortIndex, position, \
             isExternal) VALUES (?1, ?2, 1, NULL, ?3, '', '#ffd400', '1', '00000|000000|00000', ?4, 0)",
            params![item, attachment, text, ANNOTATION_POSITION],
        )?;
        Ok(item)
    }

    /// Creates a collection (parent: another collection id; the collection
    /// lies in its parent's library, else in the user library) and returns
    /// its id.
    pub fn add_collection(&mut self, name: &str, parent: Option<i64>, key: &str) -> rusqlite::Result<i64> {
        let library = match parent {
            Some(parent) => {
                self.conn.query_row("SELECT libraryID FROM collections WHERE collectionID = ?1", params![parent], |r| r.get(0))?
            }
            None => self.library(None),
        };
        let sql = if self.era.is_legacy() {
            "INSERT INTO collections (collectionName, parentCollectionID, dateAdded, dateModified, clientDateModified, libraryID, key) \
             VALUES (?1, ?2, ?3, ?3, ?3, ?4, ?5)"
        } else {
            "INSERT INTO collections (collectionName, parentCollectionID, clientDateModified, libraryID, key) VALUES (?1, ?2, ?3, ?4, ?5)"
        };
        self.conn.execute(sql, params![name, parent, DEFAULT_MODIFIED, library, key])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Puts an item in a collection (last in its order).
    pub fn add_to_collection(&mut self, collection: i64, item: i64) -> rusqlite::Result<()> {
        self.conn
            .prepare_cached(
                "INSERT OR IGNORE INTO collectionItems (collectionID, itemID, orderIndex) \
                 VALUES (?1, ?2, (SELECT COUNT(*) FROM collectionItems WHERE collectionID = ?1))",
            )?
            .execute(params![collection, item])?;
        Ok(())
    }

    /// Moves an item to the trash (a `deletedItems` row).
    pub fn trash(&mut self, item: i64) -> rusqlite::Result<()> {
        self.conn.execute("INSERT OR IGNORE INTO deletedItems (itemID) VALUES (?1)", params![item])?;
        Ok(())
    }

    /// Marks an item retracted (a `retractedItems` row, flag 0); Zotero 5
    /// and later only.
    pub fn retract(&mut self, item: i64) -> rusqlite::Result<()> {
        if self.era.is_legacy() {
            return Err(failure("Zotero 4 has no retractedItems table"));
        }
        self.conn
            .execute("INSERT OR REPLACE INTO retractedItems (itemID, data, flag) VALUES (?1, ?2, 0)", params![item, RETRACTION_DATA])?;
        Ok(())
    }

    /// A group library: inserts a `libraries` row (type 'group') and a
    /// `groups` row; returns the libraryID.
    pub fn add_group(&mut self, name: &str) -> rusqlite::Result<i64> {
        // The user library is 1 in modern eras; Zotero 4 gives it no row.
        let first_free = if self.era.is_legacy() { 1 } else { 2 };
        let max: Option<i64> = self.conn.query_row("SELECT MAX(libraryID) FROM libraries", [], |r| r.get(0))?;
        let library = max.map_or(first_free, |max| (max + 1).max(first_free));
        let group = 1_000_000 + library;
        if self.era.is_legacy() {
            self.conn.execute("INSERT INTO libraries (libraryID, libraryType) VALUES (?1, 'group')", params![library])?;
            self.conn.execute(
                "INSERT INTO groups (groupID, libraryID, name, description, editable, filesEditable) VALUES (?1, ?2, ?3, '', 1, 1)",
                params![group, library, name],
            )?;
        } else {
            self.conn.execute(
                "INSERT INTO libraries (libraryID, type, editable, filesEditable, version, storageVersion, lastSync, archived) \
                 VALUES (?1, 'group', 1, 1, 0, 0, 0, 0)",
                params![library],
            )?;
            self.conn.execute(
                "INSERT INTO groups (groupID, libraryID, name, description, version) VALUES (?1, ?2, ?3, '', 0)",
                params![group, library, name],
            )?;
        }
        Ok(library)
    }

    /// Sets a field of an item (by field name, e.g. "title"; an empty value
    /// removes it), updating `dateModified` to `modified` (empty = the
    /// default "2024-01-01 00:00:00").
    pub fn set_field(&mut self, item: i64, field: &str, value: &str, modified: &str) -> rusqlite::Result<()> {
        if value.is_empty() {
            let field_id = self.field_id(field)?;
            self.conn.execute("DELETE FROM itemData WHERE itemID = ?1 AND fieldID = ?2", params![item, field_id])?;
        } else {
            self.put_field(item, field, value)?;
        }
        let changed = self.conn.execute(
            "UPDATE items SET dateModified = ?1, clientDateModified = ?1 WHERE itemID = ?2",
            params![modified_or_default(modified), item],
        )?;
        if changed == 0 {
            return Err(rusqlite::Error::QueryReturnedNoRows);
        }
        Ok(())
    }

    /// Removes an item's row with its itemData, creator and tag links,
    /// collection memberships, attachment/note/annotation rows and trash or
    /// retraction marks; its child items (attachments, notes, annotations)
    /// go with it, as when Zotero erases an item.
    pub fn delete_item(&mut self, item: i64) -> rusqlite::Result<()> {
        for child in self.children(item)? {
            self.delete_item(child)?;
        }
        let mut tables = vec!["itemData", "itemCreators", "itemTags", "collectionItems", "itemAttachments", "itemNotes", "deletedItems"];
        if !self.era.is_legacy() {
            tables.push("retractedItems");
        }
        if self.era == Era::Zotero7 {
            tables.push("itemAnnotations");
        }
        for table in tables {
            self.conn.execute(&format!("DELETE FROM {table} WHERE itemID = ?1"), params![item])?;
        }
        self.conn.execute("DELETE FROM items WHERE itemID = ?1", params![item])?;
        Ok(())
    }

    /// The itemID of the item with this key (in any library).
    pub fn item_id(&self, key: &str) -> rusqlite::Result<i64> {
        self.conn.query_row("SELECT itemID FROM items WHERE key = ?1", params![key], |r| r.get(0))
    }

    /// Runs `f` in one transaction (20,000 items must write in a few
    /// seconds); rolls back if `f` fails. Inside a transaction already, `f`
    /// simply runs in it.
    pub fn batch<T>(&mut self, f: impl FnOnce(&mut ZoteroDb) -> rusqlite::Result<T>) -> rusqlite::Result<T> {
        if !self.conn.is_autocommit() {
            return f(self);
        }
        self.conn.execute_batch("BEGIN")?;
        match f(self) {
            Ok(value) => {
                self.conn.execute_batch("COMMIT")?;
                Ok(value)
            }
            Err(error) => {
                // The error that matters is f's; the caches must forget
                // what the rollback took back.
                let _ = self.conn.execute_batch("ROLLBACK");
                self.creators = load_creators(&self.conn, self.era).unwrap_or_default();
                self.tags = load_tags(&self.conn, self.era).unwrap_or_default();
                Err(error)
            }
        }
    }

    /// The library of an item written with `given` (None = the user library).
    fn library(&self, given: Option<i64>) -> Option<i64> {
        match (given, self.era) {
            (Some(library), _) => Some(library),
            (None, Era::Zotero4) => None,
            (None, _) => Some(1),
        }
    }

    /// The library of a child item: its parent's, else the user library.
    fn child_library(&self, parent: Option<i64>) -> rusqlite::Result<Option<i64>> {
        match parent {
            Some(parent) => self.conn.query_row("SELECT libraryID FROM items WHERE itemID = ?1", params![parent], |r| r.get(0)),
            None => Ok(self.library(None)),
        }
    }

    /// Inserts the `items` row; returns its itemID.
    fn insert_item_row(&mut self, item_type: &str, key: &str, library: Option<i64>, modified: &str) -> rusqlite::Result<i64> {
        let type_id = *self.item_types.get(item_type).ok_or_else(|| failure(format!("no item type {item_type:?} in {:?}", self.era)))?;
        let sql = if self.era.is_legacy() {
            "INSERT INTO items (itemTypeID, dateAdded, dateModified, clientDateModified, libraryID, key) VALUES (?1, ?2, ?2, ?2, ?3, ?4)"
        } else {
            "INSERT INTO items (itemTypeID, dateAdded, dateModified, clientDateModified, libraryID, key, version, synced) \
             VALUES (?1, ?2, ?2, ?2, ?3, ?4, 0, 0)"
        };
        self.conn.prepare_cached(sql)?.execute(params![type_id, modified, library, key])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// The non-empty fields of an item, by field name.
    fn item_fields<'a>(&self, item: &'a NewItem) -> Vec<(&'static str, &'a str)> {
        let mut fields = vec![
            ("title", item.title.as_str()),
            ("abstractNote", item.abstract_note.as_str()),
            ("date", item.date.as_str()),
            (venue_field(&item.item_type), item.venue.as_str()),
            ("DOI", item.doi.as_str()),
            ("url", item.url.as_str()),
            ("extra", item.extra.as_str()),
        ];
        if self.era == Era::Zotero7 {
            fields.push(("citationKey", item.citation_key.as_str()));
        }
        fields.retain(|(_, value)| !value.is_empty());
        fields
    }

    /// The fieldID of a field name in this era.
    fn field_id(&self, field: &str) -> rusqlite::Result<i64> {
        self.fields.get(field).copied().ok_or_else(|| failure(format!("no field {field:?} in {:?}", self.era)))
    }

    /// Writes one field of an item, sharing the value row with other items.
    fn put_field(&mut self, item: i64, field: &str, value: &str) -> rusqlite::Result<()> {
        let field_id = self.field_id(field)?;
        let value_id = self.value_id(value)?;
        self.conn
            .prepare_cached("INSERT OR REPLACE INTO itemData (itemID, fieldID, valueID) VALUES (?1, ?2, ?3)")?
            .execute(params![item, field_id, value_id])?;
        Ok(())
    }

    /// The valueID of a value, inserted if new.
    fn value_id(&self, value: &str) -> rusqlite::Result<i64> {
        self.conn.prepare_cached("INSERT OR IGNORE INTO itemDataValues (value) VALUES (?1)")?.execute(params![value])?;
        self.conn.prepare_cached("SELECT valueID FROM itemDataValues WHERE value = ?1")?.query_row(params![value], |r| r.get(0))
    }

    /// Links an author at position `index` of an item.
    fn link_creator(&mut self, item: i64, first: &str, last: &str, library: Option<i64>, index: usize) -> rusqlite::Result<()> {
        let creator = self.creator_id(first, last, library)?;
        let order = i64::try_from(index).expect("an item has fewer than 2^63 creators");
        self.conn
            .prepare_cached("INSERT INTO itemCreators (itemID, creatorID, creatorTypeID, orderIndex) VALUES (?1, ?2, ?3, ?4)")?
            .execute(params![item, creator, self.author_type, order])?;
        Ok(())
    }

    /// The creatorID of a person (per library in Zotero 4), inserted if new.
    fn creator_id(&mut self, first: &str, last: &str, library: Option<i64>) -> rusqlite::Result<i64> {
        let scope = if self.era.is_legacy() { library } else { None };
        let key = (first.to_string(), last.to_string(), scope);
        if let Some(&id) = self.creators.get(&key) {
            return Ok(id);
        }
        let id = if self.era.is_legacy() { self.insert_legacy_creator(first, last, scope)? } else { self.insert_creator(first, last)? };
        self.creators.insert(key, id);
        Ok(id)
    }

    /// A `creators` row of Zotero 5 and later (shared by all libraries).
    fn insert_creator(&self, first: &str, last: &str) -> rusqlite::Result<i64> {
        let mode = field_mode(first);
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO creators (firstName, lastName, fieldMode) VALUES (?1, ?2, ?3)")?
            .execute(params![first, last, mode])?;
        self.conn
            .prepare_cached("SELECT creatorID FROM creators WHERE firstName = ?1 AND lastName = ?2 AND fieldMode = ?3")?
            .query_row(params![first, last, mode], |r| r.get(0))
    }

    /// A `creatorData` row and the `creators` row of Zotero 4 that uses it.
    fn insert_legacy_creator(&self, first: &str, last: &str, library: Option<i64>) -> rusqlite::Result<i64> {
        self.conn
            .prepare_cached("INSERT INTO creatorData (firstName, lastName, shortName, fieldMode, birthYear) VALUES (?1, ?2, '', ?3, NULL)")?
            .execute(params![first, last, field_mode(first)])?;
        let data_id = self.conn.last_insert_rowid();
        self.conn
            .prepare_cached(
                "INSERT INTO creators (creatorDataID, dateAdded, dateModified, clientDateModified, libraryID, key) \
                 VALUES (?1, ?2, ?2, ?2, ?3, ?4)",
            )?
            .execute(params![data_id, DEFAULT_MODIFIED, library, format!("C{data_id:07}")])?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Tags an item (a manual tag, type 0).
    fn tag_item(&mut self, item: i64, name: &str, library: Option<i64>) -> rusqlite::Result<()> {
        let tag = self.tag_id(name, library)?;
        let sql = if self.era.is_legacy() {
            "INSERT OR IGNORE INTO itemTags (itemID, tagID) VALUES (?1, ?2)"
        } else {
            "INSERT OR IGNORE INTO itemTags (itemID, tagID, type) VALUES (?1, ?2, 0)"
        };
        self.conn.prepare_cached(sql)?.execute(params![item, tag])?;
        Ok(())
    }

    /// The tagID of a tag name (per library in Zotero 4), inserted if new.
    fn tag_id(&mut self, name: &str, library: Option<i64>) -> rusqlite::Result<i64> {
        let scope = if self.era.is_legacy() { library } else { None };
        let key = (name.to_string(), scope);
        if let Some(&id) = self.tags.get(&key) {
            return Ok(id);
        }
        let id = if self.era.is_legacy() { self.insert_legacy_tag(name, scope)? } else { self.insert_tag(name)? };
        self.tags.insert(key, id);
        Ok(id)
    }

    /// A `tags` row of Zotero 5 and later (names shared by all libraries).
    fn insert_tag(&self, name: &str) -> rusqlite::Result<i64> {
        self.conn.prepare_cached("INSERT OR IGNORE INTO tags (name) VALUES (?1)")?.execute(params![name])?;
        self.conn.prepare_cached("SELECT tagID FROM tags WHERE name = ?1")?.query_row(params![name], |r| r.get(0))
    }

    /// A `tags` row of Zotero 4 (per library and type, with a key).
    fn insert_legacy_tag(&self, name: &str, library: Option<i64>) -> rusqlite::Result<i64> {
        let id: i64 = self.conn.query_row("SELECT COALESCE(MAX(tagID), 0) + 1 FROM tags", [], |r| r.get(0))?;
        self.conn
            .prepare_cached(
                "INSERT INTO tags (tagID, name, type, dateAdded, dateModified, clientDateModified, libraryID, key) \
                 VALUES (?1, ?2, 0, ?3, ?3, ?3, ?4, ?5)",
            )?
            .execute(params![id, name, DEFAULT_MODIFIED, library, format!("T{id:07}")])?;
        Ok(id)
    }

    /// An attachment item with its `itemAttachments` row and a title.
    fn add_attachment(&mut self, parent: Option<i64>, key: &str, link_mode: i64, path: &str, title: &str) -> rusqlite::Result<i64> {
        let library = self.child_library(parent)?;
        let item = self.insert_item_row("attachment", key, library, DEFAULT_MODIFIED)?;
        let sql = if self.era.is_legacy() {
            "INSERT INTO itemAttachments (itemID, sourceItemID, linkMode, mimeType, path) VALUES (?1, ?2, ?3, 'application/pdf', ?4)"
        } else {
            "INSERT INTO itemAttachments (itemID, parentItemID, linkMode, contentType, path) VALUES (?1, ?2, ?3, 'application/pdf', ?4)"
        };
        self.conn.execute(sql, params![item, parent, link_mode, path])?;
        if !title.is_empty() {
            self.put_field(item, "title", title)?;
        }
        Ok(item)
    }

    /// The items whose parent is `item` (attachments, notes, annotations).
    fn children(&self, item: i64) -> rusqlite::Result<Vec<i64>> {
        let parent = self.era.parent_column();
        let mut queries = vec![
            format!("SELECT itemID FROM itemAttachments WHERE {parent} = ?1"),
            format!("SELECT itemID FROM itemNotes WHERE {parent} = ?1"),
        ];
        if self.era == Era::Zotero7 {
            queries.push("SELECT itemID FROM itemAnnotations WHERE parentItemID = ?1".to_string());
        }
        let mut ids = Vec::new();
        for sql in queries {
            let mut stmt = self.conn.prepare(&sql)?;
            let rows = stmt.query_map(params![item], |r| r.get::<_, i64>(0))?;
            for id in rows {
                ids.push(id?);
            }
        }
        Ok(ids)
    }
}

/// The schema of an era, as one batch of statements.
fn schema(era: Era) -> String {
    match era {
        Era::Zotero4 => LEGACY_SCHEMA.to_string(),
        Era::Zotero5 => MODERN_SCHEMA.to_string(),
        Era::Zotero7 => format!("{MODERN_SCHEMA}{ANNOTATIONS_SCHEMA}"),
    }
}

/// The version rows, the user library, and the item types, fields and
/// creator types of an era.
fn write_vocabulary(conn: &Connection, era: Era) -> rusqlite::Result<()> {
    conn.execute("INSERT INTO version (schema, version) VALUES ('userdata', ?1)", params![era.userdata_version()])?;
    conn.execute("INSERT INTO version (schema, version) VALUES ('system', 32)", [])?;
    if !era.is_legacy() {
        conn.execute("INSERT INTO libraries (libraryID, type, editable, filesEditable) VALUES (1, 'user', 1, 1)", [])?;
    }
    for (name, id) in era_ids(ITEM_TYPES, era) {
        let display = i64::from(!matches!(name, "attachment" | "note" | "annotation"));
        conn.execute(
            "INSERT INTO itemTypes (itemTypeID, typeName, templateItemTypeID, display) VALUES (?1, ?2, NULL, ?3)",
            params![id, name, display],
        )?;
    }
    for (name, id) in era_ids(FIELDS, era) {
        conn.execute("INSERT INTO fields (fieldID, fieldName, fieldFormatID) VALUES (?1, ?2, NULL)", params![id, name])?;
        if !era.is_legacy() {
            conn.execute(
                "INSERT INTO fieldsCombined (fieldID, fieldName, label, fieldFormatID, custom) VALUES (?1, ?2, NULL, NULL, 0)",
                params![id, name],
            )?;
        }
    }
    for (name, id) in CREATOR_TYPES {
        conn.execute("INSERT INTO creatorTypes (creatorTypeID, creatorType) VALUES (?1, ?2)", params![id, name])?;
    }
    Ok(())
}

/// The (name, id) pairs of a vocabulary table that exist in `era`.
fn era_ids(table: &'static [(&'static str, [Option<i64>; 3])], era: Era) -> impl Iterator<Item = (&'static str, i64)> {
    table.iter().filter_map(move |(name, ids)| ids[era.column()].map(|id| (*name, id)))
}

/// Zotero 4 if table `creatorData` exists, Zotero 7 if a field named
/// `citationKey` exists, else Zotero 5.
fn detect_era(conn: &Connection) -> rusqlite::Result<Era> {
    let legacy: bool =
        conn.query_row("SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'creatorData')", [], |r| r.get(0))?;
    if legacy {
        return Ok(Era::Zotero4);
    }
    let citation_key: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM fields WHERE fieldName = 'citationKey')", [], |r| r.get(0))?;
    Ok(if citation_key { Era::Zotero7 } else { Era::Zotero5 })
}

/// name -> id from a query of (name, id) rows.
fn name_map(conn: &Connection, sql: &str) -> rusqlite::Result<HashMap<String, i64>> {
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| Ok((r.get::<_, Option<String>>(0)?, r.get::<_, i64>(1)?)))?;
    let mut map = HashMap::new();
    for row in rows {
        let (name, id) = row?;
        map.insert(name.unwrap_or_default(), id);
    }
    Ok(map)
}

/// The creators a database holds, keyed as `ZoteroDb::creator_id` keys them.
fn load_creators(conn: &Connection, era: Era) -> rusqlite::Result<HashMap<CreatorKey, i64>> {
    let sql = if era.is_legacy() {
        "SELECT c.creatorID, d.firstName, d.lastName, c.libraryID FROM creators c JOIN creatorData d USING (creatorDataID)"
    } else {
        "SELECT creatorID, firstName, lastName, NULL FROM creators"
    };
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| {
        let first = r.get::<_, Option<String>>(1)?.unwrap_or_default();
        let last = r.get::<_, Option<String>>(2)?.unwrap_or_default();
        let key = (first, last, r.get::<_, Option<i64>>(3)?);
        Ok((key, r.get::<_, i64>(0)?))
    })?;
    let mut map = HashMap::new();
    for row in rows {
        let (key, id) = row?;
        map.insert(key, id);
    }
    Ok(map)
}

/// The tags a database holds, keyed as `ZoteroDb::tag_id` keys them.
fn load_tags(conn: &Connection, era: Era) -> rusqlite::Result<HashMap<TagKey, i64>> {
    let sql = if era.is_legacy() { "SELECT tagID, name, libraryID FROM tags" } else { "SELECT tagID, name, NULL FROM tags" };
    let mut stmt = conn.prepare(sql)?;
    let rows = stmt.query_map([], |r| Ok(((r.get::<_, String>(1)?, r.get::<_, Option<i64>>(2)?), r.get::<_, i64>(0)?)))?;
    let mut map = HashMap::new();
    for row in rows {
        let (key, id) = row?;
        map.insert(key, id);
    }
    Ok(map)
}

/// The field that holds an item type's venue.
fn venue_field(item_type: &str) -> &'static str {
    match item_type {
        "conferencePaper" => "proceedingsTitle",
        "bookSection" => "bookTitle",
        _ => "publicationTitle",
    }
}

/// `fieldMode` of a creator: 1 (one name only) when the first name is empty.
fn field_mode(first: &str) -> i64 {
    i64::from(first.is_empty())
}

/// A `dateModified` as given, or the default when empty.
fn modified_or_default(modified: &str) -> &str {
    if modified.is_empty() {
        DEFAULT_MODIFIED
    } else {
        modified
    }
}

/// A note's title: its first non-empty line, markup removed, at most 120
/// characters.
fn note_title(note: &str) -> String {
    let mut text = String::with_capacity(note.len());
    let mut in_tag = false;
    for c in note.chars() {
        match c {
            '<' => {
                in_tag = true;
                text.push('\n');
            }
            '>' if in_tag => in_tag = false,
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    let line = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or("");
    line.chars().take(120).collect()
}

/// An error of this writer (a missing type or field, an unsupported era).
fn failure(message: impl Into<String>) -> rusqlite::Error {
    let message: String = message.into();
    rusqlite::Error::ToSqlConversionFailure(message.into())
}

/// Better BibTeX's database beside zotero.sqlite (`dir/<file_name>`, Zotero
/// 7 era): rows (itemID, itemKey, libraryID, citationKey) of table
/// `citationkey`, unpinned. `file_name` lets tests write
/// "better-bibtex.sqlite" or "better-bibtex.migrated"; writing again
/// replaces the rows of the same items.
pub fn write_better_bibtex(dir: &Path, file_name: &str, keys: &[(i64, &str, i64, &str)]) -> rusqlite::Result<()> {
    let mut conn = Connection::open(dir.join(file_name))?;
    let tx = conn.transaction()?;
    tx.execute_batch(BETTER_BIBTEX_SCHEMA)?;
    {
        let mut stmt =
            tx.prepare("INSERT OR REPLACE INTO citationkey (itemID, itemKey, libraryID, citationKey, pinned) VALUES (?1, ?2, ?3, ?4, 0)")?;
        for (item, item_key, library, citation_key) in keys {
            stmt.execute(params![item, item_key, library, citation_key])?;
        }
    }
    tx.commit()
}

/// The older Better BibTeX database: `dir/better-bibtex.sqlite` with a table
/// "better-bibtex"(name TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL)
/// holding the row name = 'better-bibtex.citekey', data = a LokiJS
/// collection as JSON (`{"name":"citekey","data":[{"itemID":1,"itemKey":
/// "ABCD2345","libraryID":1,"citekey":"smith2020","pinned":false,"$loki":1,
/// "meta":{...}}, ...], ...}`), beside the row 'better-bibtex' of the
/// database's own metadata, as Better BibTeX wrote them.
pub fn write_better_bibtex_json(dir: &Path, keys: &[(i64, &str, i64, &str)]) -> rusqlite::Result<()> {
    let conn = Connection::open(dir.join("better-bibtex.sqlite"))?;
    conn.execute_batch(r#"CREATE TABLE IF NOT EXISTS "better-bibtex" (name TEXT PRIMARY KEY NOT NULL, data TEXT NOT NULL)"#)?;
    let metadata = serde_json::json!({
        "filename": "better-bibtex",
        "collections": [],
        "databaseVersion": 1.5,
        "engineVersion": 1.5,
        "autosave": false,
        "throttledSaves": true,
    });
    conn.execute(r#"INSERT OR REPLACE INTO "better-bibtex" (name, data) VALUES ('better-bibtex', ?1)"#, params![metadata.to_string()])?;
    conn.execute(
        r#"INSERT OR REPLACE INTO "better-bibtex" (name, data) VALUES ('better-bibtex.citekey', ?1)"#,
        params![loki_citekeys(keys).to_string()],
    )?;
    Ok(())
}

/// Better BibTeX's `citekey` collection as LokiJS serialises it.
fn loki_citekeys(keys: &[(i64, &str, i64, &str)]) -> serde_json::Value {
    let data: Vec<serde_json::Value> = keys
        .iter()
        .enumerate()
        .map(|(index, (item, item_key, library, citekey))| {
            serde_json::json!({
                "itemID": item,
                "itemKey": item_key,
                "libraryID": library,
                "citekey": citekey,
                "pinned": false,
                "$loki": index + 1,
                "meta": {"revision": 0, "created": 0, "version": 0},
            })
        })
        .collect();
    let id_index: Vec<usize> = (1..=keys.len()).collect();
    serde_json::json!({
        "name": "citekey",
        "data": data,
        "idIndex": id_index,
        "binaryIndices": {},
        "uniqueNames": [],
        "transforms": {},
        "objType": "citekey",
        "dirty": false,
        "maxId": keys.len(),
    })
}

/// A synthetic library of `papers.len()` journal articles made from papers
/// (title, abstract, year → date "YYYY-00-00 YYYY", authors split into
/// first/last at the last space, DOI, venue, URL), keys "P0000001"-style
/// (8 characters, unique), in one transaction, with one collection
/// "Synthetic" holding every tenth item and two tags on each ("synthetic"
/// and "topic-NN"). Returns the ZoteroDb.
pub fn synthetic(dir: &Path, era: Era, papers: &[Paper]) -> rusqlite::Result<ZoteroDb> {
    let mut db = ZoteroDb::create(dir, era)?;
    db.batch(|db| {
        let collection = db.add_collection("Synthetic", None, "SYNTHCOL")?;
        for (index, paper) in papers.iter().enumerate() {
            let item = db.add_item(&synthetic_item(index, paper))?;
            if index % 10 == 0 {
                db.add_to_collection(collection, item)?;
            }
        }
        Ok(())
    })?;
    Ok(db)
}

/// The journal article `synthetic` writes for the `index`-th paper.
fn synthetic_item(index: usize, paper: &Paper) -> NewItem {
    NewItem {
        key: format!("P{:07}", index + 1),
        item_type: "journalArticle".to_string(),
        title: paper.title.clone(),
        abstract_note: paper.abstract_text.clone(),
        date: paper.year.map(|year| format!("{year}-00-00 {year}")).unwrap_or_default(),
        venue: paper.venue.clone(),
        doi: paper.doi.clone(),
        url: paper.url.clone(),
        creators: paper.authors.iter().map(|name| split_name(name)).collect(),
        tags: vec!["synthetic".to_string(), format!("topic-{:02}", index % 50)],
        ..NewItem::default()
    }
}

/// "Given Family" -> ("Given", "Family"), split at the last space; a single
/// name is a last name.
fn split_name(name: &str) -> (String, String) {
    match name.trim().rsplit_once(' ') {
        Some((first, last)) => (first.trim().to_string(), last.to_string()),
        None => (String::new(), name.trim().to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn article(key: &str) -> NewItem {
        NewItem {
            key: key.to_string(),
            item_type: "journalArticle".to_string(),
            title: "Attention Is All You Need".to_string(),
            date: "2017-00-00 2017".to_string(),
            venue: "NeurIPS".to_string(),
            creators: vec![("Ashish".to_string(), "Vaswani".to_string()), ("Noam".to_string(), "Shazeer".to_string())],
            tags: vec!["transformers".to_string()],
            ..NewItem::default()
        }
    }

    #[test]
    fn zotero7_item_with_creators_collection_and_stored_pdf() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ZoteroDb::create(dir.path(), Era::Zotero7).unwrap();
        let item = db.add_item(&article("ABCD2345")).unwrap();
        let collection = db.add_collection("Reading", None, "COLL2345").unwrap();
        db.add_to_collection(collection, item).unwrap();
        let pdf = db.add_stored_pdf(Some(item), "PDFK2345", "x.pdf").unwrap();
        let conn = db.connection();

        let items: i64 = conn.query_row("SELECT COUNT(*) FROM items", [], |r| r.get(0)).unwrap();
        assert_eq!(items, 2);
        let orders: Vec<(String, i64)> = conn
            .prepare(
                "SELECT c.lastName, ic.orderIndex FROM itemCreators ic JOIN creators c USING (creatorID) \
                 WHERE ic.itemID = ?1 ORDER BY ic.orderIndex",
            )
            .unwrap()
            .query_map(params![item], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(orders, vec![("Vaswani".to_string(), 0), ("Shazeer".to_string(), 1)]);
        let (path, parent): (String, i64) = conn
            .query_row("SELECT path, parentItemID FROM itemAttachments WHERE itemID = ?1", params![pdf], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!((path.as_str(), parent), ("storage:x.pdf", item));
        let tag: String = conn
            .query_row("SELECT t.name FROM itemTags it JOIN tags t USING (tagID) WHERE it.itemID = ?1", params![item], |r| r.get(0))
            .unwrap();
        assert_eq!(tag, "transformers");
        let member: i64 =
            conn.query_row("SELECT itemID FROM collectionItems WHERE collectionID = ?1", params![collection], |r| r.get(0)).unwrap();
        assert_eq!(member, item);
        let type_name: String = conn
            .query_row("SELECT typeName FROM items JOIN itemTypes USING (itemTypeID) WHERE itemID = ?1", params![item], |r| r.get(0))
            .unwrap();
        assert_eq!(type_name, "journalArticle");
        assert!(dir.path().join("storage").is_dir());
        drop(db);
        assert_eq!(ZoteroDb::open(dir.path()).unwrap().era(), Era::Zotero7);
    }

    #[test]
    fn zotero4_creator_through_creator_data_in_null_library() {
        let dir = tempfile::tempdir().unwrap();
        let mut db = ZoteroDb::create(dir.path(), Era::Zotero4).unwrap();
        let item = db.add_item(&article("ABCD2345")).unwrap();
        let conn = db.connection();

        let first_author: String = conn
            .query_row(
                "SELECT d.lastName FROM itemCreators ic JOIN creators c USING (creatorID) JOIN creatorData d USING (creatorDataID) \
                 WHERE ic.itemID = ?1 AND ic.orderIndex = 0",
                params![item],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(first_author, "Vaswani");
        let in_user_library: bool =
            conn.query_row("SELECT libraryID IS NULL FROM items WHERE itemID = ?1", params![item], |r| r.get(0)).unwrap();
        assert!(in_user_library);
        let title: String = conn
            .query_row(
                "SELECT v.value FROM itemData d JOIN fields f USING (fieldID) JOIN itemDataValues v USING (valueID) \
                 WHERE d.itemID = ?1 AND f.fieldName = 'title'",
                params![item],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(title, "Attention Is All You Need");
        drop(db);
        assert_eq!(ZoteroDb::open(dir.path()).unwrap().era(), Era::Zotero4);
    }
}
