//! Text from the library made safe to draw in a cell grid.

/// `s` as the panes draw it (see [`crate::util::printable`]).
pub use crate::util::printable as display_safe;

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

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
