fn main() -> anyhow::Result<()> {
    // Output piped into `head` and the like: end quietly when the reader
    // goes away, as command-line tools do, instead of panicking on EPIPE.
    #[cfg(unix)]
    // SAFETY: restoring the default disposition of SIGPIPE before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    citewise::cli::main()
}
