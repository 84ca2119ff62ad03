//! Helpers for devcheck's end-to-end tests, which live in `tests/tests/`.

use std::path::PathBuf;
use std::process::Command;

/// Builds (if needed) and returns the path of a workspace binary, with the
/// environment the test itself runs in (libtorch's, under `cargo xtask test`).
pub fn binary(package: &str, bin: &str) -> PathBuf {
    escargot::CargoBuild::new()
        .manifest_path(workspace_root().join("Cargo.toml"))
        .package(package)
        .bin(bin)
        .run()
        .unwrap_or_else(|error| panic!("building {package}/{bin} failed: {error}"))
        .path()
        .to_path_buf()
}

/// A command for a workspace binary, run from the workspace root.
pub fn command(package: &str, bin: &str) -> Command {
    let mut command = Command::new(binary(package, bin));
    command.current_dir(workspace_root());
    command
}

/// The workspace root directory.
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("tests/ sits in the workspace root")
        .to_path_buf()
}

/// The user-crate fixture: a repository of its own that uses devcheck as a
/// user does (`tests/fixtures/user-crate`).
pub fn user_crate() -> PathBuf {
    workspace_root().join("tests/fixtures/user-crate")
}

/// 1-based line of the first line of the user crate's `src/lib.rs` holding `text`.
pub fn user_crate_line(text: &str) -> usize {
    let source = std::fs::read_to_string(user_crate().join("src/lib.rs")).unwrap();
    1 + source
        .lines()
        .position(|l| l.contains(text))
        .unwrap_or_else(|| panic!("src/lib.rs has no `{text}`"))
}

/// The workspace's target directory (`CARGO_TARGET_DIR`, else `target/`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"))
}
