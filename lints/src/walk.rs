//! Turns the paths given on the command line into the list of files to lint.
//!
//! Directories are walked with the `ignore` crate, so `.gitignore` (inside
//! git repositories), `.ignore` and hidden-file rules apply as in ripgrep;
//! but a crate those rules hide whole is still linted, as cargo builds it.
//! Symbolic links are followed so that linked source trees are linted; a
//! link that points back at an ancestor is reported, not followed.
//!
//! Only `.rs` files are ever read, so a path that is neither one of them nor
//! a directory that could hold one is no input: a dangling link to
//! `train.py` or to a checkpoint changes neither the findings nor the exit
//! code. The walker resolves each link once to learn whether it is a linked
//! source tree; when that fails for a link not named `.rs`, the link leads
//! nowhere the lint would look, so the failure is dropped, not reported.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::FileError;

/// The files found and the paths that could not be walked.
#[derive(Debug, Default)]
pub struct Walked {
    /// Files to lint, in walk order, each listed once.
    pub files: Vec<PathBuf>,
    /// Missing paths, unreadable directories, symlink loops.
    pub errors: Vec<FileError>,
}

/// Collects the `.rs` files under `paths`. A path that names a file is
/// linted whatever its extension, as the user asked for it by name.
pub fn collect_rust_files(paths: &[PathBuf]) -> Walked {
    let mut walked = Walked::default();
    let mut seen = HashSet::new();
    for root in paths {
        let metadata = match std::fs::metadata(root) {
            Ok(metadata) => metadata,
            Err(err) => {
                walked.errors.push(io_error(root, &err));
                continue;
            }
        };
        if metadata.is_file() {
            push_unique(&mut walked.files, &mut seen, root.clone());
            continue;
        }
        if !metadata.is_dir() {
            // A FIFO or a device would block or never end when read.
            walked.errors.push(FileError {
                file: root.clone(),
                line: None,
                message: "not a regular file or directory".into(),
            });
            continue;
        }
        let first = walked.files.len();
        for entry in ignore::WalkBuilder::new(root).follow_links(true).build() {
            match entry {
                Ok(entry) => {
                    let is_file = entry.file_type().is_some_and(|t| t.is_file());
                    if is_file && entry.path().extension().is_some_and(|e| e == "rs") {
                        push_unique(&mut walked.files, &mut seen, entry.into_path());
                    }
                }
                Err(err) if is_unresolvable_link_to_no_source(&err) => {}
                Err(err) => walked.errors.push(walk_error(root, &err)),
            }
        }
        let found: Vec<PathBuf> = walked.files[first..].to_vec();
        for path in hidden_crate_sources(root, &found) {
            push_unique(&mut walked.files, &mut seen, path);
        }
    }
    walked
}

/// The sources of crates under `root` that ignore rules hid whole: a
/// directory with a `Cargo.toml` none of whose files the walk found (a
/// repository whose `.gitignore` says `*/` and still commits its crates).
/// Cargo builds a crate whatever git ignores, so its `src/`, `examples/`,
/// `benches/`, `tests/` and `build.rs` are linted; its `target/`, hidden
/// directories and vendored sources are not. A crate the walk entered keeps
/// the ignore rules inside it.
fn hidden_crate_sources(root: &Path, found: &[PathBuf]) -> Vec<PathBuf> {
    let skipped = |name: &std::ffi::OsStr| {
        matches!(name.to_str(), Some("target" | "vendor" | "node_modules"))
    };
    let walk = ignore::WalkBuilder::new(root)
        .standard_filters(false)
        .hidden(true)
        .filter_entry(move |e| {
            !(e.file_type().is_some_and(|t| t.is_dir()) && skipped(e.file_name()))
        })
        .build();
    let mut crates: Vec<PathBuf> = Vec::new();
    let mut sources: Vec<PathBuf> = Vec::new();
    for entry in walk.flatten() {
        let path = entry.path();
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        match path.file_name().and_then(|n| n.to_str()) {
            Some("Cargo.toml") => {
                if let Some(dir) = path.parent() {
                    crates.push(dir.to_owned());
                }
            }
            _ if path.extension().is_some_and(|e| e == "rs") => sources.push(path.to_owned()),
            _ => {}
        }
    }
    // Every directory above a found file: a crate among them was entered.
    let entered: HashSet<&Path> = found.iter().flat_map(|f| f.ancestors().skip(1)).collect();
    let hidden: HashSet<&Path> = crates
        .iter()
        .map(PathBuf::as_path)
        .filter(|dir| !entered.contains(dir))
        .collect();
    if hidden.is_empty() {
        return Vec::new();
    }
    let crates: HashSet<&Path> = crates.iter().map(PathBuf::as_path).collect();
    sources
        .into_iter()
        .filter(|file| {
            // The innermost crate holding the file decides.
            let Some(krate) = file.ancestors().skip(1).find(|dir| crates.contains(dir)) else {
                return false;
            };
            let Ok(inside) = file.strip_prefix(krate) else {
                return false;
            };
            let first = inside
                .components()
                .next()
                .and_then(|c| c.as_os_str().to_str());
            hidden.contains(krate)
                && (matches!(first, Some("src" | "examples" | "benches" | "tests"))
                    || inside == Path::new("build.rs"))
        })
        .collect()
}

/// Keeps the first of several paths that lead to the same file (through
/// symlinks or repeated arguments).
fn push_unique(files: &mut Vec<PathBuf>, seen: &mut HashSet<PathBuf>, path: PathBuf) {
    let key = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    if seen.insert(key) {
        files.push(path);
    }
}

/// Whether `err` is the walker failing to follow a link that is not named
/// `.rs` and leads nowhere (a missing target, a chain of links that loops,
/// a path through a file). Such a link is neither a Rust file nor a
/// directory the walk could enter, so nothing the lint reads is lost by
/// skipping it. A link loop back to an ancestor resolves (to a directory)
/// and is still reported, and so is a target the OS refused to show: it may
/// be a source tree the user cannot read.
fn is_unresolvable_link_to_no_source(err: &ignore::Error) -> bool {
    if is_loop(err) {
        return false;
    }
    let Some(path) = path_of(err) else {
        return false;
    };
    let named_rs = path.extension().is_some_and(|e| e == "rs");
    // Only paths the walker already failed on are looked at again, and the
    // lstat does not follow the link.
    let is_link = std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink());
    let leads_nowhere = std::fs::metadata(path)
        .is_err_and(|err| err.kind() != std::io::ErrorKind::PermissionDenied);
    !named_rs && is_link && leads_nowhere
}

fn io_error(path: &Path, err: &std::io::Error) -> FileError {
    let message = match err.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_owned(),
        _ => err.to_string(),
    };
    FileError {
        file: path.to_owned(),
        line: None,
        message,
    }
}

/// The most specific path an `ignore` error names.
fn path_of(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::Loop { child, .. } => Some(child),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            path_of(err)
        }
        _ => None,
    }
}

/// Whether an `ignore` error is a symbolic link loop.
fn is_loop(err: &ignore::Error) -> bool {
    match err {
        ignore::Error::Loop { .. } => true,
        ignore::Error::WithDepth { err, .. }
        | ignore::Error::WithPath { err, .. }
        | ignore::Error::WithLineNumber { err, .. } => is_loop(err),
        _ => false,
    }
}

/// Turns an `ignore` error into an error entry on its most specific path.
fn walk_error(root: &Path, err: &ignore::Error) -> FileError {
    let file = path_of(err).unwrap_or(root).to_owned();
    let message = if is_loop(err) {
        format!("symbolic link loop: {err}; the link was not followed")
    } else {
        err.to_string()
    };
    FileError {
        file,
        line: None,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("devcheck-walk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn finds_rs_files_reports_missing_paths_and_dedupes() {
        let dir = scratch("basic");
        std::fs::create_dir_all(dir.join("src")).unwrap();
        std::fs::write(dir.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(dir.join("notes.txt"), "x").unwrap();
        let missing = dir.join("missing");
        let walked = collect_rust_files(&[dir.clone(), dir.join("src/main.rs"), missing.clone()]);
        assert_eq!(walked.files, vec![dir.join("src/main.rs")]);
        assert_eq!(walked.errors.len(), 1);
        assert_eq!(walked.errors[0].file, missing);
        assert_eq!(walked.errors[0].message, "no such file or directory");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_crate_its_gitignore_hides_whole_is_still_linted() {
        let dir = scratch("hidden-crates");
        std::fs::create_dir_all(dir.join(".git")).unwrap();
        std::fs::write(dir.join(".gitignore"), "*/\n").unwrap();
        for krate in ["train", "deploy"] {
            std::fs::create_dir_all(dir.join(krate).join("src")).unwrap();
            std::fs::create_dir_all(dir.join(krate).join("target/debug")).unwrap();
            std::fs::write(dir.join(krate).join("Cargo.toml"), "[package]\n").unwrap();
            std::fs::write(dir.join(krate).join("src/main.rs"), "fn main() {}").unwrap();
            std::fs::write(dir.join(krate).join("target/debug/out.rs"), "").unwrap();
        }
        std::fs::create_dir_all(dir.join("notes")).unwrap();
        std::fs::write(dir.join("notes/scratch.rs"), "").unwrap();
        let walked = collect_rust_files(std::slice::from_ref(&dir));
        let mut files = walked.files.clone();
        files.sort();
        assert_eq!(
            files,
            vec![
                dir.join("deploy/src/main.rs"),
                dir.join("train/src/main.rs")
            ]
        );
        assert!(walked.errors.is_empty(), "{:?}", walked.errors);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_symlink_loop_is_an_error_and_the_rest_is_walked() {
        let dir = scratch("loop");
        std::fs::create_dir_all(dir.join("a")).unwrap();
        std::fs::write(dir.join("a/lib.rs"), "").unwrap();
        std::os::unix::fs::symlink(&dir, dir.join("a/back")).unwrap();
        let walked = collect_rust_files(std::slice::from_ref(&dir));
        assert_eq!(walked.files, vec![dir.join("a/lib.rs")]);
        assert_eq!(walked.errors.len(), 1, "{:?}", walked.errors);
        assert!(
            walked.errors[0].message.starts_with("symbolic link loop"),
            "{:?}",
            walked.errors
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn a_link_that_leads_nowhere_is_an_error_only_when_named_rs() {
        let dir = scratch("dangling");
        std::fs::write(dir.join("lib.rs"), "").unwrap();
        std::os::unix::fs::symlink("missing", dir.join("train.py")).unwrap();
        std::os::unix::fs::symlink("missing.rs", dir.join("model.rs")).unwrap();
        let walked = collect_rust_files(std::slice::from_ref(&dir));
        assert_eq!(walked.files, vec![dir.join("lib.rs")]);
        assert_eq!(walked.errors.len(), 1, "{:?}", walked.errors);
        assert_eq!(walked.errors[0].file, dir.join("model.rs"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
