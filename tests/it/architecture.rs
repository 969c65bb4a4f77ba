#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The invariants of ARCHITECTURE.md that the source itself can show: the
//! import graph has no loop between files and no arrow up between layers;
//! citation markup has one grammar, passed as a value (no process-wide
//! state in `corpus`); a draft has one document model and its bibliography
//! commands one reader; work identity, the checker's key rules and the
//! machine's cores each have one home; only the language server knows the
//! protocol's types; test rigs are reached only by tests and `bench`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// A file's module path (`src/pipeline/mod.rs` → `pipeline`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel.iter().map(|s| s.to_string_lossy().to_string()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The code of a file without its tests and comments.
fn code(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap();
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.split("//").next().unwrap_or("")).collect::<Vec<_>>().join("\n")
}

/// Module → the modules its code names through `crate::` / `super::` paths.
fn import_graph() -> BTreeMap<Vec<String>, BTreeSet<Vec<String>>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let modules: BTreeMap<Vec<String>, PathBuf> = files.iter().map(|f| (module_of(&src, f), f.clone())).collect();
    let is_dir_module = |f: &Path| matches!(f.file_stem().and_then(|s| s.to_str()), Some("mod" | "lib" | "main"));
    let mut graph = BTreeMap::new();
    for (m, f) in &modules {
        let code = code(f);
        let mut to = BTreeSet::new();
        let bytes = code.as_bytes();
        let mut i = 0;
        while i < code.len() {
            let rest = &code[i..];
            let starts = (rest.starts_with("crate::") || rest.starts_with("super::"))
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_' || bytes[i - 1] == b':'));
            if !starts {
                i += rest.chars().next().map_or(1, char::len_utf8);
                continue;
            }
            let len = rest.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':')).unwrap_or(rest.len());
            let path: Vec<&str> = rest[..len].split("::").filter(|s| !s.is_empty()).collect();
            i += len;
            let mut base: Vec<String> = if path[0] == "crate" { Vec::new() } else { m.clone() };
            // `super` of a file module is its parent; of a `mod.rs`, the one above.
            let mut k = 0;
            if path[0] == "crate" {
                k = 1;
            } else {
                if !is_dir_module(f) {
                    base.pop();
                    k = 1;
                }
                while path.get(k) == Some(&"super") {
                    base.pop();
                    k += 1;
                }
                if is_dir_module(f) && k == 0 {
                    k = 1;
                }
            }
            let full: Vec<String> = base.into_iter().chain(path[k..].iter().map(|s| s.to_string())).collect();
            if let Some(target) = (1..=full.len()).rev().map(|n| full[..n].to_vec()).find(|p| modules.contains_key(p)) {
                // A module naming its own ancestors (re-exports in `mod.rs`) is no arrow.
                if target != *m && !m.starts_with(&target) {
                    to.insert(target);
                }
            }
        }
        graph.insert(m.clone(), to);
    }
    graph
}

#[test]
fn no_file_imports_one_that_imports_it_back() {
    let graph = import_graph();
    assert!(graph.len() > 100, "the source was read: {} modules", graph.len());
    // Depth-first search for a back edge.
    fn visit<'a>(
        m: &'a Vec<String>,
        graph: &'a BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
        state: &mut BTreeMap<&'a Vec<String>, u8>,
        stack: &mut Vec<&'a Vec<String>>,
    ) -> Option<Vec<String>> {
        state.insert(m, 1);
        stack.push(m);
        for t in graph.get(m).into_iter().flatten() {
            match state.get(t) {
                Some(1) => {
                    let from = stack.iter().position(|s| *s == t).unwrap();
                    return Some(stack[from..].iter().map(|s| s.join("::")).chain([t.join("::")]).collect());
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(t, graph, state, stack) {
                        return Some(c);
                    }
                }
            }
        }
        stack.pop();
        state.insert(m, 2);
        None
    }
    let mut state = BTreeMap::new();
    for m in graph.keys() {
        if !state.contains_key(m) {
            if let Some(cycle) = visit(m, &graph, &mut state, &mut Vec::new()) {
                panic!("an import loop: {}", cycle.join(" → "));
            }
        }
    }
}

#[test]
fn layers_point_one_way() {
    let graph = import_graph();
    // What each layer may never name (ARCHITECTURE.md, Invariants).
    let above_all_libraries = ["runtime", "export", "tui", "lsp", "cli", "eval", "draft", "check", "config", "testbed"];
    let forbidden: &[(&str, &[&str])] = &[
        ("corpus", &["index", "evidence", "neural", "library", "pipeline"]),
        ("index", &["evidence", "neural", "library", "pipeline"]),
        ("evidence", &["neural", "library", "pipeline"]),
        ("neural", &["library", "pipeline"]),
        ("library", &["pipeline"]),
        ("pipeline", &[]),
    ];
    // `check` sits above `pipeline` (and reads drafts) but below the front ends.
    let front_ends = ["runtime", "export", "tui", "lsp", "cli", "eval"];
    let mut wrong = Vec::new();
    for (m, targets) in &graph {
        let Some(layer) = m.first() else { continue };
        let Some((_, extra)) = forbidden.iter().find(|(l, _)| l == layer) else { continue };
        for t in targets {
            let top = t.first().map(String::as_str).unwrap_or("");
            if above_all_libraries.contains(&top) || extra.contains(&top) {
                wrong.push(format!("{} → {}", m.join("::"), t.join("::")));
            }
        }
    }
    for (m, targets) in graph.iter().filter(|(m, _)| m.first().is_some_and(|l| l == "check")) {
        for t in targets.iter().filter(|t| t.first().is_some_and(|l| front_ends.contains(&l.as_str()))) {
            wrong.push(format!("{} → {}", m.join("::"), t.join("::")));
        }
    }
    // The configuration sits below the front ends; the test rigs above them,
    // reached by `cli::bench` alone.
    for (m, targets) in &graph {
        let layer = m.first().map(String::as_str).unwrap_or("");
        for t in targets {
            let top = t.first().map(String::as_str).unwrap_or("");
            let config_up = layer == "config" && ["tui", "lsp", "cli", "testbed", "runtime"].contains(&top);
            let rig = top == "testbed" && layer != "testbed" && m.join("::") != "cli::bench";
            if config_up || rig {
                wrong.push(format!("{} → {}", m.join("::"), t.join("::")));
            }
        }
    }
    assert!(wrong.is_empty(), "arrows up between layers: {wrong:#?}");
}

/// Every line of product code (tests and comments left out) for which
/// `hit` holds, outside the files `allowed` (paths under `src/`).
fn lines_where(allowed: &[&str], hit: impl Fn(&str) -> bool) -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut out = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(&src).unwrap().to_string_lossy().replace('\\', "/");
        if allowed.iter().any(|a| rel == *a || (a.ends_with('/') && rel.starts_with(a))) {
            continue;
        }
        for (n, line) in code(f).lines().enumerate() {
            if hit(line) {
                out.push(format!("src/{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    out
}

#[test]
fn the_guards_see_what_they_guard() {
    // Each guard below finds its rule's home, so a guard that reads nothing
    // cannot pass by accident.
    assert!(!lines_where(&[], |l| l.contains("available_parallelism")).is_empty());
    assert!(!lines_where(&[], |l| l.contains("lsp_types::")).is_empty());
    assert!(!lines_where(&[], |l| l.contains("fn title_key")).is_empty());
    assert!(!lines_where(&[], |l| l.contains("fn key_status")).is_empty());
    assert!(!lines_where(&[], |l| l.contains("fn bibliography_names")).is_empty());
    assert!(!lines_where(&[], |l| l.contains("CiteSyntax::for_file")).is_empty());
    assert!(!lines_where(&[], |l| l.contains("static ") && l.contains("LazyLock")).is_empty());
}

#[test]
fn the_machines_cores_are_asked_in_one_place() {
    let elsewhere = lines_where(&["util.rs"], |l| l.contains("available_parallelism"));
    assert!(elsewhere.is_empty(), "threads are counted by util::cores (and neural::parallel) only: {elsewhere:#?}");
}

#[test]
fn only_the_language_server_knows_the_protocols_types() {
    // The server's flood and latency rig drives it over the protocol too.
    let elsewhere = lines_where(&["lsp/", "testbed/server_latency.rs"], |l| l.contains("lsp_types") || l.contains("lsp_server"));
    assert!(elsewhere.is_empty(), "LSP types outside src/lsp: {elsewhere:#?}");
}

#[test]
fn a_draft_has_one_document_model() {
    // Which syntax a file is written in: `draft::syntax_of` (over the
    // grammar's extensions), nowhere else.
    let elsewhere = lines_where(&["draft/", "corpus/citation_markup.rs"], |l| l.contains("CiteSyntax::for_file"));
    assert!(elsewhere.is_empty(), "a file's syntax decided outside draft::Document: {elsewhere:#?}");
    // The commands that name a bibliography file (`\bibliography{`,
    // `\addbibresource{`, Typst's `#bibliography(`, front matter's
    // `bibliography:`) are read by one reader. A compiled bibliography
    // (`thebibliography`) and a PDF's references heading are other things.
    let parses = |l: &str| {
        let reads = ["find(", "strip_prefix(", "starts_with(", "split(", "Regex::new", "contains("].iter().any(|r| l.contains(r));
        let names = ["bibliography{", "bibliography(", "addbibresource", "\"bibliography\"", "bibliography:"];
        reads && names.iter().any(|n| l.contains(n))
    };
    let elsewhere = lines_where(&["corpus/bibliography_names.rs"], parses);
    assert!(elsewhere.is_empty(), "bibliography commands read outside corpus::bibliography_names: {elsewhere:#?}");
}

#[test]
fn work_identity_and_key_rules_have_one_home_each() {
    // Titles are compared through corpus::work (one normaliser).
    let normaliser = |l: &str| {
        let Some((_, after)) = l.split_once("fn ") else { return false };
        let name = after.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or("").to_ascii_lowercase();
        name.contains("title") && ["norm", "key", "fold", "canon"].iter().any(|w| name.contains(w))
    };
    let elsewhere = lines_where(&["corpus/work.rs"], normaliser);
    assert!(elsewhere.is_empty(), "a title normaliser outside corpus::work: {elsewhere:#?}");
    // What a draft's key is to the library (found, renamed, unknown) is the
    // checker's to say: the index answers it, `check` alone asks.
    let elsewhere = lines_where(&["check/", "index/"], |l| l.contains("key_status"));
    assert!(elsewhere.is_empty(), "a key's status asked outside check::Checker: {elsewhere:#?}");
}

#[test]
fn corpus_holds_no_process_wide_state() {
    // Constants compiled once (a `LazyLock<Regex>`) are no state; a value a
    // caller can set is.
    let state = |l: &str| {
        let stat = l.contains("static ") || l.contains("thread_local!");
        stat && ["Mutex", "RwLock", "OnceLock", "OnceCell", "Atomic", "Cell<", "static mut", "thread_local!"].iter().any(|w| l.contains(w))
    };
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src.join("corpus"), &mut files);
    let found: Vec<String> = files
        .iter()
        .flat_map(|f| code(f).lines().filter(|l| state(l)).map(|l| format!("{}: {}", f.display(), l.trim())).collect::<Vec<_>>())
        .collect();
    assert!(files.len() > 10, "corpus was read: {} files", files.len());
    assert!(found.is_empty(), "process-wide state in corpus: {found:#?}");
}

#[test]
fn citation_markup_has_one_grammar() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let home = src.join("corpus").join("citation_markup.rs");
    let mut elsewhere = Vec::new();
    for f in files.iter().filter(|f| **f != home) {
        for (n, line) in code(f).lines().enumerate() {
            // A pattern for `\cite…`, `#cite(` or a Pandoc key outside the grammar's home.
            let pattern = line.contains("Regex::new") || line.contains("r\"") || line.contains("r#\"");
            if pattern && (line.contains("cite[") || line.contains("cite\\(") || line.contains("-?@") || line.contains("@([")) {
                elsewhere.push(format!("{}:{}: {}", f.display(), n + 1, line.trim()));
            }
        }
    }
    assert!(elsewhere.is_empty(), "citation patterns outside corpus::citation_markup: {elsewhere:#?}");
}
