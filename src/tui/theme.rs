//! Colour themes, from TOML (`themes/*.toml` are built in; more in the
//! config directory's `themes/`).

use std::path::Path;

use ratatui::style::Color;
use serde::Deserialize;

use crate::error::{Error, Result};

const BUILT_IN: &[(&str, &str)] = &[
    ("dark", include_str!("../../themes/dark.toml")),
    ("light", include_str!("../../themes/light.toml")),
    ("high-contrast", include_str!("../../themes/high-contrast.toml")),
];

#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    pub name: String,
    pub background: Color,
    pub text: Color,
    pub muted: Color,
    pub border: Color,
    pub focus: Color,
    pub accent: Color,
    pub selection_bg: Color,
    pub marked: Color,
    pub highlight: Color,
    pub error: Color,
    pub status_bg: Color,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    background: String,
    text: String,
    muted: String,
    border: String,
    focus: String,
    accent: String,
    selection_bg: String,
    marked: String,
    highlight: String,
    error: String,
    status_bg: String,
}

impl Theme {
    /// Names of the built-in themes.
    pub fn built_in_names() -> Vec<&'static str> {
        BUILT_IN.iter().map(|(n, _)| *n).collect()
    }

    /// A theme by name: `user_dir/NAME.toml` if it exists, else a built-in one.
    pub fn load(name: &str, user_dir: Option<&Path>) -> Result<Theme> {
        if let Some(dir) = user_dir {
            let path = dir.join(format!("{name}.toml"));
            if path.exists() {
                let text = crate::limits::read_regular_text(&path, crate::limits::SETTINGS_FILE).map_err(|e| Error::io(&path, e))?;
                return Self::parse(&text, &path.display().to_string());
            }
        }
        let (_, text) = BUILT_IN
            .iter()
            .find(|(n, _)| *n == name)
            .ok_or_else(|| Error::Config(format!("unknown theme `{name}`; built in: {}", Self::built_in_names().join(", "))))?;
        Self::parse(text, name)
    }

    pub fn parse(text: &str, origin: &str) -> Result<Theme> {
        let f: ThemeFile = toml::from_str(text).map_err(|e| Error::Config(format!("theme {origin}: {e}")))?;
        let c = |field: &str, v: &str| -> Result<Color> {
            v.parse::<Color>().map_err(|_| Error::Config(format!("theme {origin}: field `{field}`: `{v}` is not a colour")))
        };
        Ok(Theme {
            name: f.name.clone(),
            background: c("background", &f.background)?,
            text: c("text", &f.text)?,
            muted: c("muted", &f.muted)?,
            border: c("border", &f.border)?,
            focus: c("focus", &f.focus)?,
            accent: c("accent", &f.accent)?,
            selection_bg: c("selection_bg", &f.selection_bg)?,
            marked: c("marked", &f.marked)?,
            highlight: c("highlight", &f.highlight)?,
            error: c("error", &f.error)?,
            status_bg: c("status_bg", &f.status_bg)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_load() {
        for name in Theme::built_in_names() {
            let t = Theme::load(name, None).unwrap();
            assert_eq!(t.name, name);
        }
        assert_eq!(Theme::load("dark", None).unwrap().selection_bg, Color::Rgb(0x26, 0x4f, 0x78));
        assert!(Theme::load("nope", None).unwrap_err().to_string().contains("built in: dark, light, high-contrast"));
    }

    #[test]
    fn bad_theme_files_name_the_field() {
        let bad = include_str!("../../themes/dark.toml").replace("\"lightcyan\"", "\"octarine\"");
        let err = Theme::parse(&bad, "mine.toml").unwrap_err().to_string();
        assert!(err.contains("mine.toml") && err.contains("`focus`") && err.contains("octarine"), "{err}");
    }
}
