//! Citation keys for exported entries.

use serde::{Deserialize, Serialize};

use crate::corpus::citation_markup::{is_citation_key, CiteSyntax};
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
    /// The key the library has (falls back to `authorYearFirstword` when
    /// it has none, holds a `/`, or is not a citation key:
    /// [`crate::corpus::citation_markup::citation_key`]).
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

pub use crate::corpus::unique_key::{unique_key, unique_key_from};

/// The base key of a paper in a style (before collision suffixes). Every
/// key made here is a citation key ([`is_citation_key`]): the library's own
/// key is kept (`Original`) only when it is one, in the rule BibTeX and a
/// LaTeX draft share; a draft of another syntax checks its own rule where
/// it writes the key.
pub fn base_key(p: &Paper, style: KeyStyle) -> String {
    if style == KeyStyle::Original && !p.key.contains('/') && is_citation_key(&p.key, CiteSyntax::Latex) {
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

/// A paper's key in `style` before it is made unique (what a Zotero
/// import gives an item without a citation key; the import makes it unique
/// with [`unique_key_from`]).
pub fn make_key(style: KeyStyle) -> impl Fn(&Paper) -> String + Sync + Send + 'static {
    move |p| base_key(p, style)
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
        // A library key that is no citation key is never exported as one.
        for key in [r"new}\input{/etc/passwd}\cite{x", "a%b", "two words", ""] {
            orig.key = key.into();
            assert_eq!(base_key(&orig, KeyStyle::Original), "shokouhi2013learning", "{key:?}");
        }
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
