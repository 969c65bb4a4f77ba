//! What `import --evidence` reads: files and directories expanded into
//! sources of citing sentences (JSON Lines of contexts or full text, PDFs,
//! LaTeX projects and source bundles, Markdown).

use std::path::{Path, PathBuf};

use crate::corpus::source::{walk, Visited};

/// One source of citing sentences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvidenceInput {
    /// Benchmark contexts or S2ORC / unarXive full text (`.jsonl`, `.json`, `.gz`).
    Sentences(PathBuf),
    Pdf(PathBuf),
    /// A PDF whose own record is known (a Zotero attachment: its parent
    /// item), so it is not identified by its first page.
    AttachedPdf {
        file: PathBuf,
        owner: String,
    },
    /// A Markdown file; the bibliography files its front matter names must
    /// lie inside `project` ([`crate::project`]).
    Markdown {
        file: PathBuf,
        project: PathBuf,
    },
    /// A LaTeX main file; `\input`s resolve in its directory and, like its
    /// bibliography files, must lie inside `project`.
    Latex {
        main: PathBuf,
        project: PathBuf,
    },
    /// A `.tar.gz` / `.tgz` / `.tar` source bundle.
    Bundle(PathBuf),
}

impl EvidenceInput {
    pub fn path(&self) -> &Path {
        match self {
            EvidenceInput::Sentences(p)
            | EvidenceInput::Pdf(p)
            | EvidenceInput::AttachedPdf { file: p, .. }
            | EvidenceInput::Markdown { file: p, .. }
            | EvidenceInput::Latex { main: p, .. }
            | EvidenceInput::Bundle(p) => p,
        }
    }

    /// The same input read as part of the project `project` (a directory
    /// the user named, which holds it).
    fn in_project(self, root: &Path) -> EvidenceInput {
        let project = root.to_path_buf();
        match self {
            EvidenceInput::Markdown { file, .. } => EvidenceInput::Markdown { file, project },
            EvidenceInput::Latex { main, .. } => EvidenceInput::Latex { main, project },
            other => other,
        }
    }

    /// The kind of file a name says, when it is one citewise reads (a
    /// document's project: its own folder).
    pub fn of(path: &Path) -> Option<EvidenceInput> {
        let name = path.file_name()?.to_string_lossy().to_lowercase();
        let p = path.to_path_buf();
        let project = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stem = name.strip_suffix(".gz").unwrap_or(&name);
        Some(if stem.ends_with(".jsonl") || stem.ends_with(".json") || stem.ends_with(".ndjson") {
            EvidenceInput::Sentences(p)
        } else if name.ends_with(".pdf") {
            EvidenceInput::Pdf(p)
        } else if name.ends_with(".md") || name.ends_with(".markdown") {
            EvidenceInput::Markdown { file: p, project }
        } else if name.ends_with(".tex") || name.ends_with(".ltx") {
            EvidenceInput::Latex { main: p, project }
        } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") || name.ends_with(".tar") {
            EvidenceInput::Bundle(p)
        } else {
            return None;
        })
    }
}

/// Expands paths: named files by their extension (an unknown one is a
/// problem line), directories recursively (each directory once, however
/// symbolic links loop). In a directory, only LaTeX files that declare a
/// `\documentclass` are documents (the others are `\input` by them).
pub fn expand(paths: &[PathBuf]) -> (Vec<EvidenceInput>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut visited = Visited::default();
    for p in paths {
        match std::fs::metadata(p) {
            Err(e) => problems.push(format!("{}: {e}", p.display())),
            Ok(m) if m.is_dir() => {
                if let Err(e) = walk(p, &mut visited, &mut |f| found_in_directory(f, p, &mut out)) {
                    problems.push(e.to_string());
                }
            }
            Ok(_) => match EvidenceInput::of(p) {
                Some(i) => out.push(i),
                None => problems
                    .push(format!("{}: unknown file type (expected .pdf, .tex, .tar.gz, .md, .jsonl, .json, optionally .gz)", p.display())),
            },
        }
    }
    (out, problems)
}

/// What a file found in directory `root` gives: LaTeX files only when they
/// declare a `\documentclass` (the others are `\input` by them). The
/// directory is the document's project.
fn found_in_directory(p: &Path, root: &Path, out: &mut Vec<EvidenceInput>) {
    match EvidenceInput::of(p).map(|i| i.in_project(root)) {
        Some(i @ EvidenceInput::Latex { .. }) => {
            let main = crate::corpus::source::read_bytes(i.path()).is_ok_and(|b| {
                let t = String::from_utf8_lossy(&b);
                super::latex::strip_comments(&t).contains("\\documentclass")
            });
            if main {
                out.push(i);
            }
        }
        Some(i) => out.push(i),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_expand_to_documents_once_even_with_link_loops() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("paper/sections")).unwrap();
        std::fs::write(root.join("paper/main.tex"), "\\documentclass{article}").unwrap();
        std::fs::write(root.join("paper/sections/intro.tex"), "Intro text").unwrap();
        std::fs::write(root.join("a.pdf"), "%PDF-1.4").unwrap();
        std::fs::write(root.join("notes.md"), "text").unwrap();
        std::fs::write(root.join("readme.txt"), "x").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(root, root.join("paper/loop")).unwrap();
        let (inputs, problems) = expand(&[root.to_path_buf()]);
        assert!(problems.is_empty());
        let names: Vec<String> = inputs.iter().map(|i| i.path().strip_prefix(root).unwrap().display().to_string()).collect();
        assert_eq!(names, ["a.pdf", "notes.md", "paper/main.tex"]);
        let (_, problems) = expand(&[root.join("readme.txt"), root.join("missing.pdf")]);
        assert_eq!(problems.len(), 2);
        assert!(problems[0].contains("unknown file type"), "{problems:?}");
    }
}
