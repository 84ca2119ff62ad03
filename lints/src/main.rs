//! `devcheck-lint`: finds host syncs inside hot loops of tch code.

fn main() -> std::process::ExitCode {
    devcheck_lint::cli::main(std::env::args_os())
}
