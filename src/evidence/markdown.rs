//! Pandoc Markdown as a citing document: `[@key]`, `[see @a, p. 3; @b]`
//! and narrative `@key` citations, resolved through the bibliography files
//! its YAML front matter names (`bibliography: refs.bib` or a list), read
//! as every reader of a draft reads them
//! ([`crate::corpus::bibliography_names`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;

use super::document::{Citation, DocKind, Document, Paragraph};
use crate::corpus::bibliography_names::{bibliography_names, front_matter};
use crate::corpus::bibtex::{parse_source, EntryOutcome};
use crate::corpus::citation_markup::{citations, pandoc_citation_at, CiteGrammar, CiteSyntax};
use crate::corpus::source::{decode_text, read_bytes};
use crate::project::{Project, Refused};

static LINK: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"!?\[([^\]\[]*)\]\([^)]*\)").expect("a valid pattern"));

/// Reads a Markdown file; its bibliography files are looked up beside it
/// and must lie inside `project` ([`crate::project`]).
pub fn read_markdown(path: &Path, project: &Project) -> Result<(Document, Vec<String>), String> {
    let bytes = read_bytes(path).map_err(|e| e.to_string())?;
    let text = decode_text(&bytes).text;
    let mut problems = Vec::new();
    let front = front_matter(&text);
    let body_start = front.as_ref().map_or_else(|| text.len() - text.trim_start_matches('\u{feff}').len(), |f| f.end);
    let body = &text[body_start..];
    let mut doc = Document::new(DocKind::Markdown, path.to_path_buf());
    doc.title = front.as_ref().and_then(|f| f.first("title")).unwrap_or_default().to_string();
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut keys: HashMap<String, usize> = HashMap::new();
    for name in bibliography_names(&text, CiteSyntax::Markdown).into_iter().map(|n| n.file) {
        let read = project
            .existing(dir, &name)
            .and_then(|file| read_bytes(&file).map_err(|e| Refused::Unreadable { named: name.clone(), why: e.to_string() }));
        match read {
            Ok(b) => {
                for outcome in parse_source(&decode_text(&b).text) {
                    if let EntryOutcome::Paper(p) = outcome {
                        if !keys.contains_key(&p.key) {
                            keys.insert(p.key.clone(), doc.references.len());
                            doc.references.push(super::latex::reference_of_paper(*p));
                        }
                    }
                }
            }
            Err(e @ Refused::NotFound { .. }) => problems.push(format!("bibliography {e}")),
            Err(e) => problems.push(format!("bibliography {e}; not read")),
        }
    }
    let names_bibliography = front.as_ref().is_some_and(|f| f.values("bibliography").is_some());
    // Pandoc's citations: no LaTeX command (nor a configured wrapper) is read in Markdown.
    if !names_bibliography && !citations(body, &CiteGrammar::of(CiteSyntax::Markdown)).is_empty() {
        problems.push("no `bibliography:` in the front matter; citations stay unresolved".into());
    }
    let mut unknown = 0;
    doc.paragraphs = paragraphs(body, &keys, &mut unknown);
    if unknown > 0 && !keys.is_empty() {
        problems.push(format!("{unknown} citation key(s) not in the bibliography"));
    }
    Ok((doc, problems))
}

fn paragraphs(body: &str, keys: &HashMap<String, usize>, unknown: &mut usize) -> Vec<Paragraph> {
    let mut out = Vec::new();
    let mut block = String::new();
    let mut fenced = false;
    let mut flush = |block: &mut String, out: &mut Vec<Paragraph>| {
        if !block.trim().is_empty() {
            let p = paragraph(block, keys, unknown);
            if p.text.split_whitespace().count() >= 3 {
                out.push(p);
            }
        }
        block.clear();
    };
    for line in body.lines() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            flush(&mut block, &mut out);
            continue;
        }
        if fenced || line.starts_with("    ") || line.starts_with('\t') {
            continue;
        }
        if t.is_empty() || t.starts_with('#') || t.starts_with('|') || t.starts_with("$$") || t.starts_with('<') {
            flush(&mut block, &mut out);
            continue;
        }
        let t = t.trim_start_matches(['>', '*', '-', '+']).trim_start();
        block.push_str(t);
        block.push(' ');
    }
    flush(&mut block, &mut out);
    out
}

/// One paragraph: citations rewritten as `[n, m]` with their ranges.
fn paragraph(raw: &str, keys: &HashMap<String, usize>, unknown: &mut usize) -> Paragraph {
    let text = LINK.replace_all(raw, "$1");
    let mut p = Paragraph::default();
    let mut rest: &str = &text;
    let mut resolve = |found: Vec<String>, p: &mut Paragraph| {
        let refs: Vec<usize> = found
            .iter()
            .filter_map(|k| {
                let r = keys.get(k).copied();
                *unknown += r.is_none() as usize;
                r
            })
            .collect();
        if !p.text.is_empty() && !p.text.ends_with(' ') {
            p.text.push(' ');
        }
        let start = p.text.len();
        let label = if refs.is_empty() { "?".to_string() } else { refs.iter().map(|i| (i + 1).to_string()).collect::<Vec<_>>().join(", ") };
        p.text.push_str(&format!("[{label}]"));
        p.citations.push(Citation { start, end: p.text.len(), refs });
    };
    while !rest.is_empty() {
        // A bracketed citation group, [@a; see @b, p. 3], or a narrative
        // citation, @key (not an e-mail address).
        let narrative_may_start = !p.text.ends_with(|c: char| c.is_alphanumeric());
        if rest.starts_with('[') || (rest.starts_with('@') && narrative_may_start) {
            if let Some((found, len)) = pandoc_citation_at(rest) {
                resolve(found, &mut p);
                rest = &rest[len..];
                continue;
            }
        }
        let ch = rest.chars().next().expect("rest is not empty");
        rest = &rest[ch.len_utf8()..];
        match ch {
            '*' | '_' | '`' => {}
            c if c.is_whitespace() => {
                if !p.text.is_empty() && !p.text.ends_with(' ') {
                    p.text.push(' ');
                }
            }
            c => p.text.push(c),
        }
    }
    let trimmed = p.text.trim_end().len();
    p.text.truncate(trimmed);
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pandoc_citations_resolve_through_the_front_matter_bibliography() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("refs.bib"), "@misc{brants2000, title={TnT: A Statistical Part-of-Speech Tagger}, author={Brants, Thorsten}, year={2000}}\n@misc{doe:21, title={Another}, year={2021}}").unwrap();
        let md = dir.path().join("draft.md");
        std::fs::write(
            &md,
            "---\ntitle: \"My draft\"\nbibliography:\n  - refs.bib\n---\n# Intro\n\nWe tag with *TnT* [see @brants2000, p. 3; @doe:21].\nAs @brants2000 shows, mail me at a@b.org [@nokey].\n\n```\n[@brants2000] in code\n```\n",
        )
        .unwrap();
        let (doc, problems) = read_markdown(&md, &Project::new(dir.path()).unwrap()).unwrap();
        assert_eq!(doc.title, "My draft");
        assert_eq!(doc.references.len(), 2);
        assert_eq!(doc.paragraphs.len(), 1);
        let p = &doc.paragraphs[0];
        assert_eq!(p.text, "We tag with TnT [1, 2]. As [1] shows, mail me at a@b.org [?].");
        assert_eq!(p.citations.iter().map(|c| c.refs.clone()).collect::<Vec<_>>(), [vec![0, 1], vec![0], vec![]]);
        assert!(problems.iter().any(|p| p.contains("1 citation key")), "{problems:?}");
    }

    /// Every form of Pandoc's list names every file: a `[a, b]` list over
    /// two lines (read once as one file named "[a.bib,"), and a dash list.
    #[test]
    fn front_matter_lists_name_every_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.bib"), "@misc{onlyina, title={Tagging Words}, year={2000}}").unwrap();
        std::fs::write(dir.path().join("b.bib"), "@misc{onlyinb, title={Parsing Sentences}, year={2001}}").unwrap();
        for front in ["bibliography: [a.bib,\n  \"b.bib\"]", "bibliography:\n- a.bib\n- b.bib"] {
            let md = dir.path().join("draft.md");
            std::fs::write(&md, format!("---\ntitle: T\n{front}\n...\nWe tag words [@onlyina] and parse them [@onlyinb].\n")).unwrap();
            let (doc, problems) = read_markdown(&md, &Project::new(dir.path()).unwrap()).unwrap();
            assert_eq!(doc.references.len(), 2, "{front}: {problems:?}");
            assert!(problems.is_empty(), "{front}: {problems:?}");
            assert_eq!(doc.paragraphs[0].text, "We tag words [1] and parse them [2].");
        }
    }
}
