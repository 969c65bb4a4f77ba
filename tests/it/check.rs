#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! `citewise check`: each kind of problem found in a draft made for it, a
//! clean draft clean, exit codes and JSON from the binary.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use citewise::check::{Bibliography, Checker, Finding, Kind, Report, Severity, SupportCache};
use citewise::corpus::citation_markup::CiteGrammar;
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use citewise::pipeline::{Models, Recommender};

/// The library: taggers, parsers, a preprint and its publication, a
/// retracted paper, and papers for the rest of the field.
const LIBRARY: &str = r#"
@inproceedings{smith2020,
  title = {Part-of-Speech Tagging with Hidden Markov Models},
  author = {Smith, Anna and Brown, Ben},
  year = {2020}, booktitle = {Proceedings of ACL}, doi = {10.1000/tagging},
  abstract = {We tag parts of speech with a hidden Markov model trained on the Penn Treebank. The tagger reaches 96 percent accuracy.}
}
@inproceedings{jones2019,
  title = {Dependency Parsing with Graph Neural Networks},
  author = {Jones, Carl},
  year = {2019}, booktitle = {Proceedings of EMNLP}, doi = {10.1000/parsing},
  abstract = {A graph neural network scores the arcs of a dependency tree. The parser is fast and accurate on treebanks of many languages.}
}
@misc{lee2021pre,
  title = {Neural Machine Translation of Long Documents with Sparse Attention},
  author = {Lee, Dana},
  year = {2021}, howpublished = {arXiv preprint}, journal = {arXiv}, doi = {10.48550/arXiv.2101.00001},
  abstract = {Sparse attention lets a translation model read whole documents.}
}
@inproceedings{lee2021,
  title = {Neural Machine Translation of Long Documents with Sparse Attention},
  author = {Lee, Dana},
  year = {2021}, booktitle = {Proceedings of NAACL}, doi = {10.1000/translation},
  abstract = {Sparse attention lets a translation model read whole documents.}
}
@article{kim2018,
  title = {RETRACTED: Sentiment Analysis of Product Reviews with Emotion Lexicons},
  author = {Kim, Eun},
  year = {2018}, journal = {Journal of Reviews}, doi = {10.1000/sentiment},
  abstract = {Emotion lexicons classify the sentiment of product reviews.}
}
@inproceedings{brants2000,
  title = {TnT: A Statistical Part-of-Speech Tagger},
  author = {Brants, Thorsten},
  year = {2000}, booktitle = {Proceedings of ANLP},
  abstract = {A trigram hidden Markov model tags parts of speech. On the Penn Treebank it is as accurate as any tagger of its time, and fast.}
}
@inproceedings{toutanova2003,
  title = {Feature-Rich Part-of-Speech Tagging with a Cyclic Dependency Network},
  author = {Toutanova, Kristina},
  year = {2003}, booktitle = {Proceedings of NAACL},
  abstract = {We tag parts of speech with a dependency network of tag contexts, reaching 97.24 percent accuracy on the Penn Treebank.}
}
@inproceedings{chen2017,
  title = {Maximum Entropy Models for Named Entity Recognition},
  author = {Chen, Fang},
  year = {2017}, booktitle = {Proceedings of COLING},
  abstract = {A maximum entropy model finds the names of people and places in news text.}
}
"#;

fn library(dir: &Path) -> Arc<Library> {
    let bib = dir.join("library.bib");
    std::fs::write(&bib, LIBRARY).unwrap();
    let lib = Library::open_or_create(&dir.join("lib")).unwrap();
    import(&lib, &[bib], ImportOptions::default(), &Quiet).unwrap();
    Arc::new(lib)
}

/// The draft's own bibliography: what a writer copied, right and wrong.
const REFERENCES: &str = r#"
@inproceedings{smith2020,
  title = {Part-of-Speech Tagging with Hidden Markov Models},
  author = {Smith, Anna}, year = {2020}, doi = {10.1000/tagging}
}
@inproceedings{smithTagging,
  title = {Part-of-speech tagging with hidden Markov models},
  author = {Smith, Anna}, year = {2020}
}
@article{fabricated2020,
  title = {Deep Reinforcement Learning for Protein Folding at Scale},
  author = {Smith, Anna}, year = {2020}, doi = {10.1000/tagging}
}
@inproceedings{jones2019,
  title = {Dependency Parsing with Graph Neural Networks},
  author = {Jones, Carl}, year = {2015}, doi = {10.1000/parsing}
}
"#;

fn check(dir: &Path, lib: &Arc<Library>, draft: &str) -> Report {
    let bib = dir.join("references.bib");
    std::fs::write(&bib, REFERENCES).unwrap();
    let bib = Bibliography::read(&bib).unwrap();
    let rec = Recommender::new(lib.clone(), &Models::none());
    Checker::with_support(&rec).check("draft.tex", draft, &CiteGrammar::PLAIN, &bib, &mut SupportCache::default()).unwrap()
}

fn only(report: &Report, kind: Kind) -> Vec<&Finding> {
    report.findings.iter().filter(|f| f.kind == kind).collect()
}

const CLEAN: &str = "\\section{Introduction}\n\
We tag parts of speech with a hidden Markov model \\cite{smith2020}.\n\
Graph neural networks score the arcs of dependency trees \\citep{chen2017x}.\n";

#[test]
fn an_unknown_key_is_offered_its_near_miss_and_the_papers_that_fit_the_sentence() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let r = check(dir.path(), &lib, "Intro.\n\nWe tag parts of speech with a hidden Markov model \\cite{smiht2020}.\n");
    let f = only(&r, Kind::UnknownKey);
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert_eq!((f[0].key.as_str(), f[0].line, f[0].column, f[0].severity), ("smiht2020", 3, 57, Severity::Error));
    assert!(f[0].message.contains("`smiht2020` is in neither"), "{}", f[0].message);
    let offered: Vec<(&str, &str)> = f[0].suggestions.iter().map(|s| (s.key.as_str(), s.why.as_str())).collect();
    assert_eq!(offered[0], ("smith2020", "near miss, fits the sentence"), "a near miss that the recommender picks too: {offered:?}");
    assert_eq!(f[0].suggestions[0].title, "Part-of-Speech Tagging with Hidden Markov Models", "with its paper");
    assert!(offered[1..].iter().all(|(k, why)| *k != "smith2020" && *why == "fits the sentence"), "{offered:?}");
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn a_doi_that_names_another_paper_is_a_mismatch_and_so_is_a_wrong_year() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let r = check(
        dir.path(),
        &lib,
        "Protein folding was learned at scale \\cite{fabricated2020}.\nParsers score arcs of dependency trees with graph neural networks \\cite{jones2019}.\n",
    );
    let f = only(&r, Kind::Mismatch);
    assert_eq!(f.len(), 2, "{:#?}", r.findings);
    assert_eq!((f[0].key.as_str(), f[0].line, f[0].severity), ("fabricated2020", 1, Severity::Error));
    assert!(
        f[0].message.contains(
            "its DOI 10.1000/tagging is “Part-of-Speech Tagging with Hidden Markov Models” (Anna Smith and Ben Brown, 2020) in the library"
        ),
        "{}",
        f[0].message
    );
    assert_eq!(f[0].library_title.as_deref(), Some("Part-of-Speech Tagging with Hidden Markov Models"));
    assert_eq!((f[1].key.as_str(), f[1].line, f[1].severity), ("jones2019", 2, Severity::Warning));
    assert!(f[1].message.contains("says 2015, the library record of DOI 10.1000/parsing says 2019"), "{}", f[1].message);
}

#[test]
fn one_work_under_two_keys_and_a_preprint_beside_its_publication_are_duplicates() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let r = check(
        dir.path(),
        &lib,
        "Taggers use hidden Markov models \\cite{smith2020}, as before \\cite{smithTagging}.\n\
         Sparse attention reads whole documents \\cite{lee2021pre,lee2021}.\n",
    );
    let f = only(&r, Kind::Duplicate);
    assert_eq!(f.len(), 2, "{:#?}", r.findings);
    assert_eq!((f[0].key.as_str(), f[0].line, f[0].keep.as_deref()), ("smithTagging", 1, Some("smith2020")));
    assert!(f[0].message.contains("`smithTagging` and `smith2020` are one work"), "{}", f[0].message);
    assert_eq!((f[1].key.as_str(), f[1].line, f[1].keep.as_deref()), ("lee2021pre", 2, Some("lee2021")));
    assert!(f[1].message.contains("is the preprint of `lee2021`"), "{}", f[1].message);
}

#[test]
fn a_retracted_paper_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let r = check(dir.path(), &lib, "Lexicons classify the sentiment of product reviews \\cite{kim2018}.\n");
    let f = only(&r, Kind::Retracted);
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert_eq!((f[0].key.as_str(), f[0].severity), ("kim2018", Severity::Error));
    assert!(f[0].message.contains("is retracted: its record flags it retracted"), "{}", f[0].message);
}

/// A model test: weak support needs the cross-encoder and the citation
/// encoder (on the word channels alone a paper's rank is all there is, and
/// a true citation is as often below the fused list's depth as a wrong
/// one, so nothing is flagged).
#[test]
fn a_paper_that_does_not_fit_its_sentence_is_weak_and_the_fitting_one_is_offered() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let draft = "A hidden Markov model tags parts of speech on the Penn Treebank \\cite{chen2017}.\n\
                 A hidden Markov model tags parts of speech on the Penn Treebank \\cite{smith2020}.\n";
    let words = check(dir.path(), &lib, draft);
    assert!(only(&words, Kind::WeakSupport).is_empty(), "the words alone flag nothing: {:#?}", words.findings);
    let support: Vec<f32> = words.citations.iter().map(|c| c.support.unwrap()).collect();
    assert!(support[0] < support[1], "but the fitting paper has more support: {support:?}");
    if !common::models_or_fail("the weak-support check") {
        return;
    }
    let bib = Bibliography::read(&dir.path().join("references.bib")).unwrap();
    let rec = Recommender::new(lib.clone(), &Models::installed());
    assert!(rec.rerank_stage().is_some(), "the reranker is shipped");
    let r = Checker::with_support(&rec).check("draft.tex", draft, &CiteGrammar::PLAIN, &bib, &mut SupportCache::default()).unwrap();
    let f = only(&r, Kind::WeakSupport);
    assert_eq!(f.len(), 1, "{:#?}", r.findings);
    assert_eq!((f[0].key.as_str(), f[0].line, f[0].severity), ("chen2017", 1, Severity::Warning));
    assert_eq!(f[0].suggestions.first().map(|s| s.key.as_str()), Some("smith2020"), "{:#?}", f[0].suggestions);
    assert!(f[0].best_match.as_deref().is_some_and(|m| m.starts_with("its abstract: ")), "{:?}", f[0].best_match);
    let support: Vec<f32> = r.citations.iter().map(|c| c.support.unwrap()).collect();
    assert!(support[0] < support[1], "the fitting paper has more support: {support:?}");
    assert!(support.iter().all(|s| (0.0..=1.0).contains(s)));
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn a_clean_draft_has_no_findings_and_a_second_check_scores_nothing_again() {
    let dir = tempfile::tempdir().unwrap();
    let lib = library(dir.path());
    let bib = dir.path().join("references.bib");
    std::fs::write(&bib, REFERENCES).unwrap();
    let bib = Bibliography::read(&bib).unwrap();
    let rec = Recommender::new(lib.clone(), &Models::none());
    let checker = Checker::with_support(&rec);
    let clean = CLEAN.replace("chen2017x", "jones2019");
    let mut cache = SupportCache::default();
    let r = checker.check("draft.tex", &clean.replace("2015", "2019"), &CiteGrammar::PLAIN, &bib, &mut cache).unwrap();
    // jones2019's entry says 2015: only that mismatch.
    assert_eq!(r.findings.iter().map(|f| (f.kind, f.key.as_str())).collect::<Vec<_>>(), [(Kind::Mismatch, "jones2019")]);
    assert_eq!(cache.len(), 2, "two sentences scored");
    let fixed = Bibliography {
        papers: bib
            .papers
            .iter()
            .cloned()
            .map(|mut p| {
                if p.key == "jones2019" {
                    p.year = Some(2019);
                }
                p
            })
            .collect(),
        ..bib.clone()
    };
    let r = checker.check("draft.tex", &clean, &CiteGrammar::PLAIN, &fixed, &mut cache).unwrap();
    assert!(r.findings.is_empty(), "{:#?}", r.findings);
    assert_eq!(r.exit_code(), 0);
    assert_eq!(cache.len(), 2, "the same sentences: nothing scored again");
}

fn citewise(dir: &Path, args: &[&str]) -> std::process::Output {
    common::citewise_command()
        .args(args)
        .env("CITEWISE_LIBRARY", dir.join("lib"))
        // The word channels only: tests do not load installed models.
        .env("CITEWISE_MODELS", dir.join("no-models"))
        .output()
        .unwrap()
}

#[test]
fn the_command_exits_0_when_clean_and_1_on_findings_with_json_for_every_citation() {
    let dir = tempfile::tempdir().unwrap();
    library(dir.path());
    let project = dir.path().join("paper");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("refs.bib"), REFERENCES.replace("2015", "2019")).unwrap();
    let draft: PathBuf = project.join("draft.tex");
    std::fs::write(&draft, format!("{}\\bibliography{{refs}}\n", CLEAN.replace("chen2017x", "jones2019"))).unwrap();
    let o = citewise(dir.path(), &["check", draft.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.contains("2 citations of 2 keys, 0 errors, 0 warnings"), "{out}");

    std::fs::write(&draft, "We tag words \\cite{smiht2020} with HMMs.\n\\bibliography{refs}\n").unwrap();
    let o = citewise(dir.path(), &["check", draft.to_str().unwrap()]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("draft.tex:1:20: error: unknown key: `smiht2020` is in neither"), "{out}");
    assert!(out.contains("→ smith2020 “Part-of-Speech Tagging with Hidden Markov Models” (support"), "{out}");

    let o = citewise(dir.path(), &["check", draft.to_str().unwrap(), "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["citations"][0]["key"], "smiht2020");
    assert_eq!(json["findings"][0]["kind"], "unknown-key");
    assert_eq!(json["findings"][0]["line"], 1);

    // A bibliography outside the project is refused, not read.
    std::fs::write(&draft, "We tag \\cite{smith2020}.\n\\bibliography{../refs}\n").unwrap();
    let o = citewise(dir.path(), &["check", draft.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("outside the project"), "{}", String::from_utf8_lossy(&o.stderr));
}

/// A project with the library, `refs.bib` (the years right) and a draft
/// `paper/draft.tex` holding `text` and naming `refs`.
fn project_draft(dir: &Path, text: &str) -> PathBuf {
    library(dir);
    let project = dir.join("paper");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("refs.bib"), REFERENCES.replace("2015", "2019")).unwrap();
    let draft = project.join("draft.tex");
    std::fs::write(&draft, format!("{text}\\bibliography{{refs}}\n")).unwrap();
    draft
}

fn check_record_only(dir: &Path, draft: &Path) -> (Option<i32>, String) {
    let o = citewise(dir, &["check", "--no-support", draft.to_str().unwrap()]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    (o.status.code(), out)
}

#[test]
fn a_draft_past_the_citation_limit_is_checked_up_to_it_and_says_so_in_one_line() {
    // The shape that took quadratic time: one paragraph, a citation on each
    // line, past the limit of citations a check reads.
    let dir = tempfile::tempdir().unwrap();
    let max = citewise::limits::CHECK_CITATIONS;
    let lines = "We tag parts of speech with a hidden Markov model \\cite{smith2020}.\n".repeat(max + 1000);
    let draft = project_draft(dir.path(), &lines);
    let (code, out) = check_record_only(dir.path(), &draft);
    let file = draft.display();
    let limit =
        format!("note: {file}: {} citations, over the limit of {max} checked in one draft; only the first {max} are checked\n", max + 1000);
    assert!(out.contains(&limit), "{out}");
    assert!(out.contains(&format!("{file}: {max} citations of 1 keys, 0 errors, 0 warnings")), "{out}");
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn a_cite_group_of_a_million_keys_is_read_up_to_the_limit_not_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let keys = vec!["smith2020"; 1_000_000].join(",");
    let draft = project_draft(dir.path(), &format!("Taggers use hidden Markov models \\cite{{{keys}}}.\n"));
    let (code, out) = check_record_only(dir.path(), &draft);
    let (file, max) = (draft.display(), citewise::limits::CHECK_CITATIONS);
    let limit =
        format!("note: {file}: 1000000 citations, over the limit of {max} checked in one draft; only the first {max} are checked\n");
    assert!(out.contains(&limit), "{out}");
    assert!(out.contains(&format!("{file}: {max} citations of 1 keys, 0 errors, 0 warnings")), "{out}");
    assert_eq!(code, Some(0), "{out}");
}

#[test]
fn a_cite_group_with_a_nul_is_read_and_its_key_shown_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let draft = project_draft(dir.path(), "Taggers tag \\cite{smith2020,smi\0th2020}.\n");
    let (code, out) = check_record_only(dir.path(), &draft);
    assert_eq!(code, Some(1), "{out}");
    // Not "`smith2020` is in neither": the NUL is said, not dropped.
    assert!(out.contains("draft.tex:1:29: error: unknown key: `smi\\u{0}th2020` is in neither"), "{out}");
    assert!(out.contains("  → smith2020: near miss\n"), "{out}");
    assert!(out.contains("2 citations of 2 keys, 1 errors, 0 warnings"), "{out}");
    let o = citewise(dir.path(), &["check", "--no-support", "--json", draft.to_str().unwrap()]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["citations"][1]["key"], "smi\0th2020");
    assert_eq!(json["findings"][0]["key"], "smi\0th2020");
}

#[test]
fn a_cite_key_list_never_closed_is_said_with_its_line_and_the_next_paragraph_checked() {
    let dir = tempfile::tempdir().unwrap();
    let open = vec!["smith2020"; 1000].join(",");
    let draft = project_draft(dir.path(), &format!("Taggers tag \\citep{{{open}.\n\nParsers score arcs \\cite{{jones2019}}.\n"));
    let (code, out) = check_record_only(dir.path(), &draft);
    let note = format!("note: {}:1: `\\citep{{…` is not closed before its paragraph ends: its keys are not read\n", draft.display());
    assert!(out.contains(&note), "{out}");
    assert!(out.contains("1 citations of 1 keys, 0 errors, 0 warnings"), "{out}");
    assert_eq!(code, Some(0), "{out}");
}

/// A paper of the ACM Digital Library as its BibTeX names it: under its
/// DOI, which is no key a bibliography should hold.
const ACM: &str = r#"
@inproceedings{10.1145/3077136.3080758,
  author = {Park, Dae Hoon and Chiba, Rikio},
  title = {A Neural Language Model for Query Auto-Completion},
  year = {2017}, booktitle = {Proceedings of SIGIR}, doi = {10.1145/3077136.3080758},
  abstract = {Query auto-completion systems suggest queries that complete a user's text as the user types each character. A neural language model generates completions for prefixes never seen in the query log.}
}
"#;

/// The library of [`LIBRARY`] and [`ACM`], and a project folder `paper/`
/// holding `draft.tex` (`text`) and the files `files` names.
fn acm_project(dir: &Path, text: &str, files: &[(&str, &str)]) -> PathBuf {
    let bib = dir.join("library.bib");
    std::fs::write(&bib, format!("{LIBRARY}{ACM}")).unwrap();
    let lib = Library::open_or_create(&dir.join("lib")).unwrap();
    import(&lib, &[bib], ImportOptions::default(), &Quiet).unwrap();
    let project = dir.join("paper");
    std::fs::create_dir_all(&project).unwrap();
    for (name, content) in files {
        std::fs::write(project.join(name), content).unwrap();
    }
    let draft = project.join("draft.tex");
    std::fs::write(&draft, text).unwrap();
    draft
}

fn output(o: &std::process::Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// LaTeX finds a citation in the bibliography file or not at all: a key
/// the library has but no bibliography holds is an error (it passed, "0
/// errors"), whose fix adds the library's entry, under the key export
/// writes when the cited one is a DOI.
#[test]
fn a_key_no_bibliography_holds_is_an_error_even_when_the_library_has_it() {
    let dir = tempfile::tempdir().unwrap();
    let draft = acm_project(dir.path(), "Completions are generated by a neural language model \\cite{10.1145/3077136.3080758}.\n", &[]);
    let (code, out) = check_record_only(dir.path(), &draft);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("draft.tex:1:60: error: not in the bibliography: `10.1145/3077136.3080758` is not in "), "{out}");
    let said = "references.bib, which does not exist, so LaTeX will not find it; the library has it (“A Neural Language Model for Query \
                Auto-Completion”)";
    assert!(out.contains(said), "{out}");
    assert!(out.contains("as `park2017neural`, and the citation becomes `park2017neural`"), "{out}");
    assert!(out.contains("references.bib does not exist, so LaTeX finds none of the draft's citations"), "{out}");
    assert!(out.contains("1 citations of 1 keys, 1 errors, 0 warnings"), "{out}");

    // A bibliography that exists and lacks the key: the same, and the fix
    // keeps the key the draft cites.
    let text = "We tag with a trigram tagger \\cite{brants2000}.\n\\bibliography{refs}\n";
    let draft = acm_project(dir.path(), text, &[("refs.bib", REFERENCES)]);
    let o = citewise(dir.path(), &["check", "--no-support", "--json", draft.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1), "{}", output(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let f = &json["findings"][0];
    assert_eq!(f["kind"], "not-in-bibliography", "{json:#}");
    let said = "refs.bib, so LaTeX will not find it; the library has it (“TnT: A Statistical Part-of-Speech Tagger”)";
    assert!(f["message"].as_str().unwrap().ends_with(said), "{f}");
    assert!(f["fix"].as_str().unwrap().starts_with("add it from the library: its entry goes to "), "{f}");
    assert_eq!(f["suggestions"][0]["why"], "add it from the library");
    assert_eq!(f["suggestions"][0]["key"], "brants2000");
    assert_eq!(f["suggestions"][0]["id"], "bib:brants2000");
}

/// `\bibliography{refs}` whose file is not there is said, where the draft
/// names it.
#[test]
fn a_bibliography_file_the_draft_names_and_that_is_missing_is_said() {
    let dir = tempfile::tempdir().unwrap();
    let draft = acm_project(dir.path(), "We tag with hidden Markov models \\cite{smith2020}.\n\\bibliography{refs}\n", &[]);
    let (code, out) = check_record_only(dir.path(), &draft);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("draft.tex:2:15: error: missing bibliography: `refs.bib` does not exist ("), "{out}");
    assert!(out.contains("): LaTeX will find none of the draft's citations in it\n"), "{out}");
}

/// Suggestions are the keys export writes (`park2017neural`, the default
/// key style), never the DOI-shaped keys of an ACM library.
#[test]
fn suggestions_are_the_keys_export_writes() {
    let dir = tempfile::tempdir().unwrap();
    let text = "A neural language model generates query auto-completions for prefixes never seen in the query log \\cite{parkk2017}.\n\
                \\bibliography{refs}\n";
    let draft = acm_project(dir.path(), text, &[("refs.bib", REFERENCES)]);
    let o = citewise(dir.path(), &["check", draft.to_str().unwrap()]);
    let out = output(&o);
    assert!(out.contains("unknown key: `parkk2017` is in neither"), "{out}");
    assert!(out.contains("→ park2017neural “A Neural Language Model for Query Auto-Completion” (support"), "{out}");
    assert!(!out.contains("→ 10.1145/"), "{out}");
}

/// Without a library the draft is checked against its bibliography (it
/// refused to run): unknown keys and duplicates, and it says what needs a
/// library.
#[test]
fn without_a_library_the_draft_is_checked_against_its_bibliography() {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("paper");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("refs.bib"), REFERENCES).unwrap();
    let draft = project.join("draft.tex");
    let text = "Taggers use hidden Markov models \\cite{smith2020}, as before \\cite{smithTagging}.\nParsers parse \\cite{nosuch2020}.\n\
                \\bibliography{refs}\n";
    std::fs::write(&draft, text).unwrap();
    // `lib` is never made: there is no library.
    let o = citewise(dir.path(), &["check", draft.to_str().unwrap()]);
    let out = output(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("draft.tex:2:21: error: unknown key: `nosuch2020` is not in "), "{out}");
    assert!(out.contains("warning: duplicate: `smithTagging` and `smith2020` are one work"), "{out}");
    assert!(
        out.contains(
            "note: no library: the draft was checked against its bibliography only (unknown keys, duplicates); support and mismatches need a library"
        ),
        "{out}"
    );
    assert!(out.contains("3 citations of 3 keys, 1 errors, 1 warnings"), "{out}");
}

/// Pandoc's `bibliography: [a.bib, b.bib]` names two files, and a dash
/// list too: `check` reads both (it read one file named "[a.bib, b.bib]").
#[test]
fn a_markdown_draft_is_checked_against_every_file_its_front_matter_lists() {
    let dir = tempfile::tempdir().unwrap();
    library(dir.path());
    let project = dir.path().join("notes");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("a.bib"), "@misc{onlyina2020, title={Tagging Words Quickly}, author={Ay, Ann}, year={2020}}\n").unwrap();
    std::fs::write(project.join("b.bib"), "@misc{onlyinb2021, title={Parsing Sentences Slowly}, author={Bee, Bo}, year={2021}}\n").unwrap();
    for front in ["bibliography: [a.bib, b.bib]", "bibliography:\n  - a.bib\n  - b.bib"] {
        let draft = project.join("notes.md");
        let text = format!("---\n{front}\n---\n# Notes\n\nWe tag words [@onlyina2020] and parse sentences [@onlyinb2021].\n");
        std::fs::write(&draft, text).unwrap();
        let (code, out) = check_record_only(dir.path(), &draft);
        assert!(out.contains("2 citations of 2 keys, 0 errors, 0 warnings"), "{front}: {out}");
        assert_eq!(code, Some(0), "{front}: {out}");
    }
}

/// A real LaTeX draft (preamble, title, abstract, headings, a figure,
/// labels and references, comments, bibliography commands) is read as its
/// author wrote it: each citation's sentence, as `check --json` reports it,
/// holds no command, no preamble and no heading, and a commented-out
/// citation is none.
#[test]
fn a_latex_draft_is_read_as_its_author_wrote_it() {
    let dir = tempfile::tempdir().unwrap();
    library(dir.path());
    let project = dir.path().join("paper");
    std::fs::create_dir_all(&project).unwrap();
    let draft = project.join("paper.tex");
    std::fs::copy(common::fixture("drafts/paper.tex"), &draft).unwrap();
    let o = citewise(dir.path(), &["check", "--no-support", "--json", draft.to_str().unwrap()]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", output(&o)));
    let sentences: Vec<(&str, &str)> =
        json["citations"].as_array().unwrap().iter().map(|c| (c["key"].as_str().unwrap(), c["sentence"].as_str().unwrap())).collect();
    assert_eq!(
        sentences,
        [
            (
                "bar2011context",
                "Query auto-completion ranks the candidate completions of a typed prefix by their popularity in the query log [CIT]."
            ),
            ("shokouhi2013learning", "Personalised rankers add the user's own search history to the features of each candidate [CIT]."),
            (
                "park2017neural",
                "As Figure shows, a character-level language model generates completions for prefixes never seen in the log [CIT]."
            ),
            ("pass2006picture", "We train the model on sessions of the public AOL query log, which many studies of completion use [CIT]."),
        ]
    );
    for (_, s) in &sentences {
        let not_prose = ["\\", "{", "documentclass", "Personal Histories", "Introduction", "Method", "Training", "sec:", "fig:", "width"];
        for not_prose in not_prose.into_iter().chain(["TODO", "plain"]) {
            assert!(!s.contains(not_prose), "`{not_prose}` in “{s}”");
        }
    }
}
