//! BibTeX import: splitting a file into entries (with line numbers and the
//! original text) and turning each entry into a [`Paper`].
//!
//! Field values are parsed by the `biblatex` crate (LaTeX escapes, braces,
//! `@string` abbreviations, month macros). Splitting is done here so that one
//! broken entry is reported as `file:line: reason` and skipped while the rest
//! of the file still imports.

use biblatex::{Bibliography, ChunksExt, Entry, Person};

use super::paper::{normalize_doi, Paper};

/// A top-level `@...` block of a BibTeX file.
#[derive(Debug, Clone, PartialEq)]
pub struct RawBlock<'a> {
    /// Block type in lower case: `article`, `string`, `comment`, ...
    pub kind: String,
    /// The block's exact text, from `@` to its closing delimiter.
    pub text: &'a str,
    /// 1-based line of the `@`.
    pub line: usize,
}

/// Outcome for one entry of a file.
#[derive(Debug)]
pub enum EntryOutcome {
    Paper(Box<Paper>),
    /// The entry was skipped; `line` is 1-based in the file.
    Skipped {
        line: usize,
        reason: String,
    },
}

/// Splits BibTeX source into blocks. Unterminated blocks are reported as
/// `Err((line, reason))` items and scanning resumes at the next entry.
pub fn split_blocks(src: &str) -> Vec<Result<RawBlock<'_>, (usize, String)>> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
            i += 1;
            continue;
        }
        if b != b'@' {
            i += 1;
            continue;
        }
        let Some((kind, open_at)) = block_header(bytes, i) else {
            i += 1;
            continue;
        };
        let start_line = line;
        match block_end(bytes, open_at, &mut line) {
            BlockEnd::Closed(end) => {
                out.push(Ok(RawBlock { kind, text: &src[i..end], line: start_line }));
                i = end;
            }
            BlockEnd::NextEntryAt(next) => {
                out.push(Err((start_line, format!("@{kind} entry is not closed (unbalanced braces) before the next entry"))));
                i = next;
            }
            BlockEnd::Eof => {
                out.push(Err((start_line, format!("@{kind} entry is not closed (unbalanced braces) at end of file"))));
                i = bytes.len();
            }
        }
    }
    out
}

/// Parses `@ident {` / `@ident (`; returns the lower-cased ident and the index of the opener.
fn block_header(bytes: &[u8], at: usize) -> Option<(String, usize)> {
    let mut j = at + 1;
    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
        j += 1;
    }
    let ident_start = j;
    while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_' || bytes[j] == b'-') {
        j += 1;
    }
    if j == ident_start {
        return None;
    }
    let kind = std::str::from_utf8(&bytes[ident_start..j]).ok()?.to_ascii_lowercase();
    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
        j += 1;
    }
    matches!(bytes.get(j), Some(b'{') | Some(b'(')).then_some((kind, j))
}

enum BlockEnd {
    /// Index just past the closing delimiter.
    Closed(usize),
    /// An entry header at the start of a line while braces were still open.
    NextEntryAt(usize),
    Eof,
}

fn block_end(bytes: &[u8], open_at: usize, line: &mut usize) -> BlockEnd {
    let paren = bytes[open_at] == b'(';
    let mut depth: usize = 0;
    let mut j = open_at + 1;
    let mut at_line_start = false;
    while j < bytes.len() {
        match bytes[j] {
            b'\n' => {
                *line += 1;
                at_line_start = true;
                j += 1;
                continue;
            }
            b'@' if at_line_start && block_header(bytes, j).is_some() => {
                // A new entry starts a line while this one is still open: the
                // previous entry lost a closing brace.
                return BlockEnd::NextEntryAt(j);
            }
            b'{' => depth += 1,
            b'}' if depth == 0 && !paren => return BlockEnd::Closed(j + 1),
            b'}' => depth = depth.saturating_sub(1),
            b')' if paren && depth == 0 => return BlockEnd::Closed(j + 1),
            _ => {}
        }
        if !bytes[j].is_ascii_whitespace() {
            at_line_start = false;
        }
        j += 1;
    }
    BlockEnd::Eof
}

/// Parses a whole BibTeX source into papers and skip reasons, in file order.
pub fn parse_source(src: &str) -> Vec<EntryOutcome> {
    let mut out = Vec::new();
    let mut strings = String::new();
    for block in split_blocks(src) {
        let block = match block {
            Ok(b) => b,
            Err((line, reason)) => {
                out.push(EntryOutcome::Skipped { line, reason });
                continue;
            }
        };
        match block.kind.as_str() {
            "comment" | "preamble" => {}
            "string" => {
                // Validate on its own so a broken @string is reported where it is.
                let braced = braced(block.text);
                match Bibliography::parse(&braced) {
                    Ok(_) => {
                        strings.push_str(&braced);
                        strings.push('\n');
                    }
                    Err(e) => out.push(EntryOutcome::Skipped {
                        line: block.line + line_offset(block.text, e.span.start),
                        reason: format!("@string: {}", e.kind),
                    }),
                }
            }
            _ => out.push(parse_entry(&block, &strings)),
        }
    }
    out
}

fn line_offset(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())].iter().filter(|&&b| b == b'\n').count()
}

fn parse_entry(block: &RawBlock<'_>, strings: &str) -> EntryOutcome {
    let src = format!("{strings}{}", dotless_to_plain(&braced(block.text)));
    let skipped = |line: usize, reason: String| EntryOutcome::Skipped { line, reason };
    // A lone `$` (prices, "$%#") is plain text to BibTeX but opens math mode
    // for the parser: when parsing fails, retry with every `$` escaped.
    let parsed =
        Bibliography::parse(&src).or_else(|e| if block.text.contains('$') { Bibliography::parse(&escape_dollars(&src)) } else { Err(e) });
    let bib = match parsed {
        Ok(b) => b,
        Err(e) => {
            let at = e.span.start.saturating_sub(strings.len());
            let field = field_at(block.text, at).map(|f| format!(" in field `{f}`")).unwrap_or_default();
            return skipped(block.line + line_offset(block.text, at), format!("{}{field}", e.kind));
        }
    };
    let Some(entry) = bib.into_iter().next() else {
        return skipped(block.line, "entry has no citation key".into());
    };
    match paper_from_entry(&entry, block.text) {
        Ok(p) => EntryOutcome::Paper(Box::new(p)),
        Err(reason) => skipped(block.line, format!("{reason} (key `{}`)", entry.key)),
    }
}

/// `@type( ... )` rewritten as `@type{ ... }` (the parser reads only braces).
fn braced(text: &str) -> std::borrow::Cow<'_, str> {
    let Some(open) = text.find(['{', '(']) else { return text.into() };
    if &text[open..=open] == "{" || !text.ends_with(')') {
        return text.into();
    }
    format!("{}{{{}}}", &text[..open], &text[open + 1..text.len() - 1]).into()
}

/// `\\i` and `\\j` (dotless i/j, as in `Garc{\\'\\i}a`) become plain letters,
/// which the accent commands then combine with.
fn dotless_to_plain(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for i in 0..b.len().saturating_sub(1) {
        if b[i] == b'\\' && (b[i + 1] == b'i' || b[i + 1] == b'j') && b.get(i + 2).is_none_or(|c| !c.is_ascii_alphabetic()) {
            out.push_str(&s[last..i]);
            last = i + 1;
            // A following space only separated the command from the next word.
            if b.get(i + 2) == Some(&b' ') && b.get(i + 3).is_some_and(|c| c.is_ascii_alphabetic()) {
                out.push(b[i + 1] as char);
                last = i + 3;
            }
        }
    }
    out.push_str(&s[last..]);
    out
}

/// Escapes every `$` that is not already escaped.
fn escape_dollars(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut prev = '\0';
    for c in s.chars() {
        if c == '$' && prev != '\\' {
            out.push('\\');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// The name of the field whose `name =` most closely precedes `at`.
fn field_at(text: &str, at: usize) -> Option<String> {
    let before = &text[..at.min(text.len())];
    let eq = before.rfind('=')?;
    let name: String = before[..eq]
        .trim_end()
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!name.is_empty()).then_some(name.to_ascii_lowercase())
}

fn field(entry: &Entry, name: &str) -> String {
    entry.get(name).map(|c| clean_text(&c.format_verbatim())).unwrap_or_default()
}

/// Collapses whitespace and drops the braces and `$` math delimiters that
/// survive as literal text.
pub fn clean_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out.replace(['{', '}'], "")
}

fn person_name(p: &Person) -> String {
    clean_text(&p.to_string())
}

fn paper_from_entry(entry: &Entry, original: &str) -> Result<Paper, String> {
    let title = field(entry, "title");
    if title.is_empty() {
        return Err("missing field `title`".into());
    }
    let doi = normalize_doi(&field(entry, "doi"));
    let authors = entry.author().map(|ps| ps.iter().map(person_name).filter(|n| !n.is_empty()).collect()).unwrap_or_default();
    let year = parse_year(&field(entry, "year")).or_else(|| parse_year(&field(entry, "date")));
    let venue = ["journal", "journaltitle", "booktitle", "series", "publisher"]
        .iter()
        .map(|f| field(entry, f))
        .find(|v| !v.is_empty())
        .unwrap_or_default();
    let keywords = field(entry, "keywords").split([',', ';']).map(str::trim).filter(|k| !k.is_empty()).map(String::from).collect();
    Ok(Paper {
        id: Paper::bibtex_id(&doi, &entry.key),
        key: entry.key.clone(),
        url: field(entry, "url"),
        doi,
        title,
        abstract_text: field(entry, "abstract"),
        keywords,
        authors,
        year,
        venue,
        entry_type: entry.entry_type.to_string().to_ascii_lowercase(),
        bibtex: original.trim().to_string(),
    })
}

/// First run of four digits in a plausible range.
pub fn parse_year(s: &str) -> Option<i32> {
    let digits: Vec<char> = s.chars().collect();
    digits.windows(4).enumerate().find_map(|(i, w)| {
        let boundary_before = i == 0 || !digits[i - 1].is_ascii_digit();
        let boundary_after = digits.get(i + 4).is_none_or(|c| !c.is_ascii_digit());
        if boundary_before && boundary_after && w.iter().all(char::is_ascii_digit) {
            let y: i32 = w.iter().collect::<String>().parse().ok()?;
            (1000..=2999).contains(&y).then_some(y)
        } else {
            None
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn papers(src: &str) -> (Vec<Paper>, Vec<(usize, String)>) {
        let mut ps = Vec::new();
        let mut skips = Vec::new();
        for o in parse_source(src) {
            match o {
                EntryOutcome::Paper(p) => ps.push(*p),
                EntryOutcome::Skipped { line, reason } => skips.push((line, reason)),
            }
        }
        (ps, skips)
    }

    #[test]
    fn nested_braces_and_escapes_are_decoded() {
        let src = r#"@inproceedings{k1,
  title = {The {TnT} Tagger for {M}{\"u}ller's {\&} Schr{\"o}dinger's {{Data}}},
  author = {M{\"u}ller, J{\"o}rg and van der Berg, Anna and Smith, Jr., John},
  booktitle = {Proc. of {ACL}},
  year = {2000},
}"#;
        let (ps, skips) = papers(src);
        assert!(skips.is_empty(), "{skips:?}");
        let p = &ps[0];
        assert_eq!(p.title, "The TnT Tagger for Müller's & Schrödinger's Data");
        assert_eq!(p.authors, vec!["Jörg Müller", "Anna van der Berg", "John Smith Jr."]);
        assert_eq!(p.venue, "Proc. of ACL");
        assert_eq!(p.year, Some(2000));
        assert_eq!(p.id, "bib:k1");
        assert!(p.bibtex.starts_with("@inproceedings{k1,") && p.bibtex.ends_with('}'));
    }

    #[test]
    fn string_macros_comments_and_months() {
        let src = r#"
This free text is a comment, even with an email a@b.
@comment{ignored, title = {Not a paper}}
@string{ acl = "Proceedings of ACL" }
@STRING( yr = "1999" )
@article(k2,
  title = "Quoted " # "title",
  journal = acl,
  year = yr,
  month = jan,
  doi = {https://doi.org/10.1/ABC},
  keywords = {query completion; search, logs},
)"#;
        let (ps, skips) = papers(src);
        assert!(skips.is_empty(), "{skips:?}");
        assert_eq!(ps.len(), 1);
        let p = &ps[0];
        assert_eq!(p.title, "Quoted title");
        assert_eq!(p.venue, "Proceedings of ACL");
        assert_eq!(p.year, Some(1999));
        assert_eq!(p.id, "doi:10.1/abc");
        assert_eq!(p.keywords, vec!["query completion", "search", "logs"]);
        assert_eq!(p.entry_type, "article");
    }

    #[test]
    fn broken_entries_are_reported_with_lines_and_the_rest_imports() {
        let src = "@article{good1, title={One}, year={2001}}\n\
                   @article{nobrace, title={Two, year={2002}\n\
                   @article{good2, title={Three}}\n\
                   @article{notitle, author={A, B}, year={2003}}\n\
                   @article{badmacro,\n  title = undefinedmacro}\n\
                   @article{good3, title={Four}}\n";
        let (ps, skips) = papers(src);
        let keys: Vec<&str> = ps.iter().map(|p| p.key.as_str()).collect();
        assert_eq!(keys, ["good1", "good2", "good3"]);
        assert_eq!(skips.len(), 3, "{skips:?}");
        assert_eq!(skips[0].0, 2);
        assert!(skips[0].1.contains("not closed"), "{}", skips[0].1);
        assert_eq!(skips[1].0, 4);
        assert!(skips[1].1.contains("missing field `title`") && skips[1].1.contains("notitle"));
        assert_eq!(skips[2].0, 6, "{:?}", skips[2]);
        assert!(skips[2].1.contains("undefinedmacro") && skips[2].1.contains("`title`"), "{}", skips[2].1);
    }

    #[test]
    fn lone_dollar_signs_are_text() {
        let src = r#"@article{d, title = {"I'd Never Get out of This !?$%# Office"}, abstract = {infusing more than $5.1 billion}}
@article{m, title = {Bounds for $\alpha$-trees}}"#;
        let (ps, skips) = papers(src);
        assert!(skips.is_empty(), "{skips:?}");
        assert_eq!(ps[0].title, "\"I'd Never Get out of This !?$%# Office\"");
        assert_eq!(ps[0].abstract_text, "infusing more than $5.1 billion");
        assert!(ps[0].bibtex.contains("more than $5.1"), "original text is kept unescaped");
        assert_eq!(ps[1].title, "Bounds for $\\alpha$-trees");
    }

    #[test]
    fn unterminated_last_entry_is_reported() {
        let (ps, skips) = papers("@misc{a, title={A}}\n@misc{b, title={B}\n");
        assert_eq!(ps.len(), 1);
        assert_eq!(skips, vec![(2, "@misc entry is not closed (unbalanced braces) at end of file".to_string())]);
    }

    #[test]
    fn missing_optional_fields_are_empty() {
        let (ps, _) = papers("@book{b, title={Only a title}}");
        let p = &ps[0];
        assert!(p.authors.is_empty() && p.abstract_text.is_empty() && p.doi.is_empty());
        assert_eq!(p.year, None);
    }

    #[test]
    fn non_utf8_input_decodes() {
        let bytes = b"@article{x, title={Caf\xe9 culture}, author={M\xfcller, Hans}}";
        let text = crate::corpus::source::decode_text(bytes).text;
        let (ps, _) = papers(&text);
        assert_eq!(ps[0].title, "Café culture");
        assert_eq!(ps[0].authors, vec!["Hans Müller"]);
    }

    #[test]
    fn dotless_i_with_accents() {
        let (ps, _) = papers(r"@article{g, title={Garc{\'\i}a and Mar\'{\i}a and {\i} and \item}}");
        assert_eq!(ps[0].title, "García and María and i and \\item");
    }

    #[test]
    fn years() {
        assert_eq!(parse_year("2013"), Some(2013));
        assert_eq!(parse_year("2013-05-01"), Some(2013));
        assert_eq!(parse_year("12345"), None);
        assert_eq!(parse_year(""), None);
    }
}
