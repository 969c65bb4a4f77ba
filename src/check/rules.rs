//! The record checks of a citation: unknown keys (with near-misses), keys
//! the bibliography lacks though the library has them, mismatched entries,
//! duplicated works and retracted papers. Pure: every key is resolved
//! before ([`super::records`]).
//!
//! Each rule costs a draft's citations once: near misses are looked up in
//! the known keys of about the cited key's length ([`KeyIndex`]), and
//! duplicates are found through what two records of one work share (their
//! record, their title, a piece of their title), not by comparing every
//! cited key with every other.

use std::borrow::Cow;
use std::collections::HashMap;

use super::citing::Citation;
use super::finding::{Finding, Kind, Severity, Suggestion, FROM_LIBRARY, IN_BIBLIOGRAPHY, NEAR_MISS, RENAMED};
use super::records::{Bibliography, Resolved};
use crate::corpus::work::{
    first_authors_agree, fold, is_preprint, same_work, title_key, titles_agree, years_agree, Strictness, MIN_TITLE_CHARS,
};
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

/// A cited key as a message shows it: a control character (a NUL, …),
/// which a terminal would not show, written as its escape (`\u{0}`).
pub fn shown(key: &str) -> Cow<'_, str> {
    if !key.chars().any(char::is_control) {
        return Cow::Borrowed(key);
    }
    Cow::Owned(key.chars().map(|c| if c.is_control() { c.escape_unicode().to_string() } else { c.to_string() }).collect())
}

/// The bibliography as a message names it: its files, and that none of
/// them exists when so.
fn bib_said(bib: &Bibliography) -> String {
    let name = bib.name();
    match bib.files.len() {
        _ if !bib.none_found() => name,
        1 => format!("{name}, which does not exist"),
        _ => format!("{name}, which do not exist"),
    }
}

/// A near miss offered for an unknown key: a key of the bibliography, or
/// of the library (with its record's id).
pub fn near_miss(key: &str, id: &str) -> Suggestion {
    Suggestion {
        key: key.to_string(),
        id: id.to_string(),
        title: String::new(),
        why: NEAR_MISS.into(),
        support: None,
        evidence: Vec::new(),
    }
}

/// An unknown key's finding (its renamed key, else `near_misses`, as
/// suggestions); none when the key is known. Without a library (`library`
/// false), a key the bibliography lacks is unknown.
pub fn unknown_key(c: &Citation, r: &Resolved, bib: &Bibliography, library: bool, near_misses: &[Suggestion]) -> Option<Finding> {
    if !r.unknown() {
        return None;
    }
    let key = shown(&c.key);
    let bib_name = bib_said(bib);
    if !library {
        let mut f = at(
            c,
            Kind::UnknownKey,
            Severity::Error,
            format!("`{key}` is not in {bib_name}"),
            "add its entry to the bibliography, or cite a key it holds (near misses below)",
        );
        f.suggestions = near_misses.to_vec();
        return Some(f);
    }
    // "in neither refs.bib, which does not exist, nor the library"
    let bib_name = if bib.none_found() { format!("{bib_name},") } else { bib_name };
    if let KeyStatus::Renamed(new) = &r.status {
        let mut f = at(
            c,
            Kind::UnknownKey,
            Severity::Error,
            format!("`{key}` is in neither {bib_name} nor the library: its paper's key is `{new}` now"),
            format!("replace `{key}` with `{new}`"),
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
        format!("`{key}` is in neither {bib_name} nor the library"),
        "replace it with a key the library knows (suggestions below), or import its paper",
    );
    f.suggestions = near_misses.to_vec();
    Some(f)
}

/// A key the bibliography (`bib`, whose files are known) lacks though the
/// library has its record: LaTeX will not find it. The fix: cite the key
/// the bibliography has for the same paper (`in_bib`, by DOI), else add the
/// record's entry from the library under `write_key` (a suggestion whose
/// `why` is [`FROM_LIBRARY`]).
pub fn not_in_bibliography(c: &Citation, record: &Paper, bib: &Bibliography, in_bib: Option<&str>, write_key: &str) -> Finding {
    let key = shown(&c.key);
    let message = format!("`{key}` is not in {}, so LaTeX will not find it; the library has it (“{}”)", bib_said(bib), record.title);
    let offer = |key: &str, why: &str| Suggestion {
        key: key.to_string(),
        id: record.id.clone(),
        title: record.title.clone(),
        why: why.to_string(),
        support: None,
        evidence: Vec::new(),
    };
    if let Some(other) = in_bib {
        let fix = format!("cite it as `{}`, its key in the bibliography", shown(other));
        let mut f = at(c, Kind::NotInBibliography, Severity::Error, message, fix);
        f.suggestions.push(offer(other, IN_BIBLIOGRAPHY));
        return f;
    }
    let file = bib.path.as_ref().map_or_else(|| "the bibliography".to_string(), |p| p.display().to_string());
    let fix = if write_key == c.key {
        format!("add it from the library: its entry goes to {file}")
    } else {
        let new = shown(write_key);
        format!("add it from the library: its entry goes to {file} as `{new}`, and the citation becomes `{new}`")
    };
    let mut f = at(c, Kind::NotInBibliography, Severity::Error, message, fix);
    f.suggestions.push(offer(write_key, FROM_LIBRARY));
    f
}

/// The edits a near miss of a key of `len` characters may be off by.
fn allowed_edits(len: usize) -> usize {
    (len / 5).clamp(1, 3)
}

/// The keys of `keys` closest to `typed` (a letter or two off; case
/// aside), closest first, at most [`NEAR_MISSES`].
pub fn near_misses<'k>(typed: &str, keys: &[&'k str]) -> Vec<&'k str> {
    closest(typed, keys.iter().copied())
}

/// The keys near misses are looked up among, by their length in
/// characters: a key is compared only with those an edit or three can
/// make it (its length, give or take [`allowed_edits`]).
pub struct KeyIndex<'k> {
    /// (characters, key), sorted, without repeats.
    keys: Vec<(usize, &'k str)>,
}

impl<'k> KeyIndex<'k> {
    pub fn new(keys: impl IntoIterator<Item = &'k str>) -> KeyIndex<'k> {
        let mut keys: Vec<(usize, &str)> = keys.into_iter().map(|k| (k.chars().count(), k)).collect();
        keys.sort_unstable();
        keys.dedup();
        KeyIndex { keys }
    }

    /// [`near_misses`] among the keys; `compared` counts the keys compared.
    pub fn near_misses(&self, typed: &str, compared: &mut usize) -> Vec<&'k str> {
        let len = typed.chars().count();
        let allowed = allowed_edits(len);
        let from = self.keys.partition_point(|&(n, _)| n + allowed < len);
        let to = self.keys.partition_point(|&(n, _)| n <= len + allowed).max(from);
        *compared += to - from;
        closest(typed, self.keys[from..to].iter().map(|&(_, k)| k))
    }
}

/// [`near_misses`] of `typed` among `keys`.
fn closest<'k>(typed: &str, keys: impl Iterator<Item = &'k str>) -> Vec<&'k str> {
    let typed_lower = typed.to_lowercase();
    let len = typed.chars().count();
    let allowed = allowed_edits(len);
    let typed_bag = bag(typed_lower.chars());
    let mut close: Vec<(usize, &str)> = keys
        // An edit changes the length by one at most: most keys are out by length alone.
        .filter(|k| *k != typed && k.len().abs_diff(typed.len()) <= allowed * 4 && k.chars().count().abs_diff(len) <= allowed)
        // And most of the rest by the letters they hold, before their distance is counted.
        .filter(|k| bag_bound(&typed_bag, k) <= allowed)
        .filter_map(|k| {
            let d = strsim::damerau_levenshtein(&typed_lower, &k.to_lowercase());
            (d <= allowed).then_some((d, k))
        })
        .collect();
    close.sort();
    close.dedup_by(|a, b| a.1 == b.1);
    close.into_iter().take(NEAR_MISSES).map(|(_, k)| k).collect()
}

/// The bucket of a character in a [`bag`] (a final sigma with sigma: the
/// one letter whose lower case depends on its place in a word).
fn bucket(c: char) -> usize {
    let c = if c == 'ς' { 'σ' } else { c };
    u32::from(c) as usize % 64
}

/// The characters of a string, counted in 64 buckets.
fn bag(chars: impl Iterator<Item = char>) -> [i32; 64] {
    let mut counts = [0; 64];
    for c in chars {
        counts[bucket(c)] += 1;
    }
    counts
}

/// A lower bound of the edit distance between the lower-cased string whose
/// [`bag`] is `typed` and `key` lower-cased: the characters one holds more
/// of than the other. An insertion, a deletion or a substitution lowers
/// each side's excess by one at most, and a transposition not at all.
fn bag_bound(typed: &[i32; 64], key: &str) -> usize {
    let mut excess = *typed;
    for c in key.chars().flat_map(char::to_lowercase) {
        excess[bucket(c)] -= 1;
    }
    let (more, fewer) = excess.iter().fold((0, 0), |(more, fewer), &d| if d > 0 { (more + d, fewer) } else { (more, fewer - d) });
    more.max(fewer) as usize
}

/// The entry and the library's record of its DOI disagree: on the title
/// (an error: the DOI names another paper, the pattern of a fabricated
/// reference), else on the year or the first author (warnings).
pub fn mismatch(c: &Citation, r: &Resolved, bib: &Bibliography) -> Option<Finding> {
    let (Some(entry), Some(record)) = (&r.entry, &r.record) else { return None };
    if !r.by_doi {
        return None;
    }
    let doi = &entry.doi;
    let key = shown(&c.key);
    let bib_name = bib.name();
    if !titles_agree(&entry.title, &record.title) {
        let mut f = at(
            c,
            Kind::Mismatch,
            Severity::Error,
            format!(
                "`{key}`: its DOI {doi} is “{}”{} in the library, but {bib_name} titles it “{}”",
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
            format!("`{key}`: {bib_name} says {}, the library record of DOI {doi} says {}", year(entry.year), year(record.year)),
            "correct the entry's year",
        ));
    }
    if !first_authors_agree(entry, record) {
        let first = |p: &Paper| p.authors.first().cloned().unwrap_or_default();
        return Some(at(
            c,
            Kind::Mismatch,
            Severity::Warning,
            format!("`{key}`: {bib_name} names {} first, the library record of DOI {doi} names {}", first(entry), first(record)),
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

/// Earlier cited keys a key is compared with for [`duplicates`], at most:
/// the ones that share its record, its title or a piece of its title,
/// earliest first. More would be a cluster of one work that no writer
/// cites, each pair one more finding.
pub const PARTNERS: usize = 32;

/// The characters of a title piece that [`duplicates`] looks titles up by.
const GRAM: usize = 8;

/// Keys that are one work: the same work under two keys, or a preprint
/// cited beside its published version. One finding per pair, at the first
/// citation of the key to drop (the later one; the preprint).
pub fn duplicates(first_citation: &[&Citation], resolved: &HashMap<String, Resolved>) -> Vec<Finding> {
    let papers: Vec<Option<&Paper>> = first_citation.iter().map(|c| resolved.get(&c.key).and_then(Resolved::paper)).collect();
    let mut out = Vec::new();
    for (i, j) in candidate_pairs(&papers) {
        if let (Some(pa), Some(pb)) = (papers[i], papers[j]) {
            out.extend(duplicate_pair(first_citation[i], pa, first_citation[j], pb));
        }
    }
    out
}

/// The duplicate finding of the keys `a` (cited first) and `b`, if they are
/// one work.
fn duplicate_pair(a: &Citation, pa: &Paper, b: &Citation, pb: &Paper) -> Option<Finding> {
    let same_record = !pa.id.is_empty() && pa.id == pb.id;
    if same_record || same_work(pa, pb, Strictness::Exact) {
        let message = format!("`{}` and `{}` are one work (“{}”)", shown(&b.key), shown(&a.key), pb.title);
        return Some(duplicate(b, a, message, "cite it under one key"));
    }
    if is_preprint(pa) != is_preprint(pb) && same_work(pa, pb, Strictness::Loose) {
        let (pre, publ, pre_paper) = if is_preprint(pa) { (a, b, pa) } else { (b, a, pb) };
        let message =
            format!("`{}` is the preprint of `{}` (“{}”), and both are cited", shown(&pre.key), shown(&publ.key), pre_paper.title);
        return Some(duplicate(pre, publ, message, "cite the published version"));
    }
    None
}

/// The pairs (earlier, later) of `papers` that may be one work, in order:
/// each paper with at most [`PARTNERS`] earlier ones that share its record
/// id, its title's letters and digits ([`Strictness::Exact`]), or, a
/// preprint beside a publication, the first [`GRAM`] characters of a piece
/// of the earlier one's title. A title [`Strictness::Loose`] takes is one
/// that holds the other within `k` edits, and `k` edits change at most `k`
/// of its `k + 1` pieces: one piece stands whole, and its first characters
/// find the pair. Each paper is looked up in maps: linear in the papers.
fn candidate_pairs(papers: &[Option<&Paper>]) -> Vec<(usize, usize)> {
    let folded: Vec<Vec<char>> = papers.iter().map(|p| p.map_or_else(Vec::new, |p| fold(&p.title).chars().collect())).collect();
    let preprint: Vec<bool> = papers.iter().map(|p| p.is_some_and(is_preprint)).collect();
    let titles: Vec<Option<String>> =
        papers.iter().map(|p| p.map(|p| title_key(&p.title)).filter(|t| t.chars().count() >= MIN_TITLE_CHARS)).collect();
    let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_title: HashMap<&str, Vec<usize>> = HashMap::new();
    let mut by_piece: HashMap<(bool, &[char]), Vec<usize>> = HashMap::new();
    for (i, p) in papers.iter().enumerate() {
        let Some(p) = p else { continue };
        if !p.id.is_empty() {
            by_id.entry(p.id.as_str()).or_default().push(i);
        }
        if let Some(t) = &titles[i] {
            by_title.entry(t.as_str()).or_default().push(i);
        }
        for gram in piece_starts(&folded[i]) {
            by_piece.entry((preprint[i], gram)).or_default().push(i);
        }
    }
    let mut pairs = Vec::new();
    for (j, p) in papers.iter().enumerate() {
        let Some(p) = p else { continue };
        let mut earlier: Vec<usize> = Vec::new();
        if !p.id.is_empty() {
            earlier.extend(before(by_id.get(p.id.as_str()), j));
        }
        if let Some(t) = &titles[j] {
            earlier.extend(before(by_title.get(t.as_str()), j));
        }
        for gram in folded[j].windows(GRAM) {
            earlier.extend(before(by_piece.get(&(!preprint[j], gram)), j));
        }
        earlier.sort_unstable();
        earlier.dedup();
        pairs.extend(earlier.into_iter().take(PARTNERS).map(|i| (i, j)));
    }
    pairs.sort_unstable();
    pairs
}

/// The first [`PARTNERS`] of `list` (ascending) that come before `j`.
fn before(list: Option<&Vec<usize>>, j: usize) -> impl Iterator<Item = usize> + '_ {
    list.into_iter().flatten().copied().take_while(move |&i| i < j).take(PARTNERS)
}

/// The first [`GRAM`] characters of each of the `k + 1` pieces of a folded
/// title, `k` the edits [`Strictness::Loose`] allows it (none for a title
/// too short to name a work).
fn piece_starts(title: &[char]) -> Vec<&[char]> {
    let n = title.len();
    if n < MIN_TITLE_CHARS {
        return Vec::new();
    }
    let pieces = (n / 25).max(1) + 1;
    (0..pieces).map(|p| p * n / pieces).filter(|&s| s + GRAM <= n).map(|s| &title[s..s + GRAM]).collect()
}

/// A duplicate at `drop`'s citation, keeping `keep`'s key.
fn duplicate(drop: &Citation, keep: &Citation, message: String, what: &str) -> Finding {
    let fix = format!("{what}: replace `{}` with `{}`", shown(&drop.key), shown(&keep.key));
    let mut f = at(drop, Kind::Duplicate, Severity::Warning, message, fix);
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
        format!("`{}` (“{}”) is retracted: {source}", shown(&c.key), p.title),
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

    /// A little generator of numbers below `m`.
    fn numbers(seed: u64) -> impl FnMut(u64) -> u64 {
        let mut state = seed;
        move |m: u64| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (state >> 33) % m
        }
    }

    /// Keys made from a little generator: families of a stem with a letter
    /// or two changed, and keys of every length.
    fn generated_keys(n: usize) -> Vec<String> {
        let mut next = numbers(7);
        let letters: Vec<char> = "abcdeÉfghijklmnopqrstuvwxyz0123456789".chars().collect();
        (0..n)
            .map(|i| {
                let len = 3 + (i % 20);
                let mut key: Vec<char> = (0..len).map(|p| letters[(p * 7 + i / 40) % letters.len()]).collect();
                for _ in 0..next(3) {
                    let at = next(key.len() as u64) as usize;
                    key[at] = letters[next(letters.len() as u64) as usize];
                }
                if next(4) == 0 {
                    key[0] = key[0].to_uppercase().next().unwrap_or(key[0]);
                }
                key.into_iter().collect()
            })
            .collect()
    }

    #[test]
    fn the_key_index_finds_what_a_comparison_with_every_key_finds_comparing_fewer() {
        let keys = generated_keys(4000);
        let all: Vec<&str> = keys.iter().map(String::as_str).collect();
        let index = KeyIndex::new(all.iter().copied());
        let mut typed: Vec<String> = keys.iter().step_by(7).cloned().collect();
        typed.extend(["smith2020".to_string(), "x".to_string()]);
        let mut compared = 0;
        for t in &typed {
            assert_eq!(index.near_misses(t, &mut compared), near_misses(t, &all), "{t}");
        }
        let n = typed.len();
        assert!(compared < n * all.len() / 2, "{compared} keys compared for {n} keys typed among {}", all.len());
    }

    #[test]
    fn the_letters_a_key_holds_bound_its_distance_from_below() {
        let keys = generated_keys(300);
        for a in keys.iter().step_by(3) {
            let lower = a.to_lowercase();
            let typed = bag(lower.chars());
            for b in &keys {
                let d = strsim::damerau_levenshtein(&lower, &b.to_lowercase());
                assert!(bag_bound(&typed, b) <= d, "{a} {b}");
            }
        }
        assert_eq!(bag_bound(&bag("abc".chars()), "ACB"), 0, "a transposition keeps the letters");
        assert_eq!(bag_bound(&bag("abc".chars()), "abxy"), 2);
    }

    fn paper(id: &str, title: &str, year: i32, preprint: bool) -> Paper {
        Paper {
            id: id.into(),
            title: title.into(),
            year: Some(year),
            venue: if preprint { "arXiv".into() } else { "Proceedings".into() },
            ..Paper::default()
        }
    }

    fn cited(papers: &[Paper]) -> (Vec<Citation>, HashMap<String, Resolved>) {
        let citations: Vec<Citation> = (0..papers.len())
            .map(|i| Citation { key: format!("k{i}"), range: i * 10..i * 10 + 2, line: i + 1, column: 1, sentence: i })
            .collect();
        let resolved = papers
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let key = format!("k{i}");
                let r = Resolved {
                    key: key.clone(),
                    entry: Some(p.clone()),
                    record: None,
                    by_doi: false,
                    declared: true,
                    status: KeyStatus::Unknown,
                };
                (key, r)
            })
            .collect();
        (citations, resolved)
    }

    /// Every pair compared, as the rule reads.
    fn every_pair(first: &[&Citation], resolved: &HashMap<String, Resolved>) -> Vec<Finding> {
        let mut out = Vec::new();
        for (i, a) in first.iter().enumerate() {
            let Some(pa) = resolved.get(&a.key).and_then(Resolved::paper) else { continue };
            for b in &first[i + 1..] {
                let Some(pb) = resolved.get(&b.key).and_then(Resolved::paper) else { continue };
                out.extend(duplicate_pair(a, pa, b, pb));
            }
        }
        out
    }

    #[test]
    fn duplicates_found_through_the_maps_are_those_of_every_pair() {
        // Titles of random letters, each cited a few times over: the same
        // record, the same title in other case and punctuation, a letter or
        // two off, as a preprint, in other years.
        let mut next = numbers(11);
        let stems: Vec<String> = (0..40)
            .map(|_| {
                let len = 26 + next(60) as usize;
                (0..len).map(|p| if p % 6 == 5 { ' ' } else { (b'a' + next(26) as u8) as char }).collect()
            })
            .collect();
        let papers: Vec<Paper> = (0..300)
            .map(|i| {
                let stem = next(stems.len() as u64) as usize;
                let mut title: Vec<char> = stems[stem].chars().collect();
                match next(5) {
                    0 => title = title.iter().flat_map(|c| c.to_uppercase()).collect(),
                    1 => {
                        let at = next(title.len() as u64) as usize;
                        title[at] = 'z';
                    }
                    2 => {
                        let at = next(title.len() as u64) as usize;
                        title.remove(at);
                        title.insert(next(title.len() as u64) as usize, '-');
                    }
                    _ => {}
                }
                let id = if next(6) == 0 { format!("record{stem}") } else { format!("p{i}") };
                paper(&id, &title.into_iter().collect::<String>(), 2018 + next(4) as i32, next(3) == 0)
            })
            .collect();
        let (citations, resolved) = cited(&papers);
        let first: Vec<&Citation> = citations.iter().collect();
        let found = duplicates(&first, &resolved);
        assert!(found.len() > 50, "the draft has duplicates to find: {}", found.len());
        assert_eq!(found, every_pair(&first, &resolved));
    }

    #[test]
    fn distinct_works_are_not_compared_pair_by_pair() {
        // 5,000 cited works of distinct titles, half of them preprints: no
        // pair is even a candidate (every pair was compared, 12.5 million).
        let mut next = numbers(13);
        let papers: Vec<Paper> = (0..5000)
            .map(|i| {
                let title: String = (0..30 + next(30)).map(|p| if p % 7 == 6 { ' ' } else { (b'a' + next(26) as u8) as char }).collect();
                paper(&format!("p{i}"), &title, 2020, i % 2 == 0)
            })
            .collect();
        let all: Vec<Option<&Paper>> = papers.iter().map(Some).collect();
        assert!(candidate_pairs(&all).is_empty());
        // Titles alike in their first words: each compared with its first few.
        let alike: Vec<Paper> = (0..2000)
            .map(|i| paper(&format!("q{i}"), &format!("A study of part-of-speech tagging, number {i}"), 2020, i % 2 == 0))
            .collect();
        let all: Vec<Option<&Paper>> = alike.iter().map(Some).collect();
        assert!(candidate_pairs(&all).len() <= alike.len() * PARTNERS);
        let (citations, resolved) = cited(&papers);
        let first: Vec<&Citation> = citations.iter().collect();
        assert!(duplicates(&first, &resolved).is_empty());
    }

    #[test]
    fn a_key_with_a_control_character_is_shown_with_its_escape() {
        assert_eq!(shown("smith2020"), "smith2020");
        assert_eq!(shown("a\0b"), "a\\u{0}b");
        assert_eq!(shown("tab\there"), "tab\\u{9}here");
    }
}
