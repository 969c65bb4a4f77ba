#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
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

/// A `--bib` that is a symbolic link: the file it points to gets the new
/// entries (and keeps its permissions); the link stays a link.
#[cfg(unix)]
#[test]
fn a_linked_bibliography_is_written_through_the_link() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    let real = shared.join("all.bib");
    std::fs::write(&real, "@misc{old, title={Old}}\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("references.bib");
    symlink("shared/all.bib", &link).unwrap();
    let r = export(&link, &[paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear).unwrap();
    assert_eq!(r.keys(), ["b2000"]);
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
    let text = std::fs::read_to_string(&real).unwrap();
    assert!(text.starts_with("@misc{old, title={Old}}\n") && text.contains("@inproceedings{b2000,"), "{text}");
    assert_eq!(std::fs::metadata(&real).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(std::fs::read_to_string(backup_path(&real)).unwrap(), "@misc{old, title={Old}}\n", "the backup is beside the real file");
    assert_eq!(files_in(&shared), ["all.bib", "all.bib.bak"]);
    assert_eq!(files_in(dir.path()), ["references.bib", "shared"]);
}

/// A Latin-1 file: its bytes are kept as they are, new entries are written
/// in its encoding (and letters it has no byte for as LaTeX accents).
#[test]
fn a_latin1_file_keeps_its_bytes_and_encoding() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    let original: &[u8] = b"@misc{mueller, author={M\xfcller, J\xf6rg}, title={\xdcber \x93Zitate\x94}}\n";
    std::fs::write(&bib, original).unwrap();
    let mut p = paper("k", "Ren\u{e9} Kov\u{e1}cs", 2001, "Caf\u{e9} \u{10c}api\u{107}", "");
    p.authors.push("Paul Erd\u{151}s".into());
    p.venue = "Proc. \u{141}\u{f3}d\u{17a}".into();
    export(&bib, &[p], KeyStyle::AuthorYear).unwrap();
    let bytes = std::fs::read(&bib).unwrap();
    assert!(bytes.starts_with(original), "the user's bytes are unchanged: {:?}", String::from_utf8_lossy(&bytes));
    let added = &bytes[original.len()..];
    assert!(std::str::from_utf8(added).is_err(), "the new entry is Latin-1 too");
    let added: String = added.iter().map(|&b| b as char).collect();
    assert!(added.contains("Caf\u{e9} {\\v{C}}api{\\'{c}}"), "{added}");
    assert!(added.contains("author = {Ren\u{e9} Kov\u{e1}cs and Paul Erd{\\H{o}}s}"), "{added}");
    assert!(added.contains("{\\L}\u{f3}d{\\'{z}}"), "{added}");
    // Read back, the file holds both entries.
    let keys: Vec<String> = citewise::export::bibfile::entries_of(&bib).unwrap().entries().iter().map(|e| e.key.clone()).collect();
    assert_eq!(keys, ["mueller", "kovacs2001"]);
}

/// A character a Latin-1 file cannot hold, even as a LaTeX accent: nothing
/// is written and the message says why.
#[test]
fn a_latin1_file_refuses_what_it_cannot_hold() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    let original: &[u8] = b"@misc{mueller, author={M\xfcller}, title={Old}}\n";
    std::fs::write(&bib, original).unwrap();
    let err = export(&bib, &[paper("k", "Li Wei", 2001, "\u{4e2d}\u{6587} Retrieval", "")], KeyStyle::AuthorYear).unwrap_err();
    assert!(err.to_string().contains("not UTF-8") && err.to_string().contains("nothing was written"), "{err}");
    assert_eq!(std::fs::read(&bib).unwrap(), original);
    assert_eq!(files_in(dir.path()), ["refs.bib"]);
}

/// Windows line ends and a byte order mark: kept, and the new entries get
/// the same line ends.
#[test]
fn crlf_and_bom_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    let original = "\u{feff}@misc{old,\r\n  title={Old}\r\n}\r\n";
    std::fs::write(&bib, original).unwrap();
    export(&bib, &[paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear).unwrap();
    let text = std::fs::read_to_string(&bib).unwrap();
    assert!(text.starts_with(original), "{text:?}");
    let added = &text[original.len()..];
    assert!(added.starts_with("\r\n@inproceedings{b2000,\r\n  title = {{New}},\r\n"), "{added:?}");
    assert!(added.ends_with("}\r\n"), "{added:?}");
    assert!(!added.replace("\r\n", "").contains('\n'), "every line end is CRLF: {added:?}");
}

/// The editor's exports run on a thread of their own: asking returns at
/// once, before anything is written; the result arrives later.
#[test]
fn exports_run_off_the_ui_thread() {
    use citewise::tui::exporter::{ExportEvent, Exporter};
    use std::sync::{mpsc, Arc, Mutex};
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{old, title={Old}}\n").unwrap();
    // An export that waits for the test to let it go (a slow, large file).
    let (go, wait) = mpsc::channel::<()>();
    let wait = Arc::new(Mutex::new(wait));
    let exporter = Exporter::spawn_with(Box::new(move |file: &Path, papers: &[citewise::corpus::Paper], style| {
        let _ = wait.lock().unwrap().recv_timeout(Duration::from_secs(5));
        export(file, papers, style)
    }));
    let t = Instant::now();
    exporter.export(bib.clone(), vec![paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear, true);
    assert!(t.elapsed() < Duration::from_millis(500), "asking took {:?}", t.elapsed());
    assert!(exporter.try_recv().is_none());
    assert_eq!(std::fs::read_to_string(&bib).unwrap(), "@misc{old, title={Old}}\n", "nothing written yet");
    go.send(()).unwrap();
    let Some(ExportEvent::Exported { result: Ok(report), cite: true, entries: Some(entries) }) =
        exporter.recv_timeout(Duration::from_secs(10))
    else {
        panic!("no export result")
    };
    assert_eq!(report.keys(), ["b2000"]);
    assert_eq!(entries.entries().iter().map(|e| e.key.as_str()).collect::<Vec<_>>(), ["old", "b2000"]);
    assert!(std::fs::read_to_string(&bib).unwrap().contains("@inproceedings{b2000,"));
    // Keys for the clipboard come the same way.
    exporter.keys(bib.clone(), vec![paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear);
    assert!(matches!(exporter.recv_timeout(Duration::from_secs(10)), Some(ExportEvent::Keys(Ok(k))) if k == ["b2000"]));
}

/// A bibliography a document names may be any file: one over the one-file
/// budget is refused from its size, for planning keys, listing entries and
/// exporting, and is left as it was.
#[test]
fn a_file_over_the_budget_is_refused_before_it_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("huge.bib");
    std::fs::File::create(&bib).unwrap().set_len(citewise::limits::TEXT_FILE + 1).unwrap();
    let p = paper("brants2000", "Brants, Thorsten", 2000, "TnT: A Statistical Part-of-Speech Tagger", "");
    let errors = [
        citewise::export::bibfile::entries_of(&bib).unwrap_err(),
        citewise::export::bibfile::planned_keys(&bib, std::slice::from_ref(&p), KeyStyle::default()).unwrap_err(),
        export(&bib, &[p], KeyStyle::default()).unwrap_err(),
    ];
    for e in errors {
        assert!(e.to_string().ends_with("huge.bib: 512.0 MiB, over the 512 MiB limit for one file; not read"), "{e}");
    }
    assert_eq!(std::fs::metadata(&bib).unwrap().len(), citewise::limits::TEXT_FILE + 1);
    assert_eq!(files_in(dir.path()), ["huge.bib"], "no backup, no temporary file");
}

/// Removes the temporary files of `file` that an export writes beside it
/// (what another program may do, and a stand-in for a rename that fails:
/// a bind-mounted or immutable file refuses to be replaced).
fn remove_temporaries(folder: &Path, file: &str) {
    for entry in std::fs::read_dir(folder).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with(&format!(".{file}.citewise-")) {
            std::fs::remove_file(folder.join(&name)).unwrap();
        }
    }
}

/// When the file cannot be replaced, nothing is written: neither the file
/// nor its `.bak` (an older `.bak` stays as it was), and no temporary file
/// is left behind.
#[test]
fn a_file_that_cannot_be_replaced_gets_no_backup() {
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{old, title={Old}}\n").unwrap();
    let folder = dir.path().to_path_buf();
    let mut lose_the_new_content = |f: std::fs::File| -> Box<dyn Write> {
        remove_temporaries(&folder, "refs.bib");
        Box::new(f)
    };
    let new = [paper("k", "A B", 2000, "New", "")];
    let err = export_with(&bib, &new, KeyStyle::AuthorYear, &mut lose_the_new_content).unwrap_err();
    assert!(err.to_string().contains("refs.bib"), "{err}");
    assert_eq!(std::fs::read_to_string(&bib).unwrap(), "@misc{old, title={Old}}\n");
    assert_eq!(files_in(dir.path()), ["refs.bib"], "no backup, no temporary file");
    std::fs::write(backup_path(&bib), "an older backup").unwrap();
    export_with(&bib, &new, KeyStyle::AuthorYear, &mut lose_the_new_content).unwrap_err();
    assert_eq!(std::fs::read_to_string(backup_path(&bib)).unwrap(), "an older backup");
    assert_eq!(files_in(dir.path()), ["refs.bib", "refs.bib.bak"]);
    // Papers all there already: nothing to write, no backup either.
    std::fs::remove_file(backup_path(&bib)).unwrap();
    let old = [paper("old", "A B", 2000, "Old", "")];
    let r = export(&bib, &old, KeyStyle::Original).unwrap();
    assert_eq!((r.entries, r.backup), (vec![Exported::Present("old".into())], None));
    assert_eq!(files_in(dir.path()), ["refs.bib"]);
}

/// The editor's popup says "nothing was written" only when nothing was:
/// a failed export leaves no `.bak`.
#[test]
fn the_editor_says_nothing_was_written_and_nothing_is() {
    use citewise::tui::app::{App, AppSettings, Overlay};
    use citewise::tui::exporter::{ExportEvent, Exporter};
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{old, title={Old}}\n").unwrap();
    let folder = dir.path().to_path_buf();
    let exporter = Exporter::spawn_with(Box::new(move |file: &Path, papers: &[Paper], style| {
        export_with(file, papers, style, &mut |f: std::fs::File| -> Box<dyn Write> {
            remove_temporaries(&folder, "refs.bib");
            Box::new(f)
        })
    }));
    exporter.export(bib.clone(), vec![paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear, false);
    let Some(ExportEvent::Exported { result, cite: false, .. }) = exporter.recv_timeout(std::time::Duration::from_secs(10)) else {
        panic!("no export result")
    };
    let mut app = App::new("Text.", None, bib.clone(), AppSettings::defaults(0));
    app.on_exported(result, false);
    assert_eq!(app.status(), "export failed (nothing was written)");
    assert!(matches!(app.overlay(), Overlay::Message { title, .. } if title == "Export failed"), "{:?}", app.overlay());
    assert_eq!(std::fs::read_to_string(&bib).unwrap(), "@misc{old, title={Old}}\n");
    assert_eq!(files_in(dir.path()), ["refs.bib"], "no backup, no temporary file");
}

/// A `.bak` that is a symbolic link is replaced, not written through (the
/// file it points to is left alone), and the backup is as private as the
/// file it copies.
#[cfg(unix)]
#[test]
fn a_backup_that_is_a_link_is_replaced_not_written_through() {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@misc{old, title={Old}}\n").unwrap();
    std::fs::set_permissions(&bib, std::fs::Permissions::from_mode(0o600)).unwrap();
    let victim = dir.path().join("victim.txt");
    std::fs::write(&victim, "precious").unwrap();
    symlink(&victim, backup_path(&bib)).unwrap();
    let r = export(&bib, &[paper("k", "A B", 2000, "New", "")], KeyStyle::AuthorYear).unwrap();
    assert_eq!(r.backup, Some(backup_path(&bib)));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    let backup = backup_path(&bib);
    assert!(!std::fs::symlink_metadata(&backup).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read_to_string(&backup).unwrap(), "@misc{old, title={Old}}\n");
    assert_eq!(std::fs::metadata(&backup).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(files_in(dir.path()), ["refs.bib", "refs.bib.bak", "victim.txt"]);
}
