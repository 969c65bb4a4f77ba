#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! Adapting HAtten to a library (the inverse cloze task on its abstracts,
//! mixed with its citing sentences): pairs made from real ACM abstracts
//! (`../shared/data/bib/acm-dl`) and from a slice of the benchmark with its
//! citing sentences as evidence, a short run that validates, resumes and is
//! published into the library, and the library's encoder picking the
//! adapted weights up. The reranker likewise, from the reranker in use, on
//! the slice's citing sentences.

use crate::common;

use std::collections::HashSet;
use std::path::Path;

use burn::tensor::Device;
use citewise::corpus::benchmark::load_contexts;
use citewise::corpus::citation_markup::strip_citations;
use citewise::index::analyzer::{counted_terms, english};
use citewise::library::adapt::{
    adaptation_data, adapted_dir, publish, publish_reranker, remove, remove_reranker, reranker_data, reranker_run_dir, reranker_run_state,
    run_dir, run_state, trained_documents, PairOptions,
};
use citewise::library::evidence_import::import_evidence;
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use citewise::neural::encoder::{HattenEncoder, Weights};
use citewise::neural::models::model_dir;
use citewise::neural::reranker::{Reranker, RerankerWeights, ADAPTED_RERANKER_DIR};
use citewise::neural::train::adapt::{adapt_hatten, AdaptOptions, PairKind, MIN_QUERY_WORDS};
use citewise::neural::train::rerank::{r10_rr, reranked, train_reranker, RerankInputs, RerankTrainOptions};
use citewise::neural::train::Quiet as QuietTraining;
use citewise::neural::words::WordVectors;
use std::io::Write;

/// A library of three ACM proceedings series (about 480 real entries, nearly
/// all with abstracts), or `None` without the shared data.
fn acm_library(dir: &Path) -> Option<Library> {
    let shared = common::shared_or_fail("the ACM BibTeX in ../shared")?;
    let acm = shared.join("data/bib/acm-dl");
    let lib = Library::open_or_create(dir).unwrap();
    let inputs: Vec<_> = ["adcs", "airs", "aies"].iter().map(|s| acm.join(s)).collect();
    import(&lib, &inputs, ImportOptions::default(), &Quiet).unwrap();
    assert!(lib.papers().num_papers() > 400, "{} papers", lib.papers().num_papers());
    Some(lib)
}

/// The letters and digits of a text, lower-cased (a key that spacing and
/// punctuation do not change).
fn letters(text: &str) -> String {
    text.chars().filter(|c| c.is_alphanumeric()).flat_map(char::to_lowercase).collect()
}

fn terms(text: &str) -> HashSet<String> {
    counted_terms(&english(), text).into_iter().map(|(t, _)| t).collect()
}

#[test]
fn inverse_cloze_pairs_cut_a_sentence_out_of_real_abstracts() {
    let dir = tempfile::tempdir().unwrap();
    let Some(lib) = acm_library(dir.path()) else { return };
    let opts = PairOptions { train: 150, val: 15, pool: 200, negatives: 5, seed: 3, ..PairOptions::default() };
    let data = adaptation_data(&lib, &opts, &|_, _| {}).unwrap();
    assert_eq!((data.train.len(), data.val.len()), (150, 15));
    assert!(data.cited_val.is_empty() && data.train.iter().all(|p| p.kind == PairKind::Cloze), "no evidence, no citing sentences");

    // The analyzed keywords of the library's papers, by title.
    let mut keywords: std::collections::HashMap<String, HashSet<String>> = std::collections::HashMap::new();
    lib.papers()
        .for_each_paper(&mut |paper| {
            keywords.entry(letters(&paper.title)).or_default().extend(terms(&paper.keywords.join(" ")));
            Ok(())
        })
        .unwrap();
    let mut papers_seen = HashSet::new();
    let mut with_negatives = 0;
    for p in data.train.iter().chain(&data.val) {
        assert!(papers_seen.insert(p.paper), "one pair per paper");
        let paper = &data.papers[p.paper];
        // The query is a whole sentence of the abstract, long enough.
        assert!(paper.abstract_text.contains(&p.query), "{:?} not in {:?}", p.query, paper.abstract_text);
        assert!(p.query.split_whitespace().count() >= MIN_QUERY_WORDS, "{:?}", p.query);
        assert!(p.query.ends_with(['.', '?', '!']) || paper.abstract_text.trim_end().ends_with(&p.query), "{:?}", p.query);
        // The positive is the same paper without it: its title, and every other word.
        assert_eq!(p.positive.title, paper.title);
        assert!(!p.positive.abstract_text.contains(&p.query), "{:?}", p.positive.abstract_text);
        assert_eq!(
            p.positive.abstract_text.split_whitespace().count() + p.query.split_whitespace().count(),
            paper.abstract_text.split_whitespace().count(),
            "nothing but the sentence is cut from {:?}",
            paper.abstract_text
        );
        // Hard negatives: BM25 neighbours of the sentence, never its own
        // paper: each shares a word with it (in its title, abstract or
        // keywords, the text BM25 searches).
        assert!(p.negatives.len() <= 5 && !p.negatives.contains(&p.paper));
        let q = terms(&p.query);
        for &n in &p.negatives {
            let mut t = terms(&format!("{} {}", data.papers[n].title, data.papers[n].abstract_text));
            t.extend(keywords.get(&letters(&data.papers[n].title)).into_iter().flatten().cloned());
            assert!(!q.is_disjoint(&t), "negative {n} shares no word with {:?}", p.query);
        }
        with_negatives += usize::from(!p.negatives.is_empty());
    }
    assert!(with_negatives > 150, "{with_negatives} of 165 pairs have BM25 negatives");
    // Held-out papers are neither in the validation pool nor trained on.
    let held: HashSet<usize> = data.val.iter().map(|p| p.paper).collect();
    assert!(data.pool.iter().all(|i| !held.contains(i)));
    assert_eq!(data.pool.len(), 200);
    // The same library and seed give the same pairs.
    let again = adaptation_data(&lib, &opts, &|_, _| {}).unwrap();
    assert_eq!(again.train, data.train);
    assert_eq!(again.val, data.val);
}

/// A library of a slice of the benchmark: 400 `train` citing sentences
/// (scisummnet), the papers they cite and 600 others, the sentences imported
/// as evidence. With each context's citing document, by the context's letters.
fn benchmark_library(dir: &Path) -> Option<(Library, Vec<(String, String)>)> {
    let shared = common::shared_or_fail("the benchmark in ../shared")?;
    let bench = shared.join("data/benchmark");
    let contexts = load_contexts(&bench.join("contexts.jsonl.gz"), Some("train")).unwrap();
    let chosen: Vec<_> = contexts.into_iter().filter(|c| c.source == "scisummnet").take(400).collect();
    let cited: HashSet<&str> = chosen.iter().flat_map(|c| c.cited.iter().map(String::as_str)).collect();
    let raw = citewise::corpus::source::read_bytes(&bench.join("papers.jsonl.gz")).unwrap();
    let slice = dir.join("slice");
    std::fs::create_dir_all(&slice).unwrap();
    let mut papers = std::fs::File::create(slice.join("papers.jsonl")).unwrap();
    let mut others = 0;
    for line in String::from_utf8(raw).unwrap().lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = v["id"].as_str().unwrap();
        if cited.contains(id) || (others < 600 && id.starts_with("acl:")) {
            others += usize::from(!cited.contains(id));
            writeln!(papers, "{line}").unwrap();
        }
    }
    let mut out = std::fs::File::create(slice.join("contexts.jsonl")).unwrap();
    let mut citing_of = Vec::new();
    for c in &chosen {
        let v = serde_json::json!({"id": c.id, "source": c.source, "split": c.split, "citing_id": c.citing_id,
            "citing_title": c.citing_title, "context": c.context, "cited": c.cited});
        writeln!(out, "{v}").unwrap();
        citing_of
            .push((letters(&strip_citations(&c.context, &citewise::corpus::citation_markup::CiteGrammar::PLAIN)), c.citing_id.clone()));
    }
    let lib = Library::open_or_create(&dir.join("lib")).unwrap();
    import(&lib, &[slice.join("papers.jsonl")], ImportOptions::default(), &Quiet).unwrap();
    import_evidence(&lib, &[slice.join("contexts.jsonl")], Some("train"), false).unwrap();
    Some((lib, citing_of))
}

#[test]
fn citing_sentences_train_with_their_cited_papers_and_whole_documents_are_held_out() {
    let dir = tempfile::tempdir().unwrap();
    let Some((lib, citing_of)) = benchmark_library(dir.path()) else { return };
    let opts = PairOptions { train: 100, val: 10, pool: 100, negatives: 5, citing: 1000, cited_val: 40, seed: 7 };
    let data = adaptation_data(&lib, &opts, &|_, _| {}).unwrap();
    let citing: Vec<_> = data.train.iter().filter(|p| p.kind == PairKind::Citing).collect();
    assert!(citing.len() > 250, "{} citing sentences trained on", citing.len());
    assert!((30..80).contains(&data.cited_val.len()), "{} held out", data.cited_val.len());
    // A citing sentence is one sentence of a context (which may hold two);
    // the few sentences that more than one citing document wrote are left
    // out of the check.
    let doc_of = |q: &str| -> Option<String> {
        let q = letters(q);
        let docs: HashSet<&String> = citing_of.iter().filter(|(c, _)| c.contains(&q)).map(|(_, d)| d).collect();
        assert!(!docs.is_empty(), "{q:?} is a sentence of the slice's contexts");
        (docs.len() == 1).then(|| docs.into_iter().next().unwrap().clone())
    };
    let held_docs: HashSet<String> = data.cited_val.iter().filter_map(|p| doc_of(&p.query)).collect();
    assert!(held_docs.len() >= 3, "{held_docs:?}");
    for p in citing.iter().copied().chain(&data.cited_val) {
        assert!(!p.query.contains("[CIT]") && p.query.split_whitespace().count() >= 6, "{:?}", p.query);
        assert_eq!(p.positive, data.papers[p.paper], "a cited paper is its whole self");
        assert!(p.negatives.iter().all(|n| *n != p.paper && !p.also.contains(n)), "never a cited paper as a negative");
    }
    let mut checked = 0;
    for (q, doc) in citing.iter().filter_map(|p| doc_of(&p.query).map(|d| (&p.query, d))) {
        assert!(!held_docs.contains(&doc), "a held-out citing document ({doc}) is not trained on: {q:?}");
        checked += 1;
    }
    assert!(checked > 200, "{checked}");
}

#[test]
fn a_short_adaptation_resumes_is_published_and_the_library_uses_it() {
    if !common::models_or_fail("adaptation (word vectors)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((lib, _)) = benchmark_library(dir.path()) else { return };
    let opts = PairOptions { train: 320, val: 30, pool: 300, negatives: 8, citing: 200, cited_val: 40, seed: 5 };
    let data = adaptation_data(&lib, &opts, &|_, _| {}).unwrap();
    let base = Weights::shipped();
    let words = WordVectors::load_named(base.config.word_vectors_name()).unwrap();
    let device = Device::flex();
    let out = run_dir(dir.path());
    let opts = AdaptOptions { batch: 16, eval_every: 10, max_steps: 20, ..AdaptOptions::default() };
    let first = adapt_hatten(&base.config, &base.bytes, &data, &out, &opts, &words, &device, &QuietTraining).unwrap();
    let steps: Vec<usize> = first.iter().map(|c| c.step).collect();
    assert_eq!(steps, [0, 10, 20], "validated before the first step, then every 10");
    assert!(first[0].best, "the starting weights are the first best");
    assert!(first.iter().all(|c| c.cited_r10.is_some()), "judged on the held-out citing sentences");
    assert_eq!(first[0].score(), (first[0].cited_r10.unwrap() + first[0].cited_mrr.unwrap()) / 2.0);
    assert!(first[1..].iter().all(|c| c.loss.is_finite() && c.loss > 0.0), "{first:?}");
    assert!(first.iter().all(|c| (0.0..=1.0).contains(&c.val_r10) && (0.0..=1.0).contains(&c.val_mrr)));

    // A second sitting with more steps goes on from step 20.
    let more = AdaptOptions { max_steps: 40, ..opts.clone() };
    let all = adapt_hatten(&base.config, &base.bytes, &data, &out, &more, &words, &device, &QuietTraining).unwrap();
    assert_eq!(all.iter().map(|c| c.step).collect::<Vec<_>>(), [0, 10, 20, 30, 40]);
    for (a, b) in first.iter().zip(&all) {
        assert_eq!(a.step, b.step, "the history is kept");
        assert!((a.val_r10 - b.val_r10).abs() < 1e-12 && (a.val_mrr - b.val_mrr).abs() < 1e-12, "{a:?} then {b:?}");
    }
    assert!(all[4].loss < all[1].loss, "the loss falls: {:?}", all.iter().map(|c| c.loss).collect::<Vec<_>>());
    let state = run_state(dir.path()).unwrap().expect("a saved state");
    assert_eq!(state.counters.steps_done, 40);

    // Published, the library's encoder is the adapted one, and knows what the
    // starting weights knew (and the training queries' words: unit-tested in
    // `neural::field`).
    let published = publish(dir.path(), &base, &data.train, &data.trained_documents).unwrap();
    assert_eq!(published, adapted_dir(dir.path()));
    // Beside the weights, the citing documents they were trained on: not the
    // held-out ones, so that the library judges itself without them.
    let kept = trained_documents(dir.path()).unwrap();
    assert!(!kept.is_empty() && kept == data.trained_documents.iter().cloned().collect::<HashSet<_>>());
    let every: HashSet<String> = lib.citances().all().unwrap().into_iter().map(|c| c.citing.id).collect();
    assert!(kept.is_subset(&every) && kept.len() < every.len(), "{} of {} documents trained on", kept.len(), every.len());
    let adapted = HattenEncoder::for_library(Some(dir.path()), &device).unwrap();
    assert!(adapted.source.contains("adapted to this library"), "{}", adapted.source);
    let read = |p: std::path::PathBuf| std::fs::read(p).unwrap();
    assert_eq!(read(published.join("model.safetensors")), read(out.join("model.safetensors")), "the run's best weights");
    let default = HattenEncoder::for_library(None, &device).unwrap();
    let field = adapted.field.as_ref().expect("a field profile");
    let shipped = base.field.as_ref().unwrap();
    assert!(shipped.iter_known().all(|t| field.knows(t)), "and still every word the shipped one knew");

    // Removed, the library is back on the default weights.
    assert!(remove(dir.path()).unwrap());
    let back = HattenEncoder::for_library(Some(dir.path()), &device).unwrap();
    assert_eq!(back.fingerprint(), default.fingerprint());
    assert!(!remove(dir.path()).unwrap(), "nothing left to remove");
}

/// The command line: a library without citing sentences is refused with
/// what to import, and `doctor` names the HAtten weights the library uses:
/// the default ones, then the adapted ones once published (here the shipped
/// weights copied into the library, standing in for a run's).
#[test]
fn adapt_refuses_a_library_without_citing_sentences_and_doctor_names_the_active_weights() {
    if !common::models_or_fail("doctor loads every model") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = common::fixture_library(dir.path());
    let run = |args: &[&str]| common::citewise_command().arg("--library").arg(&lib).args(args).output().unwrap();

    let o = run(&["adapt", "--max-minutes", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("holds no citing sentences") && err.contains("import --evidence") && err.contains("--without-citations"), "{err}");
    assert!(!adapted_dir(&lib).exists() && !run_dir(&lib).exists(), "nothing written");
    let o = run(&["adapt", "--reranker", "--max-minutes", "1"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success());
    assert!(err.contains("no citing sentences") && err.contains("import --evidence"), "{err}");
    assert!(!lib.join(ADAPTED_RERANKER_DIR).exists() && !reranker_run_dir(&lib).exists(), "nothing written");

    let hatten_line = |o: &std::process::Output| {
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.lines().find(|l| l.trim_start().starts_with("hatten")).unwrap_or_else(|| panic!("no hatten line:\n{out}")).to_string()
    };
    let before = run(&["doctor"]);
    assert!(!hatten_line(&before).contains("adapted"), "{}", hatten_line(&before));

    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/hatten");
    std::fs::create_dir_all(adapted_dir(&lib)).unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(shipped.join(f), adapted_dir(&lib).join(f)).unwrap();
    }
    let after = run(&["doctor"]);
    let line = hatten_line(&after);
    assert!(
        line.contains("ok") && line.contains("adapted to this library") && line.contains(&*adapted_dir(&lib).to_string_lossy()),
        "{line}"
    );

    // The reranker line likewise.
    let reranker_line = |o: &std::process::Output| {
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        out.lines().find(|l| l.trim_start().starts_with("reranker ")).unwrap_or_else(|| panic!("no reranker line:\n{out}")).to_string()
    };
    assert!(!reranker_line(&after).contains("adapted"), "{}", reranker_line(&after));
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/reranker");
    let adapted = lib.join(ADAPTED_RERANKER_DIR);
    std::fs::create_dir_all(&adapted).unwrap();
    for f in ["reranker.json", "model.safetensors"] {
        std::fs::copy(shipped.join(f), adapted.join(f)).unwrap();
    }
    let line = reranker_line(&run(&["doctor"]));
    assert!(line.contains("ok") && line.contains("adapted to this library") && line.contains(&*adapted.to_string_lossy()), "{line}");
}

/// The reranker, adapted on the slice's citing sentences: the examples are
/// the citing sentences with their BM25 neighbours (never a cited paper) and
/// the held-out ones with BM25's top 10; the run starts from the reranker in
/// use (its step-0 figures are that reranker's own), resumes, and once
/// published is the library's reranker; removed, the default one is back.
#[test]
fn a_short_reranker_adaptation_starts_from_the_reranker_in_use_resumes_and_is_published() {
    if !common::models_or_fail("reranker adaptation (the reranker's base model)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let Some((lib, _)) = benchmark_library(dir.path()) else { return };
    let opts = PairOptions { train: 0, val: 0, pool: 0, negatives: 6, citing: 200, cited_val: 30, seed: 5 };
    let pairs = adaptation_data(&lib, &opts, &|_, _| {}).unwrap();
    assert!(pairs.train.iter().all(|p| p.kind == PairKind::Citing), "no inverse-cloze pairs asked for");
    let data = reranker_data(&lib, pairs, 10).unwrap();
    assert_eq!(data.train.len(), 200);
    assert!((25..=60).contains(&data.val.len()), "{} held out", data.val.len());
    for e in &data.train {
        assert!(!e.prefetched.is_empty() && e.prefetched.len() <= 6, "{:?}", e.prefetched);
        assert!(e.prefetched.iter().all(|p| !e.cited.contains(p)), "never a cited paper as a negative");
        assert!(!e.local.contains("[CIT]") && e.title.is_empty());
    }
    let found = data.val.iter().filter(|e| e.prefetched.iter().any(|p| e.cited.contains(p))).count();
    assert!(data.val.iter().all(|e| e.prefetched.len() <= 10));
    assert!(found * 2 > data.val.len(), "BM25 finds the cited paper of {found} of {} held-out sentences", data.val.len());

    let base = RerankerWeights::default_weights().unwrap();
    let base_dir = model_dir(&base.config.base).unwrap();
    let device = Device::flex();
    let out = reranker_run_dir(dir.path());
    let o = RerankTrainOptions { batch: 4, eval_every: 5, max_steps: 10, rerank_depth: 10, learning_rate: 2e-5, ..Default::default() };
    let inputs = RerankInputs {
        config: &base.config,
        base_dir: &base_dir,
        start: Some(&base.bytes),
        papers: &data.papers,
        train: &data.train,
        val: &data.val,
    };
    let train = |o: &RerankTrainOptions| train_reranker(&inputs, &out, o, &device, &QuietTraining).unwrap();
    let first = train(&o);
    assert_eq!(first.iter().map(|c| c.step).collect::<Vec<_>>(), [0, 5, 10], "validated before the first step, then every 5");
    assert!(first[0].best, "the starting reranker is the first best");
    assert!(first[1..].iter().all(|c| c.loss.is_finite() && c.loss >= 0.0), "{first:?}");

    // Step 0 is the reranker in use, scoring the held-out lists.
    let in_use = Reranker::load_default(&device).unwrap();
    let (mut r10, mut mrr) = (0.0, 0.0);
    for e in &data.val {
        let q = in_use.query(&e.local, "", "").unwrap();
        let top = &e.prefetched[..e.prefetched.len().min(10)];
        let cands: Vec<(&str, &str)> =
            top.iter().map(|&p| (data.papers[p].title.as_str(), data.papers[p].abstract_text.as_str())).collect();
        let (r, m) = r10_rr(&reranked(&e.prefetched, &in_use.score(&q, &cands).unwrap()), &e.cited);
        r10 += r;
        mrr += m;
    }
    let n = data.val.len() as f64;
    assert!((r10 / n - first[0].r10).abs() < 1e-9 && (mrr / n - first[0].mrr).abs() < 1e-3, "{} {} vs {:?}", r10 / n, mrr / n, first[0]);

    // A second sitting goes on from step 10 and keeps the history.
    let all = train(&RerankTrainOptions { max_steps: 15, ..o.clone() });
    assert_eq!(all.iter().map(|c| c.step).collect::<Vec<_>>(), [0, 5, 10, 15]);
    assert!((all[0].mrr - first[0].mrr).abs() < 1e-12, "the history is kept");
    assert_eq!(reranker_run_state(dir.path()).unwrap().expect("a saved state").counters.steps_done, 15);

    // Published, the library's reranker is the run's best, and knows the
    // shipped field's words.
    let published = publish_reranker(dir.path(), &base, &data).unwrap();
    assert_eq!(published, dir.path().join(ADAPTED_RERANKER_DIR));
    let kept = trained_documents(dir.path()).unwrap();
    assert!(!kept.is_empty() && kept == data.trained_documents.iter().cloned().collect::<HashSet<_>>(), "the documents it trained on");
    let read = |p: std::path::PathBuf| std::fs::read(p).unwrap();
    assert_eq!(read(published.join("model.safetensors")), read(out.join("model.safetensors")), "the run's best weights");
    let adapted = Reranker::for_library(Some(dir.path()), &device).unwrap();
    assert!(adapted.source.contains("adapted to this library"), "{}", adapted.source);
    let field = adapted.field.as_ref().expect("a field profile");
    assert!(base.field.as_ref().unwrap().iter_known().all(|t| field.knows(t)));
    let q = adapted.query("part-of-speech tagging with a hidden Markov model", "", "").unwrap();
    let scores =
        adapted.score(&q, &[("TnT: a statistical part-of-speech tagger", ""), ("Parsing English with a link grammar", "")]).unwrap();
    assert!(scores.iter().all(|s| (0.0..=1.0).contains(s)), "{scores:?}");

    assert!(remove_reranker(dir.path()).unwrap());
    assert!(!Reranker::for_library(Some(dir.path()), &device).unwrap().source.contains("adapted"));
    assert!(!remove_reranker(dir.path()).unwrap(), "nothing left to remove");
}
