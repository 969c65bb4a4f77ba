fn main() -> std::process::ExitCode {
    // Output piped into `head` and the like: end quietly when the reader
    // goes away, as command-line tools do, instead of panicking on EPIPE.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match citewise::cli::main() {
        Ok(code) => code,
        // The message and its causes, one line: a bad input is not a crash,
        // so no backtrace (even with RUST_BACKTRACE set).
        Err(e) => {
            use citewise::cli::style::{paint, ERROR};
            anstream::eprintln!("{}: {}", paint(ERROR, "error"), citewise::util::printable(&message(&e)));
            std::process::ExitCode::FAILURE
        }
    }
}

/// The error and each cause its message does not already hold, joined by `: `.
fn message(e: &anyhow::Error) -> String {
    let mut out = String::new();
    for cause in e.chain().map(ToString::to_string) {
        if !out.contains(&cause) {
            if !out.is_empty() {
                out.push_str(": ");
            }
            out.push_str(&cause);
        }
    }
    out
}
