//! The record checks of a citation: unknown keys (with near-misses),
//! mismatched entries, duplicated works and retracted papers. Pure: every
//! key is resolved before ([`super::records`]).

use std::collections::HashMap;

use super::citing::Citation;
use super::finding::{Finding, Kind, Severity, Suggestion, NEAR_MISS, RENAMED};
use super::records::Resolved;
use crate::corpus::work::{first_authors_agree, is_preprint, same_work, titles_agree, years_agree, Strictness};
use crate::corpus::Paper;
use crate::index::paper_index::KeyStatus;

/// Near-miss keys offered for an unknown key.
pub const NEAR_MISSES: usize = 3;

/// A finding at `c`, without suggestions.
pub fn at(c: &Citation, kind: Kind, severity: Severity, message: String, fix: impl Into<String>) -> Finding {
    Finding {
        kind,
        severity,
        key: c.key.clone(),
        line: c.line,
        column: c.column,
        range: c.range.clone(),
        message,
        fix: fix.into(),
        suggestions: Vec::new(),
        library_title: None,
        keep: None,
        best_match: None,
    }
}

/// An unknown key's finding (its renamed key or near-misses among `keys`
/// as suggestions); none when the key is known.
pub fn unknown_key(c: &Citation, r: &Resolved, bib_name: &str, keys: &[&str]) -> Option<Finding> {
    if !r.unknown() {
        return None;
    }
    if let KeyStatus::Renamed(new) = &r.status {
        let mut f = at(
            c,
            Kind::UnknownKey,
            Severity::Error,
            format!("`{}` is in neither {bib_name} nor the library: its paper's key is `{new}` now", c.key),
            format!("replace `{}` with `{new}`", c.key),
        );
        f.suggestions.push(Suggestion {
            key: new.clone(),
            id: String::new(),
            title: String::new(),
            why: RENAMED.into(),
            support: None,
            evidence: Vec::new(),
        });
        return Some(f);
    }
    let mut f = at(
        c,
        Kind::UnknownKey,
        Severity::Error,
        format!("`{}` is in neither {bib_name} nor the library", c.key),
        "replace it with a key the library knows (suggestions below), or import its paper",
    );
    f.suggestions = near_misses(&c.key, keys)
        .into_iter()
        .map(|k| Suggestion {
            key: k.to_string(),
            id: String::new(),
            title: String::new(),
            why: NEAR_MISS.into(),
            support: None,
            evidence: Vec::new(),
        })
        .collect();
    Some(f)
}

/// The keys of `keys` closest to `typed` (a letter or two off; case
/// aside), closest first, at most [`NEAR_MISSES`].
pub fn near_misses<'k>(typed: &str, keys: &[&'k str]) -> Vec<&'k str> {
    let typed_lower = typed.to_lowercase();
    let len = typed.chars().count();
    let allowed = (len / 5).clamp(1, 3);
    let mut close: Vec<(usize, &str)> = keys
        .iter()
        // An edit changes the length by one at most: most keys are out by length alone.
        .filter(|k| **k != typed && k.len().abs_diff(typed.len()) <= allowed * 4 && k.chars().count().abs_diff(len) <= allowed)
        .filter_map(|k| {
            let d = strsim::damerau_levenshtein(&typed_lower, &k.to_lowercase());
            (d <= allowed).then_some((d, *k))
        })
        .collect();
    close.sort();
    close.dedup_by(|a, b| a.1 == b.1);
    close.into_iter().take(NEAR_MISSES).map(|(_, k)| k).collect()
}

/// The entry and the library's record of its DOI disagree: on the title
/// (an error: the DOI names another paper, the pattern of a fabricated
/// reference), else on the year or the first author (warnings).
pub fn mismatch(c: &Citation, r: &Resolved, bib_name: &str) -> Option<Finding> {
    let (Some(entry), Some(record)) = (&r.entry, &r.record) else { return None };
    if !r.by_doi {
        return None;
    }
    let doi = &entry.doi;
    if !titles_agree(&entry.title, &record.title) {
        let mut f = at(
            c,
            Kind::Mismatch,
            Severity::Error,
            format!(
                "`{}`: its DOI {doi} is “{}”{} in the library, but {bib_name} titles it “{}”",
                c.key,
                record.title,
                by_line(record),
                entry.title
            ),
            "check which one you meant: fix the entry's title from the library record, or its DOI",
        );
        f.library_title = Some(record.title.clone());
        return Some(f);
    }
    if !years_agree(entry.year, record.year) {
        let year = |y: Option<i32>| y.map_or_else(|| "no year".into(), |y| y.to_string());
        return Some(at(
            c,
            Kind::Mismatch,
            Severity::Warning,
            format!("`{}`: {bib_name} says {}, the library record of DOI {doi} says {}", c.key, year(entry.year), year(record.year)),
            "correct the entry's year",
        ));
    }
    if !first_authors_agree(entry, record) {
        let first = |p: &Paper| p.authors.first().cloned().unwrap_or_default();
        return Some(at(
            c,
            Kind::Mismatch,
            Severity::Warning,
            format!("`{}`: {bib_name} names {} first, the library record of DOI {doi} names {}", c.key, first(entry), first(record)),
            "correct the entry's authors",
        ));
    }
    None
}

/// " (First author, year)" of a record.
fn by_line(p: &Paper) -> String {
    let who = p.short_authors();
    match (who.is_empty(), p.year) {
        (true, None) => String::new(),
        (true, Some(y)) => format!(" ({y})"),
        (false, None) => format!(" ({who})"),
        (false, Some(y)) => format!(" ({who}, {y})"),
    }
}

/// Keys that are one work: the same work under two keys, or a preprint
/// cited beside its published version. One finding per pair, at the first
/// citation of the key to drop (the later one; the preprint).
pub fn duplicates(first_citation: &[&Citation], resolved: &HashMap<String, Resolved>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (i, a) in first_citation.iter().enumerate() {
        let Some(pa) = resolved.get(&a.key).and_then(Resolved::paper) else { continue };
        for b in &first_citation[i + 1..] {
            let Some(pb) = resolved.get(&b.key).and_then(Resolved::paper) else { continue };
            let same_record = !pa.id.is_empty() && pa.id == pb.id;
            if same_record || same_work(pa, pb, Strictness::Exact) {
                let message = format!("`{}` and `{}` are one work (“{}”)", b.key, a.key, pb.title);
                out.push(duplicate(b, a, message, "cite it under one key"));
            } else if is_preprint(pa) != is_preprint(pb) && same_work(pa, pb, Strictness::Loose) {
                let (pre, publ, pre_paper) = if is_preprint(pa) { (a, b, pa) } else { (b, a, pb) };
                let message = format!("`{}` is the preprint of `{}` (“{}”), and both are cited", pre.key, publ.key, pre_paper.title);
                out.push(duplicate(pre, publ, message, "cite the published version"));
            }
        }
    }
    out
}

/// A duplicate at `drop`'s citation, keeping `keep`'s key.
fn duplicate(drop: &Citation, keep: &Citation, message: String, what: &str) -> Finding {
    let mut f = at(drop, Kind::Duplicate, Severity::Warning, message, format!("{what}: replace `{}` with `{}`", drop.key, keep.key));
    f.keep = Some(keep.key.clone());
    f
}

/// The cited paper is flagged retracted (Zotero's retraction list, or its
/// record's own flag).
pub fn retracted(c: &Citation, r: &Resolved) -> Option<Finding> {
    let p = r.paper().filter(|p| p.retracted || r.entry.as_ref().is_some_and(|e| e.retracted))?;
    let source = if p.zotero.is_some() { "Zotero flags it retracted" } else { "its record flags it retracted" };
    Some(at(
        c,
        Kind::Retracted,
        Severity::Error,
        format!("`{}` (“{}”) is retracted: {source}", c.key, p.title),
        "remove the citation, or cite it as retracted (with its retraction notice)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_misses_are_a_letter_or_two_off() {
        let keys = ["smith2020tagging", "smith2021tagging", "Smith2020Tagging", "doe2019", "smith2020tag"];
        assert_eq!(near_misses("smith2020taging", &keys), ["Smith2020Tagging", "smith2020tagging", "smith2021tagging"]);
        assert!(near_misses("xyz", &keys).is_empty());
        assert_eq!(near_misses("do2019", &keys), ["doe2019"]);
    }
}
