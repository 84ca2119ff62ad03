//! `cargo devcheck`: see the library's documentation, or `cargo devcheck --help`.

fn main() -> std::process::ExitCode {
    cargo_devcheck::main(std::env::args_os())
}
