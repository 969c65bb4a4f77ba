//! Progress bars (indicatif), drawn on stderr only when it is a terminal.

use std::path::Path;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

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

/// The bar training runs show: phase, progress, loss, elapsed and ETA
/// (HAtten's and the reranker's runs alike).
pub struct Bars {
    pub bar: ProgressBar,
}

impl Bars {
    pub fn new() -> Bars {
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{prefix:>26} [{bar:30}] {pos}/{len} {msg} ({elapsed}, eta {eta})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        Bars { bar }
    }

    pub fn phase(&self, name: &str, len: u64) {
        self.bar.reset();
        self.bar.set_length(len);
        self.bar.set_prefix(name.to_string());
        self.bar.set_message("");
    }

    pub fn advance(&self, n: u64, loss: Option<f32>) {
        self.bar.inc(n);
        if let Some(l) = loss {
            self.bar.set_message(format!("loss {l:.4}"));
        }
    }
}

impl crate::neural::train::run::RunProgress for Bars {
    fn phase(&self, name: &str, len: u64) {
        Bars::phase(self, name, len)
    }
    fn advance(&self, n: u64, loss: Option<f32>) {
        Bars::advance(self, n, loss)
    }
}
