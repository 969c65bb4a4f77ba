//! What the server answers with: completion items, hovers and code actions
//! made from the recommender's candidates.

use std::path::Path;

use lsp_types::{
    CodeAction, CodeActionKind, Command, CompletionItem, CompletionItemKind, CompletionTextEdit, Documentation, MarkupContent, MarkupKind,
    Position, Range, TextEdit, Url, WorkspaceEdit,
};

use super::documents::Document;
use crate::check::finding::FROM_LIBRARY;
use crate::check::Bibliography;
use crate::corpus::citation_markup::{citation_key, is_citation_key, CiteGrammar};
use crate::corpus::work::Identity;
use crate::corpus::Paper;
use crate::export::bibfile::Entries;
use crate::export::keys::{base_key, KeyStyle};
use crate::pipeline::already_cited::AlreadyCited;
use crate::pipeline::channel::EvidenceSnippet;
use crate::pipeline::Candidate;

/// The command that adds a paper's BibTeX entry to a document's
/// bibliography (arguments: the document URI and the key).
pub const ADD_TO_BIBLIOGRAPHY: &str = "citewise.addToBibliography";

/// The command that adds the library's entry of a cited paper to a
/// document's bibliography (arguments: the document URI, the paper's
/// library id and the key the entry gets): the quick fix of a key the
/// bibliography lacks.
pub const ADD_FROM_LIBRARY: &str = "citewise.addFromLibrary";

/// Evidence sentences shown per paper.
const EVIDENCE_SHOWN: usize = 3;

/// The candidates worth offering, each with the key it has in the
/// document's bibliography or would get there (planned from `entries`, the
/// file entries are added to as the loop last parsed it; none: the key
/// export makes); papers the document already cites are left out (the one
/// rule: [`AlreadyCited`], its keys read through `bib`), and so are papers
/// whose key is not a citation key the document may be given
/// ([`citation_key`]: completions and "Cite" actions write only keys).
pub fn offered(
    doc: &Document,
    candidates: &[Candidate],
    style: KeyStyle,
    bib: &Bibliography,
    entries: Option<&Entries>,
) -> Vec<(String, Candidate)> {
    let with_papers: Vec<(&Candidate, &Paper)> = candidates.iter().filter_map(|c| c.paper.as_ref().map(|p| (c, p))).collect();
    let keys = match entries {
        Some(entries) => entries.planned_keys(with_papers.iter().map(|(_, p)| *p), style),
        None => with_papers.iter().map(|(_, p)| base_key(p, style)).collect(),
    };
    let by_key = bib.entries_by_key();
    let cited = AlreadyCited::in_draft(doc.text(), &doc.draft.grammar).through(|k| by_key.get(k).map(|p| Identity::of(p)));
    with_papers
        .into_iter()
        .zip(keys)
        .filter(|((_, p), key)| !cited.cites(p, Some(key.as_str())))
        .filter(|(_, key)| is_citation_key(key, doc.draft.syntax()))
        .map(|((c, _), key)| (key, c.clone()))
        .collect()
}

/// `title · first author · year`.
pub fn detail(p: &Paper) -> String {
    let year = p.year.map_or("n.d.".to_string(), |y| y.to_string());
    format!("{} · {} · {year}", p.title, p.authors.first().map_or("", String::as_str))
}

/// The Markdown shown beside a candidate: its venue, then the evidence
/// (what other papers cited it for, with the citing paper), or else the
/// sentences of its own abstract nearest the query.
pub fn documentation(c: &Candidate) -> String {
    let mut md = String::new();
    if let Some(p) = &c.paper {
        md.push_str(&format!("**{}**\n\n{}", p.title, p.short_authors()));
        if !p.venue.is_empty() {
            md.push_str(&format!(" · *{}*", p.venue));
        }
        if let Some(y) = p.year {
            md.push_str(&format!(" · {y}"));
        }
        md.push('\n');
    }
    md.push_str(&evidence_markdown(&c.evidence));
    if c.evidence.is_empty() && !c.own_words.is_empty() {
        md.push_str("\nFrom the paper's own abstract:\n");
        for s in &c.own_words {
            md.push_str(&format!("\n> {s}\n"));
        }
    }
    md
}

fn evidence_markdown(evidence: &[EvidenceSnippet]) -> String {
    let mut md = String::new();
    if !evidence.is_empty() {
        md.push_str("\nCited by others for:\n");
    }
    for e in evidence.iter().take(EVIDENCE_SHOWN) {
        let year = e.citing_year.map_or(String::new(), |y| format!(", {y}"));
        md.push_str(&format!("\n> {}\n\n— *{}*{year}\n", e.sentence.trim(), e.citing_title));
    }
    md
}

/// A completion item for the paper at `rank` (0-based) of the answer; its
/// `data` (the paper's library id, the query's `terms`) is all that
/// `completionItem/resolve` needs.
pub fn completion_item(
    doc: &Document,
    rank: usize,
    key: &str,
    c: &Candidate,
    edit: Range,
    typed: &str,
    terms: &[String],
) -> CompletionItem {
    CompletionItem {
        label: key.to_string(),
        kind: Some(CompletionItemKind::REFERENCE),
        detail: c.paper.as_ref().map(detail),
        // citewise's order, and never filtered away by the typed prefix.
        sort_text: Some(format!("{rank:04}")),
        filter_text: Some(typed.to_string()),
        text_edit: Some(CompletionTextEdit::Edit(TextEdit { range: edit, new_text: key.to_string() })),
        command: Some(add_command(&doc.uri, key)),
        data: Some(serde_json::json!({ "uri": doc.uri, "id": c.id, "terms": terms })),
        ..Default::default()
    }
}

/// The item with its documentation (`completionItem/resolve`).
pub fn resolved(mut item: CompletionItem, c: &Candidate) -> CompletionItem {
    item.documentation = Some(Documentation::MarkupContent(MarkupContent { kind: MarkupKind::Markdown, value: documentation(c) }));
    item
}

fn add_command(uri: &Url, key: &str) -> Command {
    Command {
        title: "Add to the bibliography".into(),
        command: ADD_TO_BIBLIOGRAPHY.into(),
        arguments: Some(vec![serde_json::json!(uri), serde_json::json!(key)]),
    }
}

/// "Cite …" actions: each inserts the citation command for the document's
/// syntax at `at` and adds the entry to the bibliography; a key that is not
/// a citation key ([`citation_key`]) gets none.
pub fn cite_actions(doc: &Document, offered: &[(String, Candidate)], at: Position) -> Vec<CodeAction> {
    offered
        .iter()
        .filter(|(key, _)| is_citation_key(key, doc.draft.syntax()))
        .map(|(key, c)| {
            let title = c.paper.as_ref().map_or(c.id.clone(), |p| p.title.clone());
            let insert = format!(" {}", doc.draft.syntax().format(std::slice::from_ref(key)));
            let edit = TextEdit { range: Range { start: at, end: at }, new_text: insert };
            CodeAction {
                title: format!("Cite {key}: {title}"),
                kind: Some(CodeActionKind::QUICKFIX),
                edit: Some(WorkspaceEdit { changes: Some([(doc.uri.clone(), vec![edit])].into_iter().collect()), ..Default::default() }),
                command: Some(add_command(&doc.uri, key)),
                ..Default::default()
            }
        })
        .collect()
}

/// Rewrites a citation of `old` (at `range`) as `new`; none when `new` is
/// not a citation key the document may be given ([`citation_key`]: the
/// diagnostic says why).
pub fn rename_key_action(doc: &Document, old: &str, new: &str, range: Range) -> Option<CodeAction> {
    replace_key_action(doc, range, format!("Rewrite {old} as {new} (its key in the library now)"), new, true)
}

/// The hover of a cited paper: title, authors, year, venue, link, evidence.
pub fn hover_markdown(p: &Paper, evidence: &[EvidenceSnippet], bib: &Path) -> String {
    let mut md = format!("**{}**\n\n{}", p.title, p.authors.join(", "));
    if let Some(y) = p.year {
        md.push_str(&format!(" ({y})"));
    }
    if !p.venue.is_empty() {
        md.push_str(&format!("\n\n*{}*", p.venue));
    }
    if !p.doi.is_empty() {
        md.push_str(&format!("\n\n[doi:{0}](https://doi.org/{0})", p.doi));
    } else if !p.url.is_empty() {
        md.push_str(&format!("\n\n<{}>", p.url));
    }
    md.push('\n');
    md.push_str(&evidence_markdown(evidence));
    if p.title.is_empty() {
        md.push_str(&format!("\n(no title in {})", bib.display()));
    }
    md
}

/// A check's finding as a diagnostic: unknown keys are warnings (a key
/// being typed is unknown for a moment), a renamed key carries its new key
/// for the quick fix.
pub fn diagnostic(doc: &Document, f: &crate::check::Finding) -> lsp_types::Diagnostic {
    use crate::check::{Kind, Severity};
    use lsp_types::DiagnosticSeverity;
    let (message, data) = match f.renamed_to().map(|new| (new, citation_key(new, doc.draft.syntax()))) {
        Some((new, Ok(()))) => (
            format!("`{}` is now `{new}` in the library (its citation key changed); a quick fix rewrites it", f.key),
            Some(serde_json::json!({ "renamed_to": new })),
        ),
        Some((_, Err(e))) => (
            format!(
                "`{}` is now `{}` in the library (its citation key changed), which is not a key citewise writes into a draft ({}); \
                 no quick fix rewrites it",
                f.key, e.shown, e.why
            ),
            None,
        ),
        None => {
            let mut m = f.message.clone();
            if let Some(best) = &f.best_match {
                m.push_str(&format!("\n{best}"));
            }
            for s in f.suggestions.iter().filter(|s| !s.key.is_empty()) {
                let title = if s.title.is_empty() { String::new() } else { format!(" “{}”", s.title) };
                m.push_str(&format!("\n→ {}{title} ({})", s.key, s.why));
            }
            (m, None)
        }
    };
    let severity = match (f.kind, f.severity) {
        (Kind::UnknownKey, _) | (_, Severity::Warning) => DiagnosticSeverity::WARNING,
        (_, Severity::Error) => DiagnosticSeverity::ERROR,
        (_, Severity::Info) => DiagnosticSeverity::INFORMATION,
    };
    lsp_types::Diagnostic {
        range: doc.range(f.range.start, f.range.end),
        severity: Some(severity),
        code: Some(lsp_types::NumberOrString::String(
            serde_json::to_value(f.kind).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default(),
        )),
        source: Some("citewise".into()),
        message,
        data,
        ..Default::default()
    }
}

/// The quick fixes of a finding: the library's entry of a key the
/// bibliography lacks added to it ("add it from the library"), its key
/// replaced by each key it suggests (the duplicate's kept key first), and a
/// mismatched entry's title rewritten in the bibliography from the
/// library's record. A suggested text that is not a citation key
/// ([`citation_key`]) is never written: it gets no fix.
pub fn fixes(doc: &Document, f: &crate::check::Finding, bib: &crate::check::Bibliography, open_bib: Option<&str>) -> Vec<CodeAction> {
    use crate::check::finding::RENAMED;
    let range = doc.range(f.range.start, f.range.end);
    let mut out = Vec::new();
    if let Some(s) = f.from_library() {
        out.extend(add_from_library_action(doc, f, s, range, bib));
    }
    if let Some(keep) = &f.keep {
        out.extend(replace_key_action(doc, range, format!("Cite {keep} instead of {} (one work)", f.key), keep, true));
    }
    let writable =
        f.suggestions.iter().filter(|s| s.why != FROM_LIBRARY && !s.key.is_empty() && is_citation_key(&s.key, doc.draft.syntax()));
    for (i, s) in writable.enumerate() {
        if s.why == RENAMED {
            out.extend(rename_key_action(doc, &f.key, &s.key, range));
        } else {
            let title = format!("Replace {} with {} ({})", f.key, s.key, s.why);
            out.extend(replace_key_action(doc, range, title, &s.key, i == 0 && f.keep.is_none()));
        }
    }
    if let (Some(title), Some(path)) = (&f.library_title, &bib.path) {
        out.extend(fix_title_action(f, title, path, open_bib));
    }
    out
}

/// "Add smith2020 to refs.bib from the library": the library's entry of
/// the cited paper (`s.id`) goes to the document's bibliography under
/// `s.key` (the command [`ADD_FROM_LIBRARY`], through the editor's export);
/// when that key is not the cited one (a DOI-shaped library key), the
/// citation is rewritten to it. None when the key is no citation key.
fn add_from_library_action(
    doc: &Document,
    f: &crate::check::Finding,
    s: &crate::check::Suggestion,
    range: Range,
    bib: &crate::check::Bibliography,
) -> Option<CodeAction> {
    if !is_citation_key(&s.key, doc.draft.syntax()) || !is_citation_key(&s.key, crate::corpus::citation_markup::CiteSyntax::Latex) {
        return None;
    }
    let name =
        bib.path.as_deref().and_then(Path::file_name).map_or_else(|| "the bibliography".into(), |n| n.to_string_lossy().into_owned());
    let (title, edit) = if s.key == f.key {
        (format!("Add {} to {name} from the library", f.key), None)
    } else {
        let edit = TextEdit { range, new_text: s.key.clone() };
        let changes = WorkspaceEdit { changes: Some([(doc.uri.clone(), vec![edit])].into_iter().collect()), ..Default::default() };
        (format!("Add {} to {name} from the library as {}", f.key, s.key), Some(changes))
    };
    let command = Command {
        title: "Add from the library".into(),
        command: ADD_FROM_LIBRARY.into(),
        arguments: Some(vec![serde_json::json!(doc.uri), serde_json::json!(s.id), serde_json::json!(s.key)]),
    };
    Some(CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        is_preferred: Some(true),
        edit,
        command: Some(command),
        ..Default::default()
    })
}

/// An edit of the citation at `range` to `key`; none when `key` is not a
/// citation key the document may be given ([`citation_key`]).
fn replace_key_action(doc: &Document, range: Range, title: String, key: &str, preferred: bool) -> Option<CodeAction> {
    if !is_citation_key(key, doc.draft.syntax()) {
        return None;
    }
    let edit = TextEdit { range, new_text: key.to_string() };
    Some(CodeAction {
        title,
        kind: Some(CodeActionKind::QUICKFIX),
        is_preferred: Some(preferred),
        edit: Some(WorkspaceEdit { changes: Some([(doc.uri.clone(), vec![edit])].into_iter().collect()), ..Default::default() }),
        ..Default::default()
    })
}

/// "Fix the title of `key` in refs.bib from the library": an edit of the
/// bibliography's `title` value (as the editor holds the file when it is
/// open, else as it is on disk), the title escaped as BibTeX reads it; none
/// when the file or the field is not found.
fn fix_title_action(f: &crate::check::Finding, title: &str, bib: &Path, open: Option<&str>) -> Option<CodeAction> {
    let text = match open {
        Some(t) => t.to_string(),
        None => crate::corpus::source::read_bytes(bib).ok().map(|b| crate::corpus::source::decode_text(&b).text)?,
    };
    let value = crate::corpus::bibtex::field_value_range(&text, &f.key, "title")?;
    let uri = Url::from_file_path(bib).ok()?;
    let bib_doc = Document::new(uri.clone(), "bibtex", text, 0, &CiteGrammar::PLAIN);
    let edit = TextEdit { range: bib_doc.range(value.start, value.end), new_text: crate::export::bibfile::escape(title) };
    let name = bib.file_name().map_or_else(|| bib.display().to_string(), |n| n.to_string_lossy().into_owned());
    Some(CodeAction {
        title: format!("Fix the title of {} in {name} from the library", f.key),
        kind: Some(CodeActionKind::QUICKFIX),
        is_preferred: Some(true),
        edit: Some(WorkspaceEdit { changes: Some([(uri, vec![edit])].into_iter().collect()), ..Default::default() }),
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::finding::{NEAR_MISS, RENAMED};
    use crate::check::{Bibliography, Finding, Kind, Severity, Suggestion};

    /// A Zotero citation key that would write LaTeX of its own.
    const HOSTILE: &str = r"new}\input{/etc/passwd}\cite{x";

    fn doc(name: &str, text: &str) -> Document {
        Document::new(Url::parse(&format!("file:///tmp/citewise-answer/{name}")).unwrap(), "", text.into(), 1, &CiteGrammar::PLAIN)
    }

    fn finding(text: &str, key: &str) -> Finding {
        let at = text.find(key).unwrap();
        Finding {
            kind: Kind::UnknownKey,
            severity: Severity::Warning,
            key: key.into(),
            line: 1,
            column: at + 1,
            range: at..at + key.len(),
            message: format!("`{key}` is in neither the bibliography nor the library"),
            fix: String::new(),
            suggestions: Vec::new(),
            library_title: None,
            keep: None,
            best_match: None,
        }
    }

    fn suggestion(key: &str, why: &str) -> Suggestion {
        Suggestion { key: key.into(), id: String::new(), title: String::new(), why: why.into(), support: None, evidence: Vec::new() }
    }

    fn new_texts(actions: &[CodeAction]) -> Vec<String> {
        actions
            .iter()
            .flat_map(|a| a.edit.iter().flat_map(|e| e.changes.iter().flat_map(|c| c.values().flatten().map(|t| t.new_text.clone()))))
            .collect()
    }

    fn candidate(key: &str) -> Candidate {
        let paper = Paper {
            id: format!("bib:{key}"),
            key: key.into(),
            title: "Tagging".into(),
            authors: vec!["Ann Tagger".into()],
            ..Default::default()
        };
        Candidate { score: 1.0, paper: Some(paper), fused_rank: 1, ..Candidate::new(format!("bib:{key}")) }
    }

    /// A renamed key, a duplicate's kept key or a near miss that is not a
    /// citation key gets no quick fix; the diagnostic says why.
    #[test]
    fn a_key_that_is_no_key_is_never_written_into_the_draft() {
        let text = "As \\cite{old2001} shows.";
        let d = doc("paper.tex", text);
        let mut f = finding(text, "old2001");
        f.suggestions = vec![suggestion(HOSTILE, RENAMED), suggestion("old2002", NEAR_MISS), suggestion("old 2001", NEAR_MISS)];
        f.keep = Some("old%2001".into());
        let actions = fixes(&d, &f, &Bibliography::default(), None);
        assert_eq!(actions.iter().map(|a| a.title.as_str()).collect::<Vec<_>>(), ["Replace old2001 with old2002 (near miss)"]);
        assert_eq!(new_texts(&actions), ["old2002"]);
        let said = diagnostic(&d, &f);
        assert_eq!(
            said.message,
            "`old2001` is now `new}\\input{/etc/passwd}\\cite{x` in the library (its citation key changed), which is not a key citewise \
             writes into a draft (`}` cannot be part of a key); no quick fix rewrites it"
        );
        assert_eq!(said.data, None);
        // A key that is one is rewritten.
        f.suggestions[0].key = "new2001".into();
        let actions = fixes(&d, &f, &Bibliography::default(), None);
        assert_eq!(actions[0].title, "Rewrite old2001 as new2001 (its key in the library now)");
        assert_eq!(new_texts(&actions), ["new2001", "old2002"]);
        assert!(diagnostic(&d, &f).message.ends_with("a quick fix rewrites it"));
        // Pandoc would read `@new.` as `new`: no rewrite in Markdown.
        let md = "As [@old2001] shows.";
        let mut f = finding(md, "old2001");
        f.suggestions = vec![suggestion("new.", RENAMED)];
        assert!(fixes(&doc("paper.md", md), &f, &Bibliography::default(), None).is_empty());
        assert!(diagnostic(&doc("paper.md", md), &f).message.contains("(Pandoc Markdown reads `[@new.]` as a citation of `new`)"));
    }

    /// A key the bibliography lacks and the library has: the fix adds the
    /// library's entry (a command), and rewrites a DOI-shaped key to the
    /// key the entry gets.
    #[test]
    fn a_key_the_bibliography_lacks_is_added_from_the_library() {
        use crate::check::finding::FROM_LIBRARY;
        let text = "As \\cite{park2017neural} and \\cite{10.1145/3077136.3080758} show.";
        let d = doc("paper.tex", text);
        let bib = Bibliography { path: Some("/tmp/citewise-answer/refs.bib".into()), ..Bibliography::default() };
        let mut f = finding(text, "park2017neural");
        f.kind = Kind::NotInBibliography;
        f.suggestions = vec![Suggestion { id: "doi:10.1145/3077136.3080758".into(), ..suggestion("park2017neural", FROM_LIBRARY) }];
        let actions = fixes(&d, &f, &bib, None);
        assert_eq!(actions.len(), 1, "{actions:?}");
        assert_eq!(actions[0].title, "Add park2017neural to refs.bib from the library");
        assert!(actions[0].edit.is_none(), "the citation stays");
        let command = actions[0].command.as_ref().unwrap();
        assert_eq!(command.command, ADD_FROM_LIBRARY);
        let arguments = command.arguments.as_ref().unwrap();
        assert_eq!(arguments[1..], [serde_json::json!("doi:10.1145/3077136.3080758"), serde_json::json!("park2017neural")]);
        let mut f = finding(text, "10.1145/3077136.3080758");
        f.kind = Kind::NotInBibliography;
        f.suggestions = vec![Suggestion { id: "doi:10.1145/3077136.3080758".into(), ..suggestion("park2017neural", FROM_LIBRARY) }];
        let actions = fixes(&d, &f, &bib, None);
        assert_eq!(actions[0].title, "Add 10.1145/3077136.3080758 to refs.bib from the library as park2017neural");
        assert_eq!(new_texts(&actions), ["park2017neural"]);
    }

    /// Completions and "Cite" actions offer only papers whose key is one.
    #[test]
    fn only_keys_are_offered_and_cited() {
        let papers = [candidate(HOSTILE), candidate("smith."), candidate("tagger2001")];
        let keys = |name: &str| -> Vec<String> {
            let d = doc(name, "We tag words.");
            let offered = offered(&d, &papers, KeyStyle::Original, &Bibliography::default(), None);
            let cited = cite_actions(&d, &offered, Position { line: 0, character: 0 });
            assert_eq!(cited.len(), offered.len());
            offered.into_iter().map(|(k, _)| k).collect()
        };
        // The library's own key when it is one; else one made from the paper.
        assert_eq!(keys("paper.tex"), ["taggerndtagging", "smith.", "tagger2001"]);
        assert_eq!(keys("paper.md"), ["taggerndtagging", "tagger2001"]);
        let unchecked = [(HOSTILE.to_string(), candidate(HOSTILE))];
        assert!(cite_actions(&doc("paper.tex", "x"), &unchecked, Position { line: 0, character: 0 }).is_empty());
    }

    /// Each paper is offered under the key the bibliography file holds it
    /// by or would give it (planned from the entries the loop parsed, not
    /// read again); a paper the document cites is not offered: by that
    /// key, or by a cited key whose entry is its work ([`AlreadyCited`]).
    #[test]
    fn offers_take_the_file_s_keys_and_leave_out_what_the_document_cites() {
        let text = "@article{tagger2001, title = {Tagging}}\n@article{mine, title = {Other}, doi = {10.1/b}}";
        let (entries, bib) = (Entries::of_text(text), Bibliography::parse(text));
        let mut other = candidate("other");
        if let Some(p) = other.paper.as_mut() {
            (p.title, p.doi) = ("Some paper".into(), "10.1/b".into());
        }
        let papers = [candidate("tagger2001"), candidate("fresh"), other];
        let keys = |text: &str| -> Vec<String> {
            offered(&doc("paper.tex", text), &papers, KeyStyle::Original, &bib, Some(&entries)).into_iter().map(|(k, _)| k).collect()
        };
        assert_eq!(keys("We tag words."), ["tagger2001", "fresh", "mine"], "the file holds the third by its DOI");
        assert_eq!(keys(r"We tag words \cite{fresh}."), ["tagger2001", "mine"]);
        assert_eq!(keys(r"We tag words \cite{mine}."), ["tagger2001", "fresh"]);
        assert_eq!(keys(r"We tag words \cite{tagger2001}."), ["mine"], "the entry cited is the work of `fresh` too: one title");
    }

    /// The title fix edits the entry BibTeX reads, not a commented-out
    /// copy, at the right line of a file with classic Mac line ends.
    #[test]
    fn the_title_fix_edits_the_real_entry_of_a_file_with_cr_line_ends() {
        let bib_text = "@comment{@article{k, title = {Commented}}}\r@article{k,\r  title = {Wrong},\r  doi = {10.1/x}\r}\r";
        let text = "As \\cite{k} shows.";
        let mut f = finding(text, "k");
        f.kind = Kind::Mismatch;
        f.library_title = Some("Right & Proper".into());
        let bib = Bibliography { path: Some("/tmp/citewise-answer/refs.bib".into()), ..Bibliography::default() };
        let actions = fixes(&doc("paper.tex", text), &f, &bib, Some(bib_text));
        assert_eq!(actions.len(), 1, "{actions:?}");
        assert_eq!(actions[0].title, "Fix the title of k in refs.bib from the library");
        let changes = actions[0].edit.as_ref().unwrap().changes.as_ref().unwrap();
        let edits = &changes[&Url::parse("file:///tmp/citewise-answer/refs.bib").unwrap()];
        assert_eq!(edits[0].new_text, "Right \\& Proper");
        assert_eq!(edits[0].range, Range { start: Position { line: 2, character: 11 }, end: Position { line: 2, character: 16 } });
    }
}
