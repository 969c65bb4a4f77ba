//! Field text: what is left to tidy after the field parser decoded LaTeX.

/// Collapses white space, drops the braces that survive as literal text,
/// keeps the argument of formatting commands (`\textbf{bold}` → `bold`)
/// outside math, and reads the HTML some exporters leave as text (`&amp;` →
/// `&`, `X-CLE<span class="smallcaps">a</span>VER` → `X-CLEaVER`:
/// [`crate::corpus::html_text`]).
///
/// The order matters: the field parser has already read the LaTeX (`\&amp;`
/// is `&amp;` by then, `{&}` is `&`), and the HTML is read before braces go,
/// so that what a brace separates is never joined into an entity or a tag.
pub fn clean_text(s: &str) -> String {
    let plain = drop_command_names(s);
    let s = crate::corpus::html_text::html_to_text(&plain);
    let mut out = String::with_capacity(s.len());
    for word in s.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    // Braces, and control characters (a NUL, an escape) that are no text.
    out.retain(|c| c != '{' && c != '}' && !c.is_control());
    out
}

/// `\name{arg}` → `{arg}` outside `$...$`; other commands stay.
fn drop_command_names(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\\') {
        return s.into();
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let (mut i, mut last, mut math) = (0, 0, false);
    while i < b.len() {
        match b[i] {
            b'$' if i == 0 || b[i - 1] != b'\\' => math = !math,
            b'\\' if !math => {
                let mut j = i + 1;
                while j < b.len() && b[j].is_ascii_alphabetic() {
                    j += 1;
                }
                let mut k = j;
                while k < b.len() && b[k] == b' ' {
                    k += 1;
                }
                if j > i + 1 && b.get(k) == Some(&b'{') {
                    out.push_str(&s[last..i]);
                    last = k;
                    i = k;
                    continue;
                }
                // `\\` or `\{`: skip the escaped character.
                i = j.max(i + 2).min(b.len());
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out.push_str(&s[last..]);
    out.into()
}

/// `\i` and `\j` (dotless i/j, as in `Garc{\'\i}a`) become plain letters,
/// which the accent commands then combine with.
pub fn dotless_to_plain(s: &str) -> String {
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
pub fn escape_dollars(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting_commands_keep_their_argument() {
        assert_eq!(clean_text(r"A \textbf{bold} and \emph {new} idea"), "A bold and new idea");
        assert_eq!(clean_text(r"Bounds for $\textbf{x}$ and \LaTeX"), r"Bounds for $\textbfx$ and \LaTeX", "math stays as written");
        assert_eq!(clean_text(r"50\% of \{x\}"), r"50\% of \x\");
    }

    #[test]
    fn control_characters_are_dropped() {
        assert_eq!(clean_text("Nul\u{0} and \u{1b}[2Jescape\u{7f}"), "Nul and [2Jescape");
    }

    #[test]
    fn html_entities_are_decoded() {
        assert_eq!(clean_text("Research &amp; Development in IR"), "Research & Development in IR");
        assert_eq!(clean_text("a &lt; b &#233;t&#xE9; &unknown; & done"), "a < b été &unknown; & done");
        assert_eq!(clean_text("&#0; &#x1b;"), "&#0; &#x1b;", "control characters are not produced");
    }

    #[test]
    fn html_markup_is_dropped_and_its_text_kept() {
        assert_eq!(clean_text(r#"X-CLE<span class="smallcaps SmallerCapital">a</span>VER"#), "X-CLEaVER");
        assert_eq!(clean_text("A <i>new</i>  {BERT}<br>model: p &lt; 0.05"), "A new BERT model: p < 0.05");
        assert_eq!(clean_text("a < b and c > d"), "a < b and c > d");
        // Braces go after the HTML is read: they join nothing into an entity.
        assert_eq!(clean_text("{&}amp; and &am{p};"), "&amp; and &amp;");
    }
}
