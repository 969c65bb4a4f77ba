//! Evidence spans from one citing sentence: for each group of adjacent
//! citation markers that cites known papers,
//! (i) the words between the previous group (or the sentence start) and it,
//! (ii) the whole sentence when the group ends the sentence or is its only group,
//! (iii) the short entity mention the group attaches to.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::chunker::mention_before;
use super::markers::{strip_markers, Marker};

/// Which rule produced a span.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpanKind {
    Between,
    Sentence,
    Mention,
}

/// A normalised span and the papers its citation group cites.
#[derive(Debug, Clone, PartialEq)]
pub struct ExtractedSpan {
    pub text: String,
    pub kind: SpanKind,
    pub cited: Vec<String>,
}

/// Adjacent markers merged into one reference group.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub start: usize,
    pub end: usize,
    pub cited: Vec<String>,
}

static PLACEHOLDER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{\{(?:formula|cite|figure|table):[^}]*\}\}").expect("a valid pattern"));
static EMPTY_BRACKETS: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\(\s*[,;]?\s*\)|\[\s*[,;]?\s*\]").expect("a valid pattern"));

/// Markers separated only by these (and white space / punctuation) form one group.
const GROUP_JOINERS: &[&str] = &["and", "or", "&", "e.g.", "see", "cf.", "also"];

/// Merges adjacent markers (sorted, non-overlapping) into groups.
pub fn group_markers(text: &str, markers: &[Marker]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    // The papers already in the last group, to add each once in linear time.
    let mut in_last: std::collections::HashSet<&str> = Default::default();
    for m in markers {
        if let Some(last) = groups.last_mut() {
            let gap = text[last.end..m.start].trim_matches(|c: char| c.is_whitespace() || ",;()[]".contains(c));
            if gap.is_empty() || GROUP_JOINERS.contains(&gap) {
                last.end = m.end;
                for c in &m.cited {
                    if in_last.insert(c) {
                        last.cited.push(c.clone());
                    }
                }
                continue;
            }
        }
        in_last = m.cited.iter().map(String::as_str).collect();
        groups.push(Group { start: m.start, end: m.end, cited: m.cited.clone() });
    }
    groups
}

/// Normalises span text: markers, leftover author–year citations and
/// placeholders removed, empty brackets dropped, white space collapsed,
/// dangling punctuation and conjunctions trimmed.
pub fn normalize(text: &str) -> String {
    let no_placeholders = PLACEHOLDER.replace_all(text, " ");
    let stripped = strip_markers(&no_placeholders);
    let mut s = EMPTY_BRACKETS.replace_all(&stripped, " ").split_whitespace().collect::<Vec<_>>().join(" ");
    // Commas left doubled or detached where markers were removed.
    while s.contains(" ,") || s.contains(",,") {
        s = s.replace(" ,", ",").replace(",,", ",");
    }
    // A bracket opened by a removed citation and never closed: "(van".
    if let Some(open) = s.rfind('(') {
        if !s[open..].contains(')') && s[open..].split_whitespace().count() <= 3 {
            s.truncate(open);
        }
    }
    loop {
        let before = s.len();
        s = s
            .trim_start_matches(|c: char| c.is_whitespace() || ",;:.)]-–—".contains(c))
            .trim_end_matches(|c: char| c.is_whitespace() || ",;:.([-–—".contains(c))
            .to_string();
        for lead in ["and ", "or ", "but ", "while ", "whereas "] {
            if s.len() > lead.len() && s.get(..lead.len()).is_some_and(|h| h.eq_ignore_ascii_case(lead)) {
                s = s[lead.len()..].to_string();
            }
        }
        for tail in [" and", " or"] {
            if s.to_ascii_lowercase().ends_with(tail) {
                s.truncate(s.len() - tail.len());
            }
        }
        if s.len() == before {
            break;
        }
    }
    s
}

/// A span worth keeping has at least one word of three or more letters.
fn is_informative(s: &str) -> bool {
    s.split_whitespace().any(|w| w.chars().filter(|c| c.is_alphabetic()).count() >= 3)
}

/// Extracts the spans of one sentence given all its markers (sorted,
/// non-overlapping). The same text may come out under two kinds (a mention
/// that is the whole between-span); the database merges them, counting the
/// sentence once.
pub fn extract_spans(sentence: &str, markers: &[Marker]) -> Vec<ExtractedSpan> {
    let groups = group_markers(sentence, markers);
    let mut out: Vec<ExtractedSpan> = Vec::new();
    let mut seen: std::collections::HashSet<(String, SpanKind, Vec<String>)> = Default::default();
    let mut push = |text: String, kind: SpanKind, cited: &[String]| {
        if is_informative(&text) && seen.insert((text.clone(), kind, cited.to_vec())) {
            out.push(ExtractedSpan { text, kind, cited: cited.to_vec() });
        }
    };
    for (i, g) in groups.iter().enumerate() {
        if g.cited.is_empty() {
            continue;
        }
        let prev_end = if i == 0 { 0 } else { groups[i - 1].end };
        let region = &sentence[prev_end..g.start];
        push(normalize(region), SpanKind::Between, &g.cited);
        let tail = &sentence[g.end..];
        let ends_sentence = tail.trim_matches(|c: char| c.is_whitespace() || ".!?;:,)]\"”".contains(c)).is_empty();
        if groups.len() == 1 || ends_sentence {
            push(normalize(sentence), SpanKind::Sentence, &g.cited);
        }
        if let Some(m) = mention_before(region, region.len()) {
            push(normalize(&m), SpanKind::Mention, &g.cited);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::markers::find_markers;

    fn spans(s: &str) -> Vec<(SpanKind, String)> {
        let markers = find_markers(s, &["p".to_string()]);
        extract_spans(s, &markers).into_iter().map(|x| (x.kind, x.text)).collect()
    }

    #[test]
    fn single_group_mid_sentence() {
        assert_eq!(
            spans("The English POS-tagging has been carried out using freely available TNT tagger [CIT] on the data."),
            [
                (SpanKind::Between, "The English POS-tagging has been carried out using freely available TNT tagger".into()),
                (SpanKind::Sentence, "The English POS-tagging has been carried out using freely available TNT tagger on the data".into()),
                (SpanKind::Mention, "TNT tagger".into()),
            ]
        );
    }

    #[test]
    fn between_previous_group_and_this_one() {
        let s = "PropBank (Palmer et al, 2005 ) and NomBank [CIT] projects have annotated shallow semantic structures.";
        assert_eq!(spans(s), [(SpanKind::Between, "NomBank".into()), (SpanKind::Mention, "NomBank".into())]);
    }

    #[test]
    fn group_at_sentence_end_and_adjacent_markers() {
        let s = "Earlier work focused on extractive summarization [4, 5] and [CIT].";
        let markers = find_markers(s, &["p".to_string()]);
        let groups = group_markers(s, &markers);
        assert_eq!(groups.len(), 1, "adjacent markers form one group");
        assert_eq!(
            spans(s),
            [
                (SpanKind::Between, "Earlier work focused on extractive summarization".into()),
                (SpanKind::Sentence, "Earlier work focused on extractive summarization".into()),
                (SpanKind::Mention, "extractive summarization".into()),
            ]
        );
    }

    #[test]
    fn citation_at_sentence_start() {
        assert_eq!(
            spans("[CIT] argues that the conditional independence assumption is remarkably strong."),
            [(SpanKind::Sentence, "argues that the conditional independence assumption is remarkably strong".into())]
        );
    }

    #[test]
    fn twenty_thousand_markers_in_one_sentence() {
        let n = 20_000;
        let mut s = String::from("Many systems");
        let mut markers = Vec::new();
        for i in 0..n {
            let start = s.len() + 1;
            s.push_str(&format!(" [{i}] and system{i}"));
            markers.push(Marker { start, end: start + format!("[{i}]").len(), cited: vec![format!("p{}", i % 100)] });
        }
        s.push('.');
        let groups = group_markers(&s, &markers);
        assert_eq!(groups.len(), n);
        let spans = extract_spans(&s, &markers);
        assert_eq!(spans.iter().filter(|x| x.kind == SpanKind::Between).count(), n, "one between-span per group");
    }

    #[test]
    fn normalization() {
        assert_eq!(normalize("  ( [CIT] ) , and the Duden ( ) ."), "the Duden");
        assert_eq!(normalize("models {{formula:abc-1}} converge (Smith, 2001; Doe 2002)."), "models converge");
        assert_eq!(normalize("1 Â° body and"), "1 Â° body", "multi-byte text near the trimmed words");
        assert_eq!(normalize("multiple entities (the dogs) (van [CIT]"), "multiple entities (the dogs)");
        assert_eq!(normalize("structures, [3], used statistics , here"), "structures, used statistics, here");
    }
}
