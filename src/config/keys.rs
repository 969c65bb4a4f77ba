//! The words of the config's `[keys]` table: the editor's actions (each
//! with its scope, default keys and line of help, declared once) and keys
//! as the config writes them (`ctrl-space`, `f5`, `j`). Read by serde as
//! the config loads, so an unknown action or key fails there, with its
//! line. What a key does in the editor (`tui::keymap::Keymap`) and how a
//! terminal's key event becomes a [`Key`] are the editor's.

use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Everywhere, also while typing in the editor.
    Global,
    /// In the results list and the evidence pane.
    Lists,
}

/// What the keymap knows of an action besides its name.
#[derive(Debug)]
pub struct ActionSpec {
    pub action: Action,
    pub scope: Scope,
    /// The keys bound when the config does not rebind the action.
    pub keys: &'static [&'static str],
    /// Its line in the help overlay.
    pub describe: &'static str,
}

/// Declares [`Action`] and [`ACTIONS`] from one list, so that an action's
/// name, scope, default keys and description cannot drift apart.
macro_rules! actions {
    ($($variant:ident: $scope:ident, [$($key:literal),+], $describe:literal;)+) => {
        /// Everything a key can do. The config's `[keys]` table names an
        /// action in snake case (`ask_citations`); an unknown name fails when
        /// the config loads.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum Action {
            $($variant),+
        }

        /// Every action, in declaration (and help) order.
        pub const ACTIONS: &[ActionSpec] = &[
            $(ActionSpec { action: Action::$variant, scope: Scope::$scope, keys: &[$($key),+], describe: $describe }),+
        ];

        impl Action {
            /// Every action, in help order.
            pub const ALL: &'static [Action] = &[$(Action::$variant),+];
        }
    };
}

actions! {
    AskCitations: Global, ["ctrl-space", "f5"], "recommend citations for the text at the cursor";
    CycleContext: Global, ["f6"], "context: sentence / paragraph (a selection always wins)";
    Save: Global, ["ctrl-s"], "save the draft";
    Quit: Global, ["ctrl-q"], "quit (twice if there are unsaved changes)";
    Help: Lists, ["?", "f1"], "show or hide this help";
    FocusResults: Global, ["tab"], "move to the results";
    FocusEditor: Lists, ["esc"], "back: Evidence → Results → the editor";
    Down: Lists, ["j", "down"], "next paper / evidence";
    Up: Lists, ["k", "up"], "previous paper / evidence";
    ShowEvidence: Lists, ["enter", "tab"], "focus the evidence of the paper";
    Mark: Lists, ["space"], "mark or unmark the paper; in Results, then the next one";
    Export: Lists, ["e"], "export the marked papers' BibTeX";
    InsertCitation: Lists, ["c"], "insert the citation at the cursor";
    CopyKeys: Lists, ["y"], "copy the marked papers' keys";
    OpenLink: Lists, ["o"], "open the DOI / URL (Evidence: the citing PDF)";
    Filter: Lists, ["/"], "filter the results";
    RewriteKeys: Global, ["f7"], "rewrite citation keys that changed in the library";
    CheckCitations: Global, ["f8"], "check the draft's citations, weakest support first";
}

impl Action {
    /// Its row of [`ACTIONS`] (the macro writes both in the same order).
    fn spec(self) -> &'static ActionSpec {
        &ACTIONS[self as usize]
    }

    pub fn describe(self) -> &'static str {
        self.spec().describe
    }

    pub fn scope(self) -> Scope {
        self.spec().scope
    }

    /// The keys bound to it when the config does not rebind it.
    pub fn default_keys(self) -> &'static [&'static str] {
        self.spec().keys
    }
}

/// A key with modifiers, as written in the config (`ctrl-space`, `f5`, `j`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub code: KeyCodeOrd,
    pub ctrl: bool,
    pub alt: bool,
}

/// `KeyCode` subset with an order (for stable help output).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum KeyCodeOrd {
    Char(char),
    F(u8),
    Enter,
    Esc,
    Tab,
    BackTab,
    Up,
    Down,
}

impl Key {
    pub fn parse(s: &str) -> Result<Key> {
        let lower = s.trim().to_ascii_lowercase();
        let mut ctrl = false;
        let mut alt = false;
        let mut rest = lower.as_str();
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-").or_else(|| rest.strip_prefix("c-")) {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("alt-").or_else(|| rest.strip_prefix("m-")) {
                alt = true;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "space" => KeyCodeOrd::Char(' '),
            "enter" | "return" => KeyCodeOrd::Enter,
            "esc" | "escape" => KeyCodeOrd::Esc,
            "tab" => KeyCodeOrd::Tab,
            "backtab" | "shift-tab" => KeyCodeOrd::BackTab,
            "up" => KeyCodeOrd::Up,
            "down" => KeyCodeOrd::Down,
            f if f.len() >= 2 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => {
                KeyCodeOrd::F(f[1..].parse().expect("checked by the guard"))
            }
            c if c.chars().count() == 1 => {
                // Keep the case the user wrote for plain letters ("Y" ≠ "y").
                let orig = s.trim().chars().last().expect("a one-character key");
                KeyCodeOrd::Char(if ctrl { c.chars().next().expect("a one-character key") } else { orig })
            }
            _ => return Err(Error::Config(format!("unknown key `{s}`"))),
        };
        Ok(Key { code, ctrl, alt })
    }

    pub fn label(&self) -> String {
        let mut s = String::new();
        if self.ctrl {
            s.push_str("Ctrl-");
        }
        if self.alt {
            s.push_str("Alt-");
        }
        match self.code {
            KeyCodeOrd::Char(' ') => s.push_str("Space"),
            KeyCodeOrd::Char(c) => s.push(c),
            KeyCodeOrd::F(n) => s.push_str(&format!("F{n}")),
            KeyCodeOrd::Enter => s.push_str("Enter"),
            KeyCodeOrd::Esc => s.push_str("Esc"),
            KeyCodeOrd::Tab => s.push_str("Tab"),
            KeyCodeOrd::BackTab => s.push_str("Shift-Tab"),
            KeyCodeOrd::Up => s.push('↑'),
            KeyCodeOrd::Down => s.push('↓'),
        }
        s
    }
}

/// A key in the config is parsed as it is read, so a key name nobody knows
/// fails at load with its line.
impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Key, D::Error> {
        let s = String::deserialize(d)?;
        Key::parse(&s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    /// The names and key spellings users write in the config's `[keys]` table.
    #[test]
    fn config_names_of_actions_and_keys() {
        let names = [
            "ask_citations",
            "cycle_context",
            "save",
            "quit",
            "help",
            "focus_results",
            "focus_editor",
            "down",
            "up",
            "show_evidence",
            "mark",
            "export",
            "insert_citation",
            "copy_keys",
            "open_link",
            "filter",
            "rewrite_keys",
            "check_citations",
        ];
        assert_eq!(names.len(), Action::ALL.len());
        for (name, &action) in names.iter().zip(Action::ALL) {
            let table: BTreeMap<Action, Vec<Key>> = toml::from_str(&format!("{name} = [\"ctrl-space\", \"F5\", \"Y\"]")).unwrap();
            assert_eq!(table.keys().collect::<Vec<_>>(), [&action], "{name}");
            let labels: Vec<String> = table[&action].iter().map(Key::label).collect();
            assert_eq!(labels, ["Ctrl-Space", "F5", "Y"], "{name}");
        }
        assert!(Key::parse("hyper-s").unwrap_err().to_string().contains("unknown key `hyper-s`"));
    }

    #[test]
    fn every_action_has_its_row() {
        for (i, spec) in ACTIONS.iter().enumerate() {
            assert_eq!(spec.action as usize, i);
            assert_eq!(spec.action.describe(), spec.describe);
            assert!(!spec.action.default_keys().is_empty(), "{:?}", spec.action);
        }
        assert_eq!(ACTIONS.len(), Action::ALL.len());
    }
}
