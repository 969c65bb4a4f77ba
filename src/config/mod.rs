//! User configuration: `config.toml` in the configuration directory
//! (`crate::dirs`), read once by a front end (the editor, the language
//! server, `import`) and handed down as values: the citation grammar its
//! `cite_commands` name ([`Config::grammar`]), the editor's keys
//! ([`keys`]), threads and background work. Nothing here is process-wide.

pub mod keys;

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use self::keys::{Action, Key};
use crate::corpus::citation_markup::{CiteGrammar, CiteSyntax};
use crate::draft::ContextMode;
use crate::error::{Error, Result};
use crate::export::KeyStyle;

/// How citations are written: by the draft's extension, or fixed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CiteSyntaxSetting {
    #[default]
    Auto,
    Latex,
    Markdown,
    /// `@a @b` (Typst)
    Typst,
}

/// What the editor encodes in the background while it runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackgroundEncodingSetting {
    /// The student's stand-ins, HAtten's vectors, then the citation
    /// encoder's own vectors.
    #[default]
    All,
    /// The quick ones only: stand-ins and HAtten's vectors.
    Fast,
    /// Nothing (`citewise embed` does it).
    Off,
}

impl BackgroundEncodingSetting {
    /// The phases it runs.
    pub fn phases(self) -> Vec<crate::pipeline::background::Phase> {
        use crate::pipeline::background::Phase;
        match self {
            BackgroundEncodingSetting::All => Phase::ENCODINGS.to_vec(),
            BackgroundEncodingSetting::Fast => vec![Phase::StandIns, Phase::Dense],
            BackgroundEncodingSetting::Off => Vec::new(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Theme name: built in (dark, light, high-contrast) or `themes/NAME.toml`
    /// in the config directory.
    pub theme: String,
    pub context: ContextMode,
    pub key_style: KeyStyle,
    pub cite_syntax: CiteSyntaxSetting,
    /// Wrapper commands that cite, beside the `\cite` family: e.g.
    /// `cite_commands = ["refp"]` for `\newcommand{\refp}[1]{\citep{#1}}`
    /// (the editor, the language server and evidence imports read them).
    pub cite_commands: Vec<String>,
    /// Papers shown per request.
    pub results: usize,
    /// Seconds between autosaves of the draft.
    pub autosave_seconds: u64,
    /// Rebinds actions: `ask_citations = ["ctrl-space", "f5"]` (an unknown
    /// action or key fails the load, with its line).
    pub keys: BTreeMap<Action, Vec<Key>>,
    /// Opens a citing PDF at its page, e.g. `zathura --page={page} {file}`
    /// or `evince -i {page} {file}` (default: the system's opener).
    pub pdf_viewer: Option<String>,
    /// What the editor encodes in the background (`all`, `fast`, `off`).
    pub background_encoding: BackgroundEncodingSetting,
    /// Whether the editor and the language server learn the library's
    /// evidence trust from its citing sentences in the background when it
    /// is due (after new citing sentences or new vectors).
    pub background_learning: bool,
    /// Threads for model work (default: one per core but one, which the
    /// editor's and the language server's own loop keep; both of two);
    /// `CITEWISE_THREADS` wins over it.
    pub threads: Option<usize>,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            theme: "dark".into(),
            context: ContextMode::Sentence,
            key_style: KeyStyle::AuthorYearFirstword,
            cite_syntax: CiteSyntaxSetting::Auto,
            cite_commands: Vec::new(),
            results: 20,
            autosave_seconds: 3,
            keys: BTreeMap::new(),
            pdf_viewer: None,
            background_encoding: BackgroundEncodingSetting::All,
            background_learning: true,
            threads: None,
        }
    }
}

impl Config {
    /// What the front ends do in the background: the encodings asked for,
    /// with (if on) the learning of the evidence trust before the slow one
    /// (the citation encoder's own vectors take hours on a CPU; the
    /// student's stand-ins already give its channel, so what is learned
    /// holds once they are replaced).
    pub fn background_phases(&self) -> Vec<crate::pipeline::background::Phase> {
        use crate::pipeline::background::Phase;
        let mut phases = self.background_encoding.phases();
        if self.background_learning {
            let at = phases.iter().position(|&p| p == Phase::Citation).unwrap_or(phases.len());
            phases.insert(at, Phase::Trust);
        }
        phases
    }

    /// The configuration a command runs with: the file `given` (`--config`),
    /// else `config.toml` in the configuration directory, else the defaults.
    pub fn of_user(given: Option<&Path>) -> Result<Config> {
        match given.map(Path::to_path_buf).or_else(crate::dirs::config_file) {
            Some(path) => Config::load(&path),
            None => Ok(Config::default()),
        }
    }

    /// Reads `path`; a missing file gives the defaults.
    pub fn load(path: &Path) -> Result<Config> {
        let config = match crate::limits::read_regular_text(path, crate::limits::SETTINGS_FILE) {
            Ok(text) => toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Config::default(),
            Err(e) => return Err(Error::io(path, e)),
        };
        Ok(config)
    }

    /// The citation grammar of a text in `syntax` under this configuration:
    /// its `cite_commands` cite, as `\cite` does.
    pub fn grammar(&self, syntax: CiteSyntax) -> CiteGrammar {
        CiteGrammar::of(syntax).with_wrappers(&self.cite_commands)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trust_is_learned_in_the_background_before_the_slow_encoding_unless_turned_off() {
        use crate::pipeline::background::Phase;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        let with = |text: &str| {
            std::fs::write(&p, text).unwrap();
            Config::load(&p).unwrap().background_phases()
        };
        assert_eq!(with(""), [Phase::StandIns, Phase::Dense, Phase::Trust, Phase::Citation]);
        assert_eq!(with("background_encoding = \"fast\"\n"), [Phase::StandIns, Phase::Dense, Phase::Trust]);
        assert_eq!(with("background_encoding = \"off\"\n"), [Phase::Trust]);
        assert_eq!(with("background_learning = false\n"), Phase::ENCODINGS);
        assert!(with("background_encoding = \"off\"\nbackground_learning = false\n").is_empty());
    }

    #[test]
    fn partial_configs_fill_in_defaults_and_errors_name_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        assert_eq!(Config::load(&p).unwrap(), Config::default());
        std::fs::write(&p, "theme = \"light\"\ncontext = \"paragraph\"\nkey_style = \"authorYear\"\n[keys]\nsave = [\"ctrl-w\"]\n")
            .unwrap();
        let c = Config::load(&p).unwrap();
        assert_eq!((c.theme.as_str(), c.context, c.key_style), ("light", ContextMode::Paragraph, KeyStyle::AuthorYear));
        assert_eq!(c.keys[&Action::Save], [Key::parse("ctrl-w").unwrap()]);
        assert_eq!(c.results, 20);
        assert_eq!(c.background_encoding.phases().len(), 3);
        std::fs::write(&p, "background_encoding = \"fast\"\n").unwrap();
        assert_eq!(Config::load(&p).unwrap().background_encoding, BackgroundEncodingSetting::Fast);
        assert_eq!(c.threads, None);
        std::fs::write(&p, "threads = 6\n").unwrap();
        assert_eq!(Config::load(&p).unwrap().threads, Some(6));
        std::fs::write(&p, "theme = \"light\"\nresults = \"many\"\n").unwrap();
        let err = Config::load(&p).unwrap_err().to_string();
        assert!(err.contains("config.toml") && err.contains("results"), "{err}");
    }

    #[test]
    fn unknown_actions_and_keys_fail_at_load_with_their_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("config.toml");
        std::fs::write(&p, "theme = \"light\"\n\n[keys]\nsave = [\"ctrl-w\"]\nfly = [\"x\"]\n").unwrap();
        let err = Config::load(&p).unwrap_err().to_string();
        assert!(err.contains("config.toml") && err.contains("line 5") && err.contains("unknown variant `fly`"), "{err}");
        assert!(err.contains("ask_citations"), "the known actions are listed: {err}");
        std::fs::write(&p, "[keys]\nsave = [\"ctrl-w\"]\nquit = [\"ctrl-q\", \"hyper-s\"]\n").unwrap();
        let err = Config::load(&p).unwrap_err().to_string();
        assert!(err.contains("line 3") && err.contains("unknown key `hyper-s`"), "{err}");
    }
}
