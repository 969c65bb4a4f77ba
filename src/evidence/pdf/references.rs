//! The reference list of a PDF: found after its heading, split into
//! entries (by label, by hanging indent, or by where an entry visibly
//! starts), and each entry's label, authors' family names and year read
//! off for resolving in-text citations.

use std::sync::LazyLock;

use regex::Regex;

use super::layout::Line;
use crate::corpus::work::fold;
use crate::evidence::document::Reference;

static HEADING: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*(?:[0-9IVX]+\.?\s*)?(?:references?|bibliography|literature cited|works cited|references and notes|r\s*e\s*f\s*e\s*r\s*e\s*n\s*c\s*e\s*s)\s*:?\s*$").expect("a valid pattern")
});
/// Headings after the references that end them.
static AFTER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[A-H](?:\.\d+)?\.?\s+[A-Z]|Appendix\b|APPENDIX\b|Supplementary\b|Appendices\b)").expect("a valid pattern")
});
static BRACKET_LABEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*\[([^\[\]]{1,24})\]\s*").expect("a valid pattern"));
static NUMBER_LABEL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^\s*(\d{1,3})\.?\s+\S").expect("a valid pattern"));
pub static YEAR: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b(1[89]\d\d|20\d\d)([a-z])?\b").expect("a valid pattern"));
/// Where an author–year entry starts: a family name and a comma ("Chieu,
/// Hai Leong"), or initials and a name ("D. Cutting"), or given and family
/// names then a comma or "and".
static AUTHOR_START: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(?:(?:[Vv]an|[Vv]on|[Dd]e|[Dd]el|[Dd]er|[Dd]i|[Dd]u|[Ll]e|[Ll]a)\s+)*\p{Lu}[\p{L}'’`´\-]+(?:\s+\p{Lu}[\p{L}'’\-]+)?,|^(?:\p{Lu}\.\s*(?:-\s*\p{Lu}\.\s*)?)+\s*\p{Lu}[\p{L}'’\-]+|^\p{Lu}[\p{L}'’\-]+(?:\s+\p{Lu}\.)*\s+(?:\p{Lu}\.\s+)?\p{Lu}[\p{L}'’\-]+\s*(?:,|and\b|\.\s+(?:1[89]|20)\d\d)").expect("a valid pattern")
});

/// Whether a line is a references heading ("References", "Bibliography").
pub fn is_heading(text: &str) -> bool {
    HEADING.is_match(text)
}

/// Where the reference list starts: the index of the line after the last
/// references heading (in the second half of the document when there is
/// one there), and where it ends.
pub fn section(lines: &[Line]) -> Option<(usize, usize)> {
    let heads: Vec<usize> = (0..lines.len()).filter(|&i| HEADING.is_match(&lines[i].text)).collect();
    let start = *heads.iter().rev().find(|&&i| i >= lines.len() / 3).or(heads.last())? + 1;
    let mut end = lines.len();
    for (i, l) in lines.iter().enumerate().skip(start + 3) {
        // An appendix heading: short, larger or bold-looking, starts a section.
        if AFTER.is_match(&l.text) && l.text.split_whitespace().count() <= 8 && l.heading {
            end = i;
            break;
        }
    }
    (end > start).then_some((start, end))
}

/// How the entries of a list are marked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListStyle {
    /// `[12] ...` or `[Kogure 90] ...`
    Bracketed,
    /// `12. ...` or `12 ...`
    Numbered,
    /// Author–year entries, told apart by layout.
    AuthorYear,
}

/// Splits the reference lines into entries.
pub fn split_entries(lines: &[Line]) -> (ListStyle, Vec<Reference>) {
    let lines: Vec<&Line> = lines.iter().filter(|l| !l.text.trim().is_empty()).collect();
    if lines.is_empty() {
        return (ListStyle::AuthorYear, Vec::new());
    }
    let bracketed = lines.iter().filter(|l| BRACKET_LABEL.is_match(&l.text)).count();
    if bracketed >= 3 && (BRACKET_LABEL.is_match(&lines[0].text) || bracketed * 5 >= lines.len()) {
        return (
            ListStyle::Bracketed,
            split_labelled(&lines, |l| BRACKET_LABEL.captures(l).map(|c| (c[1].trim().to_string(), c[0].len()))),
        );
    }
    if let Some(entries) = split_numbered(&lines) {
        return (ListStyle::Numbered, entries);
    }
    (ListStyle::AuthorYear, split_author_year(&lines))
}

fn split_labelled(lines: &[&Line], label: impl Fn(&str) -> Option<(String, usize)>) -> Vec<Reference> {
    let mut out: Vec<Reference> = Vec::new();
    for l in lines {
        match label(&l.text) {
            Some((lab, len)) => out.push(Reference { label: lab, raw: l.text[len..].trim().to_string(), ..Default::default() }),
            None => {
                if let Some(r) = out.last_mut() {
                    join_line(&mut r.raw, &l.text)
                }
            }
        }
    }
    for r in &mut out {
        fill_fields(r);
    }
    out
}

/// `1. A. Author ...` / `1 A. Author`, numbered 1, 2, 3, ... in order.
fn split_numbered(lines: &[&Line]) -> Option<Vec<Reference>> {
    let first = NUMBER_LABEL.captures(&lines[0].text)?;
    if &first[1] != "1" {
        return None;
    }
    let mut next = 1u32;
    let mut starts = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if let Some(c) = NUMBER_LABEL.captures(&l.text) {
            if c[1].parse::<u32>().ok() == Some(next) {
                starts.push(i);
                next += 1;
            }
        }
    }
    if starts.len() < 3 {
        return None;
    }
    let mut out = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(lines.len());
        let label = (k + 1).to_string();
        let mut raw = lines[s].text.trim_start()[label.len()..].trim_start_matches('.').trim().to_string();
        for l in &lines[s + 1..e] {
            join_line(&mut raw, &l.text);
        }
        let mut r = Reference { label, raw, ..Default::default() };
        fill_fields(&mut r);
        out.push(r);
    }
    Some(out)
}

/// Author–year entries: a new entry starts at a line flush with its
/// column's left edge when the list uses hanging indents; otherwise where
/// the previous entry has ended (a final period after a year) and the line
/// opens like an author list, or after a larger vertical gap.
fn split_author_year(lines: &[&Line]) -> Vec<Reference> {
    let mut starts = vec![true; lines.len()];
    // Per column run: the left edge, and whether continuation lines are indented.
    let mut i = 0;
    while i < lines.len() {
        // A run: one page and column, lines starting near each other (a
        // column the layout did not tell apart still starts far away).
        let mut j = i;
        let mut run_left = lines[i].x0;
        while j < lines.len()
            && lines[j].page == lines[i].page
            && lines[j].column == lines[i].column
            && (lines[j].x0 - run_left).abs() < 60.0
        {
            run_left = run_left.min(lines[j].x0);
            j += 1;
        }
        let run = &lines[i..j];
        let left = run.iter().map(|l| l.x0).fold(f32::MAX, f32::min);
        let indented = run.iter().filter(|l| l.x0 - left > 3.0 && l.x0 - left < 40.0).count();
        let flush = run.len() - indented;
        let hanging = indented * 5 >= run.len() && flush * 8 >= run.len() && flush >= 2;
        let gaps: Vec<f32> = run.windows(2).map(|w| w[1].top - w[0].bottom).filter(|g| *g > -2.0 && *g < 40.0).collect();
        let typical = median(&gaps).unwrap_or(2.0);
        for k in 0..run.len() {
            let l = run[k];
            starts[i + k] = if k == 0 {
                // The first line of a run continues the previous entry
                // unless it opens like one.
                i == 0 || hanging && l.x0 - left <= 3.0 || opens_entry(lines[i + k - 1], l)
            } else if hanging {
                l.x0 - left <= 3.0 || opens_entry(run[k - 1], l) && l.x0 - left <= 6.0
            } else {
                let gap = l.top - run[k - 1].bottom;
                opens_entry(run[k - 1], l) || (gap > typical + 2.5 && gap < 40.0 && ends_entry(&run[k - 1].text))
            };
        }
        i = j;
    }
    let mut out: Vec<Reference> = Vec::new();
    for (k, l) in lines.iter().enumerate() {
        if starts[k] || out.is_empty() {
            out.push(Reference { raw: l.text.trim().to_string(), ..Default::default() });
        } else {
            join_line(&mut out.last_mut().expect("a reference was started").raw, &l.text);
        }
    }
    // Drop page furniture that got between entries (no year, very short).
    out.retain(|r| YEAR.is_match(&r.raw) || r.raw.len() > 40);
    for r in &mut out {
        fill_fields(r);
    }
    out
}

fn ends_entry(prev: &str) -> bool {
    let t = prev.trim_end();
    t.ends_with('.') || t.ends_with(')') || YEAR.find_iter(t).last().is_some_and(|m| m.end() + 2 >= t.len())
}

/// Whether `l` starts an entry, given the line before it.
fn opens_entry(prev: &Line, l: &Line) -> bool {
    let t = l.text.trim_start();
    if !AUTHOR_START.is_match(t) || !ends_entry(&prev.text) {
        return false;
    }
    // "In Proceedings of ..., pages 1-8." ends with a period too; the line
    // after it must look like names: a year soon after them.
    let head: String = t.chars().take(160).collect();
    YEAR.is_match(&head) || t.len() < 60
}

/// Appends a line to an entry, joining a word hyphenated across the break.
pub fn join_line(raw: &mut String, next: &str) {
    let next = next.trim();
    if next.is_empty() {
        return;
    }
    if raw.ends_with('-') && !raw.ends_with("--") && next.starts_with(|c: char| c.is_lowercase()) {
        let before = raw[..raw.len() - 1].chars().last();
        if before.is_some_and(char::is_alphabetic) {
            raw.pop();
            raw.push_str(next);
            return;
        }
    }
    if !raw.is_empty() {
        raw.push(' ');
    }
    raw.push_str(next);
}

fn median(v: &[f32]) -> Option<f32> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f32::total_cmp);
    Some(s[s.len() / 2])
}

/// Year, year suffix and authors' family names of an entry.
pub fn fill_fields(r: &mut Reference) {
    let raw = &r.raw;
    let year = YEAR.captures(raw);
    r.year = year.as_ref().and_then(|c| c[1].parse().ok());
    if let Some(c) = &year {
        if let Some(suffix) = c.get(2) {
            r.year_suffix = Some(suffix.as_str().chars().next().expect("the suffix group matches one letter"));
        }
    }
    let names_end = year
        .as_ref()
        .map_or_else(|| raw.char_indices().nth(120).map_or(raw.len(), |(i, _)| i), |c| c.get(0).expect("group 0 is the match").start());
    r.surnames = surnames(&raw[..names_end]);
}

/// Family names in an author list: "Chieu, Hai Leong and Hwee Tou Ng." →
/// [Chieu, Ng]; "D. Cutting, J. Kupiec, and P. Sibun" → [Cutting, Kupiec,
/// Sibun]; "KOGURE, K." → [Kogure]. The first is the first author's.
pub fn surnames(authors: &str) -> Vec<String> {
    let text = authors.replace(" & ", " and ").replace(';', ",");
    // Pieces separated by commas and "and".
    let mut pieces: Vec<String> = Vec::new();
    for part in text.split(',') {
        for p in part.split(" and ") {
            let p = p.trim().trim_end_matches('.').trim();
            if !p.is_empty() {
                pieces.push(p.to_string());
            }
        }
    }
    let words = |p: &str| -> Vec<String> {
        p.split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphabetic() && c != '\'' && c != '-').to_string())
            .filter(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 2 && w.chars().next().is_some_and(char::is_uppercase))
            .collect()
    };
    let mut out = Vec::new();
    let mut k = 0;
    while k < pieces.len() {
        let ws = words(&pieces[k]);
        let is_initials = |p: &str| {
            p.split_whitespace().all(|w| {
                w.trim_end_matches('.').chars().count() <= 2 || w.chars().all(|c| c.is_uppercase() || c == '.' || c == '-') && w.len() <= 3
            })
        };
        if ws.is_empty() {
            k += 1;
            continue;
        }
        // "Surname, Given" (the piece after is given names or initials):
        // a piece of bare capitalised names, no initials.
        let bare = pieces[k].split_whitespace().count() == ws.len();
        let next_is_given = bare
            && pieces.get(k + 1).is_some_and(|n| {
                let nw: Vec<&str> = n.split_whitespace().collect();
                is_initials(n) || (nw.len() <= 3 && k == 0 && ws.len() == 1)
            });
        if (ws.len() == 1 || next_is_given && ws.len() <= 2) && (k == 0 || ws.len() == 1 || next_is_given) {
            out.push(fold(&ws.join(" ")));
            k += if next_is_given { 2 } else { 1 };
            continue;
        }
        // "Given Surname": the last capitalised word.
        out.push(fold(ws.last().expect("words were seen")));
        k += 1;
    }
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str, x0: f32, top: f32) -> Line {
        Line { text: text.into(), x0, x1: x0 + 200.0, top, bottom: top + 9.0, size: 9.0, page: 8, column: 0, heading: false }
    }

    #[test]
    fn family_names_of_author_lists() {
        assert_eq!(surnames("Chieu, Hai Leong and Hwee Tou Ng. "), ["chieu", "ng"]);
        assert_eq!(surnames("D. Cutting, J. Kupiec, J. Pedersen, and P. Sibun. "), ["cutting", "kupiec", "pedersen", "sibun"]);
        assert_eq!(surnames("Hai Leong Chieu and Hwee Tou Ng. "), ["chieu", "ng"]);
        assert_eq!(surnames("Brill, E. ("), ["brill"]);
        assert_eq!(surnames("van Halteren, H., J. Zavrel, and W. Daelemans. "), ["halteren", "zavrel", "daelemans"]);
        assert_eq!(surnames("Schölkopf, Bernhard and Alexander J. Smola. "), ["scholkopf", "smola"]);
    }

    #[test]
    fn bracketed_lists_split_on_labels() {
        let lines = [
            line("[1] D. E. Appelt. Weighted abduction as an inference", 60.0, 100.0),
            line("method for plan recognition. In Proc., 1990.", 70.0, 110.0),
            line("[Kogure 90] K. Kogure. Strategic lazy incremental copy", 60.0, 120.0),
            line("graph unification. In COLING, 1990.", 70.0, 130.0),
            line("[3] T. Gunji. Japanese Phrase Structure Grammar. 1987.", 60.0, 140.0),
        ];
        let (style, refs) = split_entries(&lines);
        assert_eq!(style, ListStyle::Bracketed);
        assert_eq!(refs.iter().map(|r| r.label.as_str()).collect::<Vec<_>>(), ["1", "Kogure 90", "3"]);
        assert_eq!(refs[1].raw, "K. Kogure. Strategic lazy incremental copy graph unification. In COLING, 1990.");
        assert_eq!(refs[1].year, Some(1990));
    }

    #[test]
    fn author_year_lists_split_where_entries_start() {
        let lines = [
            line("Chieu, Hai Leong and Hwee Tou Ng. 2002. Named", 60.0, 100.0),
            line("entity recognition: A maximum entropy approach", 60.0, 110.0),
            line("using global information. In COLING.", 60.0, 120.0),
            line("Collins, Michael. 2002a. New ranking algo-", 60.0, 130.0),
            line("rithms for parsing and tagging. In ACL.", 60.0, 140.0),
            line("Collins, Michael. 2002b. Ranking algorithms for", 60.0, 150.0),
            line("named-entity extraction. In ACL.", 60.0, 160.0),
        ];
        let (style, refs) = split_entries(&lines);
        assert_eq!(style, ListStyle::AuthorYear);
        assert_eq!(refs.len(), 3, "{refs:#?}");
        assert_eq!(refs[0].surnames, ["chieu", "ng"]);
        assert_eq!(refs[1].raw, "Collins, Michael. 2002a. New ranking algorithms for parsing and tagging. In ACL.");
        assert_eq!((refs[2].year, refs[2].year_suffix), (Some(2002), Some('b')));
    }

    #[test]
    fn hanging_indents_mark_entries() {
        let lines = [
            line("Brill, E. 1995. Transformation-based error-driven", 60.0, 100.0),
            line("learning and natural language processing.", 68.0, 110.0),
            line("Computational Linguistics 21(4).", 68.0, 120.0),
            line("Golding, A. R. 1995. A Bayesian hybrid method for", 60.0, 130.0),
            line("context-sensitive spelling correction.", 68.0, 140.0),
        ];
        let (_, refs) = split_entries(&lines);
        assert_eq!(refs.len(), 2);
        assert_eq!(refs[1].surnames, ["golding"]);
    }

    #[test]
    fn section_is_found_after_its_heading() {
        let mut lines: Vec<Line> = (0..20).map(|i| line(&format!("body line {i}"), 60.0, i as f32 * 10.0)).collect();
        lines.push(line("References", 60.0, 300.0));
        lines.push(line("Brill, E. 1995. Transformation-based learning.", 60.0, 310.0));
        assert_eq!(section(&lines), Some((21, 22)));
    }
}
