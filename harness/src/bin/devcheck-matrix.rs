//! `devcheck-matrix`: the built-in cases on every device here (what `cargo
//! xtask matrix` runs). Takes devcheck's options and libtest's.

fn main() -> std::process::ExitCode {
    devcheck::run(devcheck::cases::builtin())
}
