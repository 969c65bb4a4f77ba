//! Where a Zotero data directory is: the one the user named, else the
//! one the default Zotero profile's `prefs.js` names
//! (`extensions.zotero.dataDir`), else `~/Zotero`.

use std::path::{Path, PathBuf};

/// The database file of a data directory.
pub const DATABASE: &str = "zotero.sqlite";

/// The data directory Zotero itself would use for the user whose home is
/// `home` (`None`: none with a database there).
pub fn default_data_dir(home: &Path) -> Option<PathBuf> {
    let from_prefs = default_prefs(home).find_map(|prefs| {
        // A data directory chosen once and then given up (useDataDir false) is not the one in use.
        let given_up = prefs.lines().any(|l| l.trim_start().starts_with("user_pref(\"extensions.zotero.useDataDir\", false"));
        pref_string(&prefs, "extensions.zotero.dataDir").filter(|_| !given_up).map(PathBuf::from)
    });
    from_prefs.into_iter().chain([home.join("Zotero")]).find(|d| d.join(DATABASE).is_file())
}

/// The base directory Zotero's settings name for linked files stored
/// relative to it (`attachments:` paths; Settings → Advanced → Files and
/// Folders), from the default profile of the user whose home is `home`.
pub fn attachment_base_dir(home: &Path) -> Option<PathBuf> {
    default_prefs(home).find_map(|prefs| pref_string(&prefs, "extensions.zotero.baseAttachmentPath").map(PathBuf::from))
}

/// A settings file of Zotero's: a regular file, within its budget.
fn read_settings(path: &Path) -> Option<String> {
    crate::limits::read_regular_text(path, crate::limits::SETTINGS_FILE).ok()
}

/// The `prefs.js` of the default Zotero profile of each platform's profile
/// directory that has one.
fn default_prefs(home: &Path) -> impl Iterator<Item = String> {
    profile_dirs(home).into_iter().filter_map(|profiles| read_settings(&default_profile(&profiles)?.join("prefs.js")))
}

/// The profile directories of each platform's Zotero (`profiles.ini` lives there).
fn profile_dirs(home: &Path) -> Vec<PathBuf> {
    vec![
        home.join(".zotero").join("zotero"),
        home.join("Library").join("Application Support").join("Zotero"),
        home.join("AppData").join("Roaming").join("Zotero").join("Zotero"),
    ]
}

/// The default profile named by `dir/profiles.ini` (the one marked
/// `Default=1`, else the only one).
fn default_profile(dir: &Path) -> Option<PathBuf> {
    let ini = read_settings(&dir.join("profiles.ini"))?;
    let mut profiles: Vec<(PathBuf, bool)> = Vec::new();
    let mut current: Option<(String, bool, bool)> = None; // path, relative, default
    let flush = |c: Option<(String, bool, bool)>, out: &mut Vec<(PathBuf, bool)>| {
        if let Some((path, relative, default)) = c.filter(|c| !c.0.is_empty()) {
            out.push((if relative { dir.join(&path) } else { PathBuf::from(&path) }, default));
        }
    };
    for line in ini.lines().map(str::trim) {
        if line.starts_with('[') {
            flush(current.take(), &mut profiles);
            if line.to_ascii_lowercase().starts_with("[profile") {
                current = Some((String::new(), true, false));
            }
        } else if let (Some(c), Some((k, v))) = (current.as_mut(), line.split_once('=')) {
            match k.trim() {
                "Path" => c.0 = v.trim().to_string(),
                "IsRelative" => c.1 = v.trim() != "0",
                "Default" => c.2 = v.trim() == "1",
                _ => {}
            }
        }
    }
    flush(current.take(), &mut profiles);
    let default = profiles.iter().find(|p| p.1).or(if profiles.len() == 1 { profiles.first() } else { None })?;
    Some(default.0.clone())
}

/// The string value of `user_pref("name", "value");` in a `prefs.js`.
fn pref_string(prefs: &str, name: &str) -> Option<String> {
    let needle = format!("user_pref(\"{name}\",");
    let line = prefs.lines().find(|l| l.trim_start().starts_with(&needle))?;
    let rest = line.trim_start()[needle.len()..].trim_start();
    let body = rest.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.push(chars.next()?),
            '"' => return Some(out),
            c => out.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_profile_names_the_data_directory() {
        let home = tempfile::tempdir().unwrap();
        let profiles = home.path().join(".zotero/zotero");
        std::fs::create_dir_all(profiles.join("abcd.default")).unwrap();
        std::fs::create_dir_all(profiles.join("efgh.other")).unwrap();
        std::fs::write(
            profiles.join("profiles.ini"),
            "[General]\nStartWithLastProfile=1\n\n[Profile1]\nName=other\nIsRelative=1\nPath=efgh.other\n\n[Profile0]\nName=default\nIsRelative=1\nPath=abcd.default\nDefault=1\n",
        )
        .unwrap();
        let data = home.path().join("Research Data\\\"Z\"");
        std::fs::create_dir_all(&data).unwrap();
        std::fs::write(data.join(DATABASE), b"").unwrap();
        let escaped = data.display().to_string().replace('\\', "\\\\").replace('"', "\\\"");
        std::fs::write(
            profiles.join("abcd.default/prefs.js"),
            format!("user_pref(\"extensions.zotero.useDataDir\", true);\nuser_pref(\"extensions.zotero.dataDir\", \"{escaped}\");\n"),
        )
        .unwrap();
        assert_eq!(default_data_dir(home.path()), Some(data.clone()));
        assert_eq!(attachment_base_dir(home.path()), None);
        std::fs::write(profiles.join("abcd.default/prefs.js"), "user_pref(\"extensions.zotero.baseAttachmentPath\", \"/srv/papers\");\n")
            .unwrap();
        assert_eq!(attachment_base_dir(home.path()), Some(PathBuf::from("/srv/papers")));
        // Given up (useDataDir false): not used.
        std::fs::write(
            profiles.join("abcd.default/prefs.js"),
            format!("user_pref(\"extensions.zotero.useDataDir\", false);\nuser_pref(\"extensions.zotero.dataDir\", \"{escaped}\");\n"),
        )
        .unwrap();
        assert_eq!(default_data_dir(home.path()), None);
        // Without the preference, ~/Zotero; without either, none.
        std::fs::write(profiles.join("abcd.default/prefs.js"), "").unwrap();
        assert_eq!(default_data_dir(home.path()), None);
        std::fs::create_dir_all(home.path().join("Zotero")).unwrap();
        std::fs::write(home.path().join("Zotero").join(DATABASE), b"").unwrap();
        assert_eq!(default_data_dir(home.path()), Some(home.path().join("Zotero")));
    }
}
