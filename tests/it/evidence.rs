#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The evidence database: citing sentences from full text and from
//! benchmark-style contexts, span extraction, and evidence-grounded
//! recommendations.

use crate::common;

use std::io::Write;
use std::sync::Arc;

use citewise::evidence::spans::SpanKind;
use citewise::library::evidence_import::import_evidence;
use citewise::library::import::{import, ImportOptions, Quiet};
use citewise::library::Library;
use citewise::pipeline::{Models, Query, Recommender};
use common::fixture;

const SHOKOUHI: &str = "doi:10.1145/2484028.2484076";
const VASWANI: &str = "bib:vaswani2017attention";

fn library_with_fixture() -> (tempfile::TempDir, Library) {
    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    import(&lib, &[fixture("library.bib")], ImportOptions::default(), &Quiet).unwrap();
    (dir, lib)
}

#[test]
fn full_text_is_linked_and_broken_spans_are_reported_per_sentence() {
    let (_d, lib) = library_with_fixture();
    let s = import_evidence(&lib, &[fixture("fulltext.jsonl")], None, false).unwrap();
    let (_, r) = &s.reports[0];
    assert_eq!(r.documents, 2);
    assert_eq!((r.bib_entries, r.bib_entries_linked), (6, 4));
    assert_eq!(r.linked_by.get("doi"), Some(&1), "{:?}", r.linked_by);
    assert_eq!(r.linked_by.get("title"), Some(&2), "{:?}", r.linked_by);
    assert_eq!(r.problems.len(), 3, "{:#?}", r.problems);
    assert!(r.problems[0].contains("fulltext.jsonl:2:"), "{}", r.problems[0]);
    assert!(r.problems[1].contains("cite span 900..950 is out of range"), "{}", r.problems[1]);
    assert!(r.problems[2].contains("missing bib entry `zz`"), "{}", r.problems[2]);
    assert_eq!(r.sentences, 3);

    let records = lib.evidence().all_records().unwrap();
    let find = |text: &str| records.iter().find(|r| r.text == text).unwrap_or_else(|| panic!("no span {text:?} in {records:#?}"));
    let between = find("Personalised ranking of query completions for a typed prefix was introduced by Shokouhi");
    assert_eq!(between.cited[0].id, SHOKOUHI);
    assert!(between.kinds.contains(&SpanKind::Between) && between.kinds.contains(&SpanKind::Sentence));
    assert_eq!(between.sources[0].citing_title, "Completion and Attention: A Test Paper");
    assert_eq!(between.sources[0].citing_year, Some(2023));
    assert_eq!(find("self-attention Transformer").cited[0].id, VASWANI);
    // The sentence whose only citation is unlinked yields nothing; neither
    // does the one with the broken span, nor the one citing a missing entry.
    assert!(records.iter().all(|r| !r.text.contains("café") && !r.text.contains("broken span") && !r.text.contains("missing entry")));
    // The sentence after the broken ones still counts.
    assert_eq!(find("Query completion with the transformer").cited[0].id, VASWANI);

    // Importing again changes nothing; forcing it does not double support.
    let again = import_evidence(&lib, &[fixture("fulltext.jsonl")], None, false).unwrap();
    assert_eq!(again.files_unchanged, 1);
    let forced = import_evidence(&lib, &[fixture("fulltext.jsonl")], None, true).unwrap();
    assert_eq!(forced.stats.spans, s.stats.spans);
    let support: u32 = lib.evidence().all_records().unwrap().iter().flat_map(|r| r.cited.iter().map(|c| c.support())).sum();
    let support_before: u32 = records.iter().flat_map(|r| r.cited.iter().map(|c| c.support())).sum();
    assert_eq!(support, support_before);
}

fn contexts_file(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("contexts.jsonl.gz");
    let mut gz = flate2::write::GzEncoder::new(std::fs::File::create(&path).unwrap(), flate2::Compression::fast());
    let rows = [
        (SHOKOUHI, "train", "Completions of a typed query prefix can be personalised with the user's history [CIT]."),
        (SHOKOUHI, "train", "Following [CIT], we personalise query auto-completion."),
        (SHOKOUHI, "train", "Search history features help rank query completions (Jones, 2010) [CIT]."),
        ("bib:brants2000tnt", "train", "We tagged the corpus using TnT [CIT] trained on the WSJ."),
        ("bib:brants2000tnt", "test", "Tagging used TnT [CIT]."),
    ];
    for (i, (cited, split, ctx)) in rows.iter().enumerate() {
        let row = serde_json::json!({"id": format!("c{i}"), "source": "s", "split": split, "citing_id": format!("citing:{i}"),
            "citing_title": format!("Citing paper {i}"), "context": ctx, "cited": [cited]});
        writeln!(gz, "{row}").unwrap();
    }
    gz.finish().unwrap();
    path
}

#[test]
fn benchmark_contexts_build_evidence_with_support() {
    let (d, lib) = library_with_fixture();
    let file = contexts_file(d.path());
    let s = import_evidence(&lib, std::slice::from_ref(&file), Some("train"), false).unwrap();
    assert_eq!(s.sentences, 4, "the test row is left out");
    let records = lib.evidence().all_records().unwrap();
    let tnt = records.iter().find(|r| r.text == "TnT").expect("the mention TnT");
    assert_eq!(tnt.kinds, [SpanKind::Mention]);
    assert_eq!(tnt.cited[0].id, "bib:brants2000tnt");
    assert_eq!(tnt.cited[0].year, Some(2000), "cited paper's year from the library");
    assert!(records.iter().all(|r| !r.text.contains("Jones") && !r.text.contains("[CIT]")), "markers are stripped");
    let stats = lib.evidence().stats().unwrap();
    assert_eq!(stats.papers, 2);
    // A different split of the same file is a different import.
    let test_split = import_evidence(&lib, &[file], Some("test"), false).unwrap();
    assert_eq!((test_split.files_unchanged, test_split.sentences), (0, 1));
}

#[test]
fn recommendations_carry_evidence_and_channels() {
    let (d, lib) = library_with_fixture();
    import_evidence(&lib, &[contexts_file(d.path())], Some("train"), false).unwrap();
    let rec = Recommender::new(Arc::new(lib), &Models::installed());
    let r = rec.recommend(&Query::new("We personalise the completions of a typed query prefix [CIT].").with_k(5)).unwrap();
    let top = &r.candidates[0];
    assert_eq!(top.id, SHOKOUHI);
    let channels: Vec<&str> = top.channels.iter().map(|c| c.channel.name()).collect();
    assert_eq!(channels, ["bm25", "evidence"]);
    assert!(!top.evidence.is_empty());
    assert!(top.evidence[0].text.to_lowercase().contains("query") || top.evidence[0].text.contains("prefix"), "{:?}", top.evidence);
    assert!(top.evidence[0].citing_title.starts_with("Citing paper"));

    // A paper found by BM25 alone still shows its evidence from the database.
    let r = rec.recommend(&Query::new("a statistical part-of-speech tagger").with_k(3)).unwrap();
    let tnt = r.candidates.iter().find(|c| c.id == "bib:brants2000tnt").expect("TnT is found");
    assert!(!tnt.evidence.is_empty(), "{tnt:?}");

    // Papers without evidence show none.
    let bleu = rec.recommend(&Query::new("BLEU n-gram precision").with_k(1)).unwrap();
    assert_eq!(bleu.candidates[0].id, "bib:papineni2002bleu");
    assert!(bleu.candidates[0].evidence.is_empty());
}

#[test]
fn evidence_confidence_is_high_for_a_paraphrased_claim_and_low_off_topic() {
    use burn::tensor::Device;
    use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
    use citewise::pipeline::evidence_channel::EvidenceChannel;
    use citewise::pipeline::span_cosines::{SpanCosines, SpanRanking, DEFAULT_MIN_WORDS};

    let (d, lib) = library_with_fixture();
    import_evidence(&lib, &[contexts_file(d.path())], Some("train"), false).unwrap();
    let lib = Arc::new(lib);
    let encoder = Arc::new(BiEncoder::load(CITATION_ENCODER, &Device::flex()).expect("models: run scripts/fetch-models.sh"));
    let semantic =
        EvidenceChannel::new(lib.clone()).with_reranker(Box::new(SpanRanking::new(Arc::new(SpanCosines::new(encoder)), DEFAULT_MIN_WORDS)));
    let lexical = EvidenceChannel::new(lib.clone());
    let confidence = |ch: &EvidenceChannel, text: &str| {
        let q = citewise::pipeline::Prepared::new(&Query::new(text), &lib).unwrap();
        ch.confidence(&q.span_text, &q.span_terms, &ch.spans(&q).unwrap()).unwrap()
    };
    let claim = "The completions of a typed query prefix are personalised with the user's search history [CIT].";
    let off_topic = "The history of the patient was typed into the record before the query to the cardiology registry [CIT].";
    let (on, off) = (confidence(&semantic, claim), confidence(&semantic, off_topic));
    assert!(on > 0.5, "a paraphrase of stored evidence: {on}");
    assert!(off < 0.5 * on, "shared words, another claim: {off} vs {on}");
    assert!(confidence(&lexical, off_topic) > off, "without the semantic model only the shared words count");
    assert_eq!(confidence(&semantic, "zzz qqq"), 0.0, "nothing retrieved");
}

#[test]
fn cited_for_compares_the_query_with_what_each_paper_was_cited_for() {
    use burn::tensor::Device;
    use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
    use citewise::pipeline::cited_for::CitedFor;
    use citewise::pipeline::span_cosines::{SpanCosines, SpanRanking, DEFAULT_MIN_WORDS};

    let (d, lib) = library_with_fixture();
    import_evidence(&lib, &[contexts_file(d.path())], Some("train"), false).unwrap();
    let lib = Arc::new(lib);
    let encoder = Arc::new(BiEncoder::load(CITATION_ENCODER, &Device::flex()).expect("models: run scripts/fetch-models.sh"));
    let cited_for = CitedFor::new(Arc::new(SpanCosines::new(encoder)));
    let ids = [SHOKOUHI, "bib:brants2000tnt", "bib:papineni2002bleu"];
    // Words shared with neither paper's title: only what citing authors wrote links them.
    let tagging = cited_for.best_cosines(&lib, "we annotated the treebank with a trigram part-of-speech tagger", &ids, &[]).unwrap();
    let completion =
        cited_for.best_cosines(&lib, "suggestions for what the user is typing into the search box, tailored to them", &ids, &[]).unwrap();
    assert_eq!(tagging[2], None, "no span cites BLEU");
    let (t, c) =
        (tagging[..2].iter().map(|x| x.unwrap()).collect::<Vec<_>>(), completion[..2].iter().map(|x| x.unwrap()).collect::<Vec<_>>());
    assert!(t[1] > t[0] && c[0] > c[1], "each query is closest to the paper cited for its claim: {t:?} {c:?}");
    assert_eq!(cited_for.best_cosines(&lib, "anything", &[], &[]).unwrap(), Vec::<Option<f32>>::new());
    // A paper held under two records counts the spans citing either: a
    // record no span cites, beside one that spans cite, gets that one's.
    let works = [vec!["bib:papineni2002bleu", "bib:brants2000tnt"], vec!["bib:papineni2002bleu"]];
    let held_twice =
        cited_for.best_cosines_of_works(&lib, "we annotated the treebank with a trigram part-of-speech tagger", &works, &[]).unwrap();
    assert_eq!(held_twice[1], None);
    assert!((held_twice[0].unwrap() - t[1]).abs() < 1e-5, "{held_twice:?} {t:?}");

    // In the rerank stage: ranked among the reranked papers that evidence cites, and only those.
    let models = Models::installed();
    let rec = Recommender::new(lib.clone(), &models);
    assert!(rec.reranker().is_some(), "the shipped reranker loads");
    let r = rec.recommend(&Query::new("We annotated the treebank with a trigram part-of-speech tagger [CIT].").with_k(5)).unwrap();
    let mut ranks: Vec<usize> = r.candidates.iter().filter_map(|c| c.cited_for.as_ref().map(|s| s.rank)).collect();
    ranks.sort();
    assert_eq!(ranks, (1..=ranks.len()).collect::<Vec<_>>());
    assert!(!ranks.is_empty());
    for c in &r.candidates {
        let cited = ids[..2].contains(&c.id.as_str());
        assert_eq!(c.cited_for.is_some(), cited && c.rerank.is_some(), "{}: {:?}", c.id, c.cited_for);
    }
    // A claim the evidence does not speak of: the cited-for order is not
    // consulted, although papers with evidence are among those reranked.
    let off_claim = Query::new("The tagger's output was scored against reference translations with BLEU [CIT].").with_k(5);
    let evidence = citewise::pipeline::evidence_channel::EvidenceChannel::new(lib.clone())
        .with_reranker(Box::new(SpanRanking::new(models.span_cosines().unwrap(), DEFAULT_MIN_WORDS)));
    let prepared = citewise::pipeline::Prepared::new(&off_claim, &lib).unwrap();
    assert_eq!(evidence.confidence(&prepared.span_text, &prepared.span_terms, &evidence.spans(&prepared).unwrap()).unwrap(), 0.0);
    // By default the rerank stage does not run for it at all: the fused order stands.
    let r = rec.recommend(&off_claim).unwrap();
    assert!(r.candidates.iter().all(|c| c.rerank.is_none() && c.citation.is_none() && c.cited_for.is_none()));
    // Told to run for every query, the stage reranks, without cited-for.
    use citewise::pipeline::{Fusion, Settings};
    let settings = Settings { fusion: Fusion { rerank_min_evidence: -1.0, ..Fusion::default() }, ..Settings::default() };
    let always = Recommender::open(lib.clone(), &models, None, settings).unwrap();
    let r = always.recommend(&off_claim).unwrap();
    assert!(
        r.candidates.iter().any(|c| ids[..2].contains(&c.id.as_str()) && c.rerank.is_some()),
        "{:?}",
        r.candidates.iter().map(|c| &c.id).collect::<Vec<_>>()
    );
    assert!(r.candidates.iter().all(|c| c.cited_for.is_none()));
}

#[test]
fn span_vectors_are_saved_in_the_library_and_read_back_by_a_new_process() {
    use burn::tensor::Device;
    use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
    use citewise::pipeline::evidence_channel::RankedSpan;
    use citewise::pipeline::span_cosines::SpanCosines;

    let (d, lib) = library_with_fixture();
    import_evidence(&lib, &[contexts_file(d.path())], Some("train"), false).unwrap();
    let encoder = Arc::new(BiEncoder::load(CITATION_ENCODER, &Device::flex()).expect("models: run scripts/fetch-models.sh"));
    let records = lib.evidence().all_records().unwrap();
    let distinct: std::collections::HashSet<&str> = records.iter().map(|r| r.text.as_str()).collect();
    let spans: Vec<RankedSpan> = records.iter().cloned().enumerate().map(|(i, record)| RankedSpan { rank: i + 1, record }).collect();
    let query = "personalised completion of a typed query prefix";

    let first = SpanCosines::new(encoder.clone());
    let progress = std::sync::Mutex::new(Vec::new());
    first.warm(&lib, &|done, total| progress.lock().unwrap().push((done, total))).unwrap();
    assert_eq!(first.encoded(), distinct.len());
    assert_eq!(progress.lock().unwrap().last(), Some(&(distinct.len(), distinct.len())));
    let expected = first.similarity(query, &spans).unwrap();
    assert_eq!(first.encoded(), distinct.len(), "every span was cached");

    // Another process: nothing to encode, the same cosines.
    let second = SpanCosines::new(encoder.clone());
    assert_eq!(second.load_saved(&lib).unwrap(), distinct.len());
    assert_eq!(second.similarity(query, &spans).unwrap(), expected);
    assert_eq!(second.encoded(), 0);
    second.warm(&lib, &|_, _| {}).unwrap();
    assert_eq!(second.encoded(), 0, "warm resumes: nothing left to encode");

    // A damaged store is started afresh, never an error.
    std::fs::write(lib.span_vectors_dir().join("vectors.json"), b"{ not json").unwrap();
    let third = SpanCosines::new(encoder);
    assert!(third.load_saved(&lib).is_ok());
    third.warm(&lib, &|_, _| {}).unwrap();
    assert_eq!(third.encoded(), distinct.len());
    let again = third.similarity(query, &spans).unwrap();
    assert!(again.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-5));
}

#[test]
fn the_citation_channel_finds_a_paper_by_meaning_from_vectors_kept_in_the_library() {
    use burn::tensor::Device;
    use citewise::library::embed::embed_citation_vectors;
    use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
    use citewise::pipeline::citation_channel::open_citation_vectors;
    use citewise::pipeline::paper_cosines::{PaperCosines, PaperText};
    use std::sync::atomic::{AtomicU64, Ordering};

    let (_d, lib) = library_with_fixture();
    let lib = Arc::new(lib);
    // No vectors yet: the channel says how to get them.
    let err = Recommender::with_stages(lib.clone(), &Models::installed(), &["citation"]).err().expect("no vectors, no channel").to_string();
    assert!(err.contains("citewise embed"), "{err}");

    let reranked = |lib: &Arc<Library>| {
        // No evidence channel: the stage is told to run for every query.
        use citewise::pipeline::{Fusion, Settings, Stages};
        let settings = Settings { fusion: Fusion { rerank_min_evidence: -1.0, ..Fusion::default() }, ..Settings::default() };
        let stages = Stages::parse(&["bm25", "rerank"]).unwrap();
        let mut rec = Recommender::open(lib.clone(), &Models::installed(), Some(&stages), settings).unwrap();
        rec.set_rerank_depth(5);
        rec.recommend(&Query::new("Transformer encoders pre-trained on masked language modelling [CIT] and then fine-tuned")).unwrap()
    };
    let before = reranked(&lib);
    // By default the stage runs only where the evidence speaks of the
    // claim; without an evidence channel the answer is the fused order.
    let gated = Recommender::with_stages(lib.clone(), &Models::installed(), &["bm25", "rerank"]).unwrap();
    let q = Query::new("Transformer encoders pre-trained on masked language modelling [CIT] and then fine-tuned");
    let (gated, plain) = (
        gated.recommend(&q).unwrap(),
        Recommender::with_stages(lib.clone(), &Models::installed(), &["bm25"]).unwrap().recommend(&q).unwrap(),
    );
    assert!(gated.candidates.iter().all(|c| c.rerank.is_none() && c.citation.is_none()), "the stage did not run");
    let order = |r: &citewise::pipeline::Recommendations| r.candidates.iter().map(|c| c.id.clone()).collect::<Vec<_>>();
    assert_eq!(order(&gated), order(&plain));

    let encoder = BiEncoder::load(CITATION_ENCODER, &Device::flex()).expect("models: run scripts/fetch-models.sh");
    let papers = lib.papers().num_papers() as usize;
    let (started, done) = (AtomicU64::new(0), AtomicU64::new(0));
    let s = embed_citation_vectors(&lib, &encoder, 2, &|n| started.store(n, Ordering::SeqCst), &|k| {
        done.fetch_add(k, Ordering::SeqCst);
    })
    .unwrap();
    assert_eq!((s.embedded, s.kept), (papers, 0));
    assert_eq!((started.into_inner(), done.into_inner()), (papers as u64, papers as u64));
    // Incremental: a second run encodes nothing.
    let again = embed_citation_vectors(&lib, &encoder, 2, &|_| {}, &|_| {}).unwrap();
    assert_eq!((again.embedded, again.kept), (0, papers));

    // A context that shares no word with the TnT paper's title or abstract.
    let context = "Every word was labelled with its grammatical category by a second-order HMM [CIT].";
    let rec = Recommender::with_stages(lib.clone(), &Models::installed(), &["citation"]).unwrap();
    let r = rec.recommend(&Query::new(context)).unwrap();
    assert_eq!(r.candidates[0].id, "bib:brants2000tnt", "{:?}", r.candidates.iter().map(|c| &c.id).collect::<Vec<_>>());
    assert_eq!(r.candidates[0].channels[0].channel.name(), "citation");
    let bm25 = Recommender::with_stages(lib.clone(), &Models::installed(), &["bm25"]).unwrap().recommend(&Query::new(context)).unwrap();
    assert!(bm25.candidates.first().is_none_or(|c| c.id != "bib:brants2000tnt"), "BM25 should not find it first by words");

    // A query in a script the library is not written in: BM25 finds
    // nothing, the citation channel only neighbours, and the answer says so.
    let fused = Recommender::with_stages(lib.clone(), &Models::installed(), &["bm25", "citation"]).unwrap();
    let other = fused.recommend(&Query::new("Каждое слово размечено скрытой марковской моделью второго порядка [CIT].")).unwrap();
    assert!(!other.candidates.is_empty());
    assert_eq!(other.notices, [citewise::pipeline::answer::MEANING_ONLY]);
    let english = fused.recommend(&Query::new(context)).unwrap();
    assert!(!english.notices.iter().any(|n| n == citewise::pipeline::answer::MEANING_ONLY), "{:?}", english.notices);

    // With every candidate's vector kept, the rerank stage splits the
    // cross-encoder's pairs over two threads: same order, same scores.
    let after = reranked(&lib);
    type Ranks = Vec<(String, Option<(usize, f32)>, Option<(usize, f32)>)>;
    let summary = |r: &citewise::pipeline::Recommendations| -> Ranks {
        r.candidates
            .iter()
            .map(|c| (c.id.clone(), c.rerank.as_ref().map(|s| (s.rank, s.score)), c.citation.as_ref().map(|s| (s.rank, s.score))))
            .collect()
    };
    let (b, a) = (summary(&before), summary(&after));
    assert_eq!(b.len(), a.len());
    assert!(b.iter().filter(|x| x.1.is_some()).count() >= 2, "{b:?}");
    for (x, y) in b.iter().zip(&a) {
        assert_eq!(x.0, y.0, "{b:?} vs {a:?}");
        let close = |p: Option<(usize, f32)>, q: Option<(usize, f32)>| match (p, q) {
            (Some(p), Some(q)) => p.0 == q.0 && (p.1 - q.1).abs() < 1e-4,
            (None, None) => true,
            _ => false,
        };
        assert!(close(x.1, y.1) && close(x.2, y.2), "{b:?} vs {a:?}");
    }

    // The rerank stage's bi-encoder reads the same vectors instead of encoding the papers.
    let stored = open_citation_vectors(&lib, &encoder).unwrap().expect("vectors saved");
    assert_eq!(stored.len(), papers);
    // Given no text at all, it still scores the paper as from its own text.
    let texts = [PaperText { id: "bib:brants2000tnt", title: "", abstract_text: "" }];
    let paper = lib.papers().paper_by_id("bib:brants2000tnt").unwrap().unwrap();
    let texts_from_library = [PaperText { id: "bib:brants2000tnt", title: &paper.title, abstract_text: &paper.abstract_text }];
    let sim = PaperCosines::new(Arc::new(encoder));
    let fresh = sim.cosines(context, &texts_from_library, None).unwrap();
    let read = PaperCosines::new(sim.encoder().clone()).cosines(context, &texts, Some(&stored)).unwrap();
    assert!((fresh[0] - read[0]).abs() < 1e-4, "{fresh:?} vs {read:?}");
}

/// A full-text dump (S2ORC / unarXive, one paper a line) of `copies` of the
/// ten shortest papers of the real unArXive sample, each copy with ids of
/// its own; and a library of the papers their bibliographies name by arXiv
/// id. `None` without the shared data.
fn fulltext_dump(dir: &std::path::Path, copies: usize) -> Option<(std::path::PathBuf, Library)> {
    let shared = common::shared_or_fail("the unarXive sample in ../shared")?;
    let raw = citewise::corpus::source::read_bytes(&shared.join("data/fulltext/unarxive-2022-sample.jsonl.gz")).unwrap();
    let mut lines: Vec<String> = String::from_utf8(raw).unwrap().lines().filter(|l| !l.trim().is_empty()).map(str::to_string).collect();
    lines.sort_by_key(String::len);
    lines.truncate(10);
    let mut papers = std::fs::File::create(dir.join("papers.jsonl")).unwrap();
    let mut seen = std::collections::HashSet::new();
    let dump = dir.join("dump.jsonl");
    let mut out = std::fs::File::create(&dump).unwrap();
    for copy in 0..copies {
        for line in &lines {
            let mut p: serde_json::Value = serde_json::from_str(line).unwrap();
            for entry in p["bib_entries"].as_object().unwrap().values() {
                let arxiv = entry["ids"]["arxiv_id"].as_str().unwrap_or("");
                if !arxiv.is_empty() && seen.insert(arxiv.to_string()) {
                    let title: String = entry["bib_entry_raw"].as_str().unwrap().chars().take(120).collect();
                    let paper = serde_json::json!({"id": format!("arxiv-{arxiv}"), "title": title, "url": format!("https://arxiv.org/abs/{arxiv}")});
                    writeln!(papers, "{paper}").unwrap();
                }
            }
            let id = format!("{}-{copy}", p["metadata"]["id"].as_str().unwrap());
            p["metadata"]["id"] = id.into();
            writeln!(out, "{p}").unwrap();
        }
    }
    drop(papers);
    let lib = Library::open_or_create(&dir.join("lib")).unwrap();
    import(&lib, &[dir.join("papers.jsonl")], ImportOptions::default(), &Quiet).unwrap();
    Some((dump, lib))
}

#[test]
fn a_full_text_dump_is_read_in_batches_and_an_interrupted_import_goes_on_where_it_stopped() {
    use citewise::library::evidence_import::{import_inputs, EvidenceOptions, STREAM_BATCH};
    let copies = 30; // 300 papers: two batches
    assert!(copies * 10 > STREAM_BATCH as usize);
    let whole_dir = tempfile::tempdir().unwrap();
    let Some((dump, whole)) = fulltext_dump(whole_dir.path(), copies) else { return };
    let s = import_evidence(&whole, &[dump], None, false).unwrap();
    let (_, r) = &s.reports[0];
    assert_eq!(r.documents, 300);
    assert!(r.linked > 0 && r.sentences > 0, "{r:?}");
    let stats = whole.evidence().stats().unwrap();
    // Each copy's sentences are other citing papers' (their own ids): one
    // span, its support counted per citing sentence.
    let support: u32 = whole.evidence().all_records().unwrap().iter().flat_map(|r| r.cited.iter().map(|c| c.support())).sum();
    assert_eq!(support as usize % copies, 0, "every copy counts once: {support}");
    assert_eq!(whole.citances().count() as usize, r.sentences);

    // Stopped after the first batch was committed (as a kill would stop it).
    let dir = tempfile::tempdir().unwrap();
    let (dump, lib) = fulltext_dump(dir.path(), copies).unwrap();
    let input = [citewise::evidence::inputs::EvidenceInput::Sentences(dump.clone())];
    let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        import_inputs(&lib, &input, &EvidenceOptions::default(), &|_, _| panic!("stopped after a batch"))
    }));
    assert!(stopped.is_err());
    let journal: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("lib/evidence-journal.json")).unwrap()).unwrap();
    let partial = journal["partial"].as_object().unwrap_or_else(|| panic!("{journal}"));
    assert_eq!(partial.values().next().unwrap()[1], STREAM_BATCH, "the first batch is committed: {journal}");
    let resumed = import_evidence(&lib, &[dump], None, false).unwrap();
    let (_, rest) = &resumed.reports[0];
    assert_eq!(rest.documents, 300 - STREAM_BATCH as usize, "only the papers after the committed batch are read again");
    assert_eq!(lib.evidence().stats().unwrap().spans, stats.spans);
    let resumed_support: u32 = lib.evidence().all_records().unwrap().iter().flat_map(|r| r.cited.iter().map(|c| c.support())).sum();
    assert_eq!(resumed_support, support, "the same evidence as one uninterrupted import");
    assert_eq!(lib.citances().count(), whole.citances().count());
    assert!(!std::fs::read_to_string(dir.path().join("lib/evidence-journal.json")).unwrap().contains("\"partial\""));
}

#[cfg(unix)]
#[test]
fn a_named_pipe_given_as_full_text_is_refused_without_waiting() {
    use citewise::library::evidence_import::{import_inputs, EvidenceOptions};
    let (dir, lib) = library_with_fixture();
    let fifo = dir.path().join("dump.jsonl");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a plain system call on a path this test owns.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let input = [citewise::evidence::inputs::EvidenceInput::Sentences(fifo)];
    let s = import_inputs(&lib, &input, &EvidenceOptions::default(), &|_, _| {}).unwrap();
    assert_eq!(s.skipped.len(), 1, "{s:?}");
    assert!(s.skipped[0].contains("not a regular file (a named pipe)"), "{}", s.skipped[0]);
    assert_eq!(lib.evidence().num_spans(), 0);
}
