//! Papers in the benchmark's JSON Lines layout (one object per line).

use serde::Deserialize;

use super::bibtex::parse_year;
use super::html_text::html_to_text;
use super::paper::{normalize_doi, Paper};

#[derive(Deserialize)]
struct Row {
    id: String,
    title: String,
    #[serde(default, rename = "abstract")]
    abstract_text: Option<String>,
    #[serde(default)]
    authors: serde_json::Value,
    #[serde(default)]
    year: serde_json::Value,
    #[serde(default)]
    venue: Option<String>,
    #[serde(default)]
    doi: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    bibkey: Option<String>,
    #[serde(default)]
    keywords: serde_json::Value,
    /// The paper is flagged retracted.
    #[serde(default)]
    retracted: bool,
}

/// Parses one line. Errors name the problem; the caller adds file and line.
pub fn parse_line(line: &str) -> Result<Paper, String> {
    // serde would also read a struct from a JSON array, by position.
    if !line.trim_start().starts_with('{') {
        return Err("not a JSON object (`{\"id\": ..., \"title\": ...}`)".into());
    }
    let row: Row = serde_json::from_str(line).map_err(|e| e.to_string())?;
    if row.id.trim().is_empty() {
        return Err("empty field `id`".into());
    }
    // Plain text, not LaTeX: HTML read as text (`&amp;`, `<i>`), white
    // space collapsed and control characters (a NUL, an escape) dropped.
    let mut title = html_to_text(&row.title).split_whitespace().collect::<Vec<_>>().join(" ");
    title.retain(|c| !c.is_control());
    if title.is_empty() {
        return Err(format!("empty field `title` (id `{}`)", row.id));
    }
    let year = match &row.year {
        serde_json::Value::Number(n) => n.as_i64().map(|y| y as i32),
        serde_json::Value::String(s) => parse_year(s),
        _ => None,
    };
    // Entities end in `;`: decoded before the list is split at `;`.
    let keywords = match row.keywords {
        serde_json::Value::String(s) => {
            html_to_text(&s).split([',', ';']).map(str::trim).filter(|k| !k.is_empty()).map(String::from).collect()
        }
        serde_json::Value::Array(a) => a.iter().filter_map(|v| v.as_str()).map(|k| html_to_text(k).trim().to_string()).collect(),
        _ => Vec::new(),
    };
    Ok(Paper {
        id: row.id.trim().to_string(),
        key: row.bibkey.unwrap_or_default(),
        doi: normalize_doi(&row.doi.unwrap_or_default()),
        title,
        abstract_text: html_to_text(&row.abstract_text.unwrap_or_default()).trim().to_string(),
        keywords,
        authors: authors_of(row.authors),
        year,
        venue: html_to_text(&row.venue.unwrap_or_default()).into_owned(),
        url: row.url.unwrap_or_default(),
        entry_type: String::new(),
        bibtex: String::new(),
        retracted: row.retracted,
        zotero: None,
    })
}

/// Authors as a list of names, a list of `{"name": ..}` objects, one string
/// (`A and B`, `A; B`, or a JSON-encoded list), or null; HTML read as text
/// (before a string is split at `;`, which ends an entity).
fn authors_of(v: serde_json::Value) -> Vec<String> {
    use serde_json::Value;
    let text = |s: &str| html_to_text(s).into_owned();
    let names = match v {
        Value::Array(items) => items
            .into_iter()
            .filter_map(|i| match i {
                Value::String(s) => Some(text(&s)),
                Value::Object(o) => o.get("name").and_then(Value::as_str).map(text),
                _ => None,
            })
            .collect(),
        Value::String(s) if s.trim_start().starts_with('[') => vec![s],
        Value::String(s) => {
            let s = text(&s);
            let sep = if s.contains(';') { ";" } else { " and " };
            s.split(sep).map(String::from).collect()
        }
        _ => Vec::new(),
    };
    flatten_authors(names)
}

/// Some rows carry their author list as one JSON-encoded string; expand it.
fn flatten_authors(authors: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(authors.len());
    for a in authors {
        let t = a.trim();
        if t.starts_with('[') {
            if let Ok(inner) = serde_json::from_str::<Vec<String>>(t) {
                out.extend(inner.into_iter().map(|s| s.trim().to_string()).filter(|s| !s.is_empty()));
                continue;
            }
        }
        if !t.is_empty() {
            out.push(t.to_string());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn benchmark_row_parses() {
        let p = parse_line(r#"{"id": "acl:A00-1031", "title": "TnT -  A Tagger", "abstract": "", "authors": ["Thorsten Brants"], "year": "2000", "venue": "ANLP", "doi": "", "url": "u", "bibkey": "brants-2000-tnt"}"#).unwrap();
        assert_eq!(p.id, "acl:A00-1031");
        assert_eq!(p.title, "TnT - A Tagger");
        assert_eq!(p.key, "brants-2000-tnt");
        assert_eq!(p.year, Some(2000));
    }

    #[test]
    fn json_encoded_author_lists_are_expanded() {
        let p = parse_line(r#"{"id": "x", "title": "T", "authors": ["[\"Akiko Kozaki\", \"Go Takeba\"]"], "year": ""}"#).unwrap();
        assert_eq!(p.authors, vec!["Akiko Kozaki", "Go Takeba"]);
        assert_eq!(p.year, None);
    }

    #[test]
    fn authors_as_a_string_objects_or_null() {
        let authors = |json: &str| parse_line(&format!(r#"{{"id": "x", "title": "T", "authors": {json}}}"#)).unwrap().authors;
        assert_eq!(authors(r#""Ada Lovelace and Alan Turing""#), ["Ada Lovelace", "Alan Turing"]);
        assert_eq!(authors(r#""Lovelace, Ada; Turing, Alan""#), ["Lovelace, Ada", "Turing, Alan"]);
        assert_eq!(authors(r#"[{"name": "Ada Lovelace"}, 3, "Alan Turing"]"#), ["Ada Lovelace", "Alan Turing"]);
        assert!(authors("null").is_empty());
    }

    /// HTML in a row (a publisher's title, an abstract from a web page)
    /// reads as text in every field.
    #[test]
    fn html_reads_as_text() {
        let p = parse_line(
            r#"{"id": "x", "title": "X-CLE<span class=\"smallcaps SmallerCapital\">a</span>VER &amp; <i>Friends</i>", "abstract": " p &lt; 0.05<br>Next &#233;t&#xE9; ", "venue": "Research &amp; Development", "authors": "M&uuml;ller, J.; Smith, A.", "keywords": "R&amp;D; <i>search</i>"}"#,
        )
        .unwrap();
        assert_eq!(p.title, "X-CLEaVER & Friends");
        assert_eq!(p.abstract_text, "p < 0.05 Next été");
        assert_eq!(p.venue, "Research & Development");
        assert_eq!(p.authors, ["Müller, J.", "Smith, A."]);
        assert_eq!(p.keywords, ["R&D", "search"]);
        let p = parse_line(r#"{"id": "y", "title": "T", "authors": ["J&ouml;rg <b>M</b>"], "keywords": ["a &amp; b"]}"#).unwrap();
        assert_eq!((p.authors, p.keywords), (vec!["Jörg M".to_string()], vec!["a & b".to_string()]));
    }

    #[test]
    fn bad_rows_name_the_problem() {
        assert!(parse_line(r#"{"id": "x"}"#).unwrap_err().contains("title"));
        assert!(parse_line(r#"{"id": " ", "title": "T"}"#).unwrap_err().contains("id"));
        assert!(parse_line("{not json").is_err());
        assert_eq!(parse_line(r#"["id", "title"]"#).unwrap_err(), r#"not a JSON object (`{"id": ..., "title": ...}`)"#);
    }
}
