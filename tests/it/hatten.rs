#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! HAtten: encoding invariants, weights round trip and errors, a short
//! training run on a slice of the real benchmark that must resume and keep
//! its best epoch, and the dense channel over a library.
//! Needs the word vectors (`scripts/fetch-models.sh`).

use crate::common;

use std::collections::HashSet;
use std::io::Write;
use std::path::Path;

use burn::tensor::Device;
use citewise::corpus::benchmark::load_contexts;
use citewise::neural::hatten::{DocText, Hatten, HattenConfig};
use citewise::neural::train::{embed, train, Quiet, TrainOptions};
use citewise::neural::words::{WordVectors, BERT_WORDS_DIR};

fn words() -> WordVectors {
    WordVectors::load_default().expect("word vectors: run scripts/fetch-models.sh")
}

fn small() -> HattenConfig {
    HattenConfig::new().with_d_model(32).with_d_ff(64).with_dropout(0.0)
}

fn docs() -> Vec<DocText> {
    vec![
        DocText {
            context: "we tag parts of speech with a trigram tagger".into(),
            title: "Statistical machine translation".into(),
            abstract_text: String::new(),
        },
        DocText::paper(
            "TnT: a statistical part-of-speech tagger",
            "Trigrams and tags: a fast tagger based on Markov models with smoothing and suffix analysis for unknown words.",
        ),
        DocText::paper("Conditional random fields", ""),
        DocText::paper("zzqx qqzx", ""),
    ]
}

#[test]
fn vectors_are_unit_length_and_do_not_depend_on_the_batch() {
    let w = words();
    let device = Device::flex();
    let config = small();
    let model = config.init(&device);
    let all = embed(&model, &config, &w, &docs(), &device, &|_| {});
    let d = config.d_model;
    assert_eq!(all.len(), 4 * d);
    for i in 0..4 {
        let norm: f32 = all[i * d..(i + 1) * d].iter().map(|x| x * x).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "row {i} norm {norm}");
        assert!(all[i * d..(i + 1) * d].iter().all(|x| x.is_finite()), "row {i} (a text with no known word) is finite");
        // Alone, the same text gets the same vector: padding never leaks in.
        let alone = embed(&model, &config, &w, &docs()[i..i + 1], &device, &|_| {});
        for (a, b) in alone.iter().zip(&all[i * d..(i + 1) * d]) {
            assert!((a - b).abs() < 1e-4, "row {i}: {a} alone vs {b} in a batch");
        }
    }
    assert!(all[d..2 * d] != all[2 * d..3 * d], "different texts, different vectors");
}

#[test]
fn wordpiece_vectors_come_from_the_citation_models_token_table() {
    let w = WordVectors::load_named(BERT_WORDS_DIR).expect("word vectors: run scripts/fetch-models.sh");
    assert_eq!((w.len(), w.dim(), w.name.as_str()), (30522, 384, BERT_WORDS_DIR));
    // Words outside the vocabulary are split into pieces, not dropped.
    let pieces = w.ids("The TnT tagger", 100);
    assert!(pieces.len() >= 4, "the, tn, ##t, tag, ##ger: {pieces:?}");
    assert_eq!(w.ids("The TnT tagger", 2), pieces[..2]);
    assert!(w.ids("", 10).is_empty());
    let id = |word: &str| {
        let ids = w.ids(word, 10);
        assert_eq!(ids.len(), 1, "{word} is one piece");
        ids[0]
    };
    let cos = |a: &str, b: &str| {
        let (x, y) = (w.vector(id(a)), w.vector(id(b)));
        let dot: f32 = x.iter().zip(y).map(|(p, q)| p * q).sum();
        dot / (x.iter().map(|v| v * v).sum::<f32>().sqrt() * y.iter().map(|v| v * v).sum::<f32>().sqrt())
    };
    assert!(cos("translation", "translated") > cos("translation", "volcano"), "related words are nearer");
    assert!(cos("syntax", "grammar") > cos("syntax", "protein"), "related words are nearer");
}

#[test]
fn an_encoder_refuses_word_vectors_other_than_its_own() {
    use citewise::neural::encoder::HattenEncoder;
    use std::sync::Arc;
    let device = Device::flex();
    let dir = tempfile::tempdir().unwrap();
    let config = small().with_word_dim(384).with_word_vectors(Some(BERT_WORDS_DIR.to_string()));
    config.init(&device).save(&dir.path().join("model.safetensors")).unwrap();
    std::fs::write(dir.path().join("config.json"), config.to_string()).unwrap();
    let err = HattenEncoder::load_dir(dir.path(), Arc::new(words()), &device).err().expect("GloVe for a WordPiece encoder").to_string();
    assert!(err.contains(BERT_WORDS_DIR) && err.contains("glove-6b-50d") && err.contains("384") && err.contains("50"), "{err}");
    let right = WordVectors::load_named(BERT_WORDS_DIR).unwrap();
    let encoder = HattenEncoder::load_dir(dir.path(), Arc::new(right), &device).unwrap();
    assert_eq!(encoder.encode(&docs()).len(), 4 * 32);
}

#[test]
fn weights_round_trip_and_a_mismatched_file_names_the_tensor() {
    let w = words();
    let device = Device::flex();
    let dir = tempfile::tempdir().unwrap();
    let config = small();
    let model = config.init(&device);
    let path = dir.path().join("m.safetensors");
    model.save(&path).unwrap();
    let loaded = Hatten::load(&config, &path, &device).unwrap();
    let a = embed(&model, &config, &w, &docs(), &device, &|_| {});
    let b = embed(&loaded, &config, &w, &docs(), &device, &|_| {});
    assert_eq!(a, b);

    let wider = HattenConfig::new().with_d_model(64).with_d_ff(64);
    let err = Hatten::load(&wider, &path, &device).expect_err("shape mismatch").to_string();
    assert!(err.contains("m.safetensors") && err.contains("word_proj") && err.contains("32") && err.contains("64"), "{err}");

    std::fs::write(&path, b"not safetensors").unwrap();
    let err = Hatten::load(&config, &path, &device).expect_err("corrupt file").to_string();
    assert!(err.contains("m.safetensors"), "{err}");
}

/// A slice of the benchmark: `n_train` train and `n_val` val contexts of
/// scisummnet, their cited papers, and `extra` other papers.
fn slice_bench(shared: &Path, dir: &Path, n_train: usize, n_val: usize, extra: usize) {
    let bench = shared.join("data/benchmark");
    let contexts = load_contexts(&bench.join("contexts.jsonl.gz"), None).unwrap();
    let pick = |split: &str, n: usize| {
        contexts.iter().filter(|c| c.source == "scisummnet" && c.split == split).take(n).cloned().collect::<Vec<_>>()
    };
    let chosen: Vec<_> = pick("train", n_train).into_iter().chain(pick("val", n_val)).collect();
    let cited: HashSet<&str> = chosen.iter().flat_map(|c| c.cited.iter().map(String::as_str)).collect();
    let raw = citewise::corpus::source::read_bytes(&bench.join("papers.jsonl.gz")).unwrap();
    let text = String::from_utf8(raw).unwrap();
    let mut others = 0;
    let mut papers = flate2::write::GzEncoder::new(std::fs::File::create(dir.join("papers.jsonl.gz")).unwrap(), Default::default());
    for line in text.lines() {
        let id: serde_json::Value = serde_json::from_str(line).unwrap();
        let id = id["id"].as_str().unwrap();
        if cited.contains(id) || (others < extra && id.starts_with("acl:")) {
            others += usize::from(!cited.contains(id));
            writeln!(papers, "{line}").unwrap();
        }
    }
    papers.finish().unwrap();
    let mut out = flate2::write::GzEncoder::new(std::fs::File::create(dir.join("contexts.jsonl.gz")).unwrap(), Default::default());
    for c in chosen {
        let v = serde_json::json!({"id": c.id, "source": c.source, "split": c.split, "citing_id": c.citing_id,
            "citing_title": c.citing_title, "citing_abstract": c.citing_abstract, "context": c.context, "cited": c.cited});
        writeln!(out, "{v}").unwrap();
    }
    out.finish().unwrap();
}

#[test]
fn training_runs_keeps_the_best_epoch_and_resumes() {
    let Some(shared) = common::shared_or_fail("the training run") else { return };
    // The word vectors the shipped encoder reads.
    let w = WordVectors::load_named(BERT_WORDS_DIR).unwrap();
    let bench = tempfile::tempdir().unwrap();
    slice_bench(&shared, bench.path(), 600, 150, 1500);
    let out = tempfile::tempdir().unwrap();
    let config = HattenConfig::new()
        .with_d_model(64)
        .with_d_ff(128)
        .with_max_abstract_words(64)
        .with_word_dim(w.dim())
        .with_word_vectors(Some(BERT_WORDS_DIR.into()));
    let opts = TrainOptions { epochs: 3, batch: 32, learning_rate: 1e-3, ..TrainOptions::default() };
    let device = Device::flex();
    let history = train(bench.path(), out.path(), &config, &TrainOptions { epochs: 2, ..opts.clone() }, &w, &device, &Quiet).unwrap();
    assert_eq!(history.len(), 2);
    // Resuming runs only the missing epoch.
    let history = train(bench.path(), out.path(), &config, &opts, &w, &device, &Quiet).unwrap();
    assert_eq!(history.iter().map(|r| r.epoch).collect::<Vec<_>>(), [1, 2, 3]);
    assert!(history.iter().all(|r| r.loss.is_finite() && r.steps > 0), "{history:?}");
    let best = history.iter().rfind(|r| r.best).unwrap();
    assert!(history.iter().all(|r| r.score() <= best.score()), "the kept epoch is the best on val: {history:?}");
    // Chance is 100 / ~1,650 pool papers ≈ 0.06, with or without the citing title and abstract.
    assert!(best.val_r100 > 0.3 && best.val_local_r100 > 0.2, "the encoder ranks cited papers well above chance: {history:?}");
    // The kept weights are the best epoch's and load for inference.
    let model = Hatten::load(&config, &out.path().join("model.safetensors"), &device).unwrap();
    let v = embed(&model, &config, &w, &docs(), &device, &|_| {});
    assert_eq!(v.len(), 4 * 64);
}

/// The shipped encoder on real `val` contexts: among their cited papers and
/// about 3,000 others, the cited paper is in the top 10 far more often than
/// chance.
#[test]
fn the_shipped_encoder_finds_cited_papers_from_the_local_context() {
    use citewise::neural::encoder::HattenEncoder;
    use citewise::neural::train::load_papers;
    let Some(shared) = common::shared_or_fail("the shipped encoder's check") else { return };
    let encoder = HattenEncoder::shipped(&Device::flex()).expect("the shipped weights load with the fetched word vectors");
    assert!(encoder.source.contains("assets/hatten"), "{}", encoder.source);
    let bench = shared.join("data/benchmark");
    let contexts: Vec<_> = load_contexts(&bench.join("contexts.jsonl.gz"), Some("val")).unwrap().into_iter().step_by(5).take(200).collect();
    let cited: HashSet<&str> = contexts.iter().flat_map(|c| c.cited.iter().map(String::as_str)).collect();
    let mut others = 0;
    let pool: Vec<_> = load_papers(&bench.join("papers.jsonl.gz"))
        .unwrap()
        .into_iter()
        .filter(|p| {
            let keep = cited.contains(p.id.as_str()) || (others < 3000 && p.id.len() % 7 == 0);
            others += usize::from(keep && !cited.contains(p.id.as_str()));
            keep
        })
        .collect();
    let paper_vectors = encoder.encode(&pool.iter().map(|p| DocText::paper(&p.title, &p.abstract_text)).collect::<Vec<_>>());
    let d = encoder.dim();
    let mut hits = 0.0;
    for c in &contexts {
        let q = encoder.encode(&[DocText {
            context: citewise::corpus::citation_markup::strip_citations(&c.context, &citewise::corpus::citation_markup::CiteGrammar::PLAIN),
            ..DocText::default()
        }]);
        let top = citewise::index::vectors::top_k(&paper_vectors, d, &q, 10, 1);
        let found = top.iter().filter(|(row, _)| c.cited.contains(&pool[*row].id)).count();
        hits += found as f64 / c.cited.len() as f64;
    }
    let r10 = hits / contexts.len() as f64;
    eprintln!("shipped HAtten, R@10 from the local context alone over {} papers: {r10:.3}", pool.len());
    // Chance: 10 / ~3,200 ≈ 0.003.
    assert!(
        r10 > 0.5,
        "R@10 from the local context alone: {r10:.3} (0.570 when the weights were shipped; 0.46 with the earlier 8-epoch weights)"
    );
}

#[test]
fn library_papers_are_embedded_once_and_found_by_the_dense_channel() {
    use citewise::library::embed::embed_library;
    use citewise::library::import::{import, ImportOptions, Quiet as QuietImport};
    use citewise::library::Library;
    use citewise::neural::encoder::HattenEncoder;
    use citewise::pipeline::channel::Channel;
    use citewise::pipeline::dense_channel::DenseChannel;
    use citewise::pipeline::{Prepared, Query};
    use std::sync::Arc;

    let device = Device::flex();
    let weights = tempfile::tempdir().unwrap();
    let config = small();
    config.init(&device).save(&weights.path().join("model.safetensors")).unwrap();
    std::fs::write(weights.path().join("config.json"), config.to_string()).unwrap();
    let encoder = Arc::new(HattenEncoder::load_dir(weights.path(), Arc::new(words()), &device).unwrap());

    let dir = tempfile::tempdir().unwrap();
    let lib = Arc::new(Library::open_or_create(dir.path()).unwrap());
    import(&lib, &[common::fixture("library.bib")], ImportOptions::default(), &QuietImport).unwrap();
    let n = lib.papers().num_papers() as usize;
    assert!(DenseChannel::open(&lib, encoder.clone()).err().unwrap().to_string().contains("citewise embed"));
    let first = embed_library(&lib, &encoder, &|_| {}, &|_| {}).unwrap();
    assert_eq!((first.embedded, first.kept), (n, 0));
    let again = embed_library(&lib, &encoder, &|_| {}, &|_| {}).unwrap();
    assert_eq!((again.embedded, again.kept), (0, n), "nothing new: nothing encoded");

    // A query with a paper's own title and abstract finds that paper first.
    let channel = DenseChannel::open(&lib, encoder.clone()).unwrap();
    let mut ids = Vec::new();
    lib.papers()
        .for_each_paper(&mut |p| {
            ids.push((p.id, p.title, p.abstract_text));
            Ok(())
        })
        .unwrap();
    for (id, title, abstract_text) in ids.iter().take(5) {
        let q = Prepared::new(&Query::new("").with_global(title.clone(), abstract_text.clone()), &lib).unwrap();
        let out = channel.retrieve(&q, 3).unwrap();
        assert_eq!(&out.ranked[0].0, id, "{title}");
        assert!((out.ranked[0].1 - 1.0).abs() < 1e-4);
    }

    // Weights without a field profile are never gated; with one, the
    // channel's confidence is the query's coverage by the training field.
    let confidence =
        |channel: &DenseChannel, text: &str| channel.retrieve(&Prepared::new(&Query::new(text), &lib).unwrap(), 3).unwrap().confidence;
    assert_eq!(confidence(&channel, "protein folding in yeast"), 1.0);
    citewise::neural::field::FieldProfile::from_texts(["tagging with hidden Markov models"; 3]).write_beside(weights.path()).unwrap();
    let profiled = Arc::new(HattenEncoder::load_dir(weights.path(), Arc::new(words()), &device).unwrap());
    assert!(profiled.field.is_some());
    let channel = DenseChannel::open(&lib, profiled).unwrap();
    assert_eq!(confidence(&channel, "Markov models for tagging [CIT]"), 1.0);
    assert_eq!(confidence(&channel, "protein folding in yeast"), 0.0);
    let half = confidence(&channel, "hidden Markov models of protein folding");
    assert!(half > 0.0 && half < 1.0, "{half}");
}
