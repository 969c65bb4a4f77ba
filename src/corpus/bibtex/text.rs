//! Field text: what is left to tidy after the field parser decoded LaTeX.

/// Collapses white space, drops the braces that survive as literal text,
/// keeps the argument of formatting commands (`\textbf{bold}` → `bold`)
/// outside math, and decodes the HTML entities some exporters leave
/// (`&amp;` → `&`).
pub fn clean_text(s: &str) -> String {
    let plain = drop_command_names(s);
    let s = decode_html_entities(&plain);
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

/// `&amp;`, `&lt;`, `&gt;`, `&quot;`, `&apos;`, `&#NN;` and `&#xNN;`.
pub fn decode_html_entities(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('&') {
        return s.into();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let tail = &rest[at..];
        let decoded = tail.find(';').filter(|&end| end <= 10).and_then(|end| entity(&tail[1..end]).map(|c| (c, end)));
        match decoded {
            Some((c, end)) => {
                out.push(c);
                rest = &tail[end + 1..];
            }
            None => {
                out.push('&');
                rest = &tail[1..];
            }
        }
    }
    out.push_str(rest);
    out.into()
}

fn entity(name: &str) -> Option<char> {
    match name {
        "amp" => Some('&'),
        "lt" => Some('<'),
        "gt" => Some('>'),
        "quot" => Some('"'),
        "apos" => Some('\''),
        "nbsp" => Some(' '),
        _ => {
            let num = name.strip_prefix('#')?;
            let code = match num.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => num.parse().ok()?,
            };
            char::from_u32(code).filter(|c| !c.is_control())
        }
    }
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
        assert_eq!(decode_html_entities("a &lt;b&gt; &#233;t&#xE9; &unknown; & done"), "a <b> été &unknown; & done");
        assert_eq!(decode_html_entities("&#0; &#x1b;"), "&#0; &#x1b;", "control characters are not produced");
    }
}
