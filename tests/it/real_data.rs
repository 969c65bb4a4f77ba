#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Tests on the shared data beside the checkout (`../shared`); each returns
//! early, saying so, when it is absent (and fails under `CI=true`).

use crate::common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use citewise::eval::evaluate;
use citewise::eval::harness::{contexts_file, evaluate_at, load_split, papers_file, query_of, AsOf, EVAL_DEPTH, TRAIN_SPLIT};
use citewise::library::evidence_import::import_evidence;
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::journal::Journal;
use citewise::library::Library;
use citewise::pipeline::{Models, Recommender};

/// The whole ACM library: an interrupted import resumes to the same library a
/// clean one gives, with nothing doubled, and nothing real is skipped.
#[test]
fn acm_library_imports_and_resumes_after_a_kill() {
    let Some(shared) = common::shared_or_fail("this real-data test") else { return };
    let acm = shared.join("data/bib/acm-dl");
    let files = citewise::corpus::source::expand_inputs(std::slice::from_ref(&acm)).unwrap().len();
    let dir = tempfile::tempdir().unwrap();
    let lib_dir = dir.path().join("lib");
    let journal_path = lib_dir.join("import-journal.json");

    // Start an import in a separate process and kill it part-way: once its
    // first commit is on disk (the journal is written only after a commit,
    // every 50,000 records; the library holds 113,221), and not before.
    let mut child = common::citewise_command()
        .args(["import", acm.to_str().unwrap()])
        .env("CITEWISE_LIBRARY", &lib_dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(600);
    while !journal_path.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the import ended ({status}) before its first commit reached {}", journal_path.display());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("no commit of the import reached {} within 10 minutes", journal_path.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let status = child.wait().unwrap();

    // The kill came mid-import: the journal lists some of the files, and the
    // index holds the records of a commit that is not the last.
    let journal = Journal::load(&journal_path).unwrap();
    let listed = journal.files().count();
    let committed = journal.index().expect("the journal records the index it was saved against").records;
    assert!(listed > 0 && listed < files, "the journal lists {listed} of {files} files (the import exited {status})");
    assert!(committed > 0 && committed < 113_221, "the journal records {committed} papers (the import exited {status})");
    let lib = Library::open_or_create(&lib_dir).unwrap();
    let before = lib.papers().num_papers();
    assert!(
        before >= committed && before < 113_221,
        "killed at {before} papers, the journal at {committed}: the kill came after the import's last commit"
    );

    // Resumed: the files the journal lists are not read again, the rest are.
    let s = import(&lib, &[acm], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!(s.files_unchanged, listed, "the files the journal lists are skipped: {s:?}");
    let reasons: Vec<String> = s.skipped.iter().map(|k| k.to_string()).collect();
    assert!(s.skipped.len() <= 20, "unexpected skips: {reasons:#?}");
    assert_eq!(lib.papers().num_papers(), 113_221, "killed at {before} papers; resumed with {s:?}");
    let resumed = Journal::load(&journal_path).unwrap();
    assert_eq!(resumed.index().map(|i| i.records), Some(113_221), "the journal describes the whole library");
    assert!(resumed.files().count() > listed, "the resume journals the files it read");
    let p = lib.papers().paper_by_id("doi:10.1145/2479787.2479868").unwrap().expect("a known WIMS paper");
    assert_eq!(p.title, "Challenges and Issues of Web Intelligence Research");
    assert_eq!(p.authors[0], "David Camacho");
    assert_eq!(p.year, Some(2013));
    assert!(p.keywords.contains(&"web mining".to_string()));
}

/// BM25 alone on the benchmark's test split lands within ±0.03 of the
/// reference figures (R@10 0.318, MRR 0.206; global R@10 0.376); evidence
/// from the train split lifts the fused list well above it, and shows with
/// the papers it covers.
#[test]
fn benchmark_quality_bm25_and_evidence() {
    let Some(shared) = common::shared_or_fail("this real-data test") else { return };
    let bench = shared.join("data/benchmark");
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    let s = import(&lib, &[papers_file(&bench)], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!(s.imported, 119_799);
    let lib = Arc::new(lib);
    let rec = Recommender::with_stages(lib.clone(), &Models::installed(), &["bm25"]).unwrap();
    let contexts = load_split(&bench, "test").unwrap();
    assert_eq!(contexts.len(), 2724);

    // The reference ranks every paper of the pool, whatever its year.
    let local = evaluate_at(&rec, &contexts, "test", false, EVAL_DEPTH, AsOf::AnyYear, &|_| {}).unwrap();
    assert_eq!(local.config.as_of_citing_year, None);
    let all = &local.sources[0].scores;
    #[allow(clippy::approx_constant)] // BM25's measured R@10, not 1/π
    let expected_recall = 0.318;
    assert!((all.recall[2] - expected_recall).abs() <= 0.03, "R@10 {}", all.recall[2]);
    assert!((all.mrr - 0.206).abs() <= 0.03, "MRR {}", all.mrr);

    let global = evaluate_at(&rec, &contexts, "test", true, EVAL_DEPTH, AsOf::AnyYear, &|_| {}).unwrap();
    let g = &global.sources[0].scores;
    assert!((g.recall[2] - 0.376).abs() <= 0.03, "global R@10 {}", g.recall[2]);

    // By default a context is ranked against the papers its author could
    // have cited: its citing paper is in the pool for the scisummnet and
    // acl-arc contexts (1,643), not for sdp-act and scicite.
    let as_of = evaluate(&rec, &contexts, "test", false, &|_| {}).unwrap();
    assert_eq!(as_of.config.as_of_citing_year, Some(1643));
    assert!(as_of.sources[0].scores.recall[2] > all.recall[2], "{} against {}", as_of.sources[0].scores.recall[2], all.recall[2]);
    let sdp = |r: &citewise::eval::EvalReport| r.sources.iter().find(|s| s.source == "sdp-act").unwrap().scores;
    assert_eq!(sdp(&as_of), sdp(&local), "contexts of unknown year rank as before");
    let (mut checked, mut later_before) = (0, 0);
    for c in contexts.iter().filter(|c| c.source == "scisummnet").step_by(40) {
        let Some(year) = lib.papers().years(&[c.citing_id.as_str()]).unwrap()[0] else { continue };
        let years = |q: &citewise::pipeline::Query| -> Vec<(String, Option<i32>)> {
            let ids: Vec<String> = rec.recommend_ids(q).unwrap().candidates.into_iter().map(|c| c.id).collect();
            let refs: Vec<&str> = ids.iter().map(String::as_str).collect();
            ids.iter().cloned().zip(lib.papers().years(&refs).unwrap()).collect()
        };
        let q = query_of(c, false).with_k(20);
        later_before += years(&q).iter().filter(|(_, y)| y.is_some_and(|y| y > year)).count();
        let then = years(&q.written_in(Some(year)));
        assert_eq!(then.len(), 20);
        assert!(then.iter().all(|(id, y)| y.is_none_or(|y| y <= year) && *id != c.citing_id), "{} ({year}): {then:?}", c.id);
        checked += 1;
    }
    assert!(checked >= 30 && later_before > 0, "{checked} contexts, {later_before} later papers without the year");

    // Evidence from the train split, fused with BM25.
    let ev = import_evidence(&lib, &[contexts_file(&bench)], Some(TRAIN_SPLIT), false).unwrap();
    assert!(ev.stats.spans > 15_000 && ev.stats.papers > 2_000, "{:?}", ev.stats);
    // The prefetch channels (the rerank stage is measured by `citewise eval`);
    // span vectors are encoded up front, as `eval` does.
    let models = Models::installed();
    if let Ok(spans) = models.span_cosines() {
        spans.warm(&lib, &|_, _| {}).unwrap();
    }
    let fused = Recommender::with_stages(lib.clone(), &models, &["bm25", "evidence"]).unwrap();
    let report = evaluate(&fused, &contexts, "test", false, &|_| {}).unwrap();
    let by = |name: &str| report.sources.iter().find(|s| s.source == name).unwrap().scores;
    assert!(by("all").recall[2] >= 0.45, "fused R@10 {}", by("all").recall[2]);
    assert!(by("scisummnet").recall[2] >= 0.53, "fused scisummnet R@10 {}", by("scisummnet").recall[2]);

    // Top-10 recommendations whose paper has evidence show some.
    let (mut with_evidence, mut shown) = (0, 0);
    for c in contexts.iter().step_by(27) {
        let r = fused.recommend(&query_of(c, false).with_k(10)).unwrap();
        for cand in &r.candidates {
            if !lib.evidence().spans_citing(&cand.id, &[], 1, &[]).unwrap().is_empty() {
                with_evidence += 1;
                shown += !cand.evidence.is_empty() as usize;
            }
        }
    }
    eprintln!("top-10 papers with evidence in the database: {with_evidence}; shown with evidence: {shown}");
    assert!(with_evidence > 50, "{with_evidence}");
    assert!(shown as f64 >= 0.9 * with_evidence as f64, "{shown} of {with_evidence}");
}

/// Fields whose value is an address: their `&`, `%`, `_` and `#` are no LaTeX.
const VERBATIM_FIELDS: [&str; 7] = ["doi", "eprint", "file", "pdf", "uri", "url", "urlraw"];

/// What ACM DL's HTML leaves when it is not read (`Research &amp;
/// Development`, `X-CLE<span class="smallcaps SmallerCapital">a</span>VER`).
const HTML_LEFT: [&str; 7] = ["&amp;", "&lt;", "&gt;", "&#", "<span", "<i>", "</"];

/// The ACM library reads as plain text and exports as valid LaTeX: no HTML
/// entity or markup is left in any field of its 113k records, and a sample
/// of 2,500 (2,000 of those whose source carried HTML, 500 others) exported
/// to BibTeX has no bare `& % # _` and reads back to the same text. The
/// files are parsed once, on every core; the rest is in memory.
#[test]
fn acm_records_read_as_plain_text_and_export_as_latex() {
    use std::collections::HashSet;

    let Some(shared) = common::shared_or_fail("this real-data test") else { return };
    let papers = acm_records(&shared.join("data/bib/acm-dl"));
    assert!(papers.len() > 110_000, "{} records", papers.len());
    let mut left = Vec::new();
    for p in &papers {
        for (field, text) in text_fields(p) {
            if let Some(html) = HTML_LEFT.iter().find(|h| text.contains(**h)) {
                left.push(format!("{}: {field} keeps `{html}`: {text:?}", p.key));
            }
        }
    }
    assert!(left.is_empty(), "{} fields keep HTML, e.g. {:#?}", left.len(), &left[..left.len().min(10)]);

    // The records whose source carries entities or markup: what this reading changed.
    let carried: Vec<usize> =
        (0..papers.len()).filter(|&i| citewise::corpus::html_text::html_to_text(&papers[i].bibtex) != papers[i].bibtex).collect();
    let rewritten = papers.iter().filter(|p| citewise::export::bibfile::latex_entry(&p.bibtex).is_some()).count();
    eprintln!(
        "{} of {} ACM records carry HTML entities or markup, now read as text; the export rewrites {rewritten} entries as valid LaTeX",
        carried.len(),
        papers.len()
    );
    assert!(carried.len() > 5_000, "{} records with HTML", carried.len());

    let with_html: HashSet<usize> = carried.iter().copied().collect();
    let mut sample: Vec<usize> = carried.iter().copied().step_by(carried.len().div_ceil(2_000)).collect();
    sample.extend((0..papers.len()).step_by(papers.len() / 500).filter(|i| !with_html.contains(i)));
    let mut problems = Vec::new();
    let mut generated = 0;
    for &i in &sample {
        let kept = biblatex::Bibliography::parse(&papers[i].bibtex).is_ok();
        generated += usize::from(!kept);
        problems.extend(round_trip(&papers[i], kept));
    }
    eprintln!("{} records exported and read back ({generated} generated from their fields)", sample.len());
    assert!(problems.is_empty(), "{} problems, e.g. {:#?}", problems.len(), &problems[..problems.len().min(10)]);
}

/// Every record of the BibTeX files under `dir`, in file order, the files
/// parsed on every core.
fn acm_records(dir: &std::path::Path) -> Vec<citewise::corpus::Paper> {
    use citewise::corpus::bibtex::{parse_source, EntryOutcome};
    use citewise::corpus::source::{decode_text, expand_inputs, read_bytes};
    let files = expand_inputs(&[dir.to_path_buf()]).unwrap();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|s| {
        let parts: Vec<_> = files
            .chunks(files.len().div_ceil(threads).max(1))
            .map(|part| {
                s.spawn(move || {
                    let mut out = Vec::new();
                    for (path, _) in part {
                        for o in parse_source(&decode_text(&read_bytes(path).unwrap()).text) {
                            if let EntryOutcome::Paper(p) = o {
                                out.push(*p);
                            }
                        }
                    }
                    out
                })
            })
            .collect();
        parts.into_iter().flat_map(|h| h.join().unwrap()).collect()
    })
}

/// A record's text as the library holds it, field by field.
fn text_fields(p: &citewise::corpus::Paper) -> Vec<(&'static str, &str)> {
    let mut fields = vec![
        ("title", p.title.as_str()),
        ("abstract", p.abstract_text.as_str()),
        ("venue", p.venue.as_str()),
        ("url", p.url.as_str()),
        ("doi", p.doi.as_str()),
    ];
    fields.extend(p.authors.iter().map(|a| ("author", a.as_str())));
    fields.extend(p.keywords.iter().map(|k| ("keyword", k.as_str())));
    fields
}

/// What is wrong with `p` exported to BibTeX and read back: HTML or a bare
/// reserved character in the entry, or a field that reads back otherwise
/// (every field when its original entry is `kept`; else the ones an entry
/// generated from the record's fields holds).
fn round_trip(p: &citewise::corpus::Paper, kept: bool) -> Vec<String> {
    use citewise::corpus::bibtex::{map_field_values, parse_source, EntryOutcome};
    let text = citewise::export::bibfile::entry_text(p, &p.key);
    let mut problems: Vec<String> =
        HTML_LEFT.iter().filter(|h| text.contains(**h)).map(|h| format!("{}: the export keeps `{h}`", p.key)).collect();
    map_field_values(&text, |field, value, _| {
        if let Some(c) = bare_reserved(field, value) {
            problems.push(format!("{}: `{field}` has a bare `{c}`: {value:?}", p.key));
        }
        None
    });
    let back: Vec<citewise::corpus::Paper> = parse_source(&text)
        .into_iter()
        .filter_map(|o| match o {
            EntryOutcome::Paper(q) => Some(*q),
            EntryOutcome::Skipped { .. } => None,
        })
        .collect();
    let [q] = back.as_slice() else {
        problems.push(format!("{}: {} records read back from {text}", p.key, back.len()));
        return problems;
    };
    let mut same = vec![("title", &p.title, &q.title), ("venue", &p.venue, &q.venue), ("doi", &p.doi, &q.doi)];
    if kept {
        same.extend([("abstract", &p.abstract_text, &q.abstract_text), ("url", &p.url, &q.url), ("type", &p.entry_type, &q.entry_type)]);
    }
    for (field, a, b) in same {
        if a != b {
            problems.push(format!("{}: {field} {a:?} reads back as {b:?}", p.key));
        }
    }
    if p.year != q.year || (kept && (p.authors != q.authors || p.keywords != q.keywords)) {
        problems.push(format!(
            "{}: {:?} {:?} {:?} read back as {:?} {:?} {:?}",
            p.key, p.year, p.authors, p.keywords, q.year, q.authors, q.keywords
        ));
    }
    problems
}

/// The first of `& % # _` that stands bare in a value (outside math, an
/// escape, a command's name and a `\url`'s argument) of a field that is not
/// an address: LaTeX stops there.
fn bare_reserved(field: &str, value: &str) -> Option<char> {
    if VERBATIM_FIELDS.contains(&field) {
        return None;
    }
    let chars: Vec<char> = value.chars().collect();
    let (mut i, mut math) = (0, false);
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        match c {
            '$' => math = !math,
            _ if math => {}
            '\\' => {
                let first = chars.get(i).copied().unwrap_or(' ');
                i += 1;
                if !"{}\\#&%$_:\"´`'^~=.-".contains(first) && !first.is_whitespace() {
                    let start = i - 1;
                    while chars.get(i).is_some_and(|&c| !c.is_whitespace() && !c.is_control() && !"@{}\"#'(),=%\\~".contains(c)) {
                        i += 1;
                    }
                    let name: String = chars[start..i].iter().collect();
                    if ["url", "href", "path", "nolinkurl"].contains(&name.as_str()) && chars.get(i) == Some(&'{') {
                        let close = chars[i..].iter().position(|&c| c == '}').map_or(chars.len(), |p| i + p);
                        i = close + 1;
                    }
                }
            }
            '&' | '%' | '#' | '_' => return Some(c),
            _ => {}
        }
    }
    None
}
