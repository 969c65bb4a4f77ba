//! Rule-based sentence splitting that never cuts inside a citation marker.

/// Abbreviations after which a period does not end a sentence.
const ABBREVIATIONS: &[&str] = &[
    "al", "e.g", "i.e", "eg", "ie", "cf", "vs", "etc", "fig", "figs", "eq", "eqs", "sec", "secs", "tab", "no", "nos", "resp", "approx",
    "dr", "mr", "ms", "mrs", "prof", "st", "jr", "vol", "pp", "ch", "ref", "refs", "thm", "lem", "def", "prop", "cor", "alg", "app", "ca",
    "viz",
];

/// Byte ranges of the sentences of `text`. A boundary is `.`, `!` or `?`
/// followed by white space and an upper-case letter, digit, bracket or
/// quote, outside every `protected` range, and not after an abbreviation or
/// a single-letter initial.
pub fn split_sentences(text: &str, protected: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    // Protected ranges by start, with the furthest end reached so far: a
    // position is protected when a range starting at or before it ends after it.
    let mut ranges = protected.to_vec();
    ranges.sort_unstable();
    let reach: Vec<usize> = ranges
        .iter()
        .scan(0, |far, &(_, e)| {
            *far = e.max(*far);
            Some(*far)
        })
        .collect();
    let is_protected = |pos: usize| {
        let n = ranges.partition_point(|&(s, _)| s <= pos);
        n > 0 && reach[n - 1] > pos
    };
    for (i, &(pos, c)) in chars.iter().enumerate() {
        if !matches!(c, '.' | '!' | '?') || is_protected(pos) {
            continue;
        }
        let Some(&(_, next)) = chars.get(i + 1) else { continue };
        if !next.is_whitespace() {
            continue;
        }
        let Some(&(next_pos, after)) = chars[i + 1..].iter().find(|(_, ch)| !ch.is_whitespace()) else { continue };
        if !(after.is_uppercase() || after.is_ascii_digit() || matches!(after, '(' | '[' | '"' | '“' | '{')) {
            continue;
        }
        if c == '.' && is_abbreviation(&text[start..pos]) {
            continue;
        }
        out.push((start, pos + c.len_utf8()));
        start = next_pos;
    }
    if text[start..].trim().is_empty() {
        if let Some(last) = out.last_mut() {
            last.1 = last.1.max(text.trim_end().len());
        }
    } else {
        out.push((start, text.trim_end().len().max(start)));
    }
    out
}

fn is_abbreviation(before: &str) -> bool {
    let word = before.rsplit(|c: char| c.is_whitespace() || c == '(').next().unwrap_or("");
    let lower = word.to_lowercase();
    ABBREVIATIONS.contains(&lower.as_str()) || (word.chars().count() == 1 && word.chars().all(char::is_uppercase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_protected_ranges() {
        let text = "A claim (X. et al. 2001). ".repeat(20_000) + "Done.";
        let protected: Vec<(usize, usize)> = text.match_indices('(').map(|(i, _)| (i, i + 16)).collect();
        let sentences = split_sentences(&text, &protected);
        assert_eq!(sentences.len(), 20_001);
        assert_eq!(&text[sentences[1].0..sentences[1].1], "A claim (X. et al. 2001).");
    }

    fn split(t: &str) -> Vec<&str> {
        split_sentences(t, &[]).into_iter().map(|(s, e)| &t[s..e]).collect()
    }

    #[test]
    fn splits_on_sentence_ends_only() {
        assert_eq!(
            split("We follow Smith et al. [3]. Results are in Fig. 2. J. Doe agrees! Does it? yes."),
            ["We follow Smith et al. [3].", "Results are in Fig. 2.", "J. Doe agrees!", "Does it? yes."]
        );
        assert_eq!(split("One sentence without a final stop"), ["One sentence without a final stop"]);
        assert_eq!(split("e.g. This stays. Then (a new one)."), ["e.g. This stays.", "Then (a new one)."]);
    }

    #[test]
    fn protected_ranges_are_not_cut() {
        let t = "As in {{cite:A. B. Model. 2020}} we go. Next.";
        let s = t.find("{{").unwrap();
        let e = t.find("}}").unwrap() + 2;
        let parts: Vec<&str> = split_sentences(t, &[(s, e)]).into_iter().map(|(a, b)| &t[a..b]).collect();
        assert_eq!(parts, ["As in {{cite:A. B. Model. 2020}} we go.", "Next."]);
    }
}
