//! The values of one entry's fields, each handed to a function that may
//! rewrite it (the export's LaTeX repair); everything else of the entry
//! (its key, field names, `#` concatenations, macros, numbers, comments and
//! layout) stays as it was.

/// `entry` (one `@type{key, …}` block, as [`super::split_blocks`] gives it)
/// with the text of each braced or quoted value part replaced by what
/// `f(field, text, quoted)` returns (`field` in lower case; `None` keeps the
/// part as it is). `None` when the entry's fields cannot be walked: the
/// caller keeps the entry as it was.
///
/// The walk reads values as the field parser does: a braced value ends at
/// its matching brace, a quoted one at the next `"`, a backslash escapes the
/// character after it in both.
pub fn map_field_values(entry: &str, mut f: impl FnMut(&str, &str, bool) -> Option<String>) -> Option<String> {
    let b = entry.as_bytes();
    let open = entry.find(['{', '('])?;
    let close = if b[open] == b'(' { b')' } else { b'}' };
    let mut i = open + 1 + entry[open + 1..].find(',')? + 1;
    let mut out = String::with_capacity(entry.len() + 32);
    let mut copied = 0;
    loop {
        i = skip_blank(b, i);
        match *b.get(i)? {
            c if c == close => break,
            b',' => {
                i += 1;
                continue;
            }
            _ => {}
        }
        let name_start = i;
        while b.get(i).is_some_and(|&c| is_name_byte(c)) {
            i += 1;
        }
        if i == name_start {
            return None;
        }
        let field = entry[name_start..i].to_ascii_lowercase();
        i = skip_blank(b, i);
        if b.get(i) != Some(&b'=') {
            return None;
        }
        i += 1;
        // The parts of the value, joined by `#`.
        loop {
            i = skip_blank(b, i);
            match *b.get(i)? {
                delimiter @ (b'{' | b'"') => {
                    let quoted = delimiter == b'"';
                    let end = if quoted { quote_end(b, i)? } else { brace_end(b, i)? };
                    if let Some(new) = f(&field, &entry[i + 1..end], quoted) {
                        out.push_str(&entry[copied..=i]);
                        out.push_str(&new);
                        copied = end;
                    }
                    i = end + 1;
                }
                c if is_name_byte(c) => {
                    while b.get(i).is_some_and(|&c| is_name_byte(c)) {
                        i += 1;
                    }
                }
                _ => return None,
            }
            i = skip_blank(b, i);
            if b.get(i) != Some(&b'#') {
                break;
            }
            i += 1;
        }
    }
    out.push_str(&entry[copied..]);
    Some(out)
}

/// Past white space and `%` comments (to the end of their line).
fn skip_blank(b: &[u8], mut i: usize) -> usize {
    loop {
        while b.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        if b.get(i) != Some(&b'%') {
            return i;
        }
        while b.get(i).is_some_and(|&c| c != b'\n') {
            i += 1;
        }
    }
}

/// The index of the brace that closes the one at `open`.
fn brace_end(b: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = open;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index of the `"` that closes the one at `open`.
fn quote_end(b: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'"' => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

/// A byte of a field name, a macro or a number (what the field parser
/// takes for an identifier).
fn is_name_byte(c: u8) -> bool {
    !c.is_ascii_whitespace()
        && !c.is_ascii_control()
        && !matches!(c, b'@' | b'{' | b'}' | b'"' | b'#' | b'\'' | b'(' | b')' | b',' | b'=' | b'%' | b'\\' | b'~')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_part_is_offered_and_the_rest_stays() {
        let entry = "@article{k,\n  Title = {A {B} \\} c},\n  journal = \"Q \\\" r\" # mac # {s},\n  year = 2001, % a comment, title = {x}\n  month = jun\n}";
        let mut seen = Vec::new();
        let same = map_field_values(entry, |f, v, q| {
            seen.push((f.to_string(), v.to_string(), q));
            None
        });
        assert_eq!(same.as_deref(), Some(entry));
        let seen: Vec<(&str, &str, bool)> = seen.iter().map(|(f, v, q)| (f.as_str(), v.as_str(), *q)).collect();
        assert_eq!(seen, [("title", "A {B} \\} c", false), ("journal", "Q \\\" r", true), ("journal", "s", false)]);
        let upper = map_field_values(entry, |f, v, _| (f == "journal").then(|| v.to_uppercase())).unwrap();
        assert_eq!(upper, entry.replace("\"Q \\\" r\"", "\"Q \\\" R\"").replace("{s}", "{S}"));
    }

    #[test]
    fn parenthesised_entries_and_trailing_commas() {
        let entry = "@misc(k, title = {x}, note = \"y\",)";
        assert_eq!(map_field_values(entry, |_, v, _| Some(format!("<{v}>"))).as_deref(), Some("@misc(k, title = {<x>}, note = \"<y>\",)"));
    }

    #[test]
    fn an_entry_that_cannot_be_walked_is_none() {
        for broken in [
            "@misc{k, title = {open}",
            "@misc{k, title {x}}",
            "@misc{k, = {x}}",
            "@misc{k, title = \"open}",
            "@misc{k title = {x}}",
            "no entry",
        ] {
            assert_eq!(map_field_values(broken, |_, _, _| Some(String::new())), None, "{broken}");
        }
    }
}
