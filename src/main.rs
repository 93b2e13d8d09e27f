fn main() {
    std::process::exit(polysandbox::cli::main());
}
