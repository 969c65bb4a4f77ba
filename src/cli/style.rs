//! Colour in the plain commands' output: `--color auto|always|never`, and
//! under `auto` the conventions `anstream` reads (`NO_COLOR` turns colour
//! off, `CLICOLOR_FORCE` on, otherwise only a terminal gets it). Output is
//! written through `anstream`, which drops the styles when colour is off,
//! so what a command prints is the same text either way. The full-screen
//! editor keeps its theme (docs/configuration.md).

use anstyle::{AnsiColor, Style};

/// When the plain commands colour their output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorWhen {
    /// On a terminal, unless `NO_COLOR` is set (or `CLICOLOR_FORCE` asks for it anyway)
    #[default]
    Auto,
    /// Always, even into a pipe or with `NO_COLOR` set
    Always,
    /// Never
    Never,
}

impl ColorWhen {
    /// Makes this the choice of every `anstream` stream of the process
    /// (clap's help included).
    pub fn apply(self) {
        let choice = match self {
            ColorWhen::Auto => anstream::ColorChoice::Auto,
            ColorWhen::Always => anstream::ColorChoice::Always,
            ColorWhen::Never => anstream::ColorChoice::Never,
        };
        choice.write_global();
    }

    /// The `--color` a command line gives (the last one; `--color WHEN` or
    /// `--color=WHEN`, before any `--`), read before clap parses it so that
    /// clap's own help and errors follow it too. A value clap would refuse
    /// counts as none: clap then says so.
    pub fn from_args<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Option<ColorWhen> {
        use clap::ValueEnum;
        let mut found = None;
        let mut words = args.iter().map(|a| a.as_ref().to_string_lossy());
        while let Some(word) = words.next() {
            let value = match word.as_ref() {
                "--" => break,
                "--color" => words.next().map(|v| v.into_owned()),
                w => w.strip_prefix("--color=").map(str::to_owned),
            };
            if let Some(v) = value {
                found = ColorWhen::from_str(&v, false).ok().or(found);
            }
        }
        found
    }
}

/// A paper's title.
pub const TITLE: Style = Style::new().bold();
/// What matters less: ranks, scores, identifiers.
pub const DIM: Style = Style::new().dimmed();
/// An error's severity word.
pub const ERROR: Style = AnsiColor::Red.on_default().bold();
/// A warning's severity word.
pub const WARNING: Style = AnsiColor::Yellow.on_default().bold();
/// Something that went right.
pub const GOOD: Style = AnsiColor::Green.on_default();

/// `text` in `style` (the escape codes are dropped on output when colour
/// is off).
pub fn paint(style: Style, text: impl std::fmt::Display) -> String {
    format!("{style}{text}{style:#}")
}

#[cfg(test)]
mod tests {
    use super::ColorWhen;

    #[test]
    fn the_color_a_command_line_gives_is_read_before_parsing() {
        let read = |args: &[&str]| ColorWhen::from_args(args);
        assert_eq!(read(&["citewise", "--help"]), None);
        assert_eq!(read(&["citewise", "--color", "always", "--help"]), Some(ColorWhen::Always));
        assert_eq!(read(&["citewise", "import", "--color=never", "a.bib"]), Some(ColorWhen::Never));
        assert_eq!(read(&["citewise", "--color=never", "--color", "always"]), Some(ColorWhen::Always), "the last one");
        assert_eq!(read(&["citewise", "--color", "sometimes"]), None, "clap refuses it");
        assert_eq!(read(&["citewise", "recommend", "--", "--color=always"]), None, "after --, a word");
    }
}
