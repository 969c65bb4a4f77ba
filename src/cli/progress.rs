//! Progress bars (indicatif), drawn on stderr only when it is a terminal.

use std::path::Path;

use indicatif::{ProgressBar, ProgressStyle};

use crate::library::import::ImportProgress;

/// A byte-based progress bar over the files of an import.
pub struct ImportBar(ProgressBar);

impl ImportBar {
    pub fn new() -> ImportBar {
        let bar = ProgressBar::hidden();
        bar.set_style(
            ProgressStyle::with_template("{spinner} importing [{bar:30}] {bytes}/{total_bytes} {msg} ({eta})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        ImportBar(bar)
    }
}

impl ImportProgress for ImportBar {
    fn start(&self, _files: usize, bytes: u64) {
        self.0.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        self.0.set_length(bytes);
    }
    fn file_done(&self, file: &Path, bytes: u64) {
        self.0.inc(bytes);
        self.0.set_message(file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
    }
    fn finish(&self) {
        self.0.finish_and_clear();
    }
}

/// A counting bar for query loops.
pub fn count_bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(&format!("{{spinner}} {what} [{{bar:30}}] {{pos}}/{{len}} ({{eta}})"))
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar
}
