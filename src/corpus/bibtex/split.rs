//! Splitting a BibTeX file into its top-level `@...` blocks, with line
//! numbers, in one linear pass that never recurses.

/// Braces nested deeper than this end the block with an error: no real entry
/// comes near it, and the field parser recurses once per level.
pub const MAX_DEPTH: usize = 64;

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

/// Splits BibTeX source into blocks. Broken blocks (unterminated, nested too
/// deep, without a type) are reported as `Err((line, reason))` items and
/// scanning resumes after them.
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
        let (kind, open_at) = match block_header(bytes, i) {
            Header::Block(kind, open_at) => (kind, open_at),
            Header::Untyped(open_at) => {
                out.push(Err((line, "entry has no type: expected `@article{key, ...}`, found `@{`".to_string())));
                i = open_at + 1;
                continue;
            }
            Header::None => {
                i += 1;
                continue;
            }
        };
        let start_line = line;
        match block_end(bytes, open_at, &mut line) {
            BlockEnd::Closed(end) => {
                out.push(Ok(RawBlock { kind, text: &src[i..end], line: start_line }));
                i = end;
            }
            BlockEnd::TooDeep(end) => {
                out.push(Err((start_line, format!("@{kind} entry nests braces more than {MAX_DEPTH} levels deep"))));
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

enum Header {
    /// `@ident {` / `@ident (`: the lower-cased ident and the opener's index.
    Block(String, usize),
    /// `@{` or `@(` with no type.
    Untyped(usize),
    None,
}

fn block_header(bytes: &[u8], at: usize) -> Header {
    let mut j = at + 1;
    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
        j += 1;
    }
    let ident_start = j;
    while j < bytes.len() && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_' || bytes[j] == b'-') {
        j += 1;
    }
    let kind = std::str::from_utf8(&bytes[ident_start..j]).map(str::to_ascii_lowercase).unwrap_or_default();
    while j < bytes.len() && bytes[j].is_ascii_whitespace() {
        j += 1;
    }
    match bytes.get(j) {
        Some(b'{') | Some(b'(') if kind.is_empty() => Header::Untyped(j),
        Some(b'{') | Some(b'(') => Header::Block(kind, j),
        _ => Header::None,
    }
}

enum BlockEnd {
    /// Index just past the closing delimiter.
    Closed(usize),
    /// Closed at this index, but nested deeper than [`MAX_DEPTH`].
    TooDeep(usize),
    /// An entry header at the start of a line while braces were still open.
    NextEntryAt(usize),
    Eof,
}

fn block_end(bytes: &[u8], open_at: usize, line: &mut usize) -> BlockEnd {
    let paren = bytes[open_at] == b'(';
    let mut depth: usize = 0;
    let mut deepest: usize = 0;
    let mut j = open_at + 1;
    let mut at_line_start = false;
    let closed = |end: usize, deepest: usize| if deepest > MAX_DEPTH { BlockEnd::TooDeep(end) } else { BlockEnd::Closed(end) };
    while j < bytes.len() {
        match bytes[j] {
            b'\n' => {
                *line += 1;
                at_line_start = true;
                j += 1;
                continue;
            }
            b'@' if at_line_start && matches!(block_header(bytes, j), Header::Block(..)) => {
                // A new entry starts a line while this one is still open: the
                // previous entry lost a closing brace.
                return BlockEnd::NextEntryAt(j);
            }
            b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b'}' if depth == 0 && !paren => return closed(j + 1, deepest),
            b'}' => depth = depth.saturating_sub(1),
            b')' if paren && depth == 0 => return closed(j + 1, deepest),
            _ => {}
        }
        if !bytes[j].is_ascii_whitespace() {
            at_line_start = false;
        }
        j += 1;
    }
    BlockEnd::Eof
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untyped_entries_are_reported_not_dropped() {
        let blocks = split_blocks("@misc{a, title={A}}\n@{k, title={No type}}\n@misc{b, title={B}}");
        assert_eq!(blocks.len(), 3, "{blocks:?}");
        assert_eq!(blocks[1], Err((2, "entry has no type: expected `@article{key, ...}`, found `@{`".into())));
        assert!(matches!(&blocks[2], Ok(b) if b.text.starts_with("@misc{b")));
    }

    #[test]
    fn deep_nesting_is_an_error_in_linear_time() {
        let n = 1_000_000;
        let src = format!("@misc{{a, title={}x{}}}\n@misc{{b, title={{B}}}}", "{".repeat(n), "}".repeat(n));
        let blocks = split_blocks(&src);
        assert_eq!(blocks[0], Err((1, format!("@misc entry nests braces more than {MAX_DEPTH} levels deep"))));
        assert!(matches!(&blocks[1], Ok(b) if b.text.starts_with("@misc{b")));
        let ok = format!("@misc{{a, title={}x{}}}", "{".repeat(MAX_DEPTH - 1), "}".repeat(MAX_DEPTH - 1));
        assert!(split_blocks(&ok)[0].is_ok());
    }
}
