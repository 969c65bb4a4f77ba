#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Import into a library on disk, re-import, and recommend from it.

use crate::common;

use std::sync::Arc;

use citewise::index::QueryTf;
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use citewise::pipeline::{Models, Query, Recommender};
use common::fixture;

fn fresh() -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    (dir, lib)
}

#[test]
fn bibtex_fixture_imports_with_a_skip_list() {
    let (_d, lib) = fresh();
    let s = import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!(s.imported, 10);
    assert_eq!(s.updated, 0);
    let skips: Vec<(usize, &str)> = s.skipped.iter().map(|k| (k.line, k.reason.as_str())).collect();
    assert_eq!(skips.len(), 2, "{skips:?}");
    assert_eq!(skips[0].0, 82);
    assert!(skips[0].1.contains("not closed"));
    assert_eq!(skips[1].0, 88);
    assert!(skips[1].1.contains("missing field `title`") && skips[1].1.contains("notitle2021"));
    assert!(s.skipped[0]
        .to_string()
        .ends_with("library.bib:82: @inproceedings entry is not closed (unbalanced braces) before the next entry"));
    assert_eq!(lib.papers().num_papers(), 10);

    let p = lib.papers().paper_by_id("doi:10.1145/2484028.2484076").unwrap().expect("stored by DOI");
    assert_eq!(p.key, "shokouhi2013personalize");
    assert!(p.venue.starts_with("Proceedings of the International ACM SIGIR"), "@string resolved: {}", p.venue);
    assert!(p.bibtex.starts_with("@inproceedings{shokouhi2013personalize,") && p.bibtex.contains("booktitle = sigir"));
    let m = lib.papers().paper_by_id("bib:mueller2015umlaut").unwrap().unwrap();
    assert_eq!(m.title, "Café Recommendations with Neural Collaborative Filtering");
    assert_eq!(m.authors, ["Jörg Müller", "María García"]);
}

#[test]
fn jsonl_fixture_imports_and_reports_bad_lines() {
    let (_d, lib) = fresh();
    let s = import(&lib, &[fixture("papers.jsonl")], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!(s.imported, 3);
    let lines: Vec<usize> = s.skipped.iter().map(|k| k.line).collect();
    assert_eq!(lines, [3, 4]);
    let p = lib.papers().paper_by_id("t:4").unwrap().unwrap();
    assert_eq!(p.authors, ["Grace Hopper", "Alan Turing"]);
    assert_eq!(lib.papers().paper_by_id("t:2").unwrap().unwrap().doi, "10.5555/t2");
}

#[test]
fn recommendations_rank_the_matching_paper_first() {
    let (_d, lib) = fresh();
    import(&lib, &[fixture("library.bib"), fixture("papers.jsonl")], ImportOptions::default(), &Quiet).unwrap();
    let rec = Recommender::new(Arc::new(lib), &Models::installed());
    let top =
        |text: &str| -> Vec<String> { rec.recommend(&Query::new(text).with_k(3)).unwrap().candidates.into_iter().map(|c| c.id).collect() };
    assert_eq!(top("We rank completions for the typed query prefix [CIT].")[0], "doi:10.1145/2484028.2484076");
    assert_eq!(top("Tags were assigned with a trigram HMM tagger [CIT].")[0], "bib:brants2000tnt");
    assert_eq!(top("Translation quality is reported in BLEU [CIT].")[0], "bib:papineni2002bleu");
    let summ = top("Earlier work on extractive summarization [CIT] scores sentences.");
    assert!(summ[..2].contains(&"bib:nenkova2011summarization".to_string()), "{summ:?}");
    assert!(summ[..2].contains(&"bib:mihalcea2004textrank".to_string()), "{summ:?}");

    let r = rec.recommend(&Query::new("self-attention Transformer [CIT]").with_k(1)).unwrap();
    let c = &r.candidates[0];
    let paper = c.paper.as_ref().expect("records are attached");
    assert_eq!(paper.title, "Attention Is All You Need");
    assert_eq!(c.channels[0].channel.name(), "bm25");
    assert_eq!(c.channels[0].rank, 1);
    assert!(c.score > 0.0);
}

#[test]
fn a_term_the_query_repeats_counts_once_per_occurrence() {
    let (_d, lib) = fresh();
    import(&lib, &[fixture("library.bib"), fixture("papers.jsonl")], ImportOptions::default(), &Quiet).unwrap();
    let index = lib.papers();
    let once = index.search("tagger", 5).unwrap();
    assert!(!once.is_empty());
    for (tf, factor) in [(QueryTf::Linear, 4.0f32), (QueryTf::Sqrt, 2.0), (QueryTf::Once, 1.0)] {
        let four = index.search_with("Tagger: the tagger, taggers and a tagger", 5, tf).unwrap();
        assert_eq!(once.iter().map(|h| h.doc).collect::<Vec<_>>(), four.iter().map(|h| h.doc).collect::<Vec<_>>());
        for (a, b) in once.iter().zip(&four) {
            assert!((b.score - factor * a.score).abs() < 1e-4 * a.score, "{tf:?}: {} vs {factor} × {}", b.score, a.score);
        }
    }
    assert_eq!(
        index.search("tagger tagger", 5).unwrap()[0].score,
        index.search_with("tagger tagger", 5, QueryTf::default()).unwrap()[0].score
    );
    // Which of two words the query repeats decides between their papers.
    let ids = |text: &str| {
        let hits = index.search(text, 2).unwrap();
        index.ids(&index.searcher(), hits.iter().map(|h| h.doc)).unwrap()
    };
    let tagging = ids("tagger tagger tagger BLEU");
    let translation = ids("tagger BLEU BLEU BLEU");
    assert_eq!(tagging[0], "bib:brants2000tnt", "{tagging:?}");
    assert_eq!(translation[0], "bib:papineni2002bleu", "{translation:?}");
}

#[test]
fn empty_queries_are_errors_and_unknown_words_return_nothing() {
    let (_d, lib) = fresh();
    import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    let rec = Recommender::new(Arc::new(lib), &Models::installed());
    let err = rec.recommend(&Query::new(" \n\t [CIT] ")).unwrap_err();
    assert!(err.to_string().contains("query is empty"), "{err}");
    assert!(rec.recommend(&Query::new("zyxwv qqqq")).unwrap().candidates.is_empty());
    // Scripts without a stemmer still give results or nothing, never an error.
    assert!(rec.recommend(&Query::new("引用 推荐 [CIT]")).is_ok());
}

#[test]
fn reimport_is_idempotent_and_resumes() {
    let (d, lib) = fresh();
    let files = [fixture("library.bib")];
    import(&lib, &files, ImportOptions::default(), &Quiet).unwrap();

    // Unchanged file: skipped by the journal.
    let again = import(&lib, &files, ImportOptions::default(), &Quiet).unwrap();
    assert_eq!((again.files_unchanged, again.imported, again.updated), (1, 0, 0));

    // Forced: every record updates in place, nothing doubles.
    let forced = import(&lib, &files, ImportOptions { force: true }, &Quiet).unwrap();
    assert_eq!((forced.imported, forced.updated), (0, 10));
    assert_eq!(lib.papers().num_papers(), 10);

    // A crash after the commit but before the journal was written: the re-run
    // redoes the file and still ends with each paper once.
    std::fs::remove_file(d.path().join("import-journal.json")).unwrap();
    drop(lib);
    let lib = Library::open(d.path()).unwrap();
    let rerun = import(&lib, &files, ImportOptions::default(), &Quiet).unwrap();
    assert_eq!((rerun.imported, rerun.updated), (0, 10));
    assert_eq!(lib.papers().num_papers(), 10);
}

#[test]
fn an_entry_that_gains_a_doi_replaces_its_old_record() {
    let (d, lib) = fresh();
    let v1 = d.path().join("v1.bib");
    std::fs::write(&v1, "@article{k, title={Old Title}}").unwrap();
    import(&lib, std::slice::from_ref(&v1), ImportOptions::default(), &Quiet).unwrap();
    std::fs::write(&v1, "@article{k, title={New Title}, doi={10.1/k}}").unwrap();
    let s = import(&lib, &[v1], ImportOptions::default(), &Quiet).unwrap();
    assert_eq!((s.imported, s.updated), (0, 1));
    assert_eq!(lib.papers().num_papers(), 1);
    assert!(lib.papers().paper_by_id("bib:k").unwrap().is_none());
    assert_eq!(lib.papers().paper_by_id("doi:10.1/k").unwrap().unwrap().title, "New Title");
}

#[test]
fn libraries_of_another_format_say_how_to_rebuild() {
    let (d, lib) = fresh();
    drop(lib);
    std::fs::write(d.path().join("library.json"), r#"{"format": 999, "written_by": "9.9.9"}"#).unwrap();
    let err = Library::open(d.path()).err().expect("refused").to_string();
    assert!(err.contains("format 999") && err.contains("Rebuild"), "{err}");
    let missing = Library::open(&d.path().join("nothing-here")).err().expect("refused").to_string();
    assert!(missing.contains(&format!("citewise --library {} import FILE.bib", d.path().join("nothing-here").display())), "{missing}");
}

#[test]
fn a_paragraph_asking_for_two_citations_finds_each_claims_paper() {
    use citewise::pipeline::{Fusion, Settings};
    let (d, lib) = fresh();
    let papers = d.path().join("claims.jsonl");
    let mut lines: Vec<String> = (1..=5)
        .map(|i| {
            format!(
                r#"{{"id": "a{i}", "title": "Refinding email messages, study {i}", "abstract": "How people refind old email messages and re-visit them in the inbox, study {i}."}}"#
            )
        })
        .collect();
    lines.push(r#"{"id": "b", "title": "Voice queries for shopping", "abstract": "Spoken product queries in e-commerce search."}"#.into());
    // Papers of other topics, so that the first claim's words are not in most papers.
    lines.extend(
        (1..=10).map(|i| {
            format!(r#"{{"id": "c{i}", "title": "Dependency grammar {i}", "abstract": "Parsing sentences into trees, part {i}."}}"#)
        }),
    );
    std::fs::write(&papers, lines.join("\n")).unwrap();
    import(&lib, &[papers], ImportOptions::default(), &Quiet).unwrap();
    let lib = Arc::new(lib);
    let paragraph = "People refind old email messages: they re-visit email in the inbox and refind messages by search [CIT]. \
                     Shoppers speak voice queries [CIT].";
    let top = |claim_weight: f32| -> Vec<String> {
        let settings = Settings { fusion: Fusion { claim_weight, ..Fusion::default() }, ..Settings::default() };
        let stages = citewise::pipeline::Stages::parse(&["bm25"]).unwrap();
        let rec = Recommender::open(lib.clone(), &Models::installed(), Some(&stages), settings).unwrap();
        rec.recommend(&Query::new(paragraph).with_k(3)).unwrap().candidates.into_iter().map(|c| c.id).collect()
    };
    // The whole paragraph's words are mostly the first claim's: its papers fill the top.
    let whole = top(0.0);
    assert!(whole.iter().all(|id| id.starts_with('a')), "{whole:?}");
    // Searched claim by claim too, the second claim's paper joins them.
    let claims = top(Fusion::default().claim_weight);
    assert!(claims.contains(&"b".to_string()), "{claims:?}");
    assert!(claims.iter().any(|id| id.starts_with('a')), "the first claim keeps its papers: {claims:?}");
}

#[test]
fn bm25_can_weigh_titles_and_search_again_with_its_best_papers_words() {
    use citewise::pipeline::channel::{Bm25Channel, Channel, Feedback};
    use citewise::pipeline::Prepared;
    let (d, lib) = fresh();
    let papers = d.path().join("levers.jsonl");
    let lines = [
        r#"{"id": "in-title", "title": "A tagger", "abstract": "We describe rules for words in running text of news."}"#,
        r#"{"id": "in-abstract", "title": "Rules for words", "abstract": "A tagger and a second tagger for running text of news."}"#,
        r#"{"id": "hmm1", "title": "Trigram viterbi smoothing", "abstract": "An HMM for parsing with trigram viterbi smoothing."}"#,
        r#"{"id": "hmm2", "title": "Smoothing trigram viterbi models", "abstract": "HMM parsing, trigram viterbi smoothing again."}"#,
        r#"{"id": "unsaid", "title": "Viterbi decoding", "abstract": "Trigram smoothing and viterbi decoding."}"#,
    ];
    std::fs::write(&papers, lines.join("\n")).unwrap();
    import(&lib, &[papers], ImportOptions::default(), &Quiet).unwrap();
    let lib = Arc::new(lib);
    let ids = |ch: &Bm25Channel, text: &str| -> Vec<String> {
        let prepared = Prepared::new(&Query::new(text), &lib).unwrap();
        ch.retrieve(&prepared, 5).unwrap().ranked.into_iter().map(|(id, _)| id).collect()
    };
    let plain = Bm25Channel::new(lib.clone());
    assert_eq!(ids(&plain, "tagger")[0], "in-abstract", "twice in the text beats once");
    assert_eq!(ids(&plain.with_title_weight(2.0), "tagger")[0], "in-title", "the title's own BM25 lifts the paper it names");
    let found = ids(&Bm25Channel::new(lib.clone()), "hmm parsing");
    assert!(!found.contains(&"unsaid".to_string()), "{found:?}");
    let feedback = Feedback { docs: 2, terms: 5, weight: 0.5, max_share: 1.0 };
    let again = ids(&Bm25Channel::new(lib.clone()).with_feedback(Some(feedback)), "hmm parsing");
    assert_eq!(again[..2], found[..2], "the first search's best stay first");
    assert!(again.contains(&"unsaid".to_string()), "a paper of their words but none of the query's is found: {again:?}");
}
