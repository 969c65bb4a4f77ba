//! `import --zotero`: the shared real Zotero 7 database, and databases of
//! every schema era and key source written by `testbed::zotero_db`; PDFs as
//! evidence of their parent item; re-imports that touch only what changed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::path::{Path, PathBuf};

use citewise::corpus::zotero::{Era, KeySource};
use citewise::corpus::Paper;
use citewise::library::zotero::{sync, ZoteroOptions, ZoteroState, ZoteroSummary};
use citewise::library::Library;
use citewise::testbed::zotero_db::{self, NewItem, ZoteroDb};

/// C10-2104 (a real ACL PDF) cites C02-1025.
const CITING_TITLE: &str = "Kernel-based Reranking for Named-Entity Extraction";
const CITED_TITLE: &str = "Named Entity Recognition: A Maximum Entropy Approach Using Global Information";

fn make_key(p: &Paper) -> String {
    citewise::export::keys::make_key(citewise::export::keys::KeyStyle::AuthorYearFirstword)(p)
}

fn run(lib: &Library, dir: &Path, options: &ZoteroOptions) -> ZoteroSummary {
    sync(lib, dir, options, &make_key).unwrap()
}

fn item(key: &str, title: &str, last: &str, date: &str) -> NewItem {
    NewItem {
        key: key.into(),
        item_type: "journalArticle".into(),
        title: title.into(),
        abstract_note: format!("An abstract of {title}."),
        date: date.into(),
        creators: vec![("Ann".into(), last.into()), ("Bo".into(), "Second".into())],
        ..NewItem::default()
    }
}

fn papers(lib: &Library) -> Vec<Paper> {
    let mut out = Vec::new();
    lib.papers()
        .for_each_paper(&mut |p| {
            out.push(p);
            Ok(())
        })
        .unwrap();
    out.sort_by(|a, b| a.title.cmp(&b.title));
    out
}

fn by_title(lib: &Library, title: &str) -> Option<Paper> {
    papers(lib).into_iter().find(|p| p.title == title)
}

fn sha(path: &Path) -> u64 {
    citewise::util::fnv1a64(&std::fs::read(path).unwrap())
}

/// The shared real database: five articles with DOIs, abstracts, years,
/// authors in order and their collection; Zotero's file is byte-identical
/// afterwards; a second import changes nothing.
#[test]
fn the_real_zotero_7_database_imports_whole_and_untouched() {
    let Some(shared) = common::shared_or_fail("the Zotero database in ../shared") else { return };
    let data = shared.join("data/zotero/unlicense-zotero7");
    let before = sha(&data.join("zotero.sqlite"));
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!(sha(&data.join("zotero.sqlite")), before, "zotero.sqlite is byte-identical");
    assert_eq!((s.era, s.items, s.added), (Some(Era::Zotero7), 5, 5));
    assert_eq!(s.pdfs_missing.len(), 3, "three PDF attachments, no files: {:?}", s.pdfs_missing);
    assert!(s.pdfs_missing.iter().all(|m| m.contains("storage/") && m.contains(".pdf")), "{:?}", s.pdfs_missing);
    let all = papers(&lib);
    assert_eq!(all.len(), 5);
    for p in &all {
        assert!(p.id.starts_with("doi:10.") && !p.doi.is_empty(), "{p:?}");
        assert!(p.abstract_text.split_whitespace().count() > 50, "{}", p.title);
        assert_eq!(p.entry_type, "article");
        let z = p.zotero.as_ref().unwrap();
        assert_eq!(z.collections, ["Boron-Nitride"]);
        assert_eq!(z.key_source, "generated");
        assert!(!p.key.is_empty());
    }
    let kaur = all.iter().find(|p| p.doi == "10.1016/j.apsusc.2021.149982").unwrap();
    assert_eq!(kaur.year, Some(2021));
    assert_eq!(kaur.authors.len(), 9);
    assert!(
        kaur.authors[0].ends_with("Kaur")
            && kaur.authors[1].ends_with("Ahmad Mir")
            && kaur.authors[7] == "O. P. Pandey"
            && kaur.authors[8] == "Akshay Kumar",
        "{:?}",
        kaur.authors
    );
    assert_eq!(kaur.venue, "Applied Surface Science");
    let moon = all.iter().find(|p| p.doi == "10.1002/adma.202204161").unwrap();
    assert_eq!(moon.year, Some(2023), "`2023-00-00 2023`: month and day unknown");
    let keys: Vec<String> = all.iter().map(|p| p.key.clone()).collect();

    let again = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((again.added, again.updated, again.unchanged, again.removed), (0, 0, 5, 0));
    assert_eq!(papers(&lib).iter().map(|p| p.key.clone()).collect::<Vec<_>>(), keys, "keys are stable across imports");
    assert_eq!(sha(&data.join("zotero.sqlite")), before);
}

/// Zotero running holds its database under an exclusive lock; the import
/// reads a copy, so it works all the same (and writes nothing).
#[test]
fn a_database_zotero_holds_locked_still_imports() {
    let Some(shared) = common::shared_or_fail("the Zotero database in ../shared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    std::fs::create_dir_all(&data).unwrap();
    std::fs::copy(shared.join("data/zotero/unlicense-zotero7/zotero.sqlite"), data.join("zotero.sqlite")).unwrap();
    let zotero = rusqlite::Connection::open(data.join("zotero.sqlite")).unwrap();
    zotero.execute_batch("PRAGMA locking_mode = EXCLUSIVE; BEGIN EXCLUSIVE;").unwrap();
    let before = sha(&data.join("zotero.sqlite"));
    let other = rusqlite::Connection::open(data.join("zotero.sqlite")).unwrap();
    assert!(other.query_row("SELECT count(*) FROM items", [], |r| r.get::<_, i64>(0)).is_err(), "the lock holds off other connections");
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!(s.added, 5);
    assert_eq!(sha(&data.join("zotero.sqlite")), before);
    zotero.execute_batch("COMMIT").unwrap();
}

/// A Zotero data directory with a real ACL PDF attached to its item:
/// the PDF's citing sentences become evidence whose citing paper is the
/// parent item (no title matching), citing the other item.
fn pdf_library(dir: &Path, shared: &Path, era: Era) -> (PathBuf, ZoteroDb) {
    let data = dir.join("Zotero");
    let mut db = ZoteroDb::create(&data, era).unwrap();
    let citing = db
        .add_item(&NewItem { doi: "10.5555/citing".into(), ..item("CITING01", CITING_TITLE, "Nguyen", "2010-08-00 August 2010") })
        .unwrap();
    db.add_item(&NewItem { item_type: "conferencePaper".into(), ..item("CITED001", CITED_TITLE, "Chieu", "2002-00-00 2002") }).unwrap();
    db.add_stored_pdf(Some(citing), "ATTACH01", "Nguyen - 2010 - Kernel.pdf").unwrap();
    std::fs::create_dir_all(data.join("storage/ATTACH01")).unwrap();
    std::fs::copy(shared.join("data/pdf/C02-1025/C10-2104.pdf"), data.join("storage/ATTACH01/Nguyen - 2010 - Kernel.pdf")).unwrap();
    (data, db)
}

/// `import --zotero` whose PDFs brought citing sentences goes on to learn
/// the evidence trust from them, as `import --evidence` does (here one
/// document: too few, and it says so); an unchanged sync does not.
#[test]
fn a_zotero_import_that_read_pdfs_learns_the_evidence_trust() {
    let Some(shared) = common::shared_or_fail("the ACL PDFs in ../shared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (data, db) = pdf_library(dir.path(), &shared, Era::Zotero7);
    drop(db);
    let lib = dir.path().join("lib");
    let import = || {
        let o = common::citewise_command()
            .args(["--library", lib.to_str().unwrap(), "import", "--zotero"])
            .arg(&data)
            .env("CITEWISE_MODELS", dir.path().join("no-models"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
    };
    let (out, err) = import();
    assert!(err.contains("learning how far to trust the evidence"), "{err}");
    assert!(out.contains("citing sentences from 1 documents are too few to learn from"), "{out}");
    let (out, err) = import();
    assert!(!err.contains("learning how far") && !out.contains("evidence trusted"), "nothing new: {out}{err}");
}

#[test]
fn attached_pdfs_are_evidence_of_their_parent_and_leave_with_it() {
    let Some(shared) = common::shared_or_fail("the ACL PDFs in ../shared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (data, mut db) = pdf_library(dir.path(), &shared, Era::Zotero7);
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((s.added, s.pdfs_read), (2, 1), "{s:?}");
    let citing = by_title(&lib, CITING_TITLE).unwrap();
    let cited = by_title(&lib, CITED_TITLE).unwrap();
    let evidence = lib.citances().citing(&cited.id).unwrap();
    assert!(!evidence.is_empty(), "the PDF's citations of Chieu and Ng (2002) are evidence");
    assert!(evidence.iter().all(|c| c.citing.id == citing.id), "citing paper: the parent item {:?}", evidence[0].citing);
    assert!(
        evidence.iter().any(|c| c.sentence.contains("global features")),
        "{:?}",
        evidence.iter().map(|c| &c.sentence).collect::<Vec<_>>()
    );

    // Nothing changed: nothing is read again.
    let again = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((again.unchanged, again.pdfs_read, again.pdfs_removed), (2, 0, 0), "{again:?}");

    // The parent's DOI changes: its record keeps its id (what evidence
    // names it by), and the PDF, unchanged, is not read again.
    let id = db.item_id("CITING01").unwrap();
    db.set_field(id, "DOI", "10.5555/moved", "2030-01-01 00:00:00").unwrap();
    let moved = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((moved.updated, moved.pdfs_read), (1, 0), "{moved:?}");
    let after = by_title(&lib, CITING_TITLE).unwrap();
    assert_eq!((after.id.as_str(), after.doi.as_str()), (citing.id.as_str(), "10.5555/moved"));

    // The parent goes to the trash: its record and its PDF's evidence leave.
    db.trash(id).unwrap();
    let trashed = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((trashed.removed, trashed.pdfs_removed, trashed.unchanged), (1, 1, 1), "{trashed:?}");
    assert!(by_title(&lib, CITING_TITLE).is_none());
    assert!(lib.citances().citing(&cited.id).unwrap().is_empty(), "its evidence is gone");
    assert!(lib.papers().paper_by_id(&citing.id).unwrap().is_none());
}

/// Zotero 4: names in `creatorData`, attachments' parents in
/// `sourceItemID`, user items in library NULL, no native keys.
#[test]
fn zotero_4_databases_read_like_the_others() {
    let Some(shared) = common::shared_or_fail("the ACL PDFs in ../shared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (data, mut db) = pdf_library(dir.path(), &shared, Era::Zotero4);
    let tagged = db
        .add_item(&NewItem { tags: vec!["ner".into(), "to read".into()], ..item("TAGGED01", "A Tagged Paper", "Tagger", "1999") })
        .unwrap();
    let parent = db.add_collection("Thesis", None, "COLL0001").unwrap();
    let child = db.add_collection("Chapter 2", Some(parent), "COLL0002").unwrap();
    db.add_to_collection(child, tagged).unwrap();
    db.add_note(Some(tagged), "NOTE0001", "<p>a note is not a paper</p>").unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((s.era, s.items, s.pdfs_read), (Some(Era::Zotero4), 3, 1), "{s:?}");
    let p = by_title(&lib, "A Tagged Paper").unwrap();
    let tagged_id = p.id.clone();
    assert_eq!(p.authors, ["Ann Tagger", "Bo Second"]);
    assert_eq!(p.year, Some(1999));
    assert_eq!(p.keywords, ["ner", "to read"], "tags are searchable keywords");
    let z = p.zotero.unwrap();
    assert_eq!(z.collections, ["Thesis/Chapter 2"]);
    assert_eq!(z.item, "1/TAGGED01", "Zotero 4's user library (NULL) is library 1, as Zotero 5 on calls it");
    let cited = by_title(&lib, CITED_TITLE).unwrap();
    let citing = by_title(&lib, CITING_TITLE).unwrap();
    assert_eq!(cited.entry_type, "inproceedings");
    assert!(lib.citances().citing(&cited.id).unwrap().iter().all(|c| c.citing.id == citing.id));
    assert!(!lib.citances().citing(&cited.id).unwrap().is_empty());
    // A search finds a paper by its tag.
    let hits = lib.papers().search("ner", 5).unwrap();
    let ids = lib.papers().ids(&lib.papers().searcher(), hits.iter().map(|h| h.doc)).unwrap();
    assert_eq!(ids, [tagged_id]);
}

/// Zotero 5–6: no native keys; a linked PDF, a standalone PDF, a group
/// library, a `--collection` import.
#[test]
fn linked_and_standalone_pdfs_groups_and_one_collection() {
    let Some(shared) = common::shared_or_fail("the ACL PDFs in ../shared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero5).unwrap();
    let citing = db.add_item(&item("CITING01", CITING_TITLE, "Nguyen", "2010")).unwrap();
    db.add_item(&item("CITED001", CITED_TITLE, "Chieu", "2002")).unwrap();
    let elsewhere = dir.path().join("papers elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    std::fs::copy(shared.join("data/pdf/C02-1025/C10-2104.pdf"), elsewhere.join("nguyen.pdf")).unwrap();
    db.add_linked_pdf(Some(citing), "LINKED01", &elsewhere.join("nguyen.pdf")).unwrap();
    db.add_linked_pdf(Some(citing), "LINKED02", &elsewhere.join("gone.pdf")).unwrap();
    // Relative to the linked attachment base directory: read from inside it only.
    db.add_linked_pdf(Some(citing), "RELATIV1", Path::new("attachments:nguyen.pdf")).unwrap();
    db.add_linked_pdf(Some(citing), "RELATIV2", Path::new("attachments:../../../etc/passwd.pdf")).unwrap();
    // A standalone PDF: identified by its first page, as `import --evidence` does.
    db.add_stored_pdf(None, "ALONE001", "C02-1025.pdf").unwrap();
    std::fs::create_dir_all(data.join("storage/ALONE001")).unwrap();
    std::fs::copy(shared.join("data/pdf/C02-1025/C02-1025.pdf"), data.join("storage/ALONE001/C02-1025.pdf")).unwrap();
    // A stored name that climbs out of its folder is refused.
    db.add_stored_pdf(Some(citing), "CLIMBS01", "../../../../etc/passwd.pdf").unwrap();
    std::fs::create_dir_all(data.join("storage/CLIMBS01")).unwrap();
    let group = db.add_group("Lab").unwrap();
    let in_group =
        db.add_item(&NewItem { library_id: Some(group), ..item("GROUP001", "A Paper of the Group", "Grouper", "2020") }).unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let with_base = ZoteroOptions { attachment_base: Some(elsewhere.clone()), ..ZoteroOptions::default() };
    let s = run(&lib, &data, &with_base);
    assert_eq!((s.era, s.items, s.pdfs_read), (Some(Era::Zotero5), 3, 2), "one file linked twice is read once: {s:?}");
    assert_eq!(s.pdfs_missing.len(), 3, "{:?}", s.pdfs_missing);
    assert!(s.pdfs_missing.iter().filter(|m| m.contains("outside")).count() == 2, "{:?}", s.pdfs_missing);
    assert!(
        s.pdfs_missing.iter().any(|m| m.contains("gone.pdf")) && s.pdfs_missing.iter().any(|m| m.contains("outside")),
        "{:?}",
        s.pdfs_missing
    );
    let cited = by_title(&lib, CITED_TITLE).unwrap();
    let citing_id = by_title(&lib, CITING_TITLE).unwrap().id;
    assert!(lib.citances().citing(&cited.id).unwrap().iter().any(|c| c.citing.id == citing_id));
    assert_eq!(by_title(&lib, "A Paper of the Group").unwrap().zotero.unwrap().item, format!("{group}/GROUP001"));

    // One collection: the others leave.
    let c = db.add_collection("Reading", None, "COLLREAD").unwrap();
    db.add_to_collection(c, in_group).unwrap();
    let only = run(&lib, &data, &ZoteroOptions { collection: Some("reading".into()), ..ZoteroOptions::default() });
    assert_eq!((only.items, only.removed), (1, 2), "{only:?}");
    assert_eq!(papers(&lib).len(), 1);
    let err = sync(&lib, &data, &ZoteroOptions { collection: Some("nope".into()), ..ZoteroOptions::default() }, &make_key).unwrap_err();
    assert!(err.to_string().contains("no collection named `nope`"), "{err}");
}

/// Every key source, in order: native field, Better BibTeX's database, its
/// migrated copy, the older JSON table, Extra, then a made key that stays.
#[test]
fn citation_keys_come_from_every_source_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    let native =
        db.add_item(&NewItem { citation_key: "native2020".into(), ..item("NATIVE01", "Native Key Paper", "Native", "2020") }).unwrap();
    db.add_item(&item("BBTKEY01", "Better BibTeX Paper", "Better", "2019")).unwrap();
    db.add_item(&item("MIGRAT01", "Migrated Paper", "Migrant", "2018")).unwrap();
    db.add_item(&item("EXTRA001", "Extra Paper", "Extra", "2017")).unwrap();
    let made = db.add_item(&item("NOKEY001", "Keyless Paper", "Keyless", "2016")).unwrap();
    db.add_item(&NewItem { extra: "Citation Key: fromextra2017".into(), ..item("EXTRA002", "Extra Paper Two", "Extra", "2017") }).unwrap();
    zotero_db::write_better_bibtex(&data, "better-bibtex.sqlite", &[(2, "BBTKEY01", 1, "bbt2019"), (1, "NATIVE01", 1, "shadowed")])
        .unwrap();
    zotero_db::write_better_bibtex(&data, "better-bibtex.migrated", &[(3, "MIGRAT01", 1, "migrated2018"), (2, "BBTKEY01", 1, "older")])
        .unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!(s.added, 6);
    let key = |title: &str| {
        let p = by_title(&lib, title).unwrap();
        (p.key.clone(), p.zotero.unwrap().key_source)
    };
    assert_eq!(key("Native Key Paper"), ("native2020".into(), "zotero".into()));
    assert_eq!(key("Better BibTeX Paper"), ("bbt2019".into(), "better-bibtex".into()));
    assert_eq!(key("Migrated Paper"), ("migrated2018".into(), "better-bibtex-migrated".into()));
    assert_eq!(key("Extra Paper Two"), ("fromextra2017".into(), "extra".into()));
    assert_eq!(key("Keyless Paper"), ("keyless2016keyless".into(), "generated".into()));
    assert_eq!(key("Extra Paper").1, "generated");
    assert_eq!(s.key_sources[KeySource::Generated.name()], 2);
    assert_eq!(lib.papers().paper_by_key("bbt2019").unwrap().unwrap().title, "Better BibTeX Paper");

    // A made key stays the item's key when the item changes (a new title
    // would make another); a key set in Zotero replaces it, and drafts
    // citing the old key find the paper by it.
    db.set_field(made, "title", "Keyless Paper, Revised", "2025-01-01 00:00:00").unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((s.updated, s.unchanged), (1, 5), "only the changed item is read: {s:?}");
    assert_eq!(key("Keyless Paper, Revised").0, "keyless2016keyless");
    db.set_field(native, "citationKey", "renamed2020", "2025-01-02 00:00:00").unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!(s.renamed, [("native2020".to_string(), "renamed2020".to_string())]);
    let p = lib.papers().paper_by_former_key("native2020").unwrap().unwrap();
    assert_eq!(p.key, "renamed2020");
    assert!(lib.papers().paper_by_key("native2020").unwrap().is_none(), "the old key is no paper's key now");
    assert_eq!(papers(&lib).len(), 6, "a renamed key replaces the record, not adds one");
}

/// The older Better BibTeX: keys in a JSON row of table `better-bibtex`.
#[test]
fn older_better_bibtex_json_keys_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero5).unwrap();
    db.add_item(&item("JSONKEY1", "A Paper Keyed in JSON", "Json", "2015")).unwrap();
    zotero_db::write_better_bibtex_json(&data, &[(1, "JSONKEY1", 1, "json2015paper")]).unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    run(&lib, &data, &ZoteroOptions::default());
    let p = by_title(&lib, "A Paper Keyed in JSON").unwrap();
    assert_eq!((p.key.as_str(), p.zotero.unwrap().key_source.as_str()), ("json2015paper", "better-bibtex-json"));
}

/// Retracted items carry the flag; trashed ones and notes are no papers;
/// the state says where the library came from.
#[test]
fn retractions_trash_and_the_state_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    let bad = db.add_item(&item("RETRACT1", "A Retracted Paper", "Fraud", "2011")).unwrap();
    db.retract(bad).unwrap();
    let binned = db.add_item(&item("TRASHED1", "A Trashed Paper", "Bin", "2012")).unwrap();
    db.trash(binned).unwrap();
    db.add_note(None, "NOTE0001", "a standalone note").unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!(s.items, 1);
    assert!(by_title(&lib, "A Retracted Paper").unwrap().retracted);
    let state = ZoteroState::load(&dir.path().join("lib")).unwrap().unwrap();
    assert_eq!((state.era, state.items.len()), (Some(Era::Zotero7), 1));
    assert_eq!(state.dir, data);
    // Not a Zotero directory: a clear error naming it.
    let err = sync(&lib, dir.path(), &ZoteroOptions::default(), &make_key).unwrap_err().to_string();
    assert!(err.contains("not a Zotero data directory"), "{err}");
}

/// What Zotero and Better BibTeX change without touching an item's
/// `dateModified` (collection membership, retraction, Better BibTeX's key)
/// is read on the next import all the same.
#[test]
fn changes_that_leave_date_modified_alone_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    db.add_item(&item("KEYEDBB1", "A Paper Keyed by Better BibTeX", "Better", "2019")).unwrap();
    let filed = db.add_item(&item("FILEDLAT", "A Paper Filed Later", "Later", "2018")).unwrap();
    zotero_db::write_better_bibtex(&data, "better-bibtex.sqlite", &[(1, "KEYEDBB1", 1, "bbtold2019")]).unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    run(&lib, &data, &ZoteroOptions::default());
    assert_eq!(by_title(&lib, "A Paper Keyed by Better BibTeX").unwrap().key, "bbtold2019");

    let c = db.add_collection("Reading", None, "COLLREAD").unwrap();
    db.add_to_collection(c, filed).unwrap();
    db.retract(filed).unwrap();
    zotero_db::write_better_bibtex(&data, "better-bibtex.sqlite", &[(1, "KEYEDBB1", 1, "bbtnew2019")]).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((s.updated, s.unchanged), (2, 0), "{s:?}");
    assert_eq!(s.renamed, [("bbtold2019".to_string(), "bbtnew2019".to_string())]);
    let p = by_title(&lib, "A Paper Filed Later").unwrap();
    assert!(p.retracted);
    assert_eq!(p.zotero.unwrap().collections, ["Reading"]);
    assert_eq!(lib.papers().paper_by_former_key("bbtold2019").unwrap().unwrap().key, "bbtnew2019");
}

/// Zotero in the middle of a transaction (its exclusive lock held, pages
/// already written into the file, the rollback journal hot): the import
/// sees the database as last committed, never the half-written one.
#[test]
fn a_transaction_in_progress_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    db.add_item(&item("COMMITTD", "A Committed Paper", "Done", "2020")).unwrap();
    drop(db);
    let zotero = rusqlite::Connection::open(data.join("zotero.sqlite")).unwrap();
    zotero.execute_batch("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = DELETE; PRAGMA cache_size = 10; BEGIN;").unwrap();
    let article: i64 = zotero.query_row("SELECT itemTypeID FROM itemTypes WHERE typeName = 'journalArticle'", [], |r| r.get(0)).unwrap();
    // More than the page cache holds: SQLite spills pages into the file before the commit.
    for n in 0..3000 {
        zotero
            .execute("INSERT INTO items (itemTypeID, libraryID, key) VALUES (?1, 1, ?2)", rusqlite::params![article, format!("U{n:07}")])
            .unwrap();
        zotero.execute("INSERT INTO itemDataValues (value) VALUES (?1)", [format!("{n} {}", "x".repeat(2000))]).unwrap();
    }
    // The half-written state is in the file: a copy of the file alone holds it.
    let alone = dir.path().join("alone.sqlite");
    std::fs::copy(data.join("zotero.sqlite"), &alone).unwrap();
    let naive = rusqlite::Connection::open(&alone).unwrap().query_row("SELECT count(*) FROM items", [], |r| r.get::<_, i64>(0));
    assert!(!matches!(naive, Ok(1)), "the file holds uncommitted pages (read alone: {naive:?})");
    assert!(std::fs::metadata(data.join("zotero.sqlite-journal")).is_ok(), "the journal is hot");

    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!((s.items, s.added), (1, 1), "only what was committed: {s:?}");
    zotero.execute_batch("ROLLBACK").unwrap();
}

/// A PDF moved to another parent item becomes that item's evidence.
#[test]
fn a_pdf_moved_to_another_item_is_read_for_it() {
    let Some(shared) = common::shared_or_fail("the ACL PDFs in ../shared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let (data, mut db) = pdf_library(dir.path(), &shared, Era::Zotero7);
    let other = db.add_item(&item("OTHERPAR", "Another Parent Item", "Other", "2011")).unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    run(&lib, &data, &ZoteroOptions::default());
    let cited = by_title(&lib, CITED_TITLE).unwrap();
    db.connection()
        .execute("UPDATE itemAttachments SET parentItemID = ?1 WHERE itemID = (SELECT itemID FROM items WHERE key = 'ATTACH01')", [other])
        .unwrap();
    let s = run(&lib, &data, &ZoteroOptions::default());
    assert_eq!(s.pdfs_read, 1, "{s:?}");
    let owner = by_title(&lib, "Another Parent Item").unwrap().id;
    let evidence = lib.citances().citing(&cited.id).unwrap();
    assert!(!evidence.is_empty() && evidence.iter().all(|c| c.citing.id == owner), "{:?}", evidence.first().map(|c| &c.citing));
}

/// Records other imports made stay: a made key never takes a key another
/// record has, and an item takes over only a record of the same work.
#[test]
fn records_of_other_imports_are_kept_apart() {
    use citewise::library::import::{import, ImportOptions, Quiet};
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(
        &bib,
        "@article{tagger2001trigram, title={Trigram Models of Something Else}, author={Tagger, Zed}, year={2001}}\n\
         @article{same2005, title={The Same Work Imported Twice Over}, author={Same, Ann}, year={2005}}\n",
    )
    .unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    import(&lib, &[bib], ImportOptions::default(), &Quiet).unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    db.add_item(&item("TRIGRAM1", "Trigram Tagging", "Tagger", "2001")).unwrap();
    db.add_item(&NewItem { citation_key: "same2005".into(), ..item("SAMEWORK", "The Same Work Imported Twice Over", "Same", "2005") })
        .unwrap();
    run(&lib, &data, &ZoteroOptions::default());
    let other = lib.papers().paper_by_id("bib:tagger2001trigram").unwrap().unwrap();
    assert_eq!(other.title, "Trigram Models of Something Else", "the .bib record is untouched");
    let mine = by_title(&lib, "Trigram Tagging").unwrap();
    assert_eq!(mine.key, "tagger2001trigrama", "a made key is free among the library's keys");
    let same = lib.papers().paper_by_id("bib:same2005").unwrap().unwrap();
    assert!(same.zotero.is_some(), "the same work's record is Zotero's now");
    assert_eq!(papers(&lib).len(), 3);
}

/// A database's values are read under a budget: one field at most 64 Ki
/// characters, one item's fields at most 256 Ki (its title always kept).
#[test]
fn oversized_fields_are_cut_and_the_title_kept() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    let huge = "word ".repeat(40_000);
    db.add_item(&NewItem {
        abstract_note: huge.clone(),
        extra: huge.clone(),
        venue: huge.clone(),
        url: huge.clone(),
        ..item("HUGEITEM", "A Paper With Enormous Fields", "Big", "2020")
    })
    .unwrap();
    let id = db.item_id("HUGEITEM").unwrap();
    // Six fields of 64 Ki each: more than one item's budget.
    db.set_field(id, "proceedingsTitle", &huge, "2020-01-01 00:00:00").unwrap();
    db.set_field(id, "bookTitle", &huge, "2020-01-01 00:00:00").unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    run(&lib, &data, &ZoteroOptions::default());
    let p = papers(&lib).pop().unwrap();
    assert_eq!(p.title, "A Paper With Enormous Fields", "the title is kept");
    let read = [&p.abstract_text, &p.venue, &p.url].iter().map(|f| f.chars().count()).collect::<Vec<_>>();
    assert!(read.iter().all(|&n| n <= citewise::limits::ZOTERO_VALUE), "{read:?}");
    assert!(read.iter().sum::<usize>() <= citewise::limits::ZOTERO_ITEM, "{read:?}");
    assert!(read.iter().any(|&n| n > 0), "{read:?}");
}

// A Zotero folder is untrusted: what it holds or links never makes
// citewise touch a file outside it, nor wait on one that is not a file.

/// A rollback journal whose last record names `victim` as its
/// super-journal, as SQLite writes one: 512 bytes of 0x01, four zero bytes,
/// the name, its length and byte sum (two big-endian u32), the magic.
fn journal_naming(victim: &Path) -> Vec<u8> {
    let name = victim.to_str().unwrap().as_bytes();
    let mut j = vec![1u8; 512];
    j.extend_from_slice(&[0, 0, 0, 0]);
    j.extend_from_slice(name);
    j.extend_from_slice(&(name.len() as u32).to_be_bytes());
    j.extend_from_slice(&name.iter().fold(0u32, |s, &b| s.wrapping_add(u32::from(b))).to_be_bytes());
    j.extend_from_slice(&[0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7]);
    j
}

/// A journal copied with the database cannot make SQLite delete the file it
/// names (before: `import --zotero` exited 0 and the victim was gone);
/// Better BibTeX's journal neither.
#[test]
fn a_journal_in_the_zotero_folder_deletes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    db.add_item(&item("KEEPSAFE", "A Paper Beside a Hostile Journal", "Safe", "2020")).unwrap();
    drop(db);
    zotero_db::write_better_bibtex(&data, "better-bibtex.sqlite", &[]).unwrap();
    let victims = dir.path().join("elsewhere");
    std::fs::create_dir_all(&victims).unwrap();
    let (victim, other) = (victims.join("thesis.tex"), victims.join("notes.txt"));
    std::fs::write(&victim, "years of work").unwrap();
    std::fs::write(&other, "more work").unwrap();
    std::fs::write(data.join("zotero.sqlite-journal"), journal_naming(&victim)).unwrap();
    std::fs::write(data.join("better-bibtex.sqlite-journal"), journal_naming(&other)).unwrap();
    let lib = dir.path().join("lib");
    let o = common::citewise_command().args(["--library", lib.to_str().unwrap(), "import", "--zotero"]).arg(&data).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "years of work", "the file Zotero's journal names is still there");
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "more work", "the file Better BibTeX's journal names is still there");
    assert!(by_title(&Library::open(&lib).unwrap(), "A Paper Beside a Hostile Journal").is_some());
}

/// Runs `sync` on a thread and gives up after a minute: a reader that
/// waits on a FIFO fails the test instead of hanging it.
fn sync_within_a_minute(lib: PathBuf, data: PathBuf) -> Result<ZoteroSummary, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let lib = Library::open_or_create(&lib).unwrap();
        let _ = tx.send(sync(&lib, &data, &ZoteroOptions::default(), &make_key).map_err(|e| e.to_string()));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the import returned instead of waiting on a FIFO")
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: a plain system call on a path the test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

/// A FIFO where Zotero keeps its log, or where a Better BibTeX database
/// is: refused, naming the file (before: the import hung on the first).
#[test]
fn a_fifo_in_the_zotero_folder_is_refused_not_waited_on() {
    for (name, fatal) in [("zotero.sqlite-wal", true), ("zotero.sqlite-journal", true), ("better-bibtex.sqlite", false)] {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("Zotero");
        let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
        db.add_item(&item("FIFOFIFO", "A Paper Beside a Pipe", "Pipe", "2020")).unwrap();
        drop(db);
        mkfifo(&data.join(name));
        match sync_within_a_minute(dir.path().join("lib"), data) {
            Err(e) if fatal => assert!(e.contains(name) && e.contains("not a regular file (a named pipe)"), "{name}: {e}"),
            Ok(s) if !fatal => {
                assert_eq!(s.added, 1, "{name}: {s:?}");
                assert!(s.notes.iter().any(|n| n.contains("not a regular file (a named pipe)")), "{name}: {:?}", s.notes);
            }
            other => panic!("{name}: {other:?}"),
        }
    }
}

/// A stored file is read only inside the data directory, links followed:
/// `storage/KEY` or `storage/` itself linked to a folder outside is not
/// read; a linked file outside the data directory and the base directory
/// (`/etc/passwd`, `/proc/self/environ`) is refused before it is opened.
#[test]
fn links_out_of_the_zotero_folder_are_not_followed() {
    let Some(shared) = common::shared_or_fail("the ACL PDFs in ../shared") else { return };
    let dir = tempfile::tempdir().unwrap();
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(outside.join("KEY")).unwrap();
    std::fs::copy(shared.join("data/pdf/C02-1025/C10-2104.pdf"), outside.join("KEY/paper.pdf")).unwrap();
    for linked in ["storage/LINKKEY1", "storage"] {
        let data = dir.path().join(format!("Zotero-{}", linked.replace('/', "-")));
        let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
        let citing = db.add_item(&item("CITING01", CITING_TITLE, "Nguyen", "2010")).unwrap();
        db.add_stored_pdf(Some(citing), "LINKKEY1", "paper.pdf").unwrap();
        db.add_linked_pdf(Some(citing), "PASSWD01", Path::new("/etc/passwd")).unwrap();
        db.add_linked_pdf(Some(citing), "ENVIRON1", Path::new("/proc/self/environ")).unwrap();
        std::fs::create_dir_all(data.join("storage")).unwrap();
        let target = if linked == "storage" {
            std::fs::remove_dir(data.join("storage")).unwrap();
            std::fs::rename(outside.join("KEY"), outside.join("LINKKEY1")).unwrap();
            outside.clone()
        } else {
            outside.join("KEY")
        };
        std::os::unix::fs::symlink(&target, data.join(linked)).unwrap();
        let lib = Library::open_or_create(&dir.path().join(format!("lib-{}", linked.replace('/', "-")))).unwrap();
        let s = run(&lib, &data, &ZoteroOptions::default());
        assert_eq!(s.pdfs_read, 0, "{linked}: {s:?}");
        assert_eq!(s.pdfs_missing.len(), 3, "{linked}: {:?}", s.pdfs_missing);
        assert!(s.pdfs_missing.iter().any(|m| m.contains("paper.pdf") && m.contains("lies outside")), "{linked}: {:?}", s.pdfs_missing);
        for file in ["/etc/passwd", "/proc/self/environ"] {
            assert!(
                s.pdfs_missing.iter().any(|m| m.starts_with(file) && m.contains("outside the Zotero data directory; not read")),
                "{linked}: {file}: {:?}",
                s.pdfs_missing
            );
        }
        assert!(lib.citances().all().unwrap().is_empty(), "{linked}: nothing was read as evidence");
        if linked == "storage" {
            std::fs::rename(outside.join("LINKKEY1"), outside.join("KEY")).unwrap();
        }
    }
}

/// The paper index moved away (as doctor's repair for a damaged one says):
/// doctor says the Zotero records are lost and names the Zotero import,
/// which reads every item again (before: "5 unchanged", 0 papers, doctor
/// content).
#[test]
fn a_lost_paper_index_is_rebuilt_by_the_zotero_import() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    for n in 0..5 {
        db.add_item(&item(&format!("ITEM000{n}"), &format!("Paper Number {n}"), "Lost", "2020")).unwrap();
    }
    drop(db);
    let lib = dir.path().join("lib");
    let citewise = |args: &[&str]| common::citewise_command().arg("--library").arg(&lib).args(args).output().unwrap();
    let o = citewise(&["import", "--no-embed", "--zotero", data.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::rename(lib.join("papers"), dir.path().join("papers-moved-away")).unwrap();
    let doctor = citewise(&["doctor"]);
    let said = format!("{}{}", String::from_utf8_lossy(&doctor.stdout), String::from_utf8_lossy(&doctor.stderr));
    assert!(!doctor.status.success(), "{said}");
    assert!(said.contains("lost its Zotero records") && said.contains(&format!("import --zotero {}", data.display())), "{said}");
    let o = citewise(&["import", "--no-embed", "--zotero", data.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{said}");
    assert_eq!(Library::open(&lib).unwrap().papers().num_papers(), 5, "{said}");
    let doctor = citewise(&["doctor"]);
    assert!(!String::from_utf8_lossy(&doctor.stdout).contains("lost its Zotero records"), "{}", String::from_utf8_lossy(&doctor.stdout));
}

/// A database whose ids are stored as text names the row and the column
/// (before: "Invalid column type Text at index: 1, name:
/// COALESCE(i.libraryID, 1)"); text that is a number reads as one.
#[test]
fn odd_column_types_name_the_item_and_the_column() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    let id = db.add_item(&item("ODDTYPES", "A Paper With Odd Types", "Odd", "2020")).unwrap();
    db.connection().execute("UPDATE items SET libraryID = '1' WHERE itemID = ?1", [id]).unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    assert_eq!(run(&lib, &data, &ZoteroOptions::default()).added, 1, "a number stored as text reads as the number");
    db.connection().execute("UPDATE items SET libraryID = 'my library' WHERE itemID = ?1", [id]).unwrap();
    let err = sync(&lib, &data, &ZoteroOptions { force: true, ..ZoteroOptions::default() }, &make_key).unwrap_err().to_string();
    assert!(err.contains("zotero.sqlite"), "{err}");
    assert!(err.contains(&format!("`itemID` {id}")) && err.contains("`libraryID`") && err.contains("\"my library\""), "{err}");
}

/// Zotero's rich text (`<i>`, a small-caps `<span>`) and the entities of an
/// imported record read as plain text: in the title, the venue, the
/// abstract, the authors and the tags.
#[test]
fn rich_text_and_entities_read_as_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&data, Era::Zotero7).unwrap();
    db.add_item(&NewItem {
        item_type: "conferencePaper".into(),
        venue: "Research &amp; Development in <i>IR</i>".into(),
        abstract_note: "We show p &lt; 0.05.<br>Next &#233;t&#xE9;, a < b and c > d.".into(),
        creators: vec![("J&ouml;rg".into(), "M&uuml;ller".into())],
        tags: vec!["R&amp;D".into()],
        ..item("RICHTEXT", r#"X-CLE<span class="smallcaps SmallerCapital">a</span>VER for <i>Search</i> &amp; Ranking"#, "Ignored", "2021")
    })
    .unwrap();
    let lib = Library::open_or_create(&dir.path().join("lib")).unwrap();
    assert_eq!(run(&lib, &data, &ZoteroOptions::default()).added, 1);
    let all = papers(&lib);
    let [p] = all.as_slice() else { panic!("{all:?}") };
    assert_eq!(p.title, "X-CLEaVER for Search & Ranking");
    assert_eq!(p.venue, "Research & Development in IR");
    assert_eq!(p.abstract_text, "We show p < 0.05. Next été, a < b and c > d.");
    assert_eq!(p.authors, ["Jörg Müller"]);
    assert_eq!(p.keywords, ["R&D"]);
}
