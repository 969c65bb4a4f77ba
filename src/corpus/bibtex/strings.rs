//! `@string` abbreviations, read here rather than by the field parser so that
//! expansion is bounded and never recurses: each definition is expanded once,
//! against the definitions before it, as BibTeX does.

use std::collections::HashMap;

/// Longest expansion of one `@string`, in bytes (real ones name a journal).
pub const MAX_STRING_LEN: usize = 16 * 1024;
/// All `@string` text of one file together, in bytes.
pub const MAX_TABLE_LEN: usize = 1024 * 1024;
/// The abbreviations one entry may pull in, in bytes.
pub const MAX_ENTRY_EXPANSION: usize = 256 * 1024;

/// The `@string` definitions of one file, expanded.
#[derive(Debug, Default)]
pub struct StringTable {
    /// Lower-cased name → expanded text (brace-balanced).
    values: HashMap<String, String>,
    /// Lower-cased names whose definition was skipped, and why in short.
    failed: HashMap<String, String>,
    total: usize,
}

/// The predefined month abbreviations.
const MONTHS: [(&str, &str); 12] = [
    ("jan", "January"),
    ("feb", "February"),
    ("mar", "March"),
    ("apr", "April"),
    ("may", "May"),
    ("jun", "June"),
    ("jul", "July"),
    ("aug", "August"),
    ("sep", "September"),
    ("oct", "October"),
    ("nov", "November"),
    ("dec", "December"),
];

impl StringTable {
    /// Reads one `@string{name = value}` block (its text from `@` to the
    /// closing delimiter, starting on file line `line`) and adds the
    /// definition. An error gives the byte offset in `block` it refers to
    /// and the reason.
    pub fn define(&mut self, block: &str, line: usize) -> Result<(), (usize, String)> {
        let open = block.find(['{', '(']).ok_or((0, "@string has no opening brace".to_string()))?;
        let body_end = block.len().saturating_sub(1).max(open + 1);
        let mut p = Cursor { text: &block[..body_end], at: open + 1 };
        p.skip_ws();
        let name_at = p.at;
        let name = p.ident().ok_or((name_at, "@string has no name".to_string()))?.to_string();
        let result = self.define_named(&mut p, name_at, &name);
        if result.is_err() {
            // Later definitions that use it say so instead of calling it undefined.
            self.failed.insert(name.to_ascii_lowercase(), format!("which was skipped (line {})", line + line_of(block, name_at)));
        }
        result
    }

    fn define_named(&mut self, p: &mut Cursor<'_>, name_at: usize, name: &str) -> Result<(), (usize, String)> {
        p.skip_ws();
        if !p.eat(b'=') {
            return Err((p.at, format!("@string `{name}`: expected `=` after the name")));
        }
        let value = self.value(p, name)?;
        p.skip_ws();
        p.eat(b',');
        p.skip_ws();
        if p.at < p.text.len() {
            return Err((p.at, format!("@string `{name}`: unexpected text after the value")));
        }
        let key = name.to_ascii_lowercase();
        let old = self.values.get(&key).map_or(0, String::len);
        if self.total - old + value.len() > MAX_TABLE_LEN {
            return Err((name_at, format!("@string `{name}`: the file's @string definitions exceed {} KiB", MAX_TABLE_LEN / 1024)));
        }
        self.total = self.total - old + value.len();
        self.failed.remove(&key);
        self.values.insert(key, value);
        Ok(())
    }

    /// `value = part (# part)*`, each part braced, quoted, a number or a name.
    fn value(&self, p: &mut Cursor<'_>, name: &str) -> Result<String, (usize, String)> {
        let mut out = String::new();
        loop {
            p.skip_ws();
            let at = p.at;
            match p.peek() {
                Some(b'{') => out.push_str(p.delimited(b'{', b'}').ok_or((at, format!("@string `{name}`: unbalanced braces")))?),
                Some(b'"') => out.push_str(p.delimited(b'"', b'"').ok_or((at, format!("@string `{name}`: unbalanced quotes or braces")))?),
                Some(c) if c.is_ascii_digit() => out.push_str(p.digits()),
                Some(_) => {
                    let Some(word) = p.ident() else {
                        return Err((at, format!("@string `{name}`: expected a value")));
                    };
                    let expansion = self.lookup(word).ok_or_else(|| {
                        let why = if word.eq_ignore_ascii_case(name) {
                            format!("@string `{name}` refers to itself")
                        } else if let Some(failed) = self.failed.get(&word.to_ascii_lowercase()) {
                            format!("@string `{name}` refers to `{word}`, {failed}")
                        } else {
                            format!("@string `{name}` refers to `{word}`, which is not defined above it")
                        };
                        (at, why)
                    })?;
                    out.push_str(expansion);
                }
                None => return Err((at, format!("@string `{name}`: expected a value"))),
            }
            if out.len() > MAX_STRING_LEN {
                return Err((at, format!("@string `{name}` expands to more than {} KiB", MAX_STRING_LEN / 1024)));
            }
            p.skip_ws();
            if !p.eat(b'#') {
                return Ok(out);
            }
        }
    }

    /// Why a name the file defines has no value (`which was skipped (line
    /// N)`); none for a name it does not define.
    pub fn skipped_why(&self, name: &str) -> Option<&str> {
        self.failed.get(&name.to_ascii_lowercase()).map(String::as_str)
    }

    fn lookup(&self, word: &str) -> Option<&str> {
        let key = word.to_ascii_lowercase();
        self.values.get(&key).map(String::as_str).or_else(|| MONTHS.iter().find(|(m, _)| *m == key).map(|(_, full)| *full))
    }

    /// `@string` definitions, in the field parser's syntax, of every defined
    /// name that `entry` mentions (spelt as it spells them), or an error when
    /// they would exceed [`MAX_ENTRY_EXPANSION`].
    pub fn preamble_for(&self, entry: &str) -> Result<String, String> {
        let mut out = String::new();
        if self.values.is_empty() {
            return Ok(out);
        }
        let mut seen = std::collections::HashSet::new();
        for word in entry.split(|c: char| c.is_whitespace() || "=#,{}\"()".contains(c)) {
            if word.is_empty() || !seen.insert(word) {
                continue;
            }
            if let Some(v) = self.values.get(&word.to_ascii_lowercase()) {
                out.push_str("@string{");
                out.push_str(word);
                out.push_str(" = {");
                out.push_str(v);
                out.push_str("}}\n");
                if out.len() > MAX_ENTRY_EXPANSION {
                    return Err(format!(
                        "the @string abbreviations this entry uses expand to more than {} KiB",
                        MAX_ENTRY_EXPANSION / 1024
                    ));
                }
            }
        }
        Ok(out)
    }
}

/// 0-based line of `at` within `block` (the caller adds the block's line).
fn line_of(block: &str, at: usize) -> usize {
    block.as_bytes()[..at.min(block.len())].iter().filter(|&&b| b == b'\n').count()
}

struct Cursor<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        self.at += usize::from(hit);
        hit
    }

    fn skip_ws(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    /// A BibTeX name: anything up to white space or a delimiter.
    fn ident(&mut self) -> Option<&'a str> {
        let start = self.at;
        while let Some(b) = self.peek() {
            if b.is_ascii_whitespace() || b"=#,{}\"()".contains(&b) {
                break;
            }
            self.at += 1;
        }
        // Names start with a letter or a symbol, not a digit.
        (self.at > start).then(|| &self.text[start..self.at])
    }

    fn digits(&mut self) -> &'a str {
        let start = self.at;
        while self.peek().is_some_and(|b| b.is_ascii_digit()) {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    /// The text between `open` and its matching `close` (braces inside
    /// balanced), or `None` when it is not closed.
    fn delimited(&mut self, open: u8, close: u8) -> Option<&'a str> {
        debug_assert_eq!(self.peek(), Some(open));
        let start = self.at + 1;
        let bytes = self.text.as_bytes();
        let mut depth = 0usize;
        let mut j = start;
        while j < bytes.len() {
            match bytes[j] {
                b'{' => depth += 1,
                b'}' if depth == 0 => {
                    if close != b'}' {
                        return None;
                    }
                    self.at = j + 1;
                    return Some(&self.text[start..j]);
                }
                b'}' => depth -= 1,
                c if c == close && depth == 0 => {
                    self.at = j + 1;
                    return Some(&self.text[start..j]);
                }
                _ => {}
            }
            j += 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(defs: &[&str]) -> (StringTable, Vec<String>) {
        let mut t = StringTable::default();
        let errors = defs.iter().filter_map(|d| t.define(d, 1).err().map(|(_, why)| why)).collect();
        (t, errors)
    }

    #[test]
    fn concatenation_numbers_months_and_earlier_names() {
        let (t, errors) = table(&[
            r#"@string{acl = "Proc. of " # {ACL}}"#,
            r#"@STRING( ACLyear = acl # " " # 2001 # ", " # jan )"#,
            r#"@string{acl = acl # { and {EMNLP}}}"#,
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(t.lookup("acl"), Some("Proc. of ACL and {EMNLP}"), "a redefinition uses the earlier value");
        assert_eq!(t.lookup("aclyear"), Some("Proc. of ACL 2001, January"));
        assert_eq!(t.preamble_for("title = ACLyear,").unwrap(), "@string{ACLyear = {Proc. of ACL 2001, January}}\n");
        assert_eq!(t.preamble_for("title = {nothing}").unwrap(), "");
    }

    #[test]
    fn a_string_that_refers_to_itself_is_an_error() {
        let (t, errors) = table(&[r#"@string{pub = pub # " Inc."}"#, r#"@string{a = b}"#]);
        assert_eq!(errors, ["@string `pub` refers to itself", "@string `a` refers to `b`, which is not defined above it"]);
        assert_eq!(t.lookup("pub"), None);
    }

    #[test]
    fn doubling_chains_stop_at_the_limit() {
        let mut defs = vec![r#"@string{s0 = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"}"#.to_string()];
        for i in 1..40 {
            defs.push(format!("@string{{s{i} = s{} # s{}}}", i - 1, i - 1));
        }
        let refs: Vec<&str> = defs.iter().map(String::as_str).collect();
        let (t, errors) = table(&refs);
        assert_eq!(errors.len(), 40 - 10, "s0..s9 fit in 16 KiB: {errors:?}");
        assert_eq!(errors[0], "@string `s10` expands to more than 16 KiB");
        assert_eq!(errors[1], "@string `s11` refers to `s10`, which was skipped (line 1)");
        assert!(t.total <= MAX_TABLE_LEN);
    }

    #[test]
    fn malformed_definitions_name_the_problem() {
        let (_, errors) = table(&["@string{x {a}}", "@string{ = {a}}", "@string{x = {a}", "@string{x = \"a}b\"}", "@string{x = {a} junk}"]);
        assert_eq!(
            errors,
            [
                "@string `x`: expected `=` after the name",
                "@string has no name",
                "@string `x`: unbalanced braces",
                "@string `x`: unbalanced quotes or braces",
                "@string `x`: unexpected text after the value",
            ]
        );
    }
}
