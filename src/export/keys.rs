//! Citation keys for exported entries.

use serde::{Deserialize, Serialize};

use crate::corpus::Paper;

/// How exported entries are keyed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum KeyStyle {
    /// `shokouhi2013learning`: first author's family name, year, first
    /// significant title word.
    #[default]
    AuthorYearFirstword,
    /// `shokouhi2013`.
    AuthorYear,
    /// The key the library has (falls back to `authorYearFirstword`).
    Original,
}

const SKIP_WORDS: &[&str] = &[
    "a", "an", "the", "on", "of", "in", "for", "to", "and", "with", "from", "towards", "toward", "via", "is", "are", "what", "how", "why",
    "when", "do", "does",
];

/// ASCII letters and digits of a word, lower-cased, accents folded.
fn ascii_word(s: &str) -> String {
    s.chars().map(fold).flat_map(|c| c.to_lowercase()).filter(|c| c.is_ascii_alphanumeric()).collect()
}

fn fold(c: char) -> char {
    match c {
        'à'..='å' | 'À'..='Å' | 'ā' => 'a',
        'ç' | 'Ç' | 'č' | 'ć' => 'c',
        'è'..='ë' | 'È'..='Ë' | 'ē' | 'ě' => 'e',
        'ì'..='ï' | 'Ì'..='Ï' | 'ı' => 'i',
        'ñ' | 'Ñ' | 'ń' => 'n',
        'ò'..='ö' | 'ø' | 'Ò'..='Ö' | 'Ø' => 'o',
        'ù'..='ü' | 'Ù'..='Ü' => 'u',
        'ý' | 'ÿ' | 'Ý' => 'y',
        'š' | 'ś' | 'ß' => 's',
        'ž' | 'ź' | 'ż' => 'z',
        'ł' | 'Ł' => 'l',
        other => other,
    }
}

/// The base key of a paper in a style (before collision suffixes).
pub fn base_key(p: &Paper, style: KeyStyle) -> String {
    if style == KeyStyle::Original && !p.key.is_empty() && !p.key.contains(['/', ' ', ',', '{', '}']) {
        return p.key.clone();
    }
    let family = p
        .authors
        .first()
        .and_then(|a| a.split_whitespace().last())
        .map(ascii_word)
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "anon".into());
    let year = p.year.map(|y| y.to_string()).unwrap_or_else(|| "nd".into());
    if style == KeyStyle::AuthorYear {
        return format!("{family}{year}");
    }
    let word = p
        .title
        .split(|c: char| c.is_whitespace() || c == '-' || c == ':')
        .map(ascii_word)
        .find(|w| !w.is_empty() && !SKIP_WORDS.contains(&w.as_str()))
        .unwrap_or_default();
    format!("{family}{year}{word}")
}

/// A paper's key in `style`, made unique against the keys `taken` names
/// (what a Zotero import gives an item without a citation key).
pub fn make_key(style: KeyStyle) -> impl Fn(&Paper, &dyn Fn(&str) -> bool) -> String + Sync + Send + 'static {
    move |p, taken| unique_key(&base_key(p, style), taken)
}

/// `base`, or `base` + a, b, ... z, aa, ... : the first that `taken` rejects not.
pub fn unique_key(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    for n in 0.. {
        let mut suffix = String::new();
        let mut k = n;
        loop {
            suffix.insert(0, (b'a' + (k % 26) as u8) as char);
            if k < 26 {
                break;
            }
            k = k / 26 - 1;
        }
        let candidate = format!("{base}{suffix}");
        if !taken(&candidate) {
            return candidate;
        }
    }
    unreachable!()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paper(authors: &[&str], year: Option<i32>, title: &str) -> Paper {
        Paper { authors: authors.iter().map(|s| s.to_string()).collect(), year, title: title.into(), ..Default::default() }
    }

    #[test]
    fn styles() {
        let p = paper(&["Milad Shokouhi"], Some(2013), "Learning to Personalize Query Auto-Completion");
        assert_eq!(base_key(&p, KeyStyle::AuthorYearFirstword), "shokouhi2013learning");
        assert_eq!(base_key(&p, KeyStyle::AuthorYear), "shokouhi2013");
        let q = paper(&["Jörg Müller"], None, "The Café: A Study");
        assert_eq!(base_key(&q, KeyStyle::AuthorYearFirstword), "muller".to_string() + "ndcafe");
        let anon = paper(&[], Some(2000), "{TnT} -- A Tagger");
        assert_eq!(base_key(&anon, KeyStyle::AuthorYearFirstword), "anon2000tnt");
        let mut orig = p.clone();
        orig.key = "shokouhi13".into();
        assert_eq!(base_key(&orig, KeyStyle::Original), "shokouhi13");
        orig.key = "10.1145/2484028.2484076".into();
        assert_eq!(base_key(&orig, KeyStyle::Original), "shokouhi2013learning");
    }

    #[test]
    fn collisions_get_letter_suffixes() {
        assert_eq!(unique_key("k", |_| false), "k");
        assert_eq!(unique_key("k", |k| k == "k"), "ka");
        assert_eq!(unique_key("k", |k| ["k", "ka", "kb"].contains(&k)), "kc");
        let taken: Vec<String> = std::iter::once("k".to_string()).chain((b'a'..=b'z').map(|c| format!("k{}", c as char))).collect();
        assert_eq!(unique_key("k", |k| taken.iter().any(|t| t == k)), "kaa");
    }
}
