#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The `citewise` binary end to end: import, recommend, eval, compare.

use crate::common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output};

use common::fixture;

fn citewise(lib: &Path, args: &[&str]) -> Output {
    common::citewise_command().args(args).env("CITEWISE_LIBRARY", lib).output().expect("binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}
fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn help_lists_the_subcommands() {
    let o = citewise(Path::new("/nonexistent"), &["--help"]);
    assert!(o.status.success());
    let out = stdout(&o);
    for cmd in ["import", "recommend", "eval", "bench", "info"] {
        assert!(out.contains(cmd), "{cmd} missing from:\n{out}");
    }
}

#[test]
fn global_options_may_come_before_the_subcommand() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let o = common::citewise_command()
        .args(["--library", lib.to_str().unwrap(), "import", fixture("papers.jsonl").to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let o = common::citewise_command().args(["--library", lib.to_str().unwrap(), "info"]).output().unwrap();
    assert!(stdout(&o).contains("papers:  3"), "{}", stdout(&o));
}

#[test]
fn import_then_recommend_as_table_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let o = citewise(&lib, &["import", fixture("library.bib").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("10 imported, 0 updated, 2 skipped"), "{}", stdout(&o));
    assert!(stderr(&o).contains("library.bib:88: missing field `title`"), "{}", stderr(&o));

    let o = citewise(&lib, &["recommend", "ranking query completions for a typed prefix [CIT]", "-k", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let first = stdout(&o).lines().next().unwrap_or_default().to_string();
    assert!(first.starts_with(" 1. Learning to Personalize Query Auto-Completion"), "{}", stdout(&o));

    let o = citewise(&lib, &["recommend", "BLEU scores of translation output", "--json", "-k", "2"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).expect("valid JSON");
    let c = &v["candidates"][0];
    assert_eq!(c["id"], "bib:papineni2002bleu");
    assert_eq!(c["paper"]["year"], 2002);
    assert_eq!(c["channels"][0]["channel"], "bm25");
    assert!(v["timings"]["bm25_ms"].as_f64().is_some());
}

#[test]
fn empty_query_and_missing_library_are_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let o = citewise(&dir.path().join("none"), &["recommend", "anything"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains(&format!("citewise --library {} import FILE.bib", dir.path().join("none").display())), "{}", stderr(&o));

    let lib = dir.path().join("lib");
    citewise(&lib, &["import", fixture("papers.jsonl").to_str().unwrap()]);
    let o = citewise(&lib, &["recommend", "   "]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("query is empty"), "{}", stderr(&o));
}

#[test]
fn recommend_reads_stdin_or_a_file_and_prints_titles_without_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let bib = dir.path().join("escapes.bib");
    std::fs::write(&bib, "@article{esc, title={Clearing\u{1b}[2J\u{1b}]0;pwned\u{7} screens by query \u{202e}completion}, year={2001}}\n")
        .unwrap();
    assert!(citewise(&lib, &["import", bib.to_str().unwrap(), "--no-embed"]).status.success());

    let query = "screens by query completion [CIT] ".repeat(40_000); // over the OS's 128 KB argument limit
    let file = dir.path().join("query.txt");
    std::fs::write(&file, &query).unwrap();
    let o = citewise(&lib, &["recommend", "--file", file.to_str().unwrap(), "-k", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.starts_with(" 1. Clearing[2J]0;pwned screens by query completion"), "{out:?}");
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}') && !out.contains('\u{202e}'), "{out:?}");
    assert!(stderr(&o).contains("only the 400 around [CIT] were used"), "{}", stderr(&o));
    assert!(stderr(&o).contains("context: local (320 words); --title and --abstract add"), "{}", stderr(&o));
    let o = citewise(&lib, &["recommend", "query completion [CIT]", "--title", "Screens", "--abstract", "We clear screens.", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["context"], serde_json::json!({ "local_words": 2, "title": true, "abstract": true }));
    let o = citewise(&lib, &["recommend", "query completion [CIT]", "--title", "Screens"]);
    assert!(stderr(&o).contains("context: local (2 words) + title\n"), "{}", stderr(&o));

    let mut child = common::citewise_command()
        .args(["recommend", "-", "-k", "1"])
        .env("CITEWISE_LIBRARY", &lib)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"query completion for screens").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(stdout(&o).starts_with(" 1. Clearing"), "{}", stdout(&o));

    let o = citewise(&lib, &["recommend", "query completion", "-k", "0"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("invalid value '0' for '-k <K>': must be at least 1"), "{}", stderr(&o));
}

#[test]
fn a_bibliography_with_a_self_referring_string_imports_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let bib = dir.path().join("refs.bib");
    std::fs::write(&bib, "@string{pub = pub # \" Inc.\"}\n@book{b, title={A Book}, publisher={Self}}\n").unwrap();
    let o = citewise(&lib, &["import", bib.to_str().unwrap(), "--no-embed"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stderr(&o).contains("refs.bib:1: @string `pub` refers to itself"), "{}", stderr(&o));
    assert!(stdout(&o).contains("1 imported"), "{}", stdout(&o));
}

fn write_gz(path: &Path, lines: &[&str]) {
    let f = std::fs::File::create(path).unwrap();
    let mut gz = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    for l in lines {
        writeln!(gz, "{l}").unwrap();
    }
    gz.finish().unwrap();
}

/// A three-context benchmark whose metrics are known by construction.
#[test]
fn eval_on_a_tiny_benchmark_and_compare() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench");
    std::fs::create_dir(&bench).unwrap();
    write_gz(
        &bench.join("papers.jsonl.gz"),
        &[
            r#"{"id": "p:tagger", "title": "A trigram tagger", "abstract": "Part of speech tagging with a hidden Markov model."}"#,
            r#"{"id": "p:bleu", "title": "BLEU", "abstract": "Automatic evaluation of machine translation by n-gram precision."}"#,
            r#"{"id": "p:parser", "title": "A statistical parser", "abstract": "Lexicalized parsing models for the Penn Treebank."}"#,
        ],
    );
    write_gz(
        &bench.join("contexts.jsonl.gz"),
        &[
            r#"{"id": "c1", "source": "a", "split": "test", "context": "We tag with a trigram hidden Markov model [CIT].", "cited": ["p:tagger"]}"#,
            r#"{"id": "c2", "source": "a", "split": "test", "context": "Translation is scored by n-gram precision [CIT].", "cited": ["p:bleu"]}"#,
            r#"{"id": "c3", "source": "b", "split": "test", "context": "Unrelated words entirely [CIT].", "cited": ["p:absent"]}"#,
            r#"{"id": "c4", "source": "b", "split": "train", "context": "Parsing [CIT].", "cited": ["p:parser"]}"#,
        ],
    );
    let lib = dir.path().join("not-used-by-eval");
    let pool_dir = dir.path().join("pool");
    let pool = pool_dir.to_str().unwrap();
    let out_a = dir.path().join("a.json");
    let run_a = dir.path().join("a.run");
    let o = citewise(
        &lib,
        &[
            "eval",
            "--bench",
            bench.to_str().unwrap(),
            "--pool",
            pool,
            "--stages",
            "bm25",
            "--json",
            out_a.to_str().unwrap(),
            "--run",
            run_a.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let table = stdout(&o);
    assert!(table.contains("stages=bm25 papers=3"), "{table}");
    // The shipped HAtten encoder gives the pool its dense vectors.
    assert!(table.contains("dense vectors: 3 papers encoded"), "{table}");
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out_a).unwrap()).unwrap();
    let all = &r["sources"][0];
    assert_eq!(all["source"], "all");
    assert_eq!(all["n"], 3);
    let r10 = all["scores"]["recall"][2].as_f64().unwrap();
    assert!((r10 - 2.0 / 3.0).abs() < 1e-9, "{r10}");
    assert!((all["scores"]["mrr"].as_f64().unwrap() - 2.0 / 3.0).abs() < 1e-9);
    let a = r["sources"].as_array().unwrap().iter().find(|s| s["source"] == "a").unwrap();
    assert_eq!(a["scores"]["recall"][0], 1.0);
    // The run file ranks each context's papers in TREC's six columns, its
    // first papers the ones the scores above were counted on.
    let run = std::fs::read_to_string(&run_a).unwrap();
    let lines: Vec<Vec<&str>> = run.lines().map(|l| l.split(' ').collect()).collect();
    assert!(lines.iter().all(|f| f.len() == 6 && f[1] == "Q0" && f[5] == "citewise"), "{run}");
    let first: Vec<(&str, &str)> = lines.iter().filter(|f| f[3] == "1").map(|f| (f[0], f[2])).collect();
    assert!(first.contains(&("c1", "p:tagger")) && first.contains(&("c2", "p:bleu")), "{run}");
    for c in r["contexts"].as_array().unwrap() {
        let ranks: Vec<usize> = lines.iter().filter(|f| f[0] == c["id"]).map(|f| f[3].parse().unwrap()).collect();
        assert_eq!(ranks, (1..=ranks.len()).collect::<Vec<_>>(), "ranks in order for {}:\n{run}", c["id"]);
    }

    // The train split has one context; compare the two runs.
    let out_b = dir.path().join("b.json");
    let o = citewise(
        &lib,
        &["eval", "--bench", bench.to_str().unwrap(), "--pool", pool, "--split", "train", "--json", out_b.to_str().unwrap()],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    // Every channel by default: the pool's papers get citation vectors first.
    assert!(stdout(&o).contains("citation vectors: 3 papers encoded"), "{}", stdout(&o));
    assert!(stdout(&o).contains("stages=bm25,evidence,citation,hatten"), "{}", stdout(&o));
    let o = citewise(&lib, &["eval", "--compare", out_a.to_str().unwrap(), out_b.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("0.667 1.000 +0.333"), "{}", stdout(&o));
    assert!(!lib.exists(), "eval never touches the user's library");

    let o = citewise(&lib, &["eval", "--bench", bench.to_str().unwrap(), "--pool", pool, "--stages", "nope"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("unknown stage `nope`; available: bm25"), "{}", stderr(&o));
}

/// `doctor` names the backend it picked, how deep the reranker reorders
/// by default on it (20 on the CPU, 100 on a GPU) and for which queries
/// (those the library's evidence speaks of). Needs the models
/// (`scripts/fetch-models.sh`).
#[test]
fn doctor_names_the_backend_and_the_default_rerank_depth() {
    let o = citewise(Path::new("/nonexistent"), &["doctor"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    let backend = out.lines().find(|l| l.starts_with("backend")).unwrap_or_else(|| panic!("no backend line:\n{out}"));
    let depth = if backend.contains("wgpu") { 100 } else { 20 };
    assert!(out.contains(&format!("reranks the top {depth} by default, for queries your evidence speaks of")), "{out}");
}

#[test]
fn the_threads_for_model_work_follow_citewise_threads() {
    let run = |threads: &str, args: &[&str]| {
        common::citewise_command().args(args).env("CITEWISE_LIBRARY", "/nonexistent").env("CITEWISE_THREADS", threads).output().unwrap()
    };
    let o = run("3", &["doctor"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).lines().any(|l| l.starts_with("threads   3 for model work (CITEWISE_THREADS=3)")), "{}", stdout(&o));
    for bad in ["many", "0"] {
        let o = run(bad, &["doctor"]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(&format!("CITEWISE_THREADS={bad}: not a number of threads")), "{}", stderr(&o));
    }
    // The vector scan takes the threads for model work unless told otherwise
    // (synthetic vectors: no library).
    let scan = |extra: &[&str]| {
        let mut c = common::citewise_command();
        c.args(["bench", "vectors", "--rows", "5000", "--dim", "16", "--queries", "2"]).args(extra);
        c.env("CITEWISE_THREADS", "3").output().unwrap()
    };
    let o = scan(&[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains(r#""backend":"cpu scan, 3 threads""#), "{}", stdout(&o));
    let o = scan(&["--threads", "1"]);
    assert!(stdout(&o).contains(r#""backend":"cpu scan, 1 thread""#), "{}", stdout(&o));
}

/// `bench rerank --threads 1,2` times the cross-encoder and the citation
/// encoder on a pool of each size, rows saying their threads and, from the
/// second size on, their parallel efficiency against the first.
#[test]
fn bench_rerank_reports_threads_and_efficiency() {
    if !common::models_or_fail("timing the rerank stage") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let papers = dir.path().join("papers.jsonl.gz");
    let lines: Vec<String> = (0..5)
        .map(|i| format!(r#"{{"id":"p{i}","title":"Paper {i} on parsing","abstract":"We study parsing number {i} with neural networks.","year":"2020","authors":["Ada Lovelace"]}}"#))
        .collect();
    write_gz(&papers, &lines.iter().map(String::as_str).collect::<Vec<_>>());
    let o = citewise(
        dir.path(),
        &["bench", "rerank", papers.to_str().unwrap(), "--depth", "3", "--queries", "2", "--device", "cpu", "--threads", "1,2"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let rows: Vec<serde_json::Value> = stdout(&o).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    // Cross-encoder and citation encoder, on 1 thread then on 2.
    assert_eq!(rows.len(), 4, "{rows:?}");
    assert_eq!(rows.iter().map(|r| r["threads"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 1, 2, 2]);
    assert!(rows[..2].iter().all(|r| r.get("efficiency").is_none()));
    for (one, two) in rows[..2].iter().zip(&rows[2..]) {
        assert_eq!(one["base"], two["base"]);
        let e = two["efficiency"].as_f64().unwrap();
        let expected = one["p50_ms"].as_f64().unwrap() / (2.0 * two["p50_ms"].as_f64().unwrap());
        assert!((e - expected).abs() < 1e-9 && e > 0.0, "{two}");
    }
}

/// `train reranker` prefetches each context on several threads: every
/// example must still carry its own context's prefetch (the paper it cites
/// first, on this benchmark) and the mixed global-context rule, and a short
/// run leaves its weights. Needs the models (`scripts/fetch-models.sh`).
#[test]
fn train_reranker_pairs_each_context_with_its_own_prefetch() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench");
    std::fs::create_dir(&bench).unwrap();
    let topics = [
        ("tagger", "A trigram tagger", "Part of speech tagging with a hidden Markov model."),
        ("bleu", "BLEU", "Automatic evaluation of machine translation by n-gram precision."),
        ("parser", "A statistical parser", "Lexicalized parsing models for the Penn Treebank."),
        ("wordnet", "WordNet", "A lexical database of English synonym sets."),
        ("lda", "Latent Dirichlet allocation", "A generative topic model of document collections."),
        ("crf", "Conditional random fields", "Probabilistic models for segmenting and labeling sequence data."),
        ("summ", "Extractive summarization", "Selecting salient sentences to summarize news articles."),
        ("ner", "Named entity recognition", "Recognizing person, location and organization names in newswire."),
    ];
    let papers: Vec<String> =
        topics.iter().map(|(id, t, a)| serde_json::json!({ "id": format!("p:{id}"), "title": t, "abstract": a }).to_string()).collect();
    write_gz(&bench.join("papers.jsonl.gz"), &papers.iter().map(String::as_str).collect::<Vec<_>>());
    let contexts: Vec<String> = topics
        .iter()
        .enumerate()
        .map(|(i, (id, t, a))| {
            let split = if i < 6 { "train" } else { "val" };
            serde_json::json!({
                "id": format!("c{i}"), "source": "s", "split": split, "citing_title": format!("Citing paper {i}"),
                "context": format!("As in {t}: {a} [CIT]"), "cited": [format!("p:{id}")],
            })
            .to_string()
        })
        .collect();
    write_gz(&bench.join("contexts.jsonl.gz"), &contexts.iter().map(String::as_str).collect::<Vec<_>>());
    let lib = dir.path().join("lib");
    let pool = dir.path().join("pool");
    let out = dir.path().join("out");
    let (bench, pool, out_s) = (bench.to_str().unwrap(), pool.to_str().unwrap(), out.to_str().unwrap());
    let o = citewise(&lib, &["eval", "--bench", bench, "--pool", pool, "--split", "train", "--stages", "bm25", "--limit", "1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = citewise(
        &lib,
        &[
            "train",
            "reranker",
            "--bench",
            bench,
            "--pool",
            pool,
            "--out",
            out_s,
            "--device",
            "cpu",
            "--steps",
            "2",
            "--batch",
            "2",
            "--eval-every",
            "2",
            "--val-limit",
            "2",
            "--max-len",
            "128",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("best: step 2"), "{}", stdout(&o));
    assert!(out.join("model.safetensors").exists());

    let mined: serde_json::Value = serde_json::from_slice(&std::fs::read(out.join("prefetched.json")).unwrap()).unwrap();
    let train = mined["train"].as_array().unwrap();
    assert_eq!(train.len(), 6);
    assert_eq!(mined["val"].as_array().unwrap().len(), 2);
    for e in train.iter().chain(mined["val"].as_array().unwrap()) {
        let cited = e["cited"][0].as_u64().unwrap() as usize;
        assert_eq!(e["prefetched"][0].as_u64(), Some(cited as u64), "{e}");
        assert!(e["local"].as_str().unwrap().contains(topics[cited].1), "{e}");
    }
    let with_title = train.iter().filter(|e| !e["title"].as_str().unwrap().is_empty()).count();
    assert_eq!(with_title, 3, "every other train example keeps the citing title");
    assert!(mined["val"].as_array().unwrap().iter().all(|e| e["title"].as_str().unwrap().is_empty()));
}

/// A pool that holds one paper twice, as the benchmark's does: the full
/// record and the bare one a reference list made of it, which the context
/// cites. The answer shows the work once, as its full record, and `eval`
/// counts it as the cited paper; counted by record it is a miss.
#[test]
fn a_paper_held_twice_is_recommended_once_and_counted_as_the_cited_paper() {
    let dir = tempfile::tempdir().unwrap();
    let bench = dir.path().join("bench");
    std::fs::create_dir(&bench).unwrap();
    write_gz(
        &bench.join("papers.jsonl.gz"),
        &[
            r#"{"id": "acl:A88-1019", "year": 1988, "title": "A Stochastic Parts Program and Noun Phrase Parser for Unrestricted Text", "abstract": "A program that tags each word of unrestricted text with its most likely part of speech."}"#,
            r#"{"id": "aclarc:36a0398dfc65", "title": "a stochastic parts program and nounphrase parser for unrestricted text"}"#,
            r#"{"id": "acl:J93-1", "year": 1993, "title": "Finite-state parsing of noun phrases", "abstract": "Noun phrases found by a cascade of finite-state transducers."}"#,
        ],
    );
    write_gz(
        &bench.join("contexts.jsonl.gz"),
        &[
            r#"{"id": "c1", "source": "a", "split": "test", "context": "A stochastic parts program tags unrestricted text [CIT].", "cited": ["aclarc:36a0398dfc65"]}"#,
        ],
    );
    let pool = dir.path().join("pool");
    let out = dir.path().join("r.json");
    let o = citewise(
        &dir.path().join("unused"),
        &[
            "eval",
            "--bench",
            bench.to_str().unwrap(),
            "--pool",
            pool.to_str().unwrap(),
            "--stages",
            "bm25",
            "--json",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("counted by record, the cited record itself only (R@10/MRR): all 0.000/0.000"), "{}", stdout(&o));
    let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(r["sources"][0]["scores"]["mrr"], 1.0, "{r}");
    assert_eq!(r["by_record"][0]["scores"]["mrr"], 0.0, "{r}");

    let o = citewise(&pool, &["recommend", "a stochastic parts program for unrestricted text", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<&str> = json["candidates"].as_array().unwrap().iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(ids, ["acl:A88-1019", "acl:J93-1"], "{json}");
    assert_eq!(json["candidates"][0]["same_work"], serde_json::json!(["aclarc:36a0398dfc65"]));
    assert_eq!(json["candidates"][0]["paper"]["year"], 1988);
}

/// `import --zotero` of a Zotero 7 data directory, what `doctor` then says
/// of it (before and after Zotero changed its database), and `bench zotero`
/// on a small papers file.
#[test]
fn import_zotero_then_doctor_and_bench() {
    use citewise::testbed::zotero_db::{Era, NewItem, ZoteroDb};
    let dir = tempfile::tempdir().unwrap();
    let zotero = dir.path().join("Zotero");
    let mut db = ZoteroDb::create(&zotero, Era::Zotero7).unwrap();
    let article = |key: &str, title: &str, citation_key: &str| NewItem {
        key: key.to_string(),
        item_type: "journalArticle".to_string(),
        title: title.to_string(),
        date: "2017-00-00 2017".to_string(),
        creators: vec![("Ashish".to_string(), "Vaswani".to_string())],
        citation_key: citation_key.to_string(),
        ..NewItem::default()
    };
    let first = db.add_item(&article("ABCD2345", "Attention Is All You Need", "vaswani2017attention")).unwrap();
    db.add_item(&article("EFGH2345", "Transformers for Citation Recommendation", "")).unwrap();

    let lib = dir.path().join("lib");
    let (lib_s, zotero_s) = (lib.to_str().unwrap(), zotero.to_str().unwrap());
    let o = citewise(&lib, &["--library", lib_s, "import", "--zotero", zotero_s, "--no-embed"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("2 added"), "{}", stdout(&o));
    // Without DIR: the data directory Zotero uses, ~/Zotero here.
    let other = dir.path().join("other-lib");
    let o = common::citewise_command()
        .args(["--library", other.to_str().unwrap(), "import", "--zotero", "--no-embed"])
        .env("HOME", dir.path())
        .output()
        .unwrap();
    assert!(o.status.success() && stdout(&o).contains("2 added"), "{}{}", stdout(&o), stderr(&o));

    let o = citewise(&lib, &["--library", lib_s, "doctor"]);
    let out = stdout(&o);
    assert!(out.contains(&format!("zotero    {zotero_s} (Zotero 7–8; 2 items, 0 PDFs)")), "{out}\n{}", stderr(&o));
    assert!(out.contains("keys: 1 generated, 1 zotero"), "{out}");
    assert!(out.contains(" UTC (just now)") || out.contains(" minute"), "{out}");
    assert!(out.contains("unchanged since"), "{out}");

    db.set_field(first, "title", "Attention Is Still All You Need", "2030-01-01 00:00:00").unwrap();
    let o = citewise(&lib, &["--library", lib_s, "doctor"]);
    assert!(stdout(&o).contains("changed since: the next import"), "{}", stdout(&o));
    drop(db);
    std::fs::rename(&zotero, dir.path().join("Zotero-moved")).unwrap();
    let o = citewise(&lib, &["--library", lib_s, "doctor"]);
    assert!(stdout(&o).contains(&format!("warning   the Zotero data directory {zotero_s} is not there")), "{}", stdout(&o));

    let papers = dir.path().join("papers.jsonl");
    let lines: Vec<String> = (1..=200)
        .map(|i| {
            serde_json::json!({"id": format!("p{i}"), "title": format!("Paper number {i} on citations"),
                "abstract": "An abstract.", "authors": ["A B"], "year": "2020"})
            .to_string()
        })
        .collect();
    std::fs::write(&papers, lines.join("\n") + "\n").unwrap();
    let o = citewise(&lib, &["bench", "zotero", "--items", "200", "--papers", papers.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap_or_else(|e| panic!("{e}: {}", stdout(&o)));
    assert_eq!(r["items"], 200, "{r}");
    assert_eq!(r["papers"], 200, "{r}");
    assert_eq!(r["first_import"]["added"], 200, "{r}");
    assert_eq!(r["no_change"]["unchanged"], 200, "{r}");
    assert_eq!(r["no_change"]["added"].as_u64().unwrap() + r["no_change"]["updated"].as_u64().unwrap(), 0, "{r}");
    assert_eq!(r["one_changed"]["updated"], 1, "{r}");
    assert_eq!(r["one_changed"]["unchanged"], 199, "{r}");
    for figure in ["write_db_seconds", "peak_rss_mb"] {
        assert!(r[figure].as_f64().is_some(), "{figure}: {r}");
    }
    for run in ["first_import", "no_change", "one_changed"] {
        assert!(r[run]["seconds"].as_f64().is_some(), "{run}: {r}");
    }
}

/// Every subcommand and its long options, from the clap definition.
fn subcommands_and_flags() -> Vec<(String, Vec<String>)> {
    use clap::CommandFactory;
    citewise::cli::Cli::command()
        .get_subcommands()
        .map(|s| {
            let flags = s.get_arguments().filter(|a| !a.is_global_set()).filter_map(|a| a.get_long().map(str::to_string)).collect();
            (s.get_name().to_string(), flags)
        })
        .collect()
}

#[test]
fn completions_cover_every_subcommand_and_its_flags_in_every_shell() {
    let commands = subcommands_and_flags();
    assert!(commands.len() >= 15, "{commands:?}");
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = citewise(Path::new("/nonexistent"), &["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for (name, flags) in &commands {
            assert!(script.contains(name.as_str()), "{shell} completion lacks the subcommand {name}");
            for f in flags {
                assert!(
                    script.contains(&format!("--{f}")) || (shell == "fish" && script.contains(&format!("-l {f}"))),
                    "{shell}: {name} --{f} missing"
                );
            }
        }
    }
    // The bash script is valid bash.
    let o = citewise(Path::new("/nonexistent"), &["completions", "bash"]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("citewise.bash");
    std::fs::write(&path, &o.stdout).unwrap();
    match Command::new("bash").arg("-n").arg(&path).output() {
        Ok(check) => assert!(check.status.success(), "bash -n: {}", stderr(&check)),
        Err(e) => eprintln!("skipped bash -n: {e}"),
    }
    let o = citewise(Path::new("/nonexistent"), &["completions", "tcsh"]);
    assert!(!o.status.success() && stderr(&o).contains("possible values"), "{}", stderr(&o));
}

#[test]
fn man_pages_for_the_program_and_every_subcommand() {
    let o = citewise(Path::new("/nonexistent"), &["man"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = stdout(&o);
    assert!(page.contains(".TH citewise 1"), "{page}");
    for (name, _) in subcommands_and_flags() {
        assert!(page.contains(&format!("citewise\\-{name}(1)")), "the main page does not list {name}");
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("man1");
    let o = citewise(Path::new("/nonexistent"), &["man", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(out.join("citewise.1").exists());
    for (name, flags) in subcommands_and_flags() {
        let path = out.join(format!("citewise-{name}.1"));
        let page = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(page.contains(&format!(".TH citewise-{name} 1")), "{}", path.display());
        for f in flags {
            // roff writes a hyphen as `\-`.
            let roff = format!("\\-\\-{}", f.replace('-', "\\-"));
            assert!(page.contains(&roff), "{}: --{f} missing", path.display());
        }
    }
}

#[test]
fn colour_follows_the_flag_no_color_and_clicolor_force() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let o = citewise(&lib, &["import", fixture("library.bib").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let run = |args: &[&str], env: &[(&str, &str)]| {
        let mut c = common::citewise_command();
        c.args(args).env("CITEWISE_LIBRARY", &lib);
        for (k, v) in env {
            c.env(k, v);
        }
        let o = c.output().unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o)
    };
    let query = ["recommend", "ranking query completions for a typed prefix", "-k", "2"];
    let escapes = |s: &str| s.contains('\x1b');
    // Into a pipe: plain, unless asked.
    let plain = run(&query, &[]);
    assert!(!escapes(&plain) && plain.starts_with(" 1. Learning to Personalize"), "{plain:?}");
    let forced = run(&query, &[("CLICOLOR_FORCE", "1")]);
    assert!(escapes(&forced), "CLICOLOR_FORCE=1 colours: {forced:?}");
    assert!(!escapes(&run(&query, &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")])), "NO_COLOR wins over CLICOLOR_FORCE");
    let never: Vec<&str> = ["--color", "never"].into_iter().chain(query).collect();
    assert!(!escapes(&run(&never, &[("CLICOLOR_FORCE", "1")])), "--color never");
    let always: Vec<&str> = ["--color", "always"].into_iter().chain(query).collect();
    let coloured = run(&always, &[("NO_COLOR", "1")]);
    assert!(escapes(&coloured), "--color always wins over NO_COLOR");
    // The same text either way.
    let stripped = String::from_utf8(anstream::adapter::strip_bytes(coloured.as_bytes()).into_vec()).unwrap();
    assert_eq!(stripped, plain);
    // NO_COLOR=1 recommend, as a user types it: no escape codes at all.
    assert!(!escapes(&run(&query, &[("NO_COLOR", "1")])));
    // clap's own help and errors follow --color too.
    let help = |args: &[&str], env: &[(&str, &str)]| common::citewise_command().args(args).envs(env.iter().copied()).output().unwrap();
    assert!(escapes(&stdout(&help(&["--color", "always", "--help"], &[]))), "--color always --help");
    assert!(!escapes(&stdout(&help(&["--color", "never", "import", "--help"], &[("CLICOLOR_FORCE", "1")]))), "--color never --help");
    let refused = help(&["--color=always", "import", "--no-such-flag"], &[]);
    assert!(!refused.status.success() && escapes(&stderr(&refused)), "{}", stderr(&refused));
    assert!(!escapes(&stderr(&help(&["--color=never", "import", "--no-such-flag"], &[("CLICOLOR_FORCE", "1")]))));
}

#[test]
fn a_first_run_says_what_to_do_next() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("no library yet");
    let o = citewise(&lib, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(out.contains("no library yet"), "{out}");
    assert!(out.contains(&citewise::util::citewise_command(&lib, "import refs.bib")), "{out}");
    assert!(out.contains("citewise --demo") && out.contains("--zotero") && out.contains("--evidence"), "{out}");
    assert!(out.lines().count() <= 12, "a few lines: {out}");
    // With a library, no file: the help, as before.
    let lib = dir.path().join("lib");
    citewise(&lib, &["import", fixture("papers.jsonl").to_str().unwrap()]);
    let o = citewise(&lib, &[]);
    assert!(o.status.success() && stdout(&o).contains("Usage:"), "{}", stdout(&o));
}

#[test]
fn configuration_and_data_directories_follow_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |env: &[(&str, &Path)], args: &[&str]| {
        let mut c = common::citewise_command();
        c.args(args).env("HOME", &home);
        for k in ["CITEWISE_LIBRARY", "CITEWISE_MODELS", "CITEWISE_CONFIG_DIR", "CITEWISE_DATA_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME"] {
            c.env_remove(k);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        c.output().unwrap()
    };
    // Nothing set: ~/.config/citewise and ~/.local/share/citewise.
    let out = stdout(&run(&[], &["doctor"]));
    assert!(out.contains(&format!("config    {} (the default)", home.join(".config/citewise").display())), "{out}");
    assert!(out.contains(&format!("data      {} (the default)", home.join(".local/share/citewise").display())), "{out}");
    assert!(out.contains(&format!("models    {}", home.join(".local/share/citewise/models").display())), "{out}");
    // XDG.
    let xdg = dir.path().join("xdg");
    let out = stdout(&run(&[("XDG_CONFIG_HOME", &xdg.join("c")), ("XDG_DATA_HOME", &xdg.join("d"))], &["doctor"]));
    assert!(out.contains(&format!("config    {} (from $XDG_CONFIG_HOME)", xdg.join("c/citewise").display())), "{out}");
    assert!(out.contains(&format!("data      {} (from $XDG_DATA_HOME)", xdg.join("d/citewise").display())), "{out}");
    // citewise's own variables win; the library and models follow the data directory.
    let (conf, data) = (dir.path().join("my-config"), dir.path().join("my-data"));
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(conf.join("config.toml"), "results = 7\n").unwrap();
    let env = [("CITEWISE_CONFIG_DIR", conf.as_path()), ("CITEWISE_DATA_DIR", data.as_path()), ("XDG_DATA_HOME", xdg.as_path())];
    let out = stdout(&run(&env, &["doctor"]));
    assert!(out.contains(&format!("config    {} (from $CITEWISE_CONFIG_DIR); config.toml there", conf.display())), "{out}");
    assert!(out.contains(&format!("data      {} (from $CITEWISE_DATA_DIR)", data.display())), "{out}");
    assert!(out.contains(&format!("models    {}", data.join("models").display())), "{out}");
    let o = run(&env, &["import", fixture("papers.jsonl").to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(data.join("library").is_dir(), "the library is made in the data directory");
    let o = run(&env, &["info"]);
    assert!(stdout(&o).contains(&format!("library: {}", data.join("library").display())), "{}", stdout(&o));
    // An empty CITEWISE_MODELS or CITEWISE_LIBRARY counts as unset, as the directory variables do.
    let empty = [("CITEWISE_DATA_DIR", data.as_path()), ("CITEWISE_MODELS", Path::new("")), ("CITEWISE_LIBRARY", Path::new(""))];
    let out = stdout(&run(&empty, &["doctor"]));
    assert!(out.contains(&format!("models    {}", data.join("models").display())), "{out}");
    let o = run(&empty, &["info"]);
    assert!(stdout(&o).contains(&format!("library: {}", data.join("library").display())), "{}\n{}", stdout(&o), stderr(&o));
    // A config file the configuration directory holds is read (a bad one is an error naming it).
    std::fs::write(conf.join("config.toml"), "results = \"many\"\n").unwrap();
    let o = run(&env, &["lsp"]);
    assert!(!o.status.success() && stderr(&o).contains(&conf.join("config.toml").display().to_string()), "{}", stderr(&o));
}

/// No library is made until a paper is: an import that fails (a typo in
/// the path, no Zotero) or finds no paper leaves none behind, nor the
/// directories made for it; `citewise` then welcomes, as on a first run.
#[test]
fn a_failed_import_leaves_no_library() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let lib = data.join("library");
    let lib_s = lib.to_str().unwrap();
    let typo = dir.path().join("refs.bbi");
    let o = citewise(&lib, &["import", typo.to_str().unwrap(), "--no-embed"]);
    assert!(!o.status.success(), "{}", stdout(&o));
    assert!(!data.exists(), "a failed import made {}", data.display());
    assert!(stderr(&o).contains(&format!("note: no paper was imported, so no library was made at {lib_s}")), "{}", stderr(&o));
    let o = citewise(&lib, &["import", "--zotero", "/nonexistent", "--no-embed"]);
    assert!(!o.status.success() && !data.exists(), "{}", stderr(&o));
    // No Zotero at home either.
    let o =
        common::citewise_command().args(["--library", lib_s, "import", "--zotero", "--no-embed"]).env("HOME", dir.path()).output().unwrap();
    assert!(!o.status.success() && !data.exists(), "{}", stderr(&o));
    // A file that holds no paper.
    let empty = dir.path().join("empty.bib");
    std::fs::write(&empty, "% nothing here\n").unwrap();
    citewise(&lib, &["import", empty.to_str().unwrap(), "--no-embed"]);
    assert!(!data.exists());
    // A directory that was there keeps what it held, and only that.
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("notes.txt"), "mine").unwrap();
    let o = citewise(&lib, &["import", typo.to_str().unwrap(), "--no-embed"]);
    assert!(!o.status.success());
    let left: Vec<String> = std::fs::read_dir(&lib).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, ["notes.txt"]);
    // Then `citewise` with no file welcomes, not the full help.
    let o = citewise(&lib, &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("Welcome to citewise. There is no library yet"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("Usage:"), "{}", stdout(&o));
    // A library of no papers (an older citewise made them) welcomes too.
    drop(citewise::library::Library::open_or_create(&lib).unwrap());
    let o = citewise(&lib, &[]);
    assert!(stdout(&o).contains(&format!("The library at {lib_s} holds no papers yet")), "{}", stdout(&o));
    // An import that adds papers keeps the library it made.
    let other = dir.path().join("other");
    let o = citewise(&other, &["import", fixture("papers.jsonl").to_str().unwrap(), "--no-embed"]);
    assert!(o.status.success() && other.join("library.json").is_file(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("no library was made"), "{}", stderr(&o));
}

/// `doctor` fails when the models are missing, naming the directory they
/// are looked for in, why there, and a fetch command that works as
/// printed; no library yet is said with how one is made, and is no problem.
#[test]
fn doctor_fails_without_models_and_says_where_they_are_looked_for() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib");
    let models = dir.path().join("no models");
    let o = common::citewise_command().arg("doctor").env("CITEWISE_LIBRARY", &lib).env("CITEWISE_MODELS", &models).output().unwrap();
    assert!(!o.status.success(), "{}", stdout(&o));
    let out = stdout(&o);
    assert!(out.contains(&format!("models    {} (from $CITEWISE_MODELS)", models.display())), "{out}");
    assert!(out.contains(&format!("3 of 3 models not found or not loading in {}", models.display())), "{out}");
    let fetch = format!("`scripts/fetch-models.sh {}`", citewise::util::shell_quoted(&models.display().to_string()));
    assert!(out.contains(&fetch), "{out}");
    assert!(out.contains(&format!("library   none yet at {}: `", lib.display())), "{out}");
    assert!(stderr(&o).contains("models are missing or broken; how to fetch them is printed above"), "{}", stderr(&o));
    assert!(!stderr(&o).contains("the library at"), "no library is no problem: {}", stderr(&o));
    // Under CITEWISE_DATA_DIR: models/ there, and the variable that names another.
    let data = dir.path().join("data");
    let o = common::citewise_command()
        .arg("doctor")
        .env("CITEWISE_LIBRARY", &lib)
        .env("CITEWISE_DATA_DIR", &data)
        .env_remove("CITEWISE_MODELS")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let out = stdout(&o);
    let models = data.join("models");
    let said = format!("models    {} (models/ in the data directory; $CITEWISE_MODELS names another)", models.display());
    assert!(out.contains(&said), "{out}");
    assert!(out.contains(&format!("`scripts/fetch-models.sh {}`", citewise::util::shell_quoted(&models.display().to_string()))), "{out}");
    assert!(!lib.exists(), "doctor makes no library");
}
