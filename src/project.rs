//! The one rule for every path a document names (`\input`, `\include`,
//! `\bibliography`, `\addbibresource`, Markdown front matter, Typst
//! `#bibliography`): it must lead to a file inside the document's project,
//! after symbolic links are followed. A document someone sends you decides
//! nothing about what citewise reads or writes elsewhere.
//!
//! The project is the folder the user chose: the workspace folder an editor
//! gave the language server, the directory `import --evidence` was given
//! (a file given alone: its own folder). Sits below every layer: the
//! evidence readers and the language server both resolve through it.

use std::path::{Component, Path, PathBuf};

/// The folder a document's paths must stay in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// Canonical (links followed), so that a resolved path is compared
    /// with what it really is.
    root: PathBuf,
    /// As the user named it, for messages.
    shown: PathBuf,
}

/// Why a path a document names is not used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// It leads outside the project (through `..`, an absolute path, or a
    /// symbolic link).
    Outside { named: String, project: PathBuf },
    /// Inside the project, but no such file.
    NotFound { named: String },
    /// Inside the project, but it does not read (too large, no permission).
    Unreadable { named: String, why: String },
}

impl Refused {
    /// The same refusal, naming the path as the document wrote it (a
    /// reader may have tried it with an extension added).
    pub fn renamed(self, named: &str) -> Refused {
        let named = named.to_string();
        match self {
            Refused::Outside { project, .. } => Refused::Outside { named, project },
            Refused::NotFound { .. } => Refused::NotFound { named },
            Refused::Unreadable { why, .. } => Refused::Unreadable { named, why },
        }
    }
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Outside { named, project } => {
                write!(f, "`{named}` lies outside the project ({})", project.display())
            }
            Refused::NotFound { named } => write!(f, "`{named}` not found"),
            Refused::Unreadable { named, why } => write!(f, "`{named}` cannot be read ({why})"),
        }
    }
}

impl Project {
    /// The project rooted at `root` (which must exist).
    pub fn new(root: &Path) -> std::io::Result<Project> {
        let shown = if root.as_os_str().is_empty() { PathBuf::from(".") } else { root.to_path_buf() };
        Ok(Project { root: shown.canonicalize()?, shown })
    }

    /// The project of a file named on its own: its folder.
    pub fn of_file(file: &Path) -> std::io::Result<Project> {
        Project::new(file.parent().unwrap_or(Path::new("")))
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Whether `path` (absolute, or relative to the working directory)
    /// lies inside the project once its links are followed.
    pub fn contains(&self, path: &Path) -> bool {
        physical(path).is_some_and(|p| p.starts_with(&self.root))
    }

    /// The file `named` stands for, written in a document in folder `dir`:
    /// inside the project, links followed. A file that does not exist yet
    /// is resolved through its nearest existing folder (so a write there
    /// creates it inside the project). Every reader and writer of a path a
    /// document names goes through here.
    pub fn resolve(&self, dir: &Path, named: &str) -> Result<PathBuf, Refused> {
        let outside = || Refused::Outside { named: named.to_string(), project: self.shown.clone() };
        if named.is_empty() || named.contains('\0') {
            return Err(Refused::NotFound { named: named.to_string() });
        }
        let joined = lexical(&dir.join(named)).ok_or_else(outside)?;
        let real = physical(&joined).ok_or_else(outside)?;
        if !real.starts_with(&self.root) {
            return Err(outside());
        }
        Ok(real)
    }

    /// Like [`Project::resolve`], for a file that must exist.
    pub fn existing(&self, dir: &Path, named: &str) -> Result<PathBuf, Refused> {
        let path = self.resolve(dir, named)?;
        if path.is_file() {
            Ok(path)
        } else {
            Err(Refused::NotFound { named: named.to_string() })
        }
    }
}

/// `a/./b/../c` → `a/c` without touching the disk; none when `..` climbs
/// above the start of a relative path.
fn lexical(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for c in path.components() {
        match c {
            Component::Prefix(_) | Component::RootDir => {
                out.push(c.as_os_str());
                depth = 0;
            }
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    if out.has_root() {
                        continue; // `/..` is `/`
                    }
                    return None;
                }
                out.pop();
                depth -= 1;
            }
            Component::Normal(n) => {
                out.push(n);
                depth += 1;
            }
        }
    }
    Some(out)
}

/// The path with every link followed: the canonical form of its longest
/// existing ancestor, then the rest (which holds no `..`, no links: it
/// does not exist). None when nothing of it exists or a link loops.
fn physical(path: &Path) -> Option<PathBuf> {
    let absolute = if path.is_absolute() { path.to_path_buf() } else { std::env::current_dir().ok()?.join(path) };
    let absolute = lexical(&absolute)?;
    let mut existing = absolute.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        match existing.canonicalize() {
            Ok(real) => {
                let mut out = real;
                for part in rest.iter().rev() {
                    out.push(part);
                }
                return Some(out);
            }
            // A dangling link is not "a file to create": where it points
            // decides, and that is not known to be inside.
            Err(_) if std::fs::symlink_metadata(existing).is_ok() => return None,
            Err(_) => {
                rest.push(existing.file_name()?);
                existing = existing.parent()?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexical_normalisation_never_climbs_above_its_start() {
        assert_eq!(lexical(Path::new("a/./b/../c.bib")), Some(PathBuf::from("a/c.bib")));
        assert_eq!(lexical(Path::new("a/../../c.bib")), None);
        assert_eq!(lexical(Path::new("/../etc")), Some(PathBuf::from("/etc")));
    }

    #[test]
    fn paths_inside_resolve_and_paths_outside_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(root.join("chapters")).unwrap();
        std::fs::write(root.join("refs.bib"), "@misc{a, title={A}}").unwrap();
        std::fs::write(tmp.path().join("secret.bib"), "@misc{s, title={S}}").unwrap();
        let p = Project::new(&root).unwrap();
        let real_root = root.canonicalize().unwrap();
        let chapters = root.join("chapters");
        assert_eq!(p.existing(&chapters, "../refs.bib").unwrap(), real_root.join("refs.bib"));
        assert_eq!(p.resolve(&root, "new/x.bib").unwrap(), real_root.join("new/x.bib"), "a file to create, inside");
        for named in ["../secret.bib", "chapters/../../secret.bib", tmp.path().join("secret.bib").to_str().unwrap(), "/etc/passwd"] {
            let e = p.resolve(&root, named).unwrap_err();
            assert!(matches!(e, Refused::Outside { .. }), "{named}: {e:?}");
            assert!(e.to_string().contains("outside the project"), "{e}");
        }
        assert!(matches!(p.existing(&root, "missing.bib"), Err(Refused::NotFound { .. })));
        assert!(p.contains(&root.join("refs.bib")) && !p.contains(&tmp.path().join("secret.bib")));
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_before_the_rule_is_applied() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("proj");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
        std::fs::write(tmp.path().join("elsewhere/x.bib"), "").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere"), root.join("link")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("elsewhere/x.bib"), root.join("x.bib")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("nowhere.bib"), root.join("dangling.bib")).unwrap();
        let p = Project::new(&root).unwrap();
        for named in ["link/x.bib", "x.bib", "link/new.bib", "dangling.bib"] {
            assert!(matches!(p.resolve(&root, named), Err(Refused::Outside { .. })), "{named}");
        }
        // A link that stays inside is fine.
        std::fs::write(root.join("real.bib"), "").unwrap();
        std::os::unix::fs::symlink(root.join("real.bib"), root.join("alias.bib")).unwrap();
        assert_eq!(p.existing(&root, "alias.bib").unwrap(), root.canonicalize().unwrap().join("real.bib"));
    }
}
