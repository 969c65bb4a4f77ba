//! HTML in record text, read as plain text: the one place that decodes
//! entities and drops markup.
//!
//! Publishers' exports carry HTML: ACM DL's BibTeX writes `Research &amp;
//! Development` and `X-CLE<span class="smallcaps SmallerCapital">a</span>VER`,
//! Crossref's abstracts are JATS (`<jats:p>`, `<inline-formula>`), Zotero's
//! titles are rich text (`<i>`, `<sub>`, `<span class="nocase">`). Every
//! reader (BibTeX, JSONL, Zotero) turns a field into text with
//! [`html_to_text`]; the BibTeX export repairs an original entry with the same
//! reading ([`reduce`]), so that what it writes reads back as the same text.
//!
//! - Entities: every named entity of HTML5 (the table of the `html-escape`
//!   crate: all 2,125 names, kept current by its maintainer, and nothing else
//!   pulled in), decimal (`&#233;`) and hexadecimal (`&#x2013;`) ones. A
//!   no-break space becomes a space; an entity that would give a control
//!   character, or no character, stays as written; so does `&` before
//!   anything that is no entity (`R&D`, `&unknown;`).
//! - Markup: a tag goes only when it looks like one: a known HTML, JATS or
//!   MathML element (`<i>`, `</sup>`, `<mml:mi>`), one with attributes
//!   (`<concept a="">`), or one of a pair (`<bi>…</bi>`); its text stays.
//!   `a < b and c > d`, `<drug, disease>` and `std::vector<bool>` are text.
//!   Block elements (`<p>`, `<br>`, `<li>`) leave a space.
//! - Double-encoded HTML (`30&lt;sup&gt;th&lt;/sup&gt;`, `&amp;lt;`) is read
//!   to the end: entities, then tags, again until nothing changes (at most
//!   four rounds), so that reading the output again changes nothing.

use std::borrow::Cow;
use std::collections::HashSet;

/// One character of a text after [`reduce`]: decoded from an entity (or the
/// space a block element leaves), or standing in the source as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unit {
    pub c: char,
    pub decoded: bool,
}

/// Rounds of entities-then-tags at most (double encoding needs two).
const ROUNDS: usize = 4;
/// A tag longer than this, in characters, is taken for text (and bounds the
/// work one `<` can cause).
const MAX_TAG: usize = 400;
/// Characters of an entity's name (or number) at most.
const MAX_ENTITY: usize = 32;

/// Elements whose text runs on (`X-CLE<span>a</span>VER` → `X-CLEaVER`):
/// HTML's inline ones, the rich text of Zotero and publishers (`<bi>`,
/// `<scp>`, `<inf>`, `<italic>`), JATS and MathML.
const INLINE: &str = "a abbr acronym alternatives annotation annotation-xml b bdi bdo bi big bold cite code del dfn em email emphasis \
    equationsource ext-link externalref font i img inf inline-formula inline-graphic inlineequation ins it italic kbd \
    literal mark math menclose merror mfenced mfrac mi mmultiscripts mn mo monospace mover mpadded mphantom mprescripts \
    mroot mrow ms msqrt mspace mstyle msub msubsup msup mtable mtd mtext mtr munder munderover named-content nobr \
    overline q refsource reftarget roman s samp sans-serif sc scp semantics small small-caps smallcaps span strike strong \
    styled-content sub subscript sup superscript tex-math tt u ul underline uri var wbr xref";

/// Elements that end a line of text: a space stands for them. (`<ul>` is
/// not one: ACM writes it for underlining, `<ul>S</ul>earch`.)
const BLOCK: &str = "blockquote br caption dd disp-formula div dl dt h1 h2 h3 h4 h5 h6 hr li list list-item ol p para pre sec section \
    simpara simplepara table tbody td tfoot th thead tr";

/// Block elements known only with a namespace (`<jats:title>`): bare, the
/// words are too common in text about markup (`the <title> element`).
const NAMESPACED_BLOCK: &str = "abstract label title";

/// `s` with its HTML entities decoded and its markup dropped; `s` itself
/// when it has none.
pub fn html_to_text(s: &str) -> Cow<'_, str> {
    match reduce(s, false) {
        Some(units) => Cow::Owned(units.iter().map(|u| u.c).collect()),
        None => Cow::Borrowed(s),
    }
}

/// The characters of `s` once its entities are decoded and its markup
/// dropped, each marked with where it came from; `None` when there is
/// nothing of the kind in it.
///
/// `latex`: `s` is LaTeX source (a BibTeX value as written), where `\&amp;`
/// is an escaped `&amp;`: the backslash goes with the entity it escapes.
pub fn reduce(s: &str, latex: bool) -> Option<Vec<Unit>> {
    if !s.contains(['&', '<']) {
        return None;
    }
    let mut units: Vec<Unit> = s.chars().map(|c| Unit { c, decoded: false }).collect();
    let mut any = false;
    for _ in 0..ROUNDS {
        let entities = decode_entities(&mut units, latex);
        let tags = drop_tags(&mut units);
        if !entities && !tags {
            break;
        }
        any = true;
    }
    any.then_some(units)
}

/// Decodes every entity of `units`; whether there was one.
fn decode_entities(units: &mut Vec<Unit>, latex: bool) -> bool {
    if !units.iter().any(|u| u.c == '&') {
        return false;
    }
    let mut out: Vec<Unit> = Vec::with_capacity(units.len());
    let mut changed = false;
    let mut i = 0;
    while i < units.len() {
        if units[i].c == '&' {
            if let Some((end, text)) = entity_at(units, i) {
                // `\&amp;`: an odd run of backslashes escapes the `&`.
                if latex && out.iter().rev().take_while(|u| u.c == '\\' && !u.decoded).count() % 2 == 1 {
                    out.pop();
                }
                out.extend(text.chars().map(|c| Unit { c, decoded: true }));
                i = end;
                changed = true;
                continue;
            }
        }
        out.push(units[i]);
        i += 1;
    }
    if changed {
        *units = out;
    }
    changed
}

/// The entity that starts at `at` (an `&`): where it ends and its text.
fn entity_at(units: &[Unit], at: usize) -> Option<(usize, String)> {
    let rest = &units[at + 1..];
    let numeric = rest.first()?.c == '#';
    let body = if numeric { &rest[1..] } else { rest };
    let semicolon = body.iter().take(MAX_ENTITY + 1).position(|u| u.c == ';')?;
    let name: String = body[..semicolon].iter().map(|u| u.c).collect();
    let text = if numeric { numeric_entity(&name)?.to_string() } else { named_entity(&name)? };
    Some((at + 1 + usize::from(numeric) + semicolon + 1, text))
}

/// `233` or `x2013` (what follows `&#`) as its character.
fn numeric_entity(number: &str) -> Option<char> {
    let code = match number.strip_prefix(['x', 'X']) {
        Some(hex) if !hex.is_empty() && hex.len() <= 6 && hex.bytes().all(|b| b.is_ascii_hexdigit()) => {
            u32::from_str_radix(hex, 16).ok()?
        }
        None if !number.is_empty() && number.len() <= 7 && number.bytes().all(|b| b.is_ascii_digit()) => number.parse().ok()?,
        _ => return None,
    };
    plain(char::from_u32(code)?)
}

/// `eacute` (what stands between `&` and `;`) as its text, by HTML5's table.
fn named_entity(name: &str) -> Option<String> {
    let mut chars = name.chars();
    if !chars.next().is_some_and(|c| c.is_ascii_alphabetic()) || !chars.all(|c| c.is_ascii_alphanumeric()) {
        return None;
    }
    let entity = format!("&{name};");
    let decoded = html_escape::decode_html_entities(&entity);
    if decoded == entity {
        return None;
    }
    decoded.chars().map(plain).collect()
}

/// A decoded character as text: a no-break space is a space, a control
/// character is none.
fn plain(c: char) -> Option<char> {
    match c {
        '\u{a0}' => Some(' '),
        c if c.is_control() => None,
        c => Some(c),
    }
}

/// A tag of the text: where it starts and ends (exclusive), its name (lower
/// case, a stray `;` dropped: ACM writes `<scp;>`), whether it closes an
/// element and whether it has attributes.
struct Tag {
    start: usize,
    end: usize,
    name: String,
    closing: bool,
    attributes: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Element {
    Inline,
    Block,
}

/// Drops every tag of `units` that is markup (a known element, one with
/// attributes, or one of a pair); whether there was one.
fn drop_tags(units: &mut Vec<Unit>) -> bool {
    let mut tags = Vec::new();
    let mut i = 0;
    while i < units.len() {
        if units[i].c == '<' {
            if let Some(tag) = tag_at(units, i) {
                i = tag.end;
                tags.push(tag);
                continue;
            }
        }
        i += 1;
    }
    if tags.is_empty() {
        return false;
    }
    let opened: HashSet<&str> = tags.iter().filter(|t| !t.closing).map(|t| t.name.as_str()).collect();
    let closed: HashSet<&str> = tags.iter().filter(|t| t.closing).map(|t| t.name.as_str()).collect();
    let mut out = Vec::with_capacity(units.len());
    let mut last = 0;
    for t in &tags {
        let kind = element(&t.name);
        let paired = if t.closing { opened.contains(t.name.as_str()) } else { closed.contains(t.name.as_str()) };
        if kind.is_none() && !t.attributes && !paired {
            continue;
        }
        out.extend_from_slice(&units[last..t.start]);
        if kind == Some(Element::Block) {
            out.push(Unit { c: ' ', decoded: true });
        }
        last = t.end;
    }
    if last == 0 {
        return false;
    }
    out.extend_from_slice(&units[last..]);
    *units = out;
    true
}

/// The tag that starts at `at` (a `<`), by HTML's shape: `<name>`,
/// `</name>`, `<name/>`, or `<name` and attributes with values
/// (`a="x"`, `a='x'`, `a=x`) before `>`. An attribute without a value
/// makes it text (`<b and c>`), as does anything else.
fn tag_at(units: &[Unit], at: usize) -> Option<Tag> {
    let text = &units[..(at + MAX_TAG).min(units.len())];
    let blank = |i: usize| text.get(i).is_some_and(|u| u.c.is_whitespace());
    let mut i = at + 1;
    let closing = text.get(i)?.c == '/';
    if closing {
        i += 1;
    }
    if !text.get(i)?.c.is_ascii_alphabetic() {
        return None;
    }
    let name_start = i;
    while text.get(i).is_some_and(|u| is_name_char(u.c)) {
        i += 1;
    }
    let name: String = text[name_start..i].iter().map(|u| u.c.to_ascii_lowercase()).collect();
    let name = name.trim_end_matches(';').to_string();
    let mut attributes = false;
    loop {
        let space = i;
        while blank(i) {
            i += 1;
        }
        let c = text.get(i)?.c;
        if c == '>' {
            return Some(Tag { start: at, end: i + 1, name, closing, attributes });
        }
        if c == '/' && !closing && text.get(i + 1)?.c == '>' {
            return Some(Tag { start: at, end: i + 2, name, closing, attributes });
        }
        if closing || i == space || !is_attribute_char(c) {
            return None;
        }
        while text.get(i).is_some_and(|u| is_attribute_char(u.c)) {
            i += 1;
        }
        while blank(i) {
            i += 1;
        }
        if text.get(i)?.c != '=' {
            return None;
        }
        i += 1;
        while blank(i) {
            i += 1;
        }
        i = attribute_value_end(text, i)?;
        attributes = true;
    }
}

/// Where the attribute value that starts at `at` ends (exclusive).
fn attribute_value_end(text: &[Unit], at: usize) -> Option<usize> {
    let first = text.get(at)?.c;
    if first == '"' || first == '\'' {
        let close = text[at + 1..].iter().position(|u| u.c == first)?;
        return Some(at + 1 + close + 1);
    }
    let len = text[at..].iter().take_while(|u| !u.c.is_whitespace() && !matches!(u.c, '"' | '\'' | '<' | '>' | '=' | '`')).count();
    (len > 0).then_some(at + len)
}

/// A tag name's characters: `<key, value="">` is text, not an element `key,`.
fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, ':' | '_' | '.' | '-' | ';')
}

fn is_attribute_char(c: char) -> bool {
    !c.is_whitespace() && !matches!(c, '"' | '\'' | '>' | '/' | '=' | '<')
}

/// What kind of element a tag name is, if a known one: HTML's, JATS's and
/// MathML's, and any with a namespace (`mml:mi`, `jats:p`).
fn element(name: &str) -> Option<Element> {
    let (local, namespaced) = match name.split_once(':') {
        Some((prefix, local)) if !prefix.is_empty() && local.starts_with(|c: char| c.is_ascii_alphabetic()) => (local, true),
        _ => (name, false),
    };
    if listed(BLOCK, local) || (namespaced && listed(NAMESPACED_BLOCK, local)) {
        Some(Element::Block)
    } else if namespaced || listed(INLINE, local) {
        Some(Element::Inline)
    } else {
        None
    }
}

/// Whether `name` is one of the names of `list` (separated by spaces).
fn listed(list: &str, name: &str) -> bool {
    list.split_ascii_whitespace().any(|n| n == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        html_to_text(s).into_owned()
    }

    #[test]
    fn acm_entities_and_markup() {
        assert_eq!(text("Research &amp; Development in IR"), "Research & Development in IR");
        assert_eq!(text(r#"X-CLE<span class="smallcaps SmallerCapital">a</span>VER"#), "X-CLEaVER");
        assert_eq!(text("N<small>IEME</small>, with <i>n</i> items and x<sup>2</sup>, H<sub>2</sub>O"), "NIEME, with n items and x2, H2O");
        assert_eq!(text("<ul>S</ul>earch <bi>Real</bi> <scp;>UFSM</scp;>"), "Search Real UFSM");
        assert_eq!(
            text(r#"an array of <inline-formula><tex-math notation="LaTeX">$M$</tex-math></inline-formula> microphones"#),
            "an array of $M$ microphones"
        );
        assert_eq!(text("<mml:math><mml:msup><mml:mi>x</mml:mi><mml:mn>2</mml:mn></mml:msup></mml:math>"), "x2");
        assert_eq!(text("<jats:title>Abstract</jats:title><jats:p>Text.</jats:p>").trim(), "Abstract  Text.");
        assert_eq!(text("First.</p><p>Second.<br/>Third"), "First.  Second. Third");
        assert_eq!(text(r#"<concept a="">Betty</concept> and <http: web.org="" ~x=""></http:>."#), "Betty and .");
    }

    #[test]
    fn entities_named_and_numeric() {
        assert_eq!(text("a &lt; b &gt; c &quot;q&quot; &apos;s&apos; et&nbsp;al."), "a < b > c \"q\" 's' et al.");
        assert_eq!(text("&eacute;t&eacute; &Ouml;l &ndash; &hellip; &#233;t&#xE9; &#X2013;"), "été Öl – … été –");
        assert_eq!(
            text("&#0; &#x1b; &#xD800; &#99999999; &#; &#x;"),
            "&#0; &#x1b; &#xD800; &#99999999; &#; &#x;",
            "no control character, no surrogate"
        );
        assert_eq!(text("R&D, AT&T, &unknown; & done; &amp"), "R&D, AT&T, &unknown; & done; &amp", "no entity, no change");
        assert!(matches!(html_to_text("plain text, no markup"), Cow::Borrowed(_)));
        assert!(matches!(html_to_text("R&D <vria> x"), Cow::Borrowed(_)), "nothing to decode: the text itself");
    }

    #[test]
    fn angle_brackets_in_text_stay() {
        for t in [
            "a < b and c > d",
            "p<0.05 and q>1",
            "triples <drug, disease> and <subject, predicate, object=>",
            "std::vector<bool> and <vria>, a framework",
            "FA + TA <FSA: Flexible Score",
            "a <b and c> d",
            "<<Understanding the directions",
            "<key, value=\"\"> store",
            "the <title> element",
        ] {
            assert_eq!(text(t), t);
        }
    }

    #[test]
    fn double_encoded_html_is_read_to_the_end() {
        assert_eq!(text("30&lt;sup&gt;th&lt;/sup&gt; European Conference"), "30th European Conference");
        assert_eq!(text("&amp;lt; and &amp;amp;"), "< and &");
        assert_eq!(text("use the &lt;enter&gt; key"), "use the <enter> key", "an unknown element, encoded, is text");
        for s in ["30&lt;sup&gt;th&lt;/sup&gt;", "&amp;amp;amp;lt;", "a &lt;b&gt;x&lt;/b&gt; &amp;lt;i&amp;gt;"] {
            let once = text(s);
            assert_eq!(text(&once), once, "reading {s:?} again changes nothing");
        }
    }

    #[test]
    fn latex_source_keeps_the_escape_with_the_entity() {
        let units = |s: &str, latex: bool| reduce(s, latex).map(|u| u.iter().map(|u| (u.c, u.decoded)).collect::<Vec<_>>());
        assert_eq!(units(r"\&amp;", true), Some(vec![('&', true)]), "`\\&amp;` is an escaped `&amp;`");
        assert_eq!(units(r"\\&amp;", true), Some(vec![('\\', false), ('\\', false), ('&', true)]), "`\\\\` escapes itself");
        assert_eq!(units(r"\&amp;", false), Some(vec![('\\', false), ('&', true)]), "in text a backslash is a character");
        assert_eq!(units("{&}", true), None);
        assert_eq!(units("a<i>b</i>", true), Some(vec![('a', false), ('b', false)]));
    }

    #[test]
    fn long_or_unclosed_tags_are_text() {
        let long = format!("<span class=\"{}\">x</span>", "a".repeat(MAX_TAG));
        assert!(text(&long).starts_with("<span class="), "{}", text(&long));
        assert_eq!(text("<i x=\"unclosed"), "<i x=\"unclosed");
        assert_eq!(text("<i"), "<i");
        assert_eq!(text("<"), "<");
        assert_eq!(text("&"), "&");
    }
}
