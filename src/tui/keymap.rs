//! What a key does in the editor: the active bindings (the defaults, with
//! the configuration's `[keys]` table over them), resolved by scope, and a
//! terminal's key event as a [`Key`]. The actions and the key spellings are
//! the configuration's words (`crate::config::keys`); the help overlay is
//! generated from the active keymap.

use std::collections::BTreeMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

pub use crate::config::keys::{Action, ActionSpec, Key, KeyCodeOrd, Scope, ACTIONS};

impl Key {
    /// The key a terminal's key event is, if the keymap can bind it.
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
    }

    #[test]
    fn every_action_has_default_keys() {
        for spec in ACTIONS {
            assert!(!Keymap::default().keys_of(spec.action).is_empty(), "{:?}", spec.action);
        }
    }

    #[test]
    fn help_lists_every_action_with_its_keys() {
        let help = Keymap::default().help();
        assert_eq!(help.len(), Action::ALL.len());
        assert_eq!(help[0].0, "Ctrl-Space / F5");
    }
}
