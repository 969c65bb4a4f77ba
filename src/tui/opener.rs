//! Opening links and citing documents outside the editor: the system's
//! opener, or the PDF viewer the configuration names (with the page).

use std::process::{Command, Stdio};

/// The system's opener of files and links.
pub fn system_opener() -> &'static str {
    if cfg!(target_os = "macos") {
        "open"
    } else if cfg!(windows) {
        "explorer"
    } else {
        "xdg-open"
    }
}

/// The command that opens `path` at `page`: the configured viewer template
/// (`{file}` and `{page}` replaced; a template without `{file}` gets the
/// file appended), else the system opener on the file.
pub fn viewer_command(template: Option<&str>, path: &str, page: Option<u32>) -> Vec<String> {
    match template.map(str::trim).filter(|t| !t.is_empty()) {
        Some(t) => {
            let page = page.unwrap_or(1).to_string();
            let mut args: Vec<String> = t.split_whitespace().map(|w| w.replace("{page}", &page).replace("{file}", path)).collect();
            if !t.contains("{file}") {
                args.push(path.to_string());
            }
            args
        }
        None => vec![system_opener().to_string(), path.to_string()],
    }
}

/// Starts a command without waiting for it; a line for the status bar.
pub fn spawn(args: &[String], what: &str) -> String {
    let Some((program, rest)) = args.split_first() else { return "nothing to open".into() };
    match Command::new(program).args(rest).stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn() {
        Ok(_) => format!("opened {what}"),
        Err(_) => format!("cannot run {program}: {what}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn viewer_templates_get_file_and_page() {
        assert_eq!(viewer_command(Some("zathura --page={page} {file}"), "/p/a b.pdf", Some(4)), ["zathura", "--page=4", "/p/a b.pdf"]);
        assert_eq!(viewer_command(Some("evince -i {page}"), "x.pdf", None), ["evince", "-i", "1", "x.pdf"]);
        assert_eq!(viewer_command(None, "x.pdf", Some(2)), [system_opener(), "x.pdf"]);
    }
}
