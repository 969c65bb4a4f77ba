//! LaTeX sources as citing documents: a `.tex` file, a directory tree, or
//! a `.tar.gz` source bundle as arXiv serves them. `\input` / `\include`
//! are followed, comments and environments that are not prose (math,
//! figures, tables, code) left out, and `\cite`-family commands become
//! citations whose keys resolve through the project's `.bib`
//! (`\bibliography{..}`, `\addbibresource{..}`), its `.bbl`, or an inline
//! `thebibliography`.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::{Path, PathBuf};

use super::document::{Citation, DocKind, Document, Paragraph, Reference};
use crate::corpus::bibliography_names::bibliography_names;
use crate::corpus::bibtex::{parse_source, EntryOutcome};
use crate::corpus::citation_markup::{cite_command, group_end, latex_arguments, CiteCommand, CiteGrammar, CiteSyntax};
use crate::corpus::paper::{arxiv_id_of, Paper};
use crate::corpus::source::{decode_text, read_bytes};
use crate::limits;
use crate::project::{Project, Refused};

/// `\input` nesting deeper than this is cut (with a problem line).
const MAX_INPUT_DEPTH: usize = 16;

/// Where a project's files are read from.
pub enum Files {
    /// Files on disk: paths are relative to `dir` (the main file's folder)
    /// and must resolve inside `project` ([`Project::resolve`]).
    Dir { project: Project, dir: PathBuf },
    /// The members of a source bundle, by normalised relative path.
    Bundle(BTreeMap<String, Vec<u8>>),
}

impl Files {
    /// Reads a bundle (`.tar.gz`, `.tgz`, `.tar`) into memory: its
    /// `.tex`, `.bib` and `.bbl` members, at most [`limits::BUNDLE`] of
    /// them all (a member that declares more is refused before it is read).
    pub fn bundle(path: &Path) -> Result<Files, String> {
        let raw = crate::limits::open_regular(path).map_err(|e| e.to_string())?;
        let name = path.to_string_lossy().to_ascii_lowercase();
        let reader: Box<dyn Read> = if name.ends_with(".tar") { Box::new(raw) } else { Box::new(flate2::read::GzDecoder::new(raw)) };
        let mut archive = tar::Archive::new(reader.take(limits::BUNDLE));
        let mut members = BTreeMap::new();
        let entries = archive.entries().map_err(|e| format!("not a tar archive: {e}"))?;
        let mut total: u64 = 0;
        for entry in entries {
            let mut entry = entry.map_err(|e| format!("broken archive: {e}"))?;
            let rel = entry.path().map(|p| p.to_string_lossy().trim_start_matches("./").to_string()).unwrap_or_default();
            // The header's size, and what a sparse member would inflate to.
            let declared = entry.header().size().unwrap_or(0).max(entry.size());
            total = total.saturating_add(declared);
            if declared > limits::BUNDLE || total > limits::BUNDLE {
                return Err(format!(
                    "member `{rel}` declares {}, past the {} limit of a source bundle; not read",
                    limits::human(declared),
                    limits::human(limits::BUNDLE)
                ));
            }
            if !entry.header().entry_type().is_file() {
                continue;
            }
            let lower = rel.to_ascii_lowercase();
            if [".tex", ".bib", ".bbl", ".ltx"].iter().any(|x| lower.ends_with(x)) {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).map_err(|e| format!("broken archive: member `{rel}`: {e}"))?;
                if let Some(key) = normalize_rel(&rel) {
                    members.insert(key, bytes);
                }
            }
        }
        if members.is_empty() {
            return Err("the archive holds no .tex file".into());
        }
        Ok(Files::Bundle(members))
    }

    /// The text of the file a document names as `rel`: inside the
    /// project (a bundle's members, or the folder tree `import` was given).
    fn read(&self, rel: &str) -> Result<String, Refused> {
        let bytes = match self {
            Files::Dir { project, dir } => {
                let path = project.existing(dir, rel)?;
                read_bytes(&path).map_err(|e| Refused::Unreadable { named: rel.to_string(), why: e.to_string() })?
            }
            Files::Bundle(m) => {
                let key = normalize_rel(rel)
                    .ok_or_else(|| Refused::Outside { named: rel.to_string(), project: PathBuf::from("the source bundle") })?;
                m.get(&key).ok_or_else(|| Refused::NotFound { named: rel.to_string() })?.clone()
            }
        };
        Ok(decode_text(&bytes).text)
    }

    /// What tells one file from another for `rel`: a bundle member's
    /// normalised path, a file's real path (links followed).
    fn identity(&self, rel: &str) -> String {
        match self {
            Files::Dir { project, dir } => project.resolve(dir, rel).map_or_else(|_| rel.to_string(), |p| p.to_string_lossy().into_owned()),
            Files::Bundle(_) => normalize_rel(rel).unwrap_or_else(|| rel.to_string()),
        }
    }

    /// Relative paths of the files with one of these extensions: a
    /// bundle's members, or the files beside the main one.
    fn list(&self, exts: &[&str]) -> Vec<String> {
        let keep = |p: &str| {
            let l = p.to_ascii_lowercase();
            exts.iter().any(|x| l.ends_with(x))
        };
        let mut out: Vec<String> = match self {
            Files::Bundle(m) => m.keys().filter(|k| keep(k)).cloned().collect(),
            Files::Dir { dir, .. } => std::fs::read_dir(dir)
                .map(|rd| {
                    rd.flatten()
                        .filter(|e| e.path().is_file())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .filter(|n| keep(n))
                        .collect()
                })
                .unwrap_or_default(),
        };
        out.sort();
        out
    }
}

/// `a/./b/../c.tex` → `a/c.tex`; none when `..` climbs out of the bundle
/// or the path is absolute.
fn normalize_rel(rel: &str) -> Option<String> {
    if rel.starts_with(['/', '\\']) || rel.get(1..2) == Some(":") {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for p in rel.split(['/', '\\']) {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

/// `base/name` as a path relative to the project's files (a bundle's root,
/// or the main file's folder), `..` kept for the resolver to judge.
fn joined(base: &str, name: &str) -> String {
    if base.is_empty() || name.starts_with(['/', '\\']) {
        name.to_string()
    } else {
        format!("{base}/{name}")
    }
}

/// The main files of a project: those that declare a `\documentclass`
/// (every `.tex` file when none does).
pub fn main_files(files: &Files) -> Vec<String> {
    let all = files.list(&[".tex", ".ltx"]);
    let mains: Vec<String> =
        all.iter().filter(|f| files.read(f).is_ok_and(|t| strip_comments(&t).contains("\\documentclass"))).cloned().collect();
    if mains.is_empty() {
        all
    } else {
        mains
    }
}

/// Reads one LaTeX document (`main`, relative to `files`), named `shown`
/// in the evidence, its citations read with `grammar` (the wrapper
/// commands the user's configuration names). Problems that do not stop it
/// (a missing `\input`, an unknown key, a missing `.bib`) are returned as
/// lines.
pub fn read_latex(files: &Files, main: &str, shown: &Path, grammar: &CiteGrammar) -> Result<(Document, Vec<String>), String> {
    let mut problems = Vec::new();
    let text = files.read(main).map_err(|e| e.to_string())?;
    let base = Path::new(main).parent().map(|p| p.to_string_lossy().to_string()).unwrap_or_default();
    let mut visiting = vec![files.identity(main)];
    let source = expand_inputs(files, &base, &strip_comments(&text), &mut visiting, &mut problems);
    if !balanced(&source) {
        problems.push("unbalanced braces; the text after the first unmatched one may be cut".into());
    }
    let mut doc = Document::new(DocKind::Latex, shown.to_path_buf());
    doc.title = command_arg(&source, "title").map(|t| plain_inline(&t)).unwrap_or_default();
    let body = match (source.find("\\begin{document}"), source.find("\\end{document}")) {
        (Some(s), Some(e)) if e > s => &source[s + "\\begin{document}".len()..e],
        (Some(s), _) => &source[s + "\\begin{document}".len()..],
        _ => source.as_str(),
    };
    // References: .bib files named by the source, else the .bbl, else an
    // inline thebibliography.
    let (references, keys) = bibliography(files, &base, main, &source, &mut problems);
    doc.references = references;
    let mut unknown: BTreeMap<String, usize> = BTreeMap::new();
    let macros = macros_of(&source[..source.find("\\begin{document}").unwrap_or(source.len())]);
    doc.paragraphs = paragraphs(body, &keys, &macros, grammar, &mut unknown);
    if !unknown.is_empty() && !keys.is_empty() {
        let list: Vec<String> = unknown.keys().take(5).map(|k| format!("`{k}`")).collect();
        problems.push(format!(
            "{} citation key(s) not in the bibliography: {}{}",
            unknown.len(),
            list.join(", "),
            if unknown.len() > 5 { ", ..." } else { "" }
        ));
    }
    Ok((doc, problems))
}

/// Removes `%` comments (not `\%`), keeping line structure.
pub fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        let b = line.as_bytes();
        let mut cut = line.len();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'\\' {
                i += 2;
                continue;
            }
            if b[i] == b'%' {
                cut = i;
                break;
            }
            i += 1;
        }
        out.push_str(&line[..cut]);
        out.push('\n');
    }
    out
}

fn expand_inputs(files: &Files, base: &str, text: &str, visiting: &mut Vec<String>, problems: &mut Vec<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    loop {
        let next = ["\\input{", "\\include{", "\\subfile{", "\\input "].iter().filter_map(|p| rest.find(p).map(|i| (i, *p))).min();
        let Some((at, cmd)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..at]);
        let after = &rest[at + cmd.len()..];
        let (name, used) = if cmd.ends_with('{') {
            match after.find('}') {
                Some(e) => (after[..e].trim().to_string(), e + 1),
                None => (String::new(), 0),
            }
        } else {
            let e = after.find(|c: char| c.is_whitespace() || c == '\\').unwrap_or(after.len());
            (after[..e].to_string(), e)
        };
        rest = &after[used..];
        if name.is_empty() {
            continue;
        }
        let rel = joined(base, &name);
        let candidates = [format!("{rel}.tex"), rel.clone(), format!("{name}.tex"), name.clone()];
        // The first that reads; else why the path itself (not its `.tex`
        // form) was not read, a refusal before "not found".
        let mut why: Option<Refused> = None;
        let mut found = None;
        for c in &candidates {
            match files.read(c) {
                Ok(t) => {
                    found = Some((files.identity(c), t));
                    break;
                }
                Err(e) => {
                    if why.as_ref().is_none_or(|w| matches!(w, Refused::NotFound { .. }) && !matches!(e, Refused::NotFound { .. })) {
                        why = Some(e);
                    }
                }
            }
        }
        match found {
            Some((path, _)) if visiting.contains(&path) => problems.push(format!("`{name}` includes itself; not read again")),
            Some(_) if visiting.len() > MAX_INPUT_DEPTH => problems.push(format!("`{name}`: \\input nested too deeply")),
            Some((path, t)) => {
                visiting.push(path);
                out.push_str(&expand_inputs(files, base, &strip_comments(&t), visiting, problems));
                visiting.pop();
            }
            None => problems.push(match why {
                Some(e @ (Refused::Outside { .. } | Refused::Unreadable { .. })) => {
                    format!("\\input {}; not read", Refused::renamed(e, &name))
                }
                _ => format!("\\input `{name}` not found"),
            }),
        }
    }
    out
}

fn balanced(s: &str) -> bool {
    let mut depth: i64 = 0;
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth < 0 {
                    return false;
                }
            }
            _ => {}
        }
        i += 1;
    }
    depth == 0
}

/// Where each `\name` command of `s` ends (not `\namelonger`).
fn command_ends(s: &str, name: &str) -> Vec<usize> {
    let pat = format!("\\{name}");
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = s[from..].find(&pat) {
        let at = from + i + pat.len();
        from = at;
        if !s[at..].starts_with(|c: char| c.is_ascii_alphabetic()) {
            out.push(at);
        }
    }
    out
}

/// The braced argument of a command that ends at `at` (after a star and
/// an optional argument), when it has one.
fn argument_at(s: &str, at: usize) -> Option<String> {
    let b = s.as_bytes();
    let mut j = at;
    while j < b.len() && (b[j] == b' ' || b[j] == b'*') {
        j += 1;
    }
    if j < b.len() && b[j] == b'[' {
        j = skip_group(s, j, b'[', b']');
    }
    (j < b.len() && b[j] == b'{').then(|| {
        let e = skip_group(s, j, b'{', b'}');
        s[j + 1..inner_end(s, j + 1, e)].to_string()
    })
}

/// The first argument of `\name{...}` (balanced).
fn command_arg(s: &str, name: &str) -> Option<String> {
    command_ends(s, name).into_iter().find_map(|at| argument_at(s, at))
}

/// Index just past the group opened at `i` (or the end of `s`).
/// Where the text of a group that starts at `start` and ends before `e` (as
/// [`skip_group`] returns it) ends: before the closing delimiter, or at the
/// end of the text when the group is not closed.
fn inner_end(s: &str, start: usize, e: usize) -> usize {
    let mut end = e.saturating_sub(1).max(start).min(s.len());
    while !s.is_char_boundary(end) {
        end += 1;
    }
    end
}

/// The end of the group opened at `i` (the text's end when it is never
/// closed).
fn skip_group(s: &str, i: usize, open: u8, close: u8) -> usize {
    group_end(s.as_bytes(), i, open, close).unwrap_or(s.len())
}

type Keys = HashMap<String, usize>;

fn bibliography(files: &Files, base: &str, main: &str, source: &str, problems: &mut Vec<String>) -> (Vec<Reference>, Keys) {
    let mut refs: Vec<Reference> = Vec::new();
    let mut keys: Keys = HashMap::new();
    // The files the source names, as every reader of a draft reads them.
    let named: Vec<String> = bibliography_names(source, CiteSyntax::Latex).into_iter().map(|n| n.file).collect();
    let mut missing = Vec::new();
    for name in &named {
        let rel = joined(base, name);
        let read = match files.read(&rel) {
            Err(Refused::NotFound { .. }) if rel != *name => files.read(name),
            other => other,
        };
        match read {
            Err(e @ (Refused::Outside { .. } | Refused::Unreadable { .. })) => {
                problems.push(format!("bibliography file {}; not read", Refused::renamed(e, name)));
            }
            Ok(text) => {
                for outcome in parse_source(&text) {
                    if let EntryOutcome::Paper(p) = outcome {
                        if !keys.contains_key(&p.key) {
                            keys.insert(p.key.clone(), refs.len());
                            refs.push(reference_of_paper(*p));
                        }
                    }
                }
            }
            Err(_) => missing.push(name.clone()),
        }
    }
    if !refs.is_empty() {
        if !missing.is_empty() {
            problems.push(format!("bibliography file(s) not found: {}", missing.join(", ")));
        }
        return (refs, keys);
    }
    // The compiled bibliography: MAIN.bbl, else an inline thebibliography.
    let bbl = Path::new(main).with_extension("bbl").to_string_lossy().to_string();
    let bbl_text = files.read(&bbl).ok().or_else(|| files.list(&[".bbl"]).first().and_then(|b| files.read(b).ok()));
    let inline = source.find("\\begin{thebibliography}").map(|i| source[i..].to_string());
    let from_bbl = bbl_text.as_deref().map(bibitems).unwrap_or_default();
    let items = if from_bbl.is_empty() { inline.as_deref().map(bibitems).unwrap_or_default() } else { from_bbl };
    if items.is_empty() {
        if !missing.is_empty() {
            problems.push(format!("bibliography file(s) not found: {}; no .bbl either, so citations stay unresolved", missing.join(", ")));
        } else if !named.is_empty() {
            problems.push("no bibliography file could be read and no .bbl either, so citations stay unresolved".into());
        } else if source.contains("\\cite") {
            problems.push("no bibliography (.bib, .bbl or thebibliography) found; citations stay unresolved".into());
        }
    }
    for (key, text) in items {
        if !keys.contains_key(&key) {
            keys.insert(key.clone(), refs.len());
            refs.push(Reference { raw: text, label: key, ..Default::default() });
        }
    }
    (refs, keys)
}

pub(crate) fn reference_of_paper(p: Paper) -> Reference {
    let surnames = p.authors.iter().filter_map(|a| a.split_whitespace().last().map(str::to_string)).collect();
    let arxiv = arxiv_id_of(&p.url).or_else(|| {
        let b = &p.bibtex;
        let lower = b.to_ascii_lowercase();
        (lower.contains("arxiv")).then(|| crate::corpus::paper::ARXIV_ID.captures(b).map(|m| m[1].to_string())).flatten()
    });
    Reference {
        raw: format!("{}. {}. {}. {}", p.authors.join(", "), p.year.map(|y| y.to_string()).unwrap_or_default(), p.title, p.venue),
        label: p.key.clone(),
        title: p.title.clone(),
        doi: p.doi.clone(),
        arxiv: arxiv.unwrap_or_default(),
        year: p.year,
        year_suffix: None,
        surnames,
        link: None,
        also: Vec::new(),
        paper: Some(Box::new(p)),
    }
}

/// `\bibitem[label]{key} text` entries of a `.bbl` or thebibliography, as
/// (key, plain text).
fn bibitems(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let parts: Vec<&str> = text.split("\\bibitem").collect();
    for part in parts.iter().skip(1) {
        let mut j = 0;
        let b = part.as_bytes();
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j < b.len() && b[j] == b'[' {
            j = skip_group(part, j, b'[', b']');
        }
        while j < b.len() && b[j].is_ascii_whitespace() {
            j += 1;
        }
        if j >= b.len() || b[j] != b'{' {
            continue;
        }
        let e = skip_group(part, j, b'{', b'}');
        let key = part[j + 1..inner_end(part, j + 1, e)].trim().to_string();
        let mut body = &part[e.min(part.len())..];
        if let Some(end) = body.find("\\end{thebibliography}") {
            body = &body[..end];
        }
        let plain = plain_inline(&body.replace("\\newblock", " "));
        if !key.is_empty() {
            out.push((key, plain));
        }
    }
    out
}

/// Environments whose content is not prose.
const SKIPPED_ENVS: &[&str] = &[
    "equation",
    "equation*",
    "align",
    "align*",
    "alignat",
    "alignat*",
    "gather",
    "gather*",
    "multline",
    "multline*",
    "eqnarray",
    "eqnarray*",
    "math",
    "displaymath",
    "figure",
    "figure*",
    "wrapfigure",
    "table",
    "table*",
    "tabular",
    "tabular*",
    "tabularx",
    "longtable",
    "verbatim",
    "Verbatim",
    "lstlisting",
    "minted",
    "algorithm",
    "algorithm*",
    "algorithmic",
    "tikzpicture",
    "thebibliography",
    "comment",
    "filecontents",
    "filecontents*",
    "subfigure",
    "subtable",
    "array",
    "matrix",
    "pmatrix",
    "bmatrix",
    "CJK",
    "lstinputlisting",
    "appendices-skip",
];

/// Commands dropped with their arguments.
const DROPPED: &[&str] = &[
    "label",
    "ref",
    "eqref",
    "autoref",
    "cref",
    "Cref",
    "pageref",
    "vspace",
    "hspace",
    "includegraphics",
    "url",
    "bibliography",
    "bibliographystyle",
    "addbibresource",
    "nocite",
    "newcommand",
    "renewcommand",
    "providecommand",
    "def",
    "usepackage",
    "documentclass",
    "maketitle",
    "setlength",
    "setcounter",
    "input",
    "include",
    "thanks",
    "affiliation",
    "author",
    "title",
    "date",
    "email",
    "address",
    "institute",
    "keywords",
    "ccsdesc",
    "acmConference",
    "acmYear",
    "acmDOI",
    "copyrightyear",
    "acmBooktitle",
    "acmPrice",
    "acmISBN",
    "setcopyright",
    "orcid",
    "footnotemark",
    "color",
    "definecolor",
    "todo",
    "newtheorem",
    "linenumbers",
    "pagestyle",
    "thispagestyle",
    "vskip",
    "hskip",
    "noindent",
    "centering",
    "small",
    "large",
    "Large",
    "footnotesize",
    "scriptsize",
    "normalsize",
    "tiny",
    "huge",
    "Huge",
    "newpage",
    "clearpage",
    "cleardoublepage",
    "tableofcontents",
    "appendix",
    "raggedright",
    "raggedbottom",
    "medskip",
    "bigskip",
    "smallskip",
    "newline",
    "linebreak",
    "pagebreak",
    "item",
    "caption",
];

/// Sectioning commands: a paragraph break; the heading is not prose.
const HEADINGS: &[&str] = &["part", "chapter", "section", "subsection", "subsubsection", "paragraph", "subparagraph"];

/// The prose of a document body as paragraphs with their citations (read
/// with `grammar`).
fn paragraphs(body: &str, keys: &Keys, macros: &Macros, grammar: &CiteGrammar, unknown: &mut BTreeMap<String, usize>) -> Vec<Paragraph> {
    let mut w = Writer {
        keys,
        macros,
        grammar,
        unknown,
        paras: Vec::new(),
        cur: Paragraph::default(),
        notes: Vec::new(),
        expansions_left: MAX_MACRO_EXPANSIONS,
    };
    w.run(body, 0);
    w.flush();
    let notes = std::mem::take(&mut w.notes);
    for n in notes {
        w.run(&n, 0);
        w.flush();
    }
    w.paras
}

/// Most text macro uses may add to one document, in bytes (each use counts
/// at least 16): real documents stay far below it.
const MAX_MACRO_EXPANSIONS: usize = 4 << 20;

fn b_len(body: &str) -> usize {
    body.len().max(16)
}

/// Macros without parameters (`\newcommand{\Bert}{\textsc{Bert}\xspace}`),
/// by name.
type Macros = HashMap<String, String>;

/// The parameterless macros a source defines with `\newcommand`,
/// `\renewcommand`, `\providecommand` or `\def`.
fn macros_of(source: &str) -> Macros {
    let mut out = Macros::new();
    for cmd in ["\\newcommand", "\\renewcommand", "\\providecommand", "\\def"] {
        let mut from = 0;
        while let Some(i) = source[from..].find(cmd) {
            let mut j = from + i + cmd.len();
            from = j;
            let b = source.as_bytes();
            if b.get(j) == Some(&b'*') {
                j += 1;
            }
            j = skip_ws(source, j);
            // The name: {\X} or \X.
            let (name, after) = if b.get(j) == Some(&b'{') {
                let e = skip_group(source, j, b'{', b'}');
                (source[j + 1..inner_end(source, j + 1, e)].trim().to_string(), e)
            } else {
                let e = source[j..].find(|c: char| c != '\\' && !c.is_ascii_alphabetic()).map_or(source.len(), |k| j + k);
                let e = if e == j + 1 {
                    (j + 1..source.len()).find(|&k| !source.as_bytes()[k].is_ascii_alphabetic()).unwrap_or(source.len())
                } else {
                    e
                };
                (source[j..e].to_string(), e)
            };
            let Some(name) = name.strip_prefix('\\').map(str::to_string) else { continue };
            let k = skip_ws(source, after);
            // Macros with parameters are left alone.
            if matches!(b.get(k), Some(b'[') | Some(b'#')) || b.get(k) != Some(&b'{') {
                continue;
            }
            let e = skip_group(source, k, b'{', b'}');
            let body = source[k + 1..inner_end(source, k + 1, e)].to_string();
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphabetic()) && !body.contains('#') {
                out.entry(name).or_insert(body);
            }
        }
    }
    out
}

struct Writer<'a> {
    keys: &'a Keys,
    macros: &'a Macros,
    /// What cites: the `\cite` family and the configured wrappers.
    grammar: &'a CiteGrammar,
    unknown: &'a mut BTreeMap<String, usize>,
    paras: Vec<Paragraph>,
    cur: Paragraph,
    /// Footnote texts, read as paragraphs of their own after the body.
    notes: Vec<String>,
    /// Bytes of macro expansion still allowed: a macro that uses itself (`\def\x{\x\x}`)
    /// would otherwise expand without end.
    expansions_left: usize,
}

impl Writer<'_> {
    fn flush(&mut self) {
        let p = std::mem::take(&mut self.cur);
        let trimmed = p.text.trim_end().len();
        if p.text.split_whitespace().count() >= 3 {
            let mut p = p;
            p.text.truncate(trimmed);
            for c in &mut p.citations {
                c.end = c.end.min(p.text.len());
            }
            self.paras.push(p);
        }
    }

    fn push_str(&mut self, s: &str) {
        for c in s.chars() {
            self.push(c);
        }
    }

    fn push(&mut self, c: char) {
        if c.is_whitespace() {
            if !self.cur.text.is_empty() && !self.cur.text.ends_with(' ') {
                self.cur.text.push(' ');
            }
        } else {
            self.cur.text.push(c);
        }
    }

    fn cite(&mut self, keys_arg: &str) {
        let mut refs = Vec::new();
        for key in keys_arg.split(',').map(str::trim).filter(|k| !k.is_empty()) {
            match self.keys.get(key) {
                Some(&i) => refs.push(i),
                None => *self.unknown.entry(key.to_string()).or_default() += 1,
            }
        }
        if !self.cur.text.is_empty() && !self.cur.text.ends_with(' ') {
            self.cur.text.push(' ');
        }
        let start = self.cur.text.len();
        let label = if refs.is_empty() { "?".to_string() } else { refs.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ") };
        self.cur.text.push('[');
        self.cur.text.push_str(&label);
        self.cur.text.push(']');
        self.cur.citations.push(Citation { start, end: self.cur.text.len(), refs });
    }

    /// Writes `s` (a piece of LaTeX) as prose.
    fn run(&mut self, s: &str, depth: usize) {
        if depth > 64 {
            return;
        }
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            match c {
                b'\\' => i = self.command(s, i, depth),
                b'$' => {
                    // Math is left out, but for plain numbers and symbols
                    // ("an F1 score of $0.68$").
                    let display = b.get(i + 1) == Some(&b'$');
                    let close = if display { "$$" } else { "$" };
                    let from = i + close.len();
                    let inner_end = find_unescaped(s, from, close).unwrap_or(b.len());
                    let inner = &s[from.min(inner_end)..inner_end];
                    if !display
                        && !inner.is_empty()
                        && inner.len() <= 24
                        && inner.chars().all(|c| c.is_alphanumeric() || " .,%+-=<>()".contains(c))
                    {
                        self.push_str(inner.trim());
                    } else {
                        self.push(' ');
                    }
                    i = (inner_end + close.len()).min(b.len());
                }
                b'{' | b'}' => i += 1,
                b'~' => {
                    self.push(' ');
                    i += 1;
                }
                b'\n' => {
                    // A blank line ends the paragraph.
                    let mut j = i + 1;
                    while j < b.len() && (b[j] == b' ' || b[j] == b'\t' || b[j] == b'\r') {
                        j += 1;
                    }
                    if j < b.len() && b[j] == b'\n' {
                        self.flush();
                    } else {
                        self.push(' ');
                    }
                    i = j;
                }
                b'`' | b'\'' if b.get(i + 1) == Some(&c) => {
                    self.push('"');
                    i += 2;
                }
                b'-' if b.get(i + 1) == Some(&b'-') => {
                    let three = b.get(i + 2) == Some(&b'-');
                    self.push(if three { '—' } else { '–' });
                    i += if three { 3 } else { 2 };
                }
                _ => {
                    let ch = s[i..].chars().next().unwrap_or(' ');
                    self.push(ch);
                    i += ch.len_utf8();
                }
            }
        }
    }

    /// Handles the command at `i` (a backslash); returns where to go on.
    #[allow(clippy::too_many_lines, reason = "one arm per family of LaTeX commands")]
    fn command(&mut self, s: &str, i: usize, depth: usize) -> usize {
        let b = s.as_bytes();
        let Some(&next) = b.get(i + 1) else { return b.len() };
        if !next.is_ascii_alphabetic() {
            // Control symbols.
            let j = i + 1 + s[i + 1..].chars().next().map_or(1, char::len_utf8);
            match next {
                b'%' | b'&' | b'_' | b'#' | b'$' | b'{' | b'}' => self.push(next as char),
                b'\\' => self.push(' '),
                b'[' => return find_unescaped(s, j, "\\]").map_or(b.len(), |e| e + 2),
                b'(' => return find_unescaped(s, j, "\\)").map_or(b.len(), |e| e + 2),
                b'\'' | b'`' | b'"' | b'^' | b'~' | b'=' | b'.' => {
                    let (letter, end) = accent_target(s, j);
                    if let Some(l) = letter {
                        self.push(accented(next as char, l));
                    }
                    return end;
                }
                _ => self.push(' '),
            }
            return j;
        }
        let mut j = i + 1;
        while j < b.len() && (b[j].is_ascii_alphabetic() || b[j] == b'@') {
            j += 1;
        }
        let name = &s[i + 1..j];
        if j < b.len() && b[j] == b'*' {
            j += 1;
        }
        if let Some(body) = self.macros.get(name).filter(|b| self.expansions_left >= b_len(b)) {
            self.expansions_left -= b_len(body);
            self.run(body, depth + 1);
            // `\Bert{}` and `\Bert\ `: the empty group or space ends the name.
            let k = skip_ws_inline(s, j);
            if s[k..].starts_with("{}") {
                return k + 2;
            }
            return j;
        }
        match name {
            "begin" => {
                let (env, after) = braced_arg(s, j);
                let env = env.unwrap_or_default();
                if SKIPPED_ENVS.contains(&env.as_str()) {
                    let end = format!("\\end{{{env}}}");
                    self.push(' ');
                    return s[after..].find(&end).map_or(b.len(), |e| after + e + end.len());
                }
                if matches!(env.as_str(), "abstract" | "itemize" | "enumerate" | "description" | "quote" | "quotation") {
                    self.flush();
                }
                after
            }
            "end" => {
                let (env, after) = braced_arg(s, j);
                if matches!(env.as_deref(), Some("abstract" | "itemize" | "enumerate" | "description" | "quote" | "quotation")) {
                    self.flush();
                }
                after
            }
            "par" => {
                self.flush();
                j
            }
            "item" => {
                self.flush();
                let mut k = skip_ws(s, j);
                if b.get(k) == Some(&b'[') {
                    k = skip_group(s, k, b'[', b']');
                }
                k
            }
            "footnote" | "footnotetext" => {
                let (arg, after) = args_after(s, j);
                if let Some(a) = arg {
                    self.notes.push(a);
                }
                after
            }
            "href" => {
                // \href{url}{text}: the text.
                let (_, after_url) = braced_arg(s, j);
                let (text, after) = braced_arg(s, after_url);
                if let Some(t) = text {
                    self.run(&t, depth + 1);
                }
                after
            }
            "ldots" | "dots" => {
                self.push('…');
                j
            }
            "LaTeX" | "TeX" => {
                self.push_str(name);
                j
            }
            "ie" => {
                self.push_str("i.e.");
                j
            }
            "eg" => {
                self.push_str("e.g.");
                j
            }
            "etal" => {
                self.push_str("et al.");
                j
            }
            n if HEADINGS.contains(&n) => {
                self.flush();
                let (_, after) = args_after(s, j);
                after
            }
            n if cite_command(n, self.grammar) == Some(CiteCommand::Marker) => {
                // Optional arguments, then one or (for \cites) several key lists.
                match latex_arguments(s, j, n) {
                    Some(args) => {
                        let keys: Vec<&str> = args.key_lists.iter().map(|r| &s[r.clone()]).collect();
                        self.cite(&keys.join(","));
                        args.end
                    }
                    None => j,
                }
            }
            n if DROPPED.contains(&n) => {
                let (_, after) = args_after(s, j);
                self.push(' ');
                after
            }
            _ => {
                // Formatting and unknown commands: their text stays.
                let mut k = skip_ws_inline(s, j);
                while b.get(k) == Some(&b'[') {
                    k = skip_group(s, k, b'[', b']');
                }
                if b.get(k) == Some(&b'{') {
                    let e = skip_group(s, k, b'{', b'}');
                    self.run(&s[k + 1..inner_end(s, k + 1, e)], depth + 1);
                    return e;
                }
                // A command without argument ends a word.
                if j < b.len() && b[j] == b' ' {
                    return j;
                }
                j
            }
        }
    }
}

fn skip_ws(s: &str, mut i: usize) -> usize {
    let b = s.as_bytes();
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// Skips spaces but not a line break.
fn skip_ws_inline(s: &str, mut i: usize) -> usize {
    let b = s.as_bytes();
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

/// A braced argument at `i` (after spaces): its text and where it ends.
fn braced_arg(s: &str, i: usize) -> (Option<String>, usize) {
    let k = skip_ws(s, i);
    if s.as_bytes().get(k) == Some(&b'{') {
        let e = skip_group(s, k, b'{', b'}');
        (Some(s[k + 1..inner_end(s, k + 1, e)].to_string()), e)
    } else {
        (None, i)
    }
}

/// Optional `[..]` arguments then a braced one; returns the braced one.
fn args_after(s: &str, i: usize) -> (Option<String>, usize) {
    let b = s.as_bytes();
    let mut k = skip_ws_inline(s, i);
    while b.get(k) == Some(&b'[') {
        k = skip_ws_inline(s, skip_group(s, k, b'[', b']'));
    }
    braced_arg(s, k)
}

fn find_unescaped(s: &str, from: usize, pat: &str) -> Option<usize> {
    let mut k = from;
    while let Some(i) = s.get(k..)?.find(pat) {
        let at = k + i;
        if at > 0 && s.as_bytes()[at - 1] == b'\\' && !pat.starts_with('\\') {
            k = at + 1;
            continue;
        }
        return Some(at);
    }
    None
}

/// The letter an accent command applies to (`\'e`, `\'{e}`, `{\"o}`).
fn accent_target(s: &str, i: usize) -> (Option<char>, usize) {
    let b = s.as_bytes();
    match b.get(i) {
        Some(b'{') => {
            let e = skip_group(s, i, b'{', b'}');
            let inner = s[i + 1..inner_end(s, i + 1, e)].trim_start_matches('\\');
            (inner.chars().next(), e)
        }
        Some(_) => {
            let c = s[i..].chars().next().expect("i is inside s");
            (Some(c), i + c.len_utf8())
        }
        None => (None, i),
    }
}

fn accented(accent: char, letter: char) -> char {
    let combining = match accent {
        '\'' => '\u{301}',
        '`' => '\u{300}',
        '"' => '\u{308}',
        '^' => '\u{302}',
        '~' => '\u{303}',
        '=' => '\u{304}',
        '.' => '\u{307}',
        _ => return letter,
    };
    compose(letter, combining).unwrap_or(letter)
}

/// The precomposed form of a letter and a combining accent (Latin-1 and
/// Latin Extended-A, which LaTeX accent commands produce).
fn compose(letter: char, mark: char) -> Option<char> {
    const TABLE: &[(char, char, char)] = &[
        ('a', '\u{301}', 'á'),
        ('e', '\u{301}', 'é'),
        ('i', '\u{301}', 'í'),
        ('o', '\u{301}', 'ó'),
        ('u', '\u{301}', 'ú'),
        ('y', '\u{301}', 'ý'),
        ('A', '\u{301}', 'Á'),
        ('E', '\u{301}', 'É'),
        ('I', '\u{301}', 'Í'),
        ('O', '\u{301}', 'Ó'),
        ('U', '\u{301}', 'Ú'),
        ('c', '\u{301}', 'ć'),
        ('n', '\u{301}', 'ń'),
        ('s', '\u{301}', 'ś'),
        ('z', '\u{301}', 'ź'),
        ('a', '\u{300}', 'à'),
        ('e', '\u{300}', 'è'),
        ('i', '\u{300}', 'ì'),
        ('o', '\u{300}', 'ò'),
        ('u', '\u{300}', 'ù'),
        ('A', '\u{300}', 'À'),
        ('E', '\u{300}', 'È'),
        ('a', '\u{308}', 'ä'),
        ('e', '\u{308}', 'ë'),
        ('i', '\u{308}', 'ï'),
        ('o', '\u{308}', 'ö'),
        ('u', '\u{308}', 'ü'),
        ('y', '\u{308}', 'ÿ'),
        ('A', '\u{308}', 'Ä'),
        ('O', '\u{308}', 'Ö'),
        ('U', '\u{308}', 'Ü'),
        ('a', '\u{302}', 'â'),
        ('e', '\u{302}', 'ê'),
        ('i', '\u{302}', 'î'),
        ('o', '\u{302}', 'ô'),
        ('u', '\u{302}', 'û'),
        ('a', '\u{303}', 'ã'),
        ('n', '\u{303}', 'ñ'),
        ('o', '\u{303}', 'õ'),
        ('N', '\u{303}', 'Ñ'),
        ('a', '\u{304}', 'ā'),
        ('e', '\u{304}', 'ē'),
        ('i', '\u{304}', 'ī'),
        ('o', '\u{304}', 'ō'),
        ('u', '\u{304}', 'ū'),
        ('z', '\u{307}', 'ż'),
        ('e', '\u{307}', 'ė'),
    ];
    TABLE.iter().find(|(l, m, _)| *l == letter && *m == mark).map(|(_, _, c)| *c)
}

/// A short piece of LaTeX (a title, a `.bbl` entry) as plain text.
pub fn plain_inline(s: &str) -> String {
    let keys = Keys::new();
    let macros = Macros::new();
    // A title or a `.bbl` entry: the `\cite` family is all that cites there.
    let grammar = CiteGrammar::of(CiteSyntax::Latex);
    let mut unknown = BTreeMap::new();
    let mut w = Writer {
        keys: &keys,
        macros: &macros,
        grammar: &grammar,
        unknown: &mut unknown,
        paras: Vec::new(),
        cur: Paragraph::default(),
        notes: Vec::new(),
        expansions_left: MAX_MACRO_EXPANSIONS,
    };
    w.run(&s.replace('\n', " "), 0);
    w.cur.text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plain grammar: no wrapper command.
    const PLAIN: &CiteGrammar = &CiteGrammar::of(CiteSyntax::Latex);

    fn project(files: &[(&str, &str)]) -> Files {
        Files::Bundle(files.iter().map(|(k, v)| (k.to_string(), v.as_bytes().to_vec())).collect())
    }

    const BIB: &str = "@inproceedings{brants2000,\n title={{TnT} -- A Statistical Part-of-Speech Tagger},\n author={Brants, Thorsten},\n year={2000}}\n\
        @article{collins03, title={Head-Driven Statistical Models for Natural Language Parsing}, author={Collins, Michael}, year={2003}, doi={10.1162/089120103322753356}}\n";

    #[test]
    fn inputs_are_followed_and_cites_resolved_through_the_bib() {
        let f = project(&[
            ("paper/main.tex", "\\documentclass{article}\n\\newcommand{\\Tn}{\\textsc{TnT}\\xspace}\n\\newcommand\\Arg[1]{#1}\n\\title{A \\emph{Tagging} Study}\n\\begin{document}\n\\maketitle\n\\section{Intro}\nWe tag with TnT~\\citep[p.~3]{brants2000} % a comment \\cite{nothing}\nand parse. \\input{sections/method}\n\\bibliography{refs}\n\\end{document}\n"),
            ("paper/sections/method.tex", "Parsing follows \\citet{collins03,brants2000}.\n\n\\begin{equation} x = \\cite{collins03} \\end{equation}\nA formula $a \\cite{x}$ here \\cite{unknownkey} and \\Tn{} scores $0.68$.\n"),
            ("paper/refs.bib", BIB),
        ]);
        assert_eq!(main_files(&f), ["paper/main.tex"]);
        let (doc, problems) = read_latex(&f, "paper/main.tex", Path::new("paper/main.tex"), PLAIN).unwrap();
        assert_eq!(doc.title, "A Tagging Study");
        assert_eq!(doc.references.len(), 2);
        assert_eq!(doc.references[1].doi, "10.1162/089120103322753356");
        let texts: Vec<&str> = doc.paragraphs.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["We tag with TnT [1] and parse. Parsing follows [2, 1].", "A formula here [?] and TnT scores 0.68."]);
        let p = &doc.paragraphs[0];
        assert_eq!(p.citations.len(), 2);
        assert_eq!(&p.text[p.citations[0].start..p.citations[0].end], "[1]");
        assert_eq!(p.citations[1].refs, [1, 0]);
        assert!(problems.iter().any(|p| p.contains("`unknownkey`")), "{problems:?}");
    }

    #[test]
    fn bbl_only_projects_resolve_through_bibitems() {
        let f = project(&[
            ("main.tex", "\\documentclass{article}\\begin{document}\nSee the tagger of \\cite{brants2000} for details.\n\\bibliography{missing}\n\\end{document}"),
            ("main.bbl", "\\begin{thebibliography}{1}\n\\bibitem[Brants(2000)]{brants2000}\nThorsten Brants.\n\\newblock {TnT} -- a statistical part-of-speech tagger.\n\\newblock In {\\em ANLP}, 2000.\n\\end{thebibliography}\n"),
        ]);
        let (doc, problems) = read_latex(&f, "main.tex", Path::new("main.tex"), PLAIN).unwrap();
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(doc.references.len(), 1);
        assert_eq!(doc.references[0].raw, "Thorsten Brants. TnT – a statistical part-of-speech tagger. In ANLP, 2000.");
        assert_eq!(doc.paragraphs[0].citations[0].refs, [0]);
    }

    #[test]
    fn missing_bibliography_and_unbalanced_braces_are_problems_not_failures() {
        let f = project(&[("a.tex", "\\documentclass{x}\\begin{document}\nText with \\emph{an open brace \\cite{k} and more words.\n\\bibliography{refs}\n\\end{document}")]);
        let (doc, problems) = read_latex(&f, "a.tex", Path::new("a.tex"), PLAIN).unwrap();
        assert!(problems.iter().any(|p| p.contains("refs.bib")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("unbalanced")), "{problems:?}");
        assert!(doc.references.is_empty());
    }

    #[test]
    fn accents_dashes_and_quotes_become_text() {
        assert_eq!(plain_inline("Schr\\\"{o}dinger's caf\\'e -- ``quoted'' \\textbf{bold}"), "Schrödinger's café – \"quoted\" bold");
    }

    #[test]
    fn cite_family_commands() {
        for c in ["cite", "citep", "citet", "citealp", "autocite", "parencite", "textcite", "Citet", "cite*"] {
            assert_eq!(cite_command(c, PLAIN), Some(CiteCommand::Marker), "{c}");
        }
        for c in ["citeauthor", "citeyear", "center"] {
            assert_ne!(cite_command(c, PLAIN), Some(CiteCommand::Marker), "{c}");
        }
    }

    /// A wrapper command the configuration names is a citation marker to
    /// an import given that grammar, and text to one that is not.
    #[test]
    fn configured_wrappers_are_citations_of_the_import_that_names_them() {
        let f = project(&[
            ("main.tex", "\\documentclass{article}\\begin{document}\nWe tag words with the tagger \\refp{brants2000} today.\n\\bibliography{refs}\n\\end{document}"),
            ("refs.bib", BIB),
        ]);
        let configured = CiteGrammar::of(CiteSyntax::Latex).with_wrappers(["refp"]);
        let (doc, _) = read_latex(&f, "main.tex", Path::new("main.tex"), &configured).unwrap();
        assert_eq!(doc.paragraphs[0].text, "We tag words with the tagger [1] today.");
        assert_eq!(doc.paragraphs[0].citations[0].refs, [0]);
        let (doc, _) = read_latex(&f, "main.tex", Path::new("main.tex"), PLAIN).unwrap();
        assert_eq!(doc.paragraphs[0].text, "We tag words with the tagger brants2000 today.");
        assert!(doc.paragraphs[0].citations.is_empty());
    }
}
