#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The invariants of ARCHITECTURE.md that the source itself can show: the
//! import graph has no loop between files and no arrow up between layers,
//! and citation markup has one grammar.

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
    let above_all_libraries = ["runtime", "export", "tui", "lsp", "cli", "eval", "draft", "check"];
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
    assert!(wrong.is_empty(), "arrows up between layers: {wrong:#?}");
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
