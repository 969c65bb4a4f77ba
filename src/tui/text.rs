//! Text from the library made safe to draw in a cell grid.

use std::borrow::Cow;

/// `s` as the panes draw it: stripped of bidirectional controls,
/// zero-width characters and other control characters (which make a
/// terminal draw text over the pane borders), with tabs and line ends
/// as spaces.
pub fn display_safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c.is_control() || invisible(c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // A CRLF is one line end.
            '\r' if chars.peek() == Some(&'\n') => {}
            '\t' | '\n' | '\r' => out.push(' '),
            c if c.is_control() || invisible(c) => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// Characters that change how a terminal lays out the text around them
/// without drawing anything themselves.
fn invisible(c: char) -> bool {
    matches!(
        c,
        // Bidirectional marks, embeddings, overrides and isolates.
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        // Zero-width space, non-joiner, joiner; word joiner and invisible
        // operators; byte order mark; interlinear annotation; soft hyphen.
        | '\u{200b}'..='\u{200d}' | '\u{2060}'..='\u{2064}' | '\u{feff}' | '\u{fff9}'..='\u{fffb}' | '\u{00ad}'
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_and_invisible_characters_go() {
        assert_eq!(display_safe("plain title"), "plain title");
        assert!(matches!(display_safe("plain"), Cow::Borrowed(_)));
        assert_eq!(display_safe("evil\u{202e}txt.exe"), "eviltxt.exe");
        assert_eq!(display_safe("a\u{200b}b\u{200d}c\u{feff}d\u{2066}e\u{2069}f\u{200f}g\u{061c}h"), "abcdefgh");
        assert_eq!(display_safe("tab\there\nnext\r\nline"), "tab here next line");
        assert_eq!(display_safe("bell\u{7}esc\u{1b}[31m\u{9b}x"), "bellesc[31mx");
        // Letters and marks that draw are kept.
        assert_eq!(display_safe("Müller – “Zitate” 中文 e\u{301}"), "Müller – “Zitate” 中文 e\u{301}");
    }
}
