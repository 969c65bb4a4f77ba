fn main() -> anyhow::Result<()> {
    citewise::cli::main()
}
