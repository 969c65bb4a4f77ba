//! Where citewise keeps its configuration and its data: the one rule.
//!
//! Configuration: `$CITEWISE_CONFIG_DIR`, else `$XDG_CONFIG_HOME/citewise`,
//! else `~/.config/citewise` on Linux and macOS (the platform's own place on
//! Windows). Data (the library, models, autosaves): `$CITEWISE_DATA_DIR`,
//! else `$XDG_DATA_HOME/citewise`, else `~/.local/share/citewise` (the
//! platform's place on Windows). What is at the older location (the
//! platform's, e.g. `~/Library/Application Support/citewise` on macOS: a
//! library, a `config.toml`) is still read while the new place does not
//! hold it, so an upgrade loses nothing; what is new is made in the new
//! place. `citewise doctor` prints the directories and the reason for each.

use std::ffi::OsString;
use std::path::PathBuf;

/// Environment variable naming the configuration directory.
pub const CONFIG_DIR_ENV: &str = "CITEWISE_CONFIG_DIR";
/// Environment variable naming the data directory.
pub const DATA_DIR_ENV: &str = "CITEWISE_DATA_DIR";

/// The path an environment variable names, when it is set and not empty
/// (an empty variable counts as unset, as with the directory variables).
pub fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from)
}

/// The two directories.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Config,
    Data,
}

impl Kind {
    fn own_env(self) -> &'static str {
        match self {
            Kind::Config => CONFIG_DIR_ENV,
            Kind::Data => DATA_DIR_ENV,
        }
    }

    fn xdg_env(self) -> &'static str {
        match self {
            Kind::Config => "XDG_CONFIG_HOME",
            Kind::Data => "XDG_DATA_HOME",
        }
    }

    /// Below the home directory, where XDG puts it by default.
    fn home_default(self) -> &'static str {
        match self {
            Kind::Config => ".config",
            Kind::Data => ".local/share",
        }
    }
}

/// Why a directory was chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reason {
    /// `$CITEWISE_CONFIG_DIR` / `$CITEWISE_DATA_DIR`.
    Own(&'static str),
    /// `$XDG_CONFIG_HOME` / `$XDG_DATA_HOME`.
    Xdg(&'static str),
    /// The default below the home directory.
    Home,
    /// The platform's place (Windows).
    Platform,
    /// The older location, used because it exists and the new one (named)
    /// does not.
    Older { new: PathBuf },
}

/// A directory and why it is the one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chosen {
    pub path: PathBuf,
    pub reason: Reason,
}

impl std::fmt::Display for Chosen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (", self.path.display())?;
        match &self.reason {
            Reason::Own(var) | Reason::Xdg(var) => write!(f, "from ${var}"),
            Reason::Home => write!(f, "the default"),
            Reason::Platform => write!(f, "the platform's default"),
            Reason::Older { new } => write!(f, "the older location, still read; move it to {} to use the new one", new.display()),
        }?;
        write!(f, ")")
    }
}

/// What the rule reads: the environment, the home directory, and the
/// older (platform) location. Separate from the process so that the rule
/// is tested without touching the real environment.
pub struct Inputs<'a> {
    pub var: &'a dyn Fn(&str) -> Option<OsString>,
    pub home: Option<PathBuf>,
    /// The place the `directories` crate gives this kind on this platform
    /// (where earlier versions of citewise kept it).
    pub platform: Option<PathBuf>,
    /// Whether the platform's place is the default (Windows) rather than
    /// an older location.
    pub platform_is_default: bool,
}

/// Where `kind` goes now, by the environment alone.
fn new_place(kind: Kind, inputs: &Inputs) -> Option<Chosen> {
    let set = |name: &str| (inputs.var)(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(path) = set(kind.own_env()) {
        return Some(Chosen { path, reason: Reason::Own(kind.own_env()) });
    }
    // The XDG base directory spec: a relative path is invalid and ignored.
    Some(match set(kind.xdg_env()).filter(|p| p.is_absolute()) {
        Some(base) => Chosen { path: base.join("citewise"), reason: Reason::Xdg(kind.xdg_env()) },
        None if inputs.platform_is_default => Chosen { path: inputs.platform.clone()?, reason: Reason::Platform },
        None => Chosen { path: inputs.home.as_ref()?.join(kind.home_default()).join("citewise"), reason: Reason::Home },
    })
}

/// The directory of `kind` under `inputs`: the older location while it
/// exists and the new one does not (citewise's own variable always wins).
pub fn resolve(kind: Kind, inputs: &Inputs) -> Option<Chosen> {
    let new = new_place(kind, inputs)?;
    match &inputs.platform {
        Some(older) if !matches!(new.reason, Reason::Own(_)) && *older != new.path && !new.path.exists() && older.exists() => {
            Some(Chosen { path: older.clone(), reason: Reason::Older { new: new.path } })
        }
        _ => Some(new),
    }
}

/// `name` (a file or directory) of `kind` under `inputs`, decided for
/// itself: the older location's while it exists there and not in the new
/// place. So a library left at the older location is still found after
/// something else (the models, an autosave) has made the new directory.
pub fn resolve_item(kind: Kind, name: &str, inputs: &Inputs) -> Option<Chosen> {
    let new = new_place(kind, inputs)?;
    let path = new.path.join(name);
    if let Some(older) = &inputs.platform {
        let old = older.join(name);
        if !matches!(new.reason, Reason::Own(_)) && *older != new.path && !path.exists() && old.exists() {
            return Some(Chosen { path: old, reason: Reason::Older { new: path } });
        }
    }
    Some(Chosen { path, reason: new.reason })
}

/// What the rule reads in this process.
fn with_process_inputs<T>(kind: Kind, f: impl FnOnce(&Inputs) -> T) -> T {
    let project = directories::ProjectDirs::from("", "", "citewise");
    let platform = project.map(|d| match kind {
        Kind::Config => d.config_dir().to_path_buf(),
        Kind::Data => d.data_dir().to_path_buf(),
    });
    let home = directories::BaseDirs::new().map(|d| d.home_dir().to_path_buf());
    let var = |name: &str| std::env::var_os(name);
    f(&Inputs { var: &var, home, platform, platform_is_default: cfg!(windows) })
}

/// The directory of `kind` for this process, and why.
pub fn chosen(kind: Kind) -> Option<Chosen> {
    with_process_inputs(kind, |i| resolve(kind, i))
}

/// `name` of `kind` for this process, and why it is there.
pub fn chosen_item(kind: Kind, name: &str) -> Option<Chosen> {
    with_process_inputs(kind, |i| resolve_item(kind, name, i))
}

/// `config.toml` of the configuration directory.
pub fn config_file() -> Option<PathBuf> {
    config_path("config.toml")
}

/// `name` of the configuration directory (`config.toml`, `themes`).
pub fn config_path(name: &str) -> Option<PathBuf> {
    chosen_item(Kind::Config, name).map(|c| c.path)
}

/// `name` of the data directory (`library`, `models`, `autosave`, `demo`).
pub fn data_path(name: &str) -> Option<PathBuf> {
    chosen_item(Kind::Data, name).map(|c| c.path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::path::Path;

    fn inputs<'a>(var: &'a dyn Fn(&str) -> Option<OsString>, home: &Path, platform: Option<PathBuf>) -> Inputs<'a> {
        Inputs { var, home: Some(home.to_path_buf()), platform, platform_is_default: false }
    }

    fn env(pairs: &[(&str, &Path)]) -> impl Fn(&str) -> Option<OsString> {
        let map: HashMap<String, OsString> = pairs.iter().map(|(k, v)| (k.to_string(), v.as_os_str().to_owned())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn own_variable_then_xdg_then_home() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let mine = h.join("mine");
        let xdg = h.join("xdg");
        for kind in [Kind::Config, Kind::Data] {
            let var = env(&[(kind.own_env(), &mine), (kind.xdg_env(), &xdg)]);
            let c = resolve(kind, &inputs(&var, h, None)).unwrap();
            assert_eq!((c.path, c.reason), (mine.clone(), Reason::Own(kind.own_env())));

            let var = env(&[(kind.xdg_env(), &xdg)]);
            let c = resolve(kind, &inputs(&var, h, None)).unwrap();
            assert_eq!((c.path, c.reason), (xdg.join("citewise"), Reason::Xdg(kind.xdg_env())));

            let none = env(&[]);
            let c = resolve(kind, &inputs(&none, h, None)).unwrap();
            assert_eq!(c.reason, Reason::Home);
        }
        let none = env(&[]);
        assert_eq!(resolve(Kind::Config, &inputs(&none, h, None)).unwrap().path, h.join(".config/citewise"));
        assert_eq!(resolve(Kind::Data, &inputs(&none, h, None)).unwrap().path, h.join(".local/share/citewise"));
    }

    #[test]
    fn empty_or_relative_variables_are_ignored() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let var = env(&[(CONFIG_DIR_ENV, Path::new("")), ("XDG_CONFIG_HOME", Path::new("relative/dir"))]);
        let c = resolve(Kind::Config, &inputs(&var, h, None)).unwrap();
        assert_eq!((c.path, c.reason), (h.join(".config/citewise"), Reason::Home));
    }

    #[test]
    fn the_older_location_is_read_until_the_new_one_exists() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let older = h.join("Library/Application Support/citewise");
        let none = env(&[]);
        // Neither exists: the new one (it is where things will be made).
        assert_eq!(resolve(Kind::Data, &inputs(&none, h, Some(older.clone()))).unwrap().reason, Reason::Home);
        // Only the older one exists: it is used, and the new one is named.
        std::fs::create_dir_all(older.join("library")).unwrap();
        let c = resolve(Kind::Data, &inputs(&none, h, Some(older.clone()))).unwrap();
        assert_eq!(c.path, older);
        assert_eq!(c.reason, Reason::Older { new: h.join(".local/share/citewise") });
        assert!(c.to_string().contains("older location"), "{c}");
        // Both exist: the new one wins.
        std::fs::create_dir_all(h.join(".local/share/citewise")).unwrap();
        assert_eq!(resolve(Kind::Data, &inputs(&none, h, Some(older.clone()))).unwrap().reason, Reason::Home);
        // A variable always wins over the older location.
        let mine = h.join("mine");
        let var = env(&[(DATA_DIR_ENV, &mine)]);
        assert_eq!(resolve(Kind::Data, &inputs(&var, h, Some(older))).unwrap().path, mine);
    }

    #[test]
    fn each_item_is_found_where_it_is() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        let older = h.join("Library/Application Support/citewise");
        let new = h.join(".local/share/citewise");
        std::fs::create_dir_all(older.join("library")).unwrap();
        // The models were fetched into the new place; the library stayed.
        std::fs::create_dir_all(new.join("models")).unwrap();
        let none = env(&[]);
        let i = inputs(&none, h, Some(older.clone()));
        assert_eq!(resolve_item(Kind::Data, "library", &i).unwrap().path, older.join("library"));
        assert_eq!(resolve_item(Kind::Data, "models", &i).unwrap().path, new.join("models"));
        // What exists nowhere is made in the new place.
        let c = resolve_item(Kind::Data, "autosave", &i).unwrap();
        assert_eq!((c.path, c.reason), (new.join("autosave"), Reason::Home));
        // Once the library is in the new place too, the new one wins.
        std::fs::create_dir_all(new.join("library")).unwrap();
        assert_eq!(resolve_item(Kind::Data, "library", &i).unwrap().path, new.join("library"));
        // Config files alike.
        let older_conf = h.join("old-conf");
        std::fs::create_dir_all(&older_conf).unwrap();
        std::fs::write(older_conf.join("config.toml"), "").unwrap();
        let i = inputs(&none, h, Some(older_conf.clone()));
        assert_eq!(resolve_item(Kind::Config, "config.toml", &i).unwrap().path, older_conf.join("config.toml"));
        // citewise's own variable: only its directory.
        let mine = h.join("mine");
        let var = env(&[(CONFIG_DIR_ENV, &mine)]);
        let i = inputs(&var, h, Some(older_conf));
        assert_eq!(resolve_item(Kind::Config, "config.toml", &i).unwrap().path, mine.join("config.toml"));
    }

    #[test]
    fn on_windows_the_platform_place_is_the_default() {
        let home = tempfile::tempdir().unwrap();
        let platform = home.path().join("AppData/Roaming/citewise/config");
        let none = env(&[]);
        let i = Inputs { var: &none, home: Some(home.path().to_path_buf()), platform: Some(platform.clone()), platform_is_default: true };
        let c = resolve(Kind::Config, &i).unwrap();
        assert_eq!((c.path, c.reason), (platform, Reason::Platform));
    }
}
