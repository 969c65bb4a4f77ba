//! BibTeX import: splitting a file into entries (with line numbers and the
//! original text) and turning each entry into a [`Paper`].
//!
//! Field values are parsed by the `biblatex` crate (LaTeX escapes, braces,
//! month macros), one entry at a time. Splitting ([`split`]), `@string`
//! abbreviations ([`strings`]) and `crossref` are handled here, bounded and
//! without recursion, so that one broken entry is reported as
//! `file:line: reason` and skipped while the rest of the file still imports.

mod split;
mod strings;
mod text;
mod values;

use std::collections::HashMap;

use biblatex::{Bibliography, ChunksExt, Entry, Person};

use super::paper::{normalize_doi, Paper};
pub use split::{split_blocks, RawBlock, MAX_DEPTH};
use strings::StringTable;
pub use text::clean_text;
use text::{dotless_to_plain, escape_dollars};
pub use values::map_field_values;

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

/// Parses a whole BibTeX source into papers and skip reasons, in file order.
///
/// BibTeX's rules: `@string`s apply to the entries after them; of two entries
/// with one key the first counts; an entry with a `crossref` takes the
/// fields it lacks (venue, year, publisher) from the entry it names.
pub fn parse_source(src: &str) -> Vec<EntryOutcome> {
    let mut out = Vec::new();
    let mut strings = StringTable::default();
    // Lower-cased key → (line, index in `out`) of the first entry with it.
    let mut keys: HashMap<String, (usize, usize)> = HashMap::new();
    let mut crossrefs: Vec<(usize, String)> = Vec::new();
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
                if let Err((at, reason)) = strings.define(block.text, block.line) {
                    out.push(EntryOutcome::Skipped { line: block.line + line_offset(block.text, at), reason });
                }
            }
            _ => {
                let (outcome, crossref) = parse_entry(&block, &strings);
                if let EntryOutcome::Paper(p) = &outcome {
                    if let Some((first_line, _)) = keys.get(&p.key.to_ascii_lowercase()) {
                        let reason =
                            format!("repeated entry: key `{}` is already used at line {first_line}; this one is not imported", p.key);
                        out.push(EntryOutcome::Skipped { line: block.line, reason });
                        continue;
                    }
                    keys.insert(p.key.to_ascii_lowercase(), (block.line, out.len()));
                    if let Some(parent) = crossref {
                        crossrefs.push((out.len(), parent));
                    }
                }
                out.push(outcome);
            }
        }
    }
    for (child, parent) in crossrefs {
        let Some(&(_, at)) = keys.get(&parent.to_ascii_lowercase()) else { continue };
        let EntryOutcome::Paper(parent) = &out[at] else { continue };
        let parent = (**parent).clone();
        if let EntryOutcome::Paper(p) = &mut out[child] {
            inherit(p, &parent);
        }
    }
    out
}

/// Fills what `child` lacks from the entry its `crossref` names (one level:
/// BibTeX does not follow a parent's own `crossref`).
fn inherit(child: &mut Paper, parent: &Paper) {
    if child.venue.is_empty() {
        // A proceedings' or book's own title is the venue of its parts.
        child.venue = if parent.venue.is_empty() || matches!(parent.entry_type.as_str(), "proceedings" | "book" | "collection") {
            parent.title.clone()
        } else {
            parent.venue.clone()
        };
    }
    if child.year.is_none() {
        child.year = parent.year;
    }
    if child.authors.is_empty() {
        child.authors = parent.authors.clone();
    }
    if child.url.is_empty() {
        child.url = parent.url.clone();
    }
}

fn line_offset(text: &str, byte: usize) -> usize {
    text.as_bytes()[..byte.min(text.len())].iter().filter(|&&b| b == b'\n').count()
}

/// Parses one entry alone (with the abbreviations it uses), returning the
/// outcome and the key its `crossref` field names, if any.
fn parse_entry(block: &RawBlock<'_>, strings: &StringTable) -> (EntryOutcome, Option<String>) {
    let skipped = |line: usize, reason: String| (EntryOutcome::Skipped { line, reason }, None);
    let preamble = match strings.preamble_for(block.text) {
        Ok(p) => p,
        Err(reason) => return skipped(block.line, reason),
    };
    // The field parser follows `crossref` into the same source, recursively;
    // renamed, the field is read here and resolved one level deep.
    let body = CROSSREF_FIELD.replace_all(block.text, |c: &regex::Captures<'_>| {
        // Same length, so error offsets still point into `block.text`.
        let renamed = match c[2].len() {
            8 => "cw-cross",
            4 => "cw-x",
            _ => "cw-xd",
        };
        format!("{}{renamed}{}", &c[1], &c[3])
    });
    let src = format!("{preamble}{}", dotless_to_plain(&braced(&body)));
    // A lone `$` (prices, "$%#") is plain text to BibTeX but opens math mode
    // for the parser: when parsing fails, retry with every `$` escaped.
    let parsed =
        Bibliography::parse(&src).or_else(|e| if block.text.contains('$') { Bibliography::parse(&escape_dollars(&src)) } else { Err(e) });
    let bib = match parsed {
        Ok(b) => b,
        Err(e) => {
            if let Some((at, name)) = empty_field(block.text) {
                return skipped(block.line + line_offset(block.text, at), format!("field `{name}` has no value"));
            }
            let at = e.span.start.saturating_sub(preamble.len());
            let name = field_at(block.text, at);
            let field = name.as_ref().map(|f| format!(" in field `{f}`")).unwrap_or_default();
            let why = match &e.kind {
                biblatex::ParseErrorKind::UnknownAbbreviation(abbr) => strings.skipped_why(abbr).map(|why| (abbr, why)),
                _ => None,
            };
            let reason = match why {
                Some((abbr, why)) => format!("field `{}` uses @string `{abbr}`, {why}", name.unwrap_or_default()),
                None => format!("{}{field}", e.kind),
            };
            return skipped(block.line + line_offset(block.text, at), reason);
        }
    };
    let Some(entry) = bib.into_iter().next().filter(|e| !e.key.trim().is_empty()) else {
        return skipped(block.line, "entry has no citation key".into());
    };
    let crossref = ["cw-cross", "cw-x"].iter().map(|f| field(&entry, f)).find(|k| !k.is_empty());
    match paper_from_entry(&entry, block.text) {
        Ok(p) => (EntryOutcome::Paper(Box::new(p)), crossref),
        Err(reason) => skipped(block.line, format!("{reason} (key `{}`)", entry.key)),
    }
}

/// A `crossref`, `xref` or `xdata` field name where a field starts.
static CROSSREF_FIELD: std::sync::LazyLock<regex::Regex> =
    std::sync::LazyLock::new(|| regex::Regex::new(r"(?i)([,{(]\s*)(crossref|xref|xdata)(\s*=)").expect("a valid pattern"));

/// The first `name = ,` (a field with nothing after the `=`): its offset and name.
fn empty_field(text: &str) -> Option<(usize, String)> {
    static EMPTY: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[,{(]\s*([A-Za-z][\w-]*)\s*=\s*[,})]").expect("a valid pattern"));
    let m = EMPTY.captures(text)?;
    let name = m.get(1)?;
    Some((name.start(), name.as_str().to_ascii_lowercase()))
}

/// `@type( ... )` rewritten as `@type{ ... }` (the parser reads only braces).
fn braced(text: &str) -> std::borrow::Cow<'_, str> {
    let Some(open) = text.find(['{', '(']) else { return text.into() };
    if &text[open..=open] == "{" || !text.ends_with(')') {
        return text.into();
    }
    format!("{}{{{}}}", &text[..open], &text[open + 1..text.len() - 1]).into()
}

/// The name of the field whose `name =` most closely precedes `at`.
fn field_at(text: &str, at: usize) -> Option<String> {
    // `at` comes from the parser's view of the text, which may differ by a
    // few bytes; step back to a character boundary.
    let at = (0..=at.min(text.len())).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
    let before = &text[..at];
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

/// The byte range of the value of `field` (inside its braces or quotes)
/// in the entry of `key` in a BibTeX text: where an edit of that field goes.
///
/// The entry is the one [`parse_source`] reads for the key: the first
/// top-level block ([`split_blocks`]) of an entry type whose key is `key`
/// (in any case, as BibTeX compares keys). `@comment`, `@string` and
/// `@preamble` blocks, the text between blocks and the values of other
/// entries are never taken for it, however much they look like it.
pub fn field_value_range(text: &str, key: &str, field: &str) -> Option<std::ops::Range<usize>> {
    let block = split_blocks(text).into_iter().flatten().find(|b| {
        !matches!(b.kind.as_str(), "comment" | "string" | "preamble") && block_key(b.text).is_some_and(|k| k.eq_ignore_ascii_case(key))
    })?;
    // The block is a slice of `text`: where it starts there. Its fields are
    // read from there to the entry's own closing delimiter (quoted values
    // skipped whole).
    let base = block.text.as_ptr() as usize - text.as_ptr() as usize;
    let open = block.text.find(['{', '('])?;
    let close = if block.text.as_bytes()[open] == b'(' { b')' } else { b'}' };
    let start = base + open + 1 + block.text[open + 1..].find(',')? + 1;
    field_in_entry(text, start, close, field)
}

/// The key of an entry block (`@article{key, …}`): what stands between its
/// opening delimiter and the first comma.
fn block_key(block: &str) -> Option<&str> {
    let body = block.find(['{', '('])? + 1;
    let comma = block[body..].find(',')?;
    Some(block[body..body + comma].trim())
}

/// The range of `field`'s value in the entry of `text` whose fields start
/// at byte `start` (after the key's comma) and which `close` ends.
fn field_in_entry(text: &str, start: usize, close: u8, field: &str) -> Option<std::ops::Range<usize>> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = start;
    // One pass over the entry: braces nest, a quoted value is skipped whole,
    // the entry ends at its own closing delimiter.
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' if depth > 0 => depth -= 1,
            c if depth == 0 && c == close => return None,
            b'"' if depth == 0 => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ if depth == 0 && (i == start || matches!(b[i - 1], b',' | b' ' | b'\t' | b'\n' | b'\r')) => {
                let rest = &text[i..];
                let named = rest.get(..field.len()).is_some_and(|n| n.eq_ignore_ascii_case(field));
                let after = rest.get(field.len()..).unwrap_or("");
                if named && after.trim_start().starts_with('=') {
                    let eq = i + field.len() + (after.len() - after.trim_start().len()) + 1;
                    let value = eq + (text[eq..].len() - text[eq..].trim_start().len());
                    return match b.get(value) {
                        Some(b'{') => crate::corpus::citation_markup::group_end(b, value, b'{', b'}').map(|end| value + 1..end - 1),
                        Some(b'"') => text[value + 1..].find('"').map(|e| value + 1..value + 1 + e),
                        _ => None,
                    };
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

fn field(entry: &Entry, name: &str) -> String {
    entry.get(name).map(|c| clean_text(&c.format_verbatim())).unwrap_or_default()
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
    let retracted = flagged_retracted(entry, &title);
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
        retracted,
        zotero: None,
    })
}

/// Whether an entry says its paper is retracted: a title that publishers
/// mark so (`RETRACTED: …`, `Retracted article: …`, `[Retracted] …`), a
/// `retracted` keyword, or a true `retracted` field.
fn flagged_retracted(entry: &Entry, title: &str) -> bool {
    let t = title.trim_start().to_lowercase();
    let keywords = field(entry, "keywords");
    let title_says = ["retracted:", "retracted article:", "[retracted]", "retraction:"].iter().any(|p| t.starts_with(p));
    let keyword_says = keywords.split([',', ';']).any(|k| k.trim().eq_ignore_ascii_case("retracted"));
    let field_says = matches!(field(entry, "retracted").to_ascii_lowercase().as_str(), "true" | "yes" | "1");
    title_says || keyword_says || field_says
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
    fn the_value_of_a_field_is_found_in_its_entry() {
        let text = "@article{a, title = {Wrong {Title}}, year = 2020}\n@misc{b,\n  author = \"X\",\n  Title = \"Quoted\"\n}\n";
        let r = field_value_range(text, "a", "title").unwrap();
        assert_eq!(&text[r], "Wrong {Title}");
        let r = field_value_range(text, "b", "title").unwrap();
        assert_eq!(&text[r], "Quoted");
        assert_eq!(field_value_range(text, "b", "year"), None);
        assert_eq!(field_value_range(text, "c", "title"), None);
        // A quoted value that looks like a field, and a `)` inside one.
        let tricky = "@misc(c, note = \"x, title = {y} )\", title = {Real})";
        assert_eq!(&tricky[field_value_range(tricky, "c", "title").unwrap()], "Real");
    }

    /// A commented-out copy of an entry, and one inside another entry's
    /// value, are not the entry: the edit goes where BibTeX reads it.
    #[test]
    fn the_value_is_found_in_the_entry_parse_source_reads() {
        let text = "@comment{@article{k, title = {Commented Out}}}\n\
                    @misc{other, title = {Other}, note = {@article{k, title = {Inside a value}}}}\n\
                    @article{k, title = {Unclosed}\n\
                    @Article{K,\n  title = {Real}\n}\n";
        let r = field_value_range(text, "k", "title").unwrap();
        assert_eq!(&text[r], "Real");
        let (ps, _) = papers(text);
        assert_eq!(ps.iter().find(|p| p.key.eq_ignore_ascii_case("k")).map(|p| p.title.as_str()), Some("Real"));
        assert_eq!(field_value_range("@comment{k, title = {Only a comment}}", "k", "title"), None);
        assert_eq!(field_value_range("@string{k, title = {x}}", "k", "title"), None);
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
    fn a_string_that_refers_to_itself_is_reported_and_the_rest_imports() {
        let src = "@string{pub = pub # \" Inc.\"}\n@string{acm = {ACM}}\n@article{a, title={A}, publisher=acm}\n@article{b, title={B}, publisher=pub}";
        let (ps, skips) = papers(src);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].venue, "ACM");
        assert_eq!(skips[0], (1, "@string `pub` refers to itself".to_string()));
        assert_eq!(skips[1], (4, "field `publisher` uses @string `pub`, which was skipped (line 1)".to_string()));
    }

    #[test]
    fn a_doubling_chain_of_strings_is_bounded() {
        let mut src = String::from("@string{s0 = \"0123456789abcdef\"}\n");
        for i in 1..40 {
            src.push_str(&format!("@string{{s{i} = s{} # s{}}}\n", i - 1, i - 1));
        }
        src.push_str("@misc{m, title = s39}\n@misc{ok, title = s5}\n");
        let (ps, skips) = papers(&src);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].title.len(), 16 * 32);
        assert_eq!(skips[0], (12, "@string `s11` expands to more than 16 KiB".to_string()));
    }

    #[test]
    fn repeated_keys_keep_the_first_and_say_so() {
        let (ps, skips) = papers("@misc{dup, title={First}}\n@misc{other, title={Other}}\n@misc{DUP, title={Second}}");
        assert_eq!(ps.iter().map(|p| p.title.as_str()).collect::<Vec<_>>(), ["First", "Other"]);
        assert_eq!(skips, vec![(3, "repeated entry: key `DUP` is already used at line 1; this one is not imported".to_string())]);
    }

    #[test]
    fn crossref_fills_venue_and_year_one_level_deep() {
        let src = "@inproceedings{child, title={A Part}, author={Doe, Jane}, crossref={proc}}\n\
                   @inproceedings{self, title={Loop}, crossref={self}}\n\
                   @proceedings{proc, title={Proceedings of SIGIR}, year={2009}, crossref={child}}";
        let (ps, skips) = papers(src);
        assert!(skips.is_empty(), "{skips:?}");
        assert_eq!(ps[0].venue, "Proceedings of SIGIR");
        assert_eq!(ps[0].year, Some(2009));
        assert_eq!(ps[0].authors, ["Jane Doe"]);
        assert_eq!(ps[1].title, "Loop");
        assert_eq!(ps[2].title, "Proceedings of SIGIR");
    }

    #[test]
    fn a_field_without_a_value_is_named() {
        let (ps, skips) = papers("@article{a,\n  author = {X, Y},\n  title = ,\n  year = 2001}\n@article{b, title={B}}");
        assert_eq!(ps.len(), 1);
        assert_eq!(skips, vec![(3, "field `title` has no value".to_string())]);
    }

    #[test]
    fn formatting_commands_and_entities_leave_plain_text() {
        let (ps, _) = papers(r"@inproceedings{a, title={A \textbf{bold} \emph{claim}}, booktitle={Research \&amp; Development}}");
        assert_eq!(ps[0].title, "A bold claim");
        assert_eq!(ps[0].venue, "Research & Development");
    }

    /// ACM DL's BibTeX carries HTML: its entities and markup read as text
    /// in every field, after the LaTeX (`\&amp;`, `{&}`).
    #[test]
    fn acm_html_reads_as_text() {
        let (ps, skips) = papers(
            r#"@inproceedings{10.1145/1,
title = {X-CLE<span class="smallcaps SmallerCapital">a</span>VER: <i>Cross-Lingual</i> Search},
booktitle = {Proceedings of the 40th International ACM SIGIR Conference on Research &amp; Development in Information Retrieval},
abstract = {Gains (p &lt; 0.05) in 70% of cases.<p>Second paragraph with $M &lt; N$ microphones.</p>},
author = {M&uuml;ller, J&ouml;rg and Smith, Ann},
keywords = {R&amp;D, search &amp; ranking},
}
@article{k2, title = {Search {&} Rescue \&amp; 30&lt;sup&gt;th&lt;/sup&gt; a < b and c > d}}"#,
        );
        assert!(skips.is_empty(), "{skips:?}");
        let p = &ps[0];
        assert_eq!(p.title, "X-CLEaVER: Cross-Lingual Search");
        assert_eq!(
            p.venue,
            "Proceedings of the 40th International ACM SIGIR Conference on Research & Development in Information Retrieval"
        );
        assert_eq!(p.abstract_text, "Gains (p < 0.05) in 70% of cases. Second paragraph with $M < N$ microphones.");
        assert_eq!(p.authors, ["Jörg Müller", "Ann Smith"]);
        assert_eq!(p.keywords, ["R&D", "search & ranking"]);
        assert_eq!(ps[1].title, "Search & Rescue & 30th a < b and c > d");
    }

    #[test]
    fn an_entry_without_a_key_is_reported() {
        let (ps, skips) = papers("@article{, title={Keyless}}\n@article{k, title={Keyed}}");
        assert_eq!(ps.len(), 1);
        assert_eq!(skips, vec![(1, "entry has no citation key".to_string())]);
    }

    #[test]
    fn years() {
        assert_eq!(parse_year("2013"), Some(2013));
        assert_eq!(parse_year("2013-05-01"), Some(2013));
        assert_eq!(parse_year("12345"), None);
        assert_eq!(parse_year(""), None);
    }
}
