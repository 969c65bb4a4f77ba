//! Actions and the keys bound to them; the help overlay is generated from
//! the active keymap.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::error::{Error, Result};

/// Where a binding applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Everywhere, also while typing in the editor.
    Global,
    /// In the results list and the evidence pane.
    Lists,
}

/// Everything a key can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Action {
    AskCitations,
    CycleContext,
    Save,
    Quit,
    Help,
    FocusResults,
    FocusEditor,
    Down,
    Up,
    ShowEvidence,
    Mark,
    Export,
    InsertCitation,
    CopyKeys,
    OpenLink,
    Filter,
}

impl Action {
    pub const ALL: [Action; 16] = [
        Action::AskCitations,
        Action::CycleContext,
        Action::Save,
        Action::Quit,
        Action::Help,
        Action::FocusResults,
        Action::FocusEditor,
        Action::Down,
        Action::Up,
        Action::ShowEvidence,
        Action::Mark,
        Action::Export,
        Action::InsertCitation,
        Action::CopyKeys,
        Action::OpenLink,
        Action::Filter,
    ];

    /// Config name (`ask_citations`, ...).
    pub fn name(self) -> &'static str {
        match self {
            Action::AskCitations => "ask_citations",
            Action::CycleContext => "cycle_context",
            Action::Save => "save",
            Action::Quit => "quit",
            Action::Help => "help",
            Action::FocusResults => "focus_results",
            Action::FocusEditor => "focus_editor",
            Action::Down => "down",
            Action::Up => "up",
            Action::ShowEvidence => "show_evidence",
            Action::Mark => "mark",
            Action::Export => "export",
            Action::InsertCitation => "insert_citation",
            Action::CopyKeys => "copy_keys",
            Action::OpenLink => "open_link",
            Action::Filter => "filter",
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Action::AskCitations => "recommend citations for the text at the cursor",
            Action::CycleContext => "context: sentence / paragraph (a selection always wins)",
            Action::Save => "save the draft",
            Action::Quit => "quit (twice if there are unsaved changes)",
            Action::Help => "show or hide this help",
            Action::FocusResults => "move to the results",
            Action::FocusEditor => "back to the editor",
            Action::Down => "next paper / evidence",
            Action::Up => "previous paper / evidence",
            Action::ShowEvidence => "focus the evidence of the paper",
            Action::Mark => "mark or unmark the paper",
            Action::Export => "export the marked papers' BibTeX",
            Action::InsertCitation => "insert the citation at the cursor",
            Action::CopyKeys => "copy the marked papers' keys",
            Action::OpenLink => "open the DOI / URL (Evidence: the citing PDF)",
            Action::Filter => "filter the results",
        }
    }

    pub fn scope(self) -> Scope {
        match self {
            Action::AskCitations | Action::CycleContext | Action::Save | Action::Quit | Action::FocusResults => Scope::Global,
            _ => Scope::Lists,
        }
    }

    fn from_name(name: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.name() == name)
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
            f if f.len() >= 2 && f.starts_with('f') && f[1..].parse::<u8>().is_ok() => KeyCodeOrd::F(f[1..].parse().unwrap()),
            c if c.chars().count() == 1 => {
                // Keep the case the user wrote for plain letters ("Y" ≠ "y").
                let orig = s.trim().chars().last().unwrap();
                KeyCodeOrd::Char(if ctrl { c.chars().next().unwrap() } else { orig })
            }
            _ => return Err(Error::Library(format!("unknown key `{s}`"))),
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

/// The active bindings.
#[derive(Debug, Clone)]
pub struct Keymap {
    bindings: Vec<(Key, Action)>,
}

const DEFAULTS: &[(&str, &[&str])] = &[
    ("ask_citations", &["ctrl-space", "f5"]),
    ("cycle_context", &["f6"]),
    ("save", &["ctrl-s"]),
    ("quit", &["ctrl-q"]),
    ("help", &["?", "f1"]),
    ("focus_results", &["tab"]),
    ("focus_editor", &["esc"]),
    ("down", &["j", "down"]),
    ("up", &["k", "up"]),
    ("show_evidence", &["enter", "tab"]),
    ("mark", &["space"]),
    ("export", &["e"]),
    ("insert_citation", &["c"]),
    ("copy_keys", &["y"]),
    ("open_link", &["o"]),
    ("filter", &["/"]),
];

impl Default for Keymap {
    fn default() -> Keymap {
        Keymap::with_overrides(&BTreeMap::new()).expect("defaults parse")
    }
}

impl Keymap {
    /// Defaults, with the actions named in `overrides` rebound (config:
    /// `[keys] ask_citations = ["ctrl-space", "f5"]`).
    pub fn with_overrides(overrides: &BTreeMap<String, Vec<String>>) -> Result<Keymap> {
        for name in overrides.keys() {
            if Action::from_name(name).is_none() {
                return Err(Error::Library(format!("config [keys]: unknown action `{name}`")));
            }
        }
        let mut bindings = Vec::new();
        for (name, keys) in DEFAULTS {
            let action = Action::from_name(name).expect("default names are actions");
            let keys: Vec<String> = match overrides.get(*name) {
                Some(v) => v.clone(),
                None => keys.iter().map(|k| k.to_string()).collect(),
            };
            for k in keys {
                let key = Key::parse(&k).map_err(|e| Error::Library(format!("config [keys] {name}: {e}")))?;
                bindings.push((key, action));
            }
        }
        Ok(Keymap { bindings })
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
        Action::ALL.iter().map(|a| (self.keys_of(*a).join(" / "), a.describe())).collect()
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
    fn overrides_rebind_and_errors_name_the_action() {
        let mut o = BTreeMap::new();
        o.insert("ask_citations".to_string(), vec!["ctrl-g".to_string()]);
        let km = Keymap::with_overrides(&o).unwrap();
        assert_eq!(km.action(&ev(KeyCode::Char('g'), KeyModifiers::CONTROL), false), Some(Action::AskCitations));
        assert_eq!(km.action(&ev(KeyCode::F(5), KeyModifiers::NONE), false), None);
        assert_eq!(km.keys_of(Action::AskCitations), ["Ctrl-g"]);
        o.insert("fly".to_string(), vec!["x".to_string()]);
        assert!(Keymap::with_overrides(&o).unwrap_err().to_string().contains("unknown action `fly`"));
        let mut bad = BTreeMap::new();
        bad.insert("save".to_string(), vec!["hyper-s".to_string()]);
        assert!(Keymap::with_overrides(&bad).unwrap_err().to_string().contains("save: unknown key `hyper-s`"));
    }

    #[test]
    fn help_lists_every_action_with_its_keys() {
        let help = Keymap::default().help();
        assert_eq!(help.len(), Action::ALL.len());
        assert_eq!(help[0].0, "Ctrl-Space / F5");
    }
}
