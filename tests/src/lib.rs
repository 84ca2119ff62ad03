//! Helpers for devcheck's end-to-end tests, which live in `tests/tests/`.

use std::path::{Path, PathBuf};
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

/// Copies a directory tree.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let path = entry.path();
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&path, &to.join(entry.file_name()));
        } else {
            std::fs::copy(&path, to.join(entry.file_name())).unwrap();
        }
    }
}

/// The user crate copied to `repo` as a repository of its own (a `.git` marks
/// its root, so paths in reports are relative to it): its sources, tests,
/// snapshots and lockfile, and its manifest with devcheck by absolute path,
/// then changed by `edit`. Sources are copied afresh each time.
pub fn user_crate_copy(repo: &Path, edit: impl FnOnce(String) -> String) {
    for dir in ["src", "tests", "snapshots"] {
        let _ = std::fs::remove_dir_all(repo.join(dir));
        copy_dir(&user_crate().join(dir), &repo.join(dir));
    }
    let manifest = std::fs::read_to_string(user_crate().join("Cargo.toml")).unwrap();
    let harness = workspace_root().join("harness");
    let manifest = manifest.replace(
        "path = \"../../../harness\"",
        &format!("path = {:?}", harness.display().to_string()),
    );
    std::fs::write(repo.join("Cargo.toml"), edit(manifest)).unwrap();
    std::fs::copy(user_crate().join("Cargo.lock"), repo.join("Cargo.lock")).unwrap();
    std::fs::create_dir_all(repo.join(".git")).unwrap();
}
