//! Where an item's citation key comes from, in the order Zotero's own
//! history put it: Zotero's native `citationKey` field (Zotero 7–8; Better
//! BibTeX moved its keys there), Better BibTeX's `better-bibtex.sqlite`
//! (`citationkey` table, Zotero 7), the same file renamed
//! `better-bibtex.migrated` after the move (keys a migration lost are
//! still there), the older Better BibTeX JSON table, a `Citation Key: …`
//! line in Extra. The caller generates one when none of them has it.

use std::collections::HashMap;
use std::path::Path;

use rusqlite::Connection;
use serde::{Deserialize, Serialize};

use super::snapshot::copy_and_open;

/// Where a citation key was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeySource {
    /// Zotero's own `citationKey` field.
    Native,
    /// `better-bibtex.sqlite`, table `citationkey`.
    BetterBibtex,
    /// `better-bibtex.migrated`: Better BibTeX's database after Zotero 8 took the keys over.
    BetterBibtexMigrated,
    /// An older Better BibTeX's JSON table.
    BetterBibtexJson,
    /// A `Citation Key: …` line in the item's Extra field.
    Extra,
    /// Made by citewise from the configured `key_style`.
    Generated,
}

impl KeySource {
    pub fn name(self) -> &'static str {
        match self {
            KeySource::Native => "zotero",
            KeySource::BetterBibtex => "better-bibtex",
            KeySource::BetterBibtexMigrated => "better-bibtex-migrated",
            KeySource::BetterBibtexJson => "better-bibtex-json",
            KeySource::Extra => "extra",
            KeySource::Generated => "generated",
        }
    }
}

/// Better BibTeX's keys, by (library, item key).
#[derive(Debug, Default)]
pub struct BetterBibtexKeys {
    by_item: HashMap<(i64, String), (String, KeySource)>,
    pub notes: Vec<String>,
    /// A Better BibTeX database is there but did not read (its keys are
    /// unknown this time, not gone).
    pub failed: bool,
}

impl BetterBibtexKeys {
    /// Reads every Better BibTeX database in `dir` (a copy of each: Zotero
    /// holds them open too). One that does not read is a note.
    pub fn read(dir: &Path) -> BetterBibtexKeys {
        let mut keys = BetterBibtexKeys::default();
        // Later sources fill only what earlier ones lack.
        for (name, source) in
            [("better-bibtex.sqlite", KeySource::BetterBibtex), ("better-bibtex.migrated", KeySource::BetterBibtexMigrated)]
        {
            let file = dir.join(name);
            if file.symlink_metadata().is_err() {
                continue; // not there (one that is there but no file is said below)
            }
            match copy_and_open(&file) {
                Ok(copy) => {
                    keys.notes.extend(copy.torn.clone());
                    if has_table(&copy.conn, "citationkey") {
                        keys.read_table(&copy.conn, source, &file);
                    }
                    if has_table(&copy.conn, "better-bibtex") {
                        keys.read_json(&copy.conn, &file);
                    }
                }
                Err(e) => {
                    keys.failed = true;
                    keys.notes.push(format!("Better BibTeX's keys not read: {e}"));
                }
            }
        }
        keys
    }

    pub fn get(&self, library: i64, item_key: &str) -> Option<&(String, KeySource)> {
        self.by_item.get(&(library, item_key.to_string()))
    }

    pub fn len(&self) -> usize {
        self.by_item.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_item.is_empty()
    }

    fn add(&mut self, library: i64, item_key: String, key: String, source: KeySource) {
        let key = key.trim().to_string();
        if !key.is_empty() && !item_key.is_empty() {
            self.by_item.entry((library, item_key)).or_insert((key, source));
        }
    }

    fn read_table(&mut self, conn: &Connection, source: KeySource, file: &Path) {
        let rows = conn.prepare("SELECT COALESCE(libraryID, 1), itemKey, citationKey FROM citationkey").and_then(|mut s| {
            s.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?)))?.collect::<Result<Vec<_>, _>>()
        });
        match rows {
            Ok(rows) => rows.into_iter().for_each(|(l, i, k)| self.add(l, i, k, source)),
            Err(e) => {
                self.failed = true;
                self.notes.push(format!("{}: table citationkey not read ({e})", file.display()));
            }
        }
    }

    /// The older layout: rows of JSON (LokiJS collections); the one named
    /// `citekey` holds `{itemID, itemKey, libraryID, citekey}` objects.
    fn read_json(&mut self, conn: &Connection, file: &Path) {
        let rows = conn
            .prepare("SELECT name, data FROM \"better-bibtex\"")
            .and_then(|mut s| s.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?.collect::<Result<Vec<_>, _>>());
        let rows = match rows {
            Ok(r) => r,
            Err(e) => {
                self.failed = true;
                return self.notes.push(format!("{}: table better-bibtex not read ({e})", file.display()));
            }
        };
        for (name, data) in rows {
            if !name.ends_with("citekey") {
                continue;
            }
            let Ok(value) = serde_json::from_str::<serde_json::Value>(&data) else {
                self.notes.push(format!("{}: row {name} is not JSON", file.display()));
                continue;
            };
            let entries = value.get("data").and_then(|d| d.as_array()).cloned().unwrap_or_default();
            for e in entries {
                let text = |k: &str| e.get(k).and_then(|v| v.as_str()).map(str::to_string);
                let (Some(item), Some(key)) = (text("itemKey"), text("citekey").or_else(|| text("citationKey"))) else { continue };
                let library = e.get("libraryID").and_then(|v| v.as_i64()).unwrap_or(USER_LIBRARY);
                self.add(library, item, key, KeySource::BetterBibtexJson);
            }
        }
    }
}

/// The user's own library (Zotero 4 wrote it as NULL; Zotero 5 on, and
/// Better BibTeX, as 1).
pub const USER_LIBRARY: i64 = 1;

/// Whether the database has a table of that name.
pub fn has_table(conn: &Connection, name: &str) -> bool {
    conn.query_row("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", [name], |_| Ok(())).is_ok()
}

/// The key a `Citation Key: …` line (or Better BibTeX's older `bibtex: …`)
/// in Extra gives.
pub fn key_in_extra(extra: &str) -> Option<String> {
    extra.lines().find_map(|line| {
        let (name, value) = line.split_once(':')?;
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim();
        let key_like = !value.is_empty() && !value.contains(char::is_whitespace);
        (key_like && (name == "citation key" || name == "bibtex")).then(|| value.to_string())
    })
}

/// The value of a `Name: value` line of Extra (`DOI: …` for item types
/// without a DOI field).
pub fn extra_field(extra: &str, name: &str) -> Option<String> {
    extra.lines().find_map(|line| {
        let (n, value) = line.split_once(':')?;
        (n.trim().eq_ignore_ascii_case(name) && !value.trim().is_empty()).then(|| value.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extra_names_a_key_and_fields() {
        assert_eq!(key_in_extra("PMID: 1\nCitation Key: smith2020deep\n").as_deref(), Some("smith2020deep"));
        assert_eq!(key_in_extra("bibtex: old2001").as_deref(), Some("old2001"));
        assert_eq!(key_in_extra("Citation Key: two words"), None);
        assert_eq!(key_in_extra("original-date: 2001"), None);
        assert_eq!(extra_field("DOI: 10.1/ABC\n", "doi").as_deref(), Some("10.1/ABC"));
    }
}
