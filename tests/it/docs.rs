#![allow(clippy::unwrap_used)] // a test may unwrap: the panic is its failure message
//! The documentation cannot drift from the program: every command the README
//! and docs/ show parses, the README stays short and keeps the test command
//! CI runs, and docs/configuration.md is the configuration.

use std::path::{Path, PathBuf};

use clap::{CommandFactory, Parser};

use citewise::cli::Cli;
use citewise::config::Config;
use citewise::tui::keymap::ACTIONS;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page under docs/.
fn documents() -> Vec<PathBuf> {
    let mut docs = vec![root().join("README.md")];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    docs.extend(pages);
    docs
}

/// The fenced blocks of `text` tagged `tag`, each with the line its first
/// line is on (another language's block is skipped whole: a TOML block's
/// lines are never read as shell).
fn tagged_blocks<'a>(text: &'a str, tag: &str) -> Vec<(usize, Vec<&'a str>)> {
    let mut out = Vec::new();
    let mut open: Option<(bool, usize, Vec<&str>)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if let Some(rest) = t.strip_prefix("```") {
            match open.take() {
                Some((true, start, lines)) => out.push((start, lines)),
                Some((false, _, _)) => {}
                None => open = Some((rest.trim() == tag, i + 2, Vec::new())),
            }
            continue;
        }
        if let Some((true, _, lines)) = &mut open {
            lines.push(line);
        }
    }
    out
}

/// The `citewise` command lines of a shell block: lines joined across `\`,
/// split at `&&`, `||`, `;` and `|`, comments and redirections dropped.
fn citewise_commands(lines: &[&str]) -> Vec<Vec<String>> {
    let joined = lines.join("\n").replace("\\\n", " ");
    let mut out = Vec::new();
    for line in joined.lines() {
        let line = match line.find(" # ") {
            Some(i) => &line[..i],
            None if line.trim_start().starts_with('#') => "",
            None => line,
        };
        for part in line.split("&&").flat_map(|p| p.split("||")).flat_map(|p| p.split(';')).flat_map(|p| p.split('|')) {
            let Some(words) = shlex::split(part.trim()) else { panic!("unbalanced quotes in `{part}`") };
            let Some(first) = words.first() else { continue };
            if first != "citewise" && !first.ends_with("/citewise") {
                continue;
            }
            // Redirections: `> file`, `2>&1`, `>file`.
            let mut args = Vec::new();
            let mut skip = false;
            for w in words {
                if skip {
                    skip = false;
                } else if w == ">" || w == ">>" || w == "<" || w == "2>" {
                    skip = true;
                } else if !(w.starts_with('>') || w.starts_with("2>") || w.starts_with('<')) {
                    args.push(w);
                }
            }
            out.push(args);
        }
    }
    out
}

/// Why a command line the documentation shows would not do what it says:
/// clap's error, or a misspelt command, which parses as the draft to open
/// (a bare word without an extension).
fn misread(args: &[String]) -> Option<String> {
    match Cli::try_parse_from(args) {
        Err(e) => {
            use clap::error::ErrorKind;
            (!matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)).then(|| e.render().to_string())
        }
        Ok(cli) => cli
            .file
            .filter(|f| cli.command.is_none() && f.extension().is_none() && f.components().count() == 1)
            .map(|f| format!("opens a draft named {}: a misspelt command?", f.display())),
    }
}

#[test]
fn every_command_the_documentation_shows_parses() {
    let mut seen = 0;
    let mut subcommands_shown = std::collections::BTreeSet::new();
    let mut wrong = Vec::new();
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        for (line, block) in tagged_blocks(&text, "sh") {
            for args in citewise_commands(&block) {
                seen += 1;
                if let Some(sub) = Cli::command().get_subcommands().find(|s| args.iter().any(|a| a == s.get_name())) {
                    subcommands_shown.insert(sub.get_name().to_string());
                }
                if let Some(problem) = misread(&args) {
                    wrong.push(format!("{}:{line}: `{}`: {problem}", doc.display(), args.join(" ")));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "commands in the documentation that do not parse:\n{}", wrong.join("\n"));
    assert!(seen >= 30, "only {seen} commands found: is the block reader broken?");
    // Every subcommand is shown somewhere, and each has a --help.
    for sub in Cli::command().get_subcommands() {
        let name = sub.get_name();
        assert!(subcommands_shown.contains(name), "no command line in README.md or docs/ shows `citewise {name}`");
        let e = Cli::try_parse_from(["citewise", name, "--help"]).unwrap_err();
        assert_eq!(e.kind(), clap::error::ErrorKind::DisplayHelp, "`citewise {name} --help`");
    }
}

#[test]
fn the_block_reader_finds_commands_and_skips_other_languages() {
    let text = "```sh\ncitewise import a.bib && ./target/release/citewise draft.tex  # open it\n\
                citewise completions bash > ~/.bash_completion\ncargo test\n```\n\
                ```toml\ncitewise = 1\n```\n```sh\ncitewise recommend \\\n  \"query text\" -k 3\n```\n";
    let commands: Vec<Vec<String>> = tagged_blocks(text, "sh").iter().flat_map(|(_, b)| citewise_commands(b)).collect();
    let expected: Vec<Vec<&str>> = vec![
        vec!["citewise", "import", "a.bib"],
        vec!["./target/release/citewise", "draft.tex"],
        vec!["citewise", "completions", "bash"],
        vec!["citewise", "recommend", "query text", "-k", "3"],
    ];
    assert_eq!(commands, expected);
    let args = |a: &[&str]| a.iter().map(ToString::to_string).collect::<Vec<_>>();
    assert!(misread(&args(&["citewise", "import", "--no-such-flag"])).is_some(), "a wrong flag must fail");
    assert!(misread(&args(&["citewise", "improt"])).is_some(), "a misspelt command must fail");
    assert_eq!(misread(&args(&["citewise", "draft.tex"])), None);
    assert_eq!(misread(&args(&["citewise", "import", "a.bib"])), None);
}

#[test]
fn the_readme_is_short_and_keeps_the_commands_ci_runs() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines; the rest belongs in docs/");
    let ci = std::fs::read_to_string(root().join(".ci/run")).unwrap();
    let test_command = ci
        .lines()
        .skip_while(|l| !l.contains("The test command from README.md"))
        .nth(1)
        .expect(".ci/run names the README's test command")
        .trim();
    assert!(readme.contains(test_command), "README.md must show the test command CI runs: {test_command}");
    assert!(readme.contains("cargo install --locked --path ."), "README.md's install line");
    // Every page under docs/ is linked from the README.
    for doc in documents().iter().skip(1) {
        let name = doc.file_name().unwrap().to_str().unwrap();
        assert!(readme.contains(&format!("docs/{name}")), "README.md does not link docs/{name}");
    }
}

/// The block after `<!-- checked: NAME -->` in docs/configuration.md.
fn checked_block(name: &str) -> String {
    let text = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    let marker = format!("<!-- checked: {name} -->");
    let after = &text[text.find(&marker).unwrap_or_else(|| panic!("docs/configuration.md lacks {marker}")) + marker.len()..];
    let body = after.trim_start().strip_prefix("```toml\n").expect("a ```toml block after the marker");
    body[..body.find("```").unwrap()].to_string()
}

/// The keys `config.toml` accepts, as serde lists them when it meets one it
/// does not know.
fn config_keys() -> Vec<String> {
    let e = toml::from_str::<Config>("no_such_key_at_all = 1").unwrap_err().to_string();
    let expected = &e[e.find("expected one of").expect("serde lists the fields")..];
    expected.split('`').skip(1).step_by(2).map(str::to_string).collect()
}

#[test]
fn the_configuration_page_is_the_configuration() {
    let page = std::fs::read_to_string(root().join("docs/configuration.md")).unwrap();
    // The defaults block loads to exactly the built-in defaults.
    let defaults: Config = toml::from_str(&checked_block("defaults")).unwrap();
    assert_eq!(defaults, Config::default(), "docs/configuration.md's defaults differ from Config::default()");
    // Every key has its section.
    let keys = config_keys();
    assert!(keys.len() >= 10 && keys.contains(&"theme".to_string()), "{keys:?}");
    for key in &keys {
        assert!(page.contains(&format!("### `{key}`")), "docs/configuration.md has no section for `{key}`");
    }
    // Every action, with its default keys, in the key table; the name is
    // the one config.toml accepts.
    for spec in ACTIONS {
        let debug = format!("{:?}", spec.action);
        let mut name = String::new();
        for (i, c) in debug.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                name.push('_');
            }
            name.push(c.to_ascii_lowercase());
        }
        let c: Config = toml::from_str(&format!("[keys]\n{name} = [\"f12\"]\n")).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(c.keys.contains_key(&spec.action));
        let keys: Vec<String> = spec.keys.iter().map(|k| format!("`{k}`")).collect();
        let row = format!("| `{name}` | {} |", keys.join(", "));
        assert!(page.contains(&row), "docs/configuration.md's key table lacks the row starting `{row}`");
    }
    // The theme example is a complete theme.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("documented.toml"), checked_block("theme")).unwrap();
    citewise::tui::theme::Theme::load("documented", Some(dir.path())).unwrap();
    // The directory rules it states are the ones `citewise::dirs` follows.
    for var in [citewise::dirs::CONFIG_DIR_ENV, citewise::dirs::DATA_DIR_ENV, "XDG_CONFIG_HOME", "XDG_DATA_HOME"] {
        assert!(page.contains(&format!("${var}")), "docs/configuration.md does not name ${var}");
    }
}

#[test]
fn documentation_links_between_pages_resolve() {
    for doc in documents() {
        let text = std::fs::read_to_string(&doc).unwrap();
        let dir = doc.parent().unwrap();
        for (i, _) in text.match_indices("](") {
            let rest = &text[i + 2..];
            let target = &rest[..rest.find(')').unwrap_or(rest.len())];
            let path = target.split('#').next().unwrap();
            if path.is_empty() || path.contains("://") || path.starts_with("mailto:") {
                continue;
            }
            assert!(Path::new(dir).join(path).exists(), "{}: link to {target}, which does not exist", doc.display());
        }
    }
}
