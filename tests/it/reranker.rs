#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The cross-encoder reranker: pair building and truncation, scores that do
//! not depend on the batch, weights round trip and errors, a short
//! fine-tuning run that must learn its training triplets, and the rerank
//! stage of the pipeline. Needs the models (`scripts/fetch-models.sh`).

use crate::common;

use std::path::PathBuf;
use std::sync::Arc;

use burn::tensor::Device;
use citewise::neural::cross_encoder::{logits, split_base, PairEncoder, RerankerConfig};
use citewise::neural::models::model_dir;
use citewise::neural::reranker::Reranker;
use citewise::neural::train::rerank::{r10_rr, reranked, train_reranker, RerankExample, RerankInputs, RerankTrainOptions};
use citewise::neural::train::Quiet;
use citewise::pipeline::Stage;

const BASE: &str = "paraphrase-minilm-l3-v2";

fn base_dir() -> PathBuf {
    model_dir(BASE).expect("models: run scripts/fetch-models.sh")
}

fn pairs(max_len: usize, max_candidate: usize) -> PairEncoder {
    PairEncoder::new(&base_dir().join("tokenizer.json"), max_len, max_candidate).unwrap()
}

#[test]
fn pairs_cut_the_global_context_first_and_never_exceed_the_length() {
    let p = pairs(64, 20);
    let long = "statistical machine translation with phrase based models and syntax ".repeat(10);
    let local = "we tag parts of speech with a trigram tagger";
    let q = p.query(local, "A title about translation", &long).unwrap();
    let cand = p.candidate("TnT: a statistical part-of-speech tagger", &long).unwrap();
    let e = p.pair(&q, &cand);
    assert_eq!(e.ids.len(), 64);
    assert_eq!(e.ids.iter().filter(|&&t| t == e.ids[e.ids.len() - 1]).count(), 2, "two [SEP]");
    let first = e.type_ids.iter().position(|&t| t == 1).unwrap();
    assert_eq!(&e.ids[first - 1 - q.local.len()..first - 1], &q.local[..], "the local context is whole, just before the first [SEP]");
    assert_eq!(e.ids.len() - first - 1, 20, "the candidate is cut to its share when the citing side needs the room");
    assert_eq!(&e.ids[first..first + 20], &cand[..20]);
    assert!(e.type_ids[..first].iter().all(|&t| t == 0) && e.type_ids[first..].iter().all(|&t| t == 1));

    // A short query leaves the candidate the rest of the room.
    let short = p.query("trigram tagger", "", "").unwrap();
    let e = p.pair(&short, &cand);
    assert_eq!(e.ids.len(), 64);
    assert_eq!(e.ids.len() - e.type_ids.iter().position(|&t| t == 1).unwrap() - 1, 64 - 3 - short.local.len());

    // A local context longer than the whole citing share is cut, never the layout.
    let huge = p.query(&long, "", "").unwrap();
    let e = p.pair(&huge, &cand);
    assert_eq!(e.ids.len(), 64);
    assert!(PairEncoder::new(&base_dir().join("tokenizer.json"), 16, 20).is_err(), "no room for the query");
}

#[test]
fn scores_do_not_depend_on_the_batch_and_weights_round_trip() {
    let device = Device::flex();
    let config = RerankerConfig::new(BASE.into()).with_max_len(96);
    let (bottom, top) = split_base(&config, &base_dir(), &device).unwrap();
    assert_eq!(bottom.encoder.layer.len() + top.layers.len(), 3);
    let p = pairs(96, 40);
    let q = p.query("we tag parts of speech with a trigram tagger", "", "").unwrap();
    let texts = [
        ("TnT: a statistical part-of-speech tagger", "Trigrams and tags: a fast tagger based on Markov models."),
        ("Conditional random fields", ""),
        ("A very long title about statistical machine translation with phrases and syntax and more words", "An abstract."),
    ];
    let encoded: Vec<_> = texts.iter().map(|(t, a)| p.pair(&q, &p.candidate(t, a).unwrap())).collect();
    let together = logits(&bottom, &top, &encoded, &device);
    for (i, e) in encoded.iter().enumerate() {
        let alone = logits(&bottom, &top, std::slice::from_ref(e), &device);
        assert!((alone[0] - together[i]).abs() < 1e-4, "pair {i}: {} alone vs {} in a batch", alone[0], together[i]);
    }
    assert!(together[0] != together[1]);

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.safetensors");
    top.save(&path).unwrap();
    std::fs::write(dir.path().join("reranker.json"), config.to_string()).unwrap();
    let loaded = Reranker::load_dir(dir.path(), &device).unwrap();
    let qt = loaded.query("we tag parts of speech with a trigram tagger", "", "").unwrap();
    let s = loaded.score(&qt, &texts).unwrap();
    for (a, b) in s.iter().zip(&together) {
        assert!((a - 1.0 / (1.0 + (-b).exp())).abs() < 1e-5, "the saved top scores as before: {a} vs {b}");
    }
    // Pairs scored before come back with their scores, new ones in a mixed
    // list are scored, and a remembered candidate is scored anew for another query.
    let again = loaded.score(&qt, &[texts[2], ("Hidden Markov models for tagging", ""), texts[0]]).unwrap();
    assert_eq!((again[0], again[2]), (s[2], s[0]));
    let fresh = loaded.score(&qt, &[("Hidden Markov models for tagging", "")]).unwrap();
    assert!((again[1] - fresh[0]).abs() < 1e-5, "{} vs {}", again[1], fresh[0]);
    let other = loaded.query("phrase-based statistical machine translation", "", "").unwrap();
    let for_other = loaded.score(&other, &texts).unwrap();
    let direct = logits(&bottom, &top, &[p.pair(&other, &p.candidate(texts[0].0, texts[0].1).unwrap())], &device);
    assert!((for_other[0] - 1.0 / (1.0 + (-direct[0]).exp())).abs() < 1e-5 && for_other[0] != s[0], "{} vs {}", for_other[0], s[0]);

    // Two trained layers in a file for one: the error names the file and a tensor.
    let two = RerankerConfig::new(BASE.into()).with_trained_layers(2);
    let (_, top2) = split_base(&two, &base_dir(), &device).unwrap();
    top2.save(&path).unwrap();
    let err = Reranker::load_dir(dir.path(), &device).err().expect("mismatched file").to_string();
    assert!(err.contains("model.safetensors") && err.contains("layers"), "{err}");
    std::fs::write(&path, b"not safetensors").unwrap();
    let err = Reranker::load_dir(dir.path(), &device).err().expect("corrupt file").to_string();
    assert!(err.contains("model.safetensors"), "{err}");
    let err = split_base(&RerankerConfig::new(BASE.into()).with_trained_layers(4), &base_dir(), &device).err().unwrap().to_string();
    assert!(err.contains("3 layers"), "{err}");
}

#[test]
fn reranking_helpers_reorder_only_the_reranked_head() {
    assert_eq!(reranked(&[7, 8, 9, 10], &[0.1, 0.9, 0.5]), [8, 9, 7, 10]);
    assert_eq!(r10_rr(&[1, 2, 3], &[3]), (1.0, 1.0 / 3.0));
    assert_eq!(r10_rr(&[1, 2, 3], &[4]), (0.0, 0.0));
}

/// Real benchmark contexts with the papers they cite and, as "prefetched"
/// negatives, papers that share no cited id: enough for the reranker to
/// learn its training set.
fn real_examples(n: usize) -> Option<(Vec<citewise::corpus::Paper>, Vec<RerankExample>)> {
    let shared = common::shared()?;
    let bench = shared.join("data/benchmark");
    let contexts = citewise::corpus::benchmark::load_contexts(&bench.join("contexts.jsonl.gz"), Some("train")).unwrap();
    let contexts: Vec<_> = contexts.into_iter().filter(|c| c.source == "scisummnet").step_by(97).take(n).collect();
    let wanted: std::collections::HashSet<&str> = contexts.iter().flat_map(|c| c.cited.iter().map(String::as_str)).collect();
    let all = citewise::neural::train::load_papers(&bench.join("papers.jsonl.gz")).unwrap();
    let mut papers: Vec<_> = all.iter().filter(|p| wanted.contains(p.id.as_str())).cloned().collect();
    papers.extend(all.iter().filter(|p| !wanted.contains(p.id.as_str()) && !p.abstract_text.is_empty()).step_by(1000).take(40).cloned());
    let index: std::collections::HashMap<&str, usize> = papers.iter().enumerate().map(|(i, p)| (p.id.as_str(), i)).collect();
    let n_papers = papers.len();
    let examples = contexts
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            let cited: Vec<usize> = c.cited.iter().filter_map(|id| index.get(id.as_str()).copied()).collect();
            let mut prefetched: Vec<usize> = (0..6).map(|k| (i * 7 + k * 13) % n_papers).filter(|p| !cited.contains(p)).collect();
            prefetched.insert(3.min(prefetched.len()), cited[0]);
            (!cited.is_empty()).then(|| RerankExample {
                local: citewise::pipeline::query::strip_citations(&c.context, &citewise::corpus::citation_markup::CiteGrammar::PLAIN),
                title: String::new(),
                abstract_text: String::new(),
                cited,
                prefetched,
            })
        })
        .collect();
    Some((papers, examples))
}

#[test]
fn fine_tuning_learns_its_triplets_keeps_the_best_and_resumes() {
    let Some((papers, examples)) = real_examples(24) else {
        common::skip_unless_ci("the fine-tuning run", "../shared is missing");
        return;
    };
    let device = Device::flex();
    let config = RerankerConfig::new(BASE.into()).with_max_len(96);
    let out = tempfile::tempdir().unwrap();
    let opts = RerankTrainOptions { batch: 8, learning_rate: 3e-4, eval_every: 15, rerank_depth: 7, max_steps: 15, ..Default::default() };
    // Validation on the training examples themselves: the run must learn them.
    let base = base_dir();
    let inputs = RerankInputs { config: &config, base_dir: &base, start: None, papers: &papers, train: &examples, val: &examples };
    let first = train_reranker(&inputs, out.path(), &opts, &device, &Quiet).unwrap();
    assert_eq!(first.len(), 1);
    let opts = RerankTrainOptions { max_steps: 45, ..opts };
    let history = train_reranker(&inputs, out.path(), &opts, &device, &Quiet).unwrap();
    assert_eq!(history.iter().map(|c| c.step).collect::<Vec<_>>(), [15, 30, 45], "the run resumed at step 15");
    assert!(history.iter().all(|c| c.loss.is_finite()));
    let best = history.iter().rfind(|c| c.best).unwrap();
    assert!(history.iter().all(|c| c.mrr <= best.mrr));
    // The cited paper sits at rank 4 of 7 in the prefetched lists (MRR 0.25).
    assert!((best.prefetch_mrr - 0.25).abs() < 1e-9, "{best:?}");
    assert!(best.mrr > 0.45, "reranking puts the cited papers first far more often than the prefetch: {history:?}");
    assert!(Reranker::load_dir(out.path(), &device).is_ok(), "the kept weights load");
}

#[test]
fn the_pipeline_reranks_the_fused_list_and_streams_both() {
    use citewise::library::import::{import, ImportOptions, Quiet as QuietImport};
    use citewise::library::Library;
    use citewise::pipeline::rerank::{RerankStage, CPU_RERANK_DEPTH, GPU_RERANK_DEPTH, RERANK};
    use citewise::pipeline::{Models, Query, Recommender};

    let device = Device::flex();
    let weights = tempfile::tempdir().unwrap();
    let config = RerankerConfig::new(BASE.into()).with_max_len(96);
    let (_, top) = split_base(&config, &base_dir(), &device).unwrap();
    top.save(&weights.path().join("model.safetensors")).unwrap();
    std::fs::write(weights.path().join("reranker.json"), config.to_string()).unwrap();
    let reranker = Arc::new(Reranker::load_dir(weights.path(), &device).unwrap());
    // K_r by default: the CPU depth with a reranker on the CPU, deeper on
    // a GPU.
    assert_eq!(RerankStage::new(reranker.clone()).depth(), CPU_RERANK_DEPTH);
    let mut on_gpu = Reranker::load_dir(weights.path(), &device).unwrap();
    on_gpu.on_gpu = true;
    assert_eq!(RerankStage::new(Arc::new(on_gpu)).depth(), GPU_RERANK_DEPTH);

    let dir = tempfile::tempdir().unwrap();
    let lib = Library::open_or_create(dir.path()).unwrap();
    import(&lib, &[common::fixture("library.bib")], ImportOptions::default(), &QuietImport).unwrap();
    let lib = Arc::new(lib);
    let models = Models::installed();
    // A library without evidence: the stage is told to run for every query
    // (by default it runs only where the evidence speaks of the claim).
    use citewise::pipeline::{Fusion, Settings, Stages};
    let settings = Settings { fusion: Fusion { rerank_min_evidence: -1.0, ..Fusion::default() }, ..Settings::default() };
    let mut rec = Recommender::open(lib.clone(), &models, Some(&Stages::parse(&["bm25"]).unwrap()), settings).unwrap();
    let query = Query::new("a statistical part-of-speech tagger [CIT] with trigrams").with_k(5);
    let plain = rec.recommend(&query).unwrap();
    rec.set_rerank(Some(RerankStage::new(reranker.clone())));
    rec.set_rerank_depth(4);
    assert_eq!(rec.stages().names(), ["bm25", RERANK]);

    let mut stages = Vec::new();
    rec.recommend_streaming(&query, &mut |r| {
        stages.push(r);
        true
    })
    .unwrap();
    assert_eq!(stages.iter().map(|r| (r.stage.name(), r.complete)).collect::<Vec<_>>(), [("bm25", false), (RERANK, true)]);
    let early = &stages[0];
    assert_eq!(early.candidates.iter().map(|c| &c.id).collect::<Vec<_>>(), plain.candidates.iter().map(|c| &c.id).collect::<Vec<_>>());
    let last = &stages[1];
    assert!(last.timings.iter().any(|(s, _)| *s == Stage::Rerank));
    let n = plain.candidates.len().min(4);
    let head: std::collections::HashSet<_> = last.candidates[..n].iter().map(|c| c.id.clone()).collect();
    let fused: std::collections::HashSet<_> = plain.candidates[..n].iter().map(|c| c.id.clone()).collect();
    assert_eq!(head, fused, "reranking reorders the top K_r only");
    assert!(last.candidates[..n].iter().all(|c| c.rerank.as_ref().is_some_and(|r| (0.0..=1.0).contains(&r.score))));
    assert!(last.candidates[n..].iter().all(|c| c.rerank.is_none()));
    assert!(last.candidates.iter().all(|c| c.paper.is_some()));
    // The order among the reranked: the reranker's rank and the fused rank, combined.
    let f = rec.fusion();
    let combined = |c: &citewise::pipeline::Candidate| {
        f.rerank_weight / (f.rrf_k + c.rerank.as_ref().unwrap().rank as f32) + 1.0 / (f.rrf_k + c.fused_rank as f32)
    };
    assert!(last.candidates[..n].windows(2).all(|w| combined(&w[0]) >= combined(&w[1])));
    assert!(last.candidates.iter().all(|c| c.citation.is_none()), "no citation encoder in the stage");

    // With the citation encoder, its order among the reranked counts too.
    let cited_for = citewise::pipeline::cited_for::CitedFor::new(models.span_cosines().unwrap());
    rec.set_rerank(Some(RerankStage::new(reranker.clone()).with_citation(models.paper_cosines().unwrap(), cited_for, None)));
    rec.set_rerank_depth(4);
    let both = rec.recommend(&query).unwrap();
    let citation_ranks: std::collections::BTreeSet<usize> =
        both.candidates[..n].iter().map(|c| c.citation.as_ref().unwrap().rank).collect();
    assert_eq!(citation_ranks, (1..=n).collect(), "each reranked paper gets one citation-encoder rank");
    assert!(both.candidates[n..].iter().all(|c| c.citation.is_none()));
    let three =
        |c: &citewise::pipeline::Candidate| combined(c) + f.rerank_citation_weight / (f.rrf_k + c.citation.as_ref().unwrap().rank as f32);
    assert!(both.candidates[..n].windows(2).all(|w| three(&w[0]) >= three(&w[1])));
    // An empty query is still a clear error with the rerank stage on.
    assert!(rec.recommend(&Query::new("  ")).is_err());

    // Odd queries get results or a clear error through every stage, never a panic.
    let long = "statistical tagging of parts of speech with trigrams ".repeat(700); // 5,600 words
    let r = rec.recommend(&Query::new(format!("{long} [CIT]")).with_k(5)).unwrap();
    assert!(r.notices.iter().any(|n| n.contains("words")), "long queries are cut with a notice: {:?}", r.notices);
    assert!(r.timings.iter().any(|(s, _)| *s == Stage::Rerank));
    let latex = r"We use \textbf{TnT}~\cite{brants2000} with $\alpha=0.5$ \\ \begin{itemize}\item trigram tagging\end{itemize}";
    assert!(!latex.chars().any(|c| c.is_control()), "the markup reaches the pipeline as written");
    let r = rec.recommend(&Query::new(latex)).unwrap();
    assert!(r.candidates.iter().any(|c| c.id == "bib:brants2000tnt"), "{:?}", r.candidates.iter().map(|c| &c.id).collect::<Vec<_>>());
    for other_script in ["Статистическая разметка частей речи с помощью триграмм", "基于三元语法的统计词性标注器"]
    {
        match rec.recommend(&Query::new(other_script)) {
            Ok(r) => {
                assert!(r.complete);
                assert!(!r.candidates.is_empty() || r.notices.iter().any(|n| n == citewise::pipeline::answer::NO_MATCH), "{r:?}");
            }
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}

#[test]
fn long_queries_rerank_evidence_spans_by_meaning_and_short_ones_keep_the_lexical_order() {
    use citewise::evidence::record::SpanRecord;
    use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
    use citewise::pipeline::evidence_channel::{RankedSpan, SpanReranker};
    use citewise::pipeline::span_cosines::{SpanCosines, SpanRanking};

    let encoder = Arc::new(BiEncoder::load(CITATION_ENCODER, &Device::flex()).expect("models: run scripts/fetch-models.sh"));
    let spans = || -> Vec<RankedSpan> {
        [
            "the weather in spring was mild and pleasant",
            "football results of the last season",
            "a recipe for bread with sourdough",
            "a hidden Markov model part-of-speech tagger trained on the Penn Treebank",
        ]
        .iter()
        .enumerate()
        .map(|(i, t)| RankedSpan { rank: i + 1, record: SpanRecord { text: t.to_string(), kinds: vec![], cited: vec![], sources: vec![] } })
        .collect()
    };
    let semantic = SpanRanking::new(Arc::new(SpanCosines::new(encoder)), 10);
    let long = "we assign part of speech tags to every token of the corpus with a statistical tagger based on hidden Markov models";
    let mut s = spans();
    semantic.rerank(long, &mut s).unwrap();
    let pos = s.iter().position(|x| x.record.text.contains("Markov")).unwrap();
    assert!(pos < 3, "the span that means the same moves up from the lexical rank 4: now {}", pos + 1);
    assert_eq!(s.len(), 4);
    // Cached vectors give the same order again.
    let mut again = spans();
    semantic.rerank(long, &mut again).unwrap();
    assert_eq!(s.iter().map(|x| &x.record.text).collect::<Vec<_>>(), again.iter().map(|x| &x.record.text).collect::<Vec<_>>());
    // A short query keeps the lexical order.
    let mut short = spans();
    semantic.rerank("Markov tagger", &mut short).unwrap();
    assert_eq!(short.iter().map(|x| x.rank).collect::<Vec<_>>(), [1, 2, 3, 4]);
}

#[test]
fn the_citation_bi_encoder_ranks_the_paper_a_context_cites_first_and_caches_its_vectors() {
    use citewise::neural::bi_encoder::{BiEncoder, CITATION_ENCODER};
    use citewise::pipeline::paper_cosines::{PaperCosines, PaperText};

    let encoder = Arc::new(BiEncoder::load(CITATION_ENCODER, &Device::flex()).expect("models: run scripts/fetch-models.sh"));
    let sim = PaperCosines::new(encoder);
    let papers = [
        PaperText { id: "a", title: "Sourdough baking at home", abstract_text: "Recipes for bread with a natural leaven." },
        PaperText {
            id: "b",
            title: "TnT: a statistical part-of-speech tagger",
            abstract_text: "A trigram tagger based on hidden Markov models, trained on the Penn Treebank.",
        },
        PaperText { id: "c", title: "Football results", abstract_text: "The scores of the last season." },
    ];
    let context = "We tag every token with a trigram HMM tagger [CIT] trained on the Wall Street Journal.";
    let cos = sim.cosines(context, &papers, None).unwrap();
    assert_eq!(cos.len(), 3);
    assert!(cos[1] > cos[0] + 0.1 && cos[1] > cos[2] + 0.1, "{cos:?}");
    // The second call reads the cached paper vectors and agrees.
    let again = sim.cosines(context, &papers[1..], None).unwrap();
    assert!((again[0] - cos[1]).abs() < 1e-5 && (again[1] - cos[2]).abs() < 1e-5, "{again:?} vs {cos:?}");
    assert!(sim.cosines(context, &[], None).unwrap().is_empty());
}
