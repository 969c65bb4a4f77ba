//! Exporting BibTeX: keys, duplicates, backups, and files that resist.

use std::io::Write;
use std::path::Path;

use citewise::corpus::Paper;
use citewise::export::bibfile::{backup_path, export_with};
use citewise::export::{export, Exported, KeyStyle};

fn paper(key: &str, author: &str, year: i32, title: &str, doi: &str) -> Paper {
    Paper {
        id: format!("bib:{key}"),
        key: key.into(),
        authors: vec![author.into()],
        year: Some(year),
        title: title.into(),
        doi: doi.into(),
        entry_type: "inproceedings".into(),
        ..Default::default()
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn new_file_then_duplicates_and_collisions() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("references.bib");
    let mut original = paper("10.1145/1", "Milad Shokouhi", 2013, "Learning to Personalize Query Auto-Completion", "10.1145/1");
    original.bibtex =
        "@inproceedings{10.1145/1,\n  title = {Learning to Personalize Query Auto-Completion},\n  doi = {10.1145/1}\n}".into();
    let generated = paper("x", "Ada Lovelace", 2018, "Citation Recommendation", "");
    let r = export(&bib, &[original.clone(), generated.clone()], KeyStyle::AuthorYearFirstword).unwrap();
    assert_eq!(r.entries, [Exported::Added("shokouhi2013learning".into()), Exported::Added("lovelace2018citation".into())]);
    assert_eq!(r.backup, None);
    let text = std::fs::read_to_string(&bib).unwrap();
    assert!(
        text.starts_with("@inproceedings{shokouhi2013learning,\n  title = {Learning to Personalize"),
        "original text, new key:\n{text}"
    );
    assert!(
        text.contains(
            "@inproceedings{lovelace2018citation,\n  title = {{Citation Recommendation}},\n  author = {Ada Lovelace},\n  year = {2018}"
        ),
        "{text}"
    );

    // Again: both are present (by DOI, and by key + title); nothing is written.
    let again = export(&bib, &[original, generated], KeyStyle::AuthorYearFirstword).unwrap();
    assert_eq!(again.entries, [Exported::Present("shokouhi2013learning".into()), Exported::Present("lovelace2018citation".into())]);
    assert_eq!(std::fs::read_to_string(&bib).unwrap(), text);

    // Another paper with the same base key gets a suffix; the old file is backed up.
    let other = paper("y", "Ada Lovelace", 2018, "Citation Networks", "");
    let r = export(&bib, &[other], KeyStyle::AuthorYearFirstword).unwrap();
    assert_eq!(r.keys(), ["lovelace2018citationa"]);
    assert_eq!(std::fs::read_to_string(backup_path(&bib)).unwrap(), text);
    assert_eq!(files_in(dir.path()), ["references.bib", "references.bib.bak"]);
}

#[test]
fn entries_that_need_string_macros_are_generated() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    let mut p = paper("k", "Milad Shokouhi", 2013, "Learning to Personalize", "10.1/x");
    p.venue = "Proc. SIGIR".into();
    p.bibtex = "@inproceedings{k,\n  title = {Learning to Personalize},\n  booktitle = sigir\n}".into();
    export(&bib, &[p], KeyStyle::AuthorYearFirstword).unwrap();
    let text = std::fs::read_to_string(&bib).unwrap();
    assert!(text.contains("booktitle = {Proc. SIGIR}") && !text.contains("= sigir"), "{text}");
}

#[test]
fn read_only_files_are_refused_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{old, title={Old}}\n").unwrap();
    let mut perms = std::fs::metadata(&bib).unwrap().permissions();
    perms.set_readonly(true);
    std::fs::set_permissions(&bib, perms).unwrap();
    let err = export(&bib, &[paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear).unwrap_err();
    assert!(err.to_string().contains("read-only"), "{err}");
    assert_eq!(std::fs::read_to_string(&bib).unwrap(), "@misc{old, title={Old}}\n");
    assert_eq!(files_in(dir.path()), ["refs.bib"]);
}

/// Fails after a few bytes, like a full disk.
struct FullDisk(usize);
impl Write for FullDisk {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0 == 0 {
            return Err(std::io::Error::new(std::io::ErrorKind::StorageFull, "no space left on device"));
        }
        let n = buf.len().min(self.0);
        self.0 -= n;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_failing_writer_leaves_the_file_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{old, title={Old}}\n").unwrap();
    let err = export_with(&bib, &[paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear, &mut |_f| Box::new(FullDisk(10))).unwrap_err();
    assert!(err.to_string().contains("no space left"), "{err}");
    assert_eq!(std::fs::read_to_string(&bib).unwrap(), "@misc{old, title={Old}}\n");
    assert_eq!(files_in(dir.path()), ["refs.bib"], "no temporary file or backup left behind");
}

#[test]
fn a_concurrent_edit_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{old, title={Old}}\n").unwrap();
    let target = bib.clone();
    let mut edited = false;
    // While the first attempt writes, another program adds an entry.
    let r = export_with(&bib, &[paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear, &mut |f| {
        if !edited {
            edited = true;
            let mut text = std::fs::read_to_string(&target).unwrap();
            text.push_str("@misc{b2000, title={Added elsewhere}}\n");
            std::fs::write(&target, text).unwrap();
        }
        Box::new(f)
    })
    .unwrap();
    let text = std::fs::read_to_string(&bib).unwrap();
    assert!(text.contains("Added elsewhere"), "{text}");
    assert!(text.contains("@inproceedings{b2000a,"), "the new entry's key avoids the concurrent one:\n{text}");
    assert_eq!(r.keys(), ["b2000a"]);
}
