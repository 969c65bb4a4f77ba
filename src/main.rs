fn main() -> std::process::ExitCode {
    // Output piped into `head` and the like: end quietly when the reader
    // goes away, as command-line tools do, instead of panicking on EPIPE.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    match citewise::cli::main() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The message and its causes, one line: a bad input is not a crash,
        // so no backtrace (even with RUST_BACKTRACE set).
        Err(e) => {
            eprintln!("error: {}", citewise::util::printable(&format!("{e:#}")));
            std::process::ExitCode::FAILURE
        }
    }
}
