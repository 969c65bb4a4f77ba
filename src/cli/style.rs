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
