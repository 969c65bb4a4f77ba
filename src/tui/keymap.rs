//! Actions and the keys bound to them; the help overlay is generated from
//! the active keymap.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
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

    pub fn from_event(e: &KeyEvent) -> Option<Key> {
        let ctrl = e.modifiers.contains(KeyModifiers::CONTROL);
        let alt = e.modifiers.contains(KeyModifiers::ALT);
        let code = match e.code {
            KeyCode::Char(c) if ctrl => KeyCodeOrd::Char(c.to_ascii_lowercase()),
            KeyCode::Char(c) => KeyCodeOrd::Char(c),
            KeyCode::F(n) => KeyCodeOrd::F(n),
            KeyCode::Enter => KeyCodeOrd::Enter,
            KeyCode::Esc => KeyCodeOrd::Esc,
            KeyCode::Tab => KeyCodeOrd::Tab,
            KeyCode::BackTab => KeyCodeOrd::BackTab,
            KeyCode::Up => KeyCodeOrd::Up,
            KeyCode::Down => KeyCodeOrd::Down,
            // Some terminals send Ctrl-Space as NUL.
            KeyCode::Null => return Some(Key { code: KeyCodeOrd::Char(' '), ctrl: true, alt }),
            _ => return None,
        };
        Some(Key { code, ctrl, alt })
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

/// The active bindings.
#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<(Key, Action)>,
}

impl Default for Keymap {
    fn default() -> Keymap {
        Keymap::with_overrides(&BTreeMap::new())
    }
}

impl Keymap {
    /// Defaults, with the actions in `overrides` rebound (config:
    /// `[keys] ask_citations = ["ctrl-space", "f5"]`).
    pub fn with_overrides(overrides: &BTreeMap<Action, Vec<Key>>) -> Keymap {
        let mut bindings = Vec::new();
        for &action in Action::ALL {
            match overrides.get(&action) {
                Some(keys) => bindings.extend(keys.iter().map(|&k| (k, action))),
                None => bindings.extend(action.default_keys().iter().map(|k| (Key::parse(k).expect("default keys parse"), action))),
            }
        }
        Keymap { bindings }
    }

    /// The action a key triggers in a scope: global bindings first, then
    /// (outside the editor) list bindings. Where a key has both meanings in
    /// the lists (Tab), the list one wins.
    pub fn action(&self, key: &Key, in_lists: bool) -> Option<Action> {
        let find = |scope: Scope| self.bindings.iter().find(|(k, a)| k == key && a.scope() == scope).map(|(_, a)| *a);
        if in_lists {
            find(Scope::Lists).or_else(|| find(Scope::Global))
        } else {
            find(Scope::Global).or_else(|| {
                // F-keys and Ctrl chords reach list actions from the editor too (F1 help).
                let chord = key.ctrl || matches!(key.code, KeyCodeOrd::F(_));
                if chord {
                    find(Scope::Lists)
                } else {
                    None
                }
            })
        }
    }

    /// Keys of an action, as labels.
    pub fn keys_of(&self, action: Action) -> Vec<String> {
        self.bindings.iter().filter(|(_, a)| *a == action).map(|(k, _)| k.label()).collect()
    }

    /// Help lines: (keys, description), in action order.
    pub fn help(&self) -> Vec<(String, &'static str)> {
        Action::ALL.iter().map(|&a| (self.keys_of(a).join(" / "), a.describe())).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, m: KeyModifiers) -> Key {
        Key::from_event(&KeyEvent::new(code, m)).unwrap()
    }

    #[test]
    fn defaults_resolve_by_scope() {
        let km = Keymap::default();
        assert_eq!(km.action(&ev(KeyCode::Char(' '), KeyModifiers::CONTROL), false), Some(Action::AskCitations));
        assert_eq!(km.action(&ev(KeyCode::F(5), KeyModifiers::NONE), false), Some(Action::AskCitations));
        assert_eq!(km.action(&ev(KeyCode::Null, KeyModifiers::NONE), false), Some(Action::AskCitations));
        assert_eq!(km.action(&ev(KeyCode::Char('j'), KeyModifiers::NONE), false), None, "typing j in the editor");
        assert_eq!(km.action(&ev(KeyCode::Char('j'), KeyModifiers::NONE), true), Some(Action::Down));
        assert_eq!(km.action(&ev(KeyCode::Tab, KeyModifiers::NONE), false), Some(Action::FocusResults));
        assert_eq!(km.action(&ev(KeyCode::Tab, KeyModifiers::NONE), true), Some(Action::ShowEvidence));
        assert_eq!(km.action(&ev(KeyCode::F(1), KeyModifiers::NONE), false), Some(Action::Help));
        assert_eq!(km.action(&ev(KeyCode::Char('s'), KeyModifiers::CONTROL), true), Some(Action::Save));
    }

    #[test]
    fn overrides_rebind_only_their_action() {
        let o = BTreeMap::from([(Action::AskCitations, vec![Key::parse("ctrl-g").unwrap()])]);
        let km = Keymap::with_overrides(&o);
        assert_eq!(km.action(&ev(KeyCode::Char('g'), KeyModifiers::CONTROL), false), Some(Action::AskCitations));
        assert_eq!(km.action(&ev(KeyCode::F(5), KeyModifiers::NONE), false), None);
        assert_eq!(km.keys_of(Action::AskCitations), ["Ctrl-g"]);
        assert_eq!(km.keys_of(Action::Save), ["Ctrl-s"], "other actions keep their defaults");
        assert!(Key::parse("hyper-s").unwrap_err().to_string().contains("unknown key `hyper-s`"));
    }

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
    }

    #[test]
    fn every_action_has_its_row_and_default_keys() {
        for (i, spec) in ACTIONS.iter().enumerate() {
            assert_eq!(spec.action as usize, i);
            assert_eq!(spec.action.describe(), spec.describe);
            assert!(!Keymap::default().keys_of(spec.action).is_empty(), "{:?}", spec.action);
        }
        assert_eq!(ACTIONS.len(), Action::ALL.len());
    }

    #[test]
    fn help_lists_every_action_with_its_keys() {
        let help = Keymap::default().help();
        assert_eq!(help.len(), Action::ALL.len());
        assert_eq!(help[0].0, "Ctrl-Space / F5");
    }
}
