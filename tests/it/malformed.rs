#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The malformed-input corpus (`tests/malformed/`): every file gives the
//! user the exact line `expected.txt` names, and nothing crashes or aborts
//! the run: the good entries beside the bad ones are imported.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Output;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/malformed")
}

/// FILE → the lines it must produce.
fn expected() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(corpus().join("expected.txt")).unwrap();
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let (file, message) = line.split_once('\t').unwrap_or_else(|| panic!("expected.txt: no tab in `{line}`"));
        out.entry(file.to_string()).or_default().push(message.to_string());
    }
    out
}

fn citewise(lib: &Path, args: &[&str]) -> Output {
    common::citewise_command()
        .current_dir(corpus())
        .env("CITEWISE_MODELS", "/nonexistent") // the messages do not depend on models
        .arg("--library")
        .arg(lib)
        .args(args)
        .output()
        .unwrap()
}

fn stderr_lines(o: &Output) -> BTreeSet<String> {
    String::from_utf8_lossy(&o.stderr).lines().map(str::to_string).collect()
}

fn assert_lines(what: &str, prefix: &str, got: &BTreeSet<String>, expected: &BTreeMap<String, Vec<String>>) -> usize {
    let mut checked = 0;
    for (file, lines) in expected.iter().filter(|(f, _)| f.starts_with(prefix)) {
        for line in lines {
            assert!(
                got.contains(line),
                "{what}: {file} should print\n  {line}\nbut printed:\n{}",
                got.iter().cloned().collect::<Vec<_>>().join("\n")
            );
            checked += 1;
        }
    }
    checked
}

#[test]
fn every_file_of_the_corpus_has_its_message() {
    let expected = expected();
    let mut files = BTreeSet::new();
    for dir in ["papers", "evidence", "queries"] {
        for e in std::fs::read_dir(corpus().join(dir)).unwrap() {
            files.insert(format!("{dir}/{}", e.unwrap().file_name().to_string_lossy()));
        }
    }
    let named: BTreeSet<String> = expected.keys().cloned().collect();
    assert_eq!(files, named, "each corpus file has an entry in expected.txt and each entry a file");
    assert!(files.len() >= 50, "{} files", files.len());
}

#[test]
fn imports_report_each_bad_entry_and_keep_the_good_ones() {
    let expected = expected();
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let o = citewise(&lib, &["import", "papers", "--all-skips", "--no-embed"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let checked = assert_lines("import", "papers/", &stderr_lines(&o), &expected);
    assert!(checked >= 30);
    // The good entries beside the broken ones (one `good-*` per file that has one) are in.
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("library ") && stdout.contains(" now holds "), "{stdout}");
    let info = common::citewise_command().arg("--library").arg(&lib).args(["info"]).output().unwrap();
    let papers: usize =
        String::from_utf8_lossy(&info.stdout).lines().find_map(|l| l.strip_prefix("papers:").map(|n| n.trim().parse().unwrap())).unwrap();
    let goods = std::fs::read_dir(corpus().join("papers"))
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .map(|b| String::from_utf8_lossy(&b).matches("@article{good-").count())
        .sum::<usize>();
    assert!(goods >= 12 && papers >= goods, "{papers} papers imported, {goods} good entries in the corpus");
}

#[test]
fn evidence_imports_report_each_bad_file_and_go_on() {
    let expected = expected();
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let fixture = common::fixture("papers.jsonl");
    assert!(citewise(&lib, &["import", fixture.to_str().unwrap(), "--no-embed"]).status.success());
    let o = citewise(&lib, &["import", "--evidence", "evidence", "--all-skips", "--no-embed"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_lines("import --evidence", "evidence/", &stderr_lines(&o), &expected);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("evidence/bad-first-line.jsonl: 1 documents, 1 citing sentences"),
        "the lines after a bad first line are read:\n{stdout}"
    );
}

#[test]
fn bad_queries_are_refused_with_a_reason_and_no_backtrace() {
    let expected = expected();
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let fixture = common::fixture("papers.jsonl");
    assert!(citewise(&lib, &["import", fixture.to_str().unwrap(), "--no-embed"]).status.success());
    for (file, lines) in expected.iter().filter(|(f, _)| f.starts_with("queries/")) {
        let o = common::citewise_command()
            .current_dir(corpus())
            .env("RUST_BACKTRACE", "1")
            .arg("--library")
            .arg(&lib)
            .args(["recommend", "--file", file])
            .output()
            .unwrap();
        assert!(!o.status.success(), "{file} should be refused");
        let stderr = String::from_utf8_lossy(&o.stderr);
        let last = stderr.lines().last().unwrap_or_default();
        assert_eq!(last, lines[0], "{file}");
        assert!(!stderr.contains("backtrace"), "{stderr}");
    }
}

/// A one-page PDF whose content stream is `content` (raw stream bytes, with
/// `filter` as its /Filter), the other objects sound.
fn pdf_with_content(content: &[u8], filter: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::new();
    let mut object = |out: &mut Vec<u8>, n: usize, body: &[u8]| {
        offsets.push(out.len());
        out.extend_from_slice(format!("{n} 0 obj\n").as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\nendobj\n");
    };
    object(&mut out, 1, b"<< /Type /Catalog /Pages 2 0 R >>");
    object(&mut out, 2, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>");
    object(&mut out, 3, b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> /Contents 4 0 R >>");
    let stream =
        [format!("<< /Length {} {filter} >>\nstream\n", content.len()).into_bytes(), content.to_vec(), b"\nendstream".to_vec()].concat();
    object(&mut out, 4, &stream);
    object(&mut out, 5, b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
    let xref = out.len();
    out.extend_from_slice(b"xref\n0 6\n0000000000 65535 f \n");
    for o in &offsets {
        out.extend_from_slice(format!("{o:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(format!("trailer\n<< /Size 6 /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n").as_bytes());
    out
}

/// A Flate bomb: a page whose content stream is a few MB compressed and
/// 2 GiB of spaces inflated; and a page whose content is 200,000 arrays
/// nested in each other. Each is one clear line, the run goes on, and the
/// import's memory stays far below what the bomb inflates to.
#[test]
fn a_flate_bomb_and_a_deeply_nested_pdf_are_one_line_each_within_a_memory_budget() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..2048 {
        z.write_all(&spaces).unwrap();
    }
    let bomb = z.finish().unwrap();
    assert!(bomb.len() < 32 << 20, "{} bytes compressed", bomb.len());
    std::fs::write(docs.join("bomb.pdf"), pdf_with_content(&bomb, "/Filter /FlateDecode")).unwrap();
    let nested = [vec![b'['; 200_000], vec![b']'; 200_000]].concat();
    std::fs::write(docs.join("nested.pdf"), pdf_with_content(&nested, "")).unwrap();
    let lib = dir.path().join("lib");
    let fixture = common::fixture("papers.jsonl");
    assert!(citewise(&lib, &["import", fixture.to_str().unwrap(), "--no-embed"]).status.success());
    let mut o = common::citewise_command();
    o.current_dir(dir.path()).env("CITEWISE_MODELS", "/nonexistent").arg("--library").arg(&lib).args([
        "import",
        "--evidence",
        "docs",
        "--all-skips",
        "--no-embed",
    ]);
    let (o, peak) = common::output_and_peak(&mut o);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = stderr_lines(&o);
    let bomb_line = "skipped: docs/bomb.pdf: a stream inflates past the 128 MiB limit for one PDF stream; not read";
    assert!(lines.contains(bomb_line), "{lines:#?}");
    assert!(lines.iter().any(|l| l.starts_with("skipped: docs/nested.pdf: not a readable PDF (")), "{lines:#?}");
    assert!(peak > 0 && peak < 1 << 30, "the import peaked at {} MiB", peak >> 20);
}

/// Files over the one-file budget are refused from their size, before they
/// are read (sparse files: no disk is used): a PDF, and a LaTeX file a
/// document `\input`s.
#[test]
fn files_over_the_budget_are_one_line_each_and_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let docs = dir.path().join("docs");
    std::fs::create_dir_all(&docs).unwrap();
    let sparse = |name: &str, len: u64| std::fs::File::create(docs.join(name)).unwrap().set_len(len).unwrap();
    sparse("huge.pdf", 600 << 20);
    sparse("big.tex", 600 << 20);
    std::fs::write(docs.join("paper.tex"), "\\documentclass{article}\\begin{document}\nText \\input{big} here.\n\\end{document}\n")
        .unwrap();
    let lib = dir.path().join("lib");
    let fixture = common::fixture("papers.jsonl");
    assert!(citewise(&lib, &["import", fixture.to_str().unwrap(), "--no-embed"]).status.success());
    let mut o = common::citewise_command();
    o.current_dir(dir.path()).env("CITEWISE_MODELS", "/nonexistent").arg("--library").arg(&lib).args([
        "import",
        "--evidence",
        "docs",
        "--all-skips",
        "--no-embed",
    ]);
    let (o, peak) = common::output_and_peak(&mut o);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let lines = stderr_lines(&o);
    assert!(lines.contains("skipped: docs/huge.pdf: 600 MiB, over the 512 MiB limit for one file; not read"), "{lines:#?}");
    let input = lines
        .iter()
        .find(|l| l.starts_with("note: docs/paper.tex: \\input `big` cannot be read ("))
        .unwrap_or_else(|| panic!("{lines:#?}"));
    assert!(input.ends_with("more than 512 MiB of text; split it into smaller files); not read"), "{input}");
    assert!(peak > 0 && peak < 1 << 30, "nothing was read into memory: the import peaked at {} MiB", peak >> 20);
}
