//! Readback snapshots waiting for review: the `.snap.new` files insta writes
//! beside a reviewed `.snap`, shown as a diff and accepted or rejected, as
//! `cargo insta review` does, with nothing more to install.

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

/// A snapshot written by a run and not yet reviewed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The new snapshot (`<name>.snap.new`).
    pub new: PathBuf,
    /// The reviewed file it would replace (`<name>.snap`, which may not exist).
    pub reviewed: PathBuf,
}

/// Every pending snapshot in `dirs` (not recursive), sorted by path.
pub fn pending(dirs: &[PathBuf]) -> io::Result<Vec<Pending>> {
    let mut found = Vec::new();
    for dir in dirs {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
            Err(error) => return Err(error),
        };
        for entry in entries {
            let path = entry?.path();
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if let Some(stem) = name.strip_suffix(".snap.new") {
                found.push(Pending {
                    reviewed: dir.join(format!("{stem}.snap")),
                    new: path,
                });
            }
        }
    }
    found.sort_by(|a, b| a.new.cmp(&b.new));
    found.dedup();
    Ok(found)
}

/// A snapshot file's content, without insta's `---`-fenced header.
pub fn body(text: &str) -> &str {
    let Some(rest) = text.strip_prefix("---\n") else {
        return text;
    };
    match rest.find("\n---\n") {
        Some(end) => &rest[end + 5..],
        None => text,
    }
}

impl Pending {
    /// The reviewed content (none for a first snapshot) and the new one.
    pub fn contents(&self) -> io::Result<(Option<String>, String)> {
        let new = std::fs::read_to_string(&self.new)?;
        let old = match std::fs::read_to_string(&self.reviewed) {
            Ok(old) => Some(body(&old).to_owned()),
            Err(error) if error.kind() == io::ErrorKind::NotFound => None,
            Err(error) => return Err(error),
        };
        Ok((old, body(&new).to_owned()))
    }

    /// The change as lines: `-` reviewed, `+` new, ` ` both.
    pub fn diff(&self) -> io::Result<String> {
        let (old, new) = self.contents()?;
        Ok(line_diff(old.as_deref().unwrap_or(""), &new))
    }

    /// Makes the new snapshot the reviewed one.
    pub fn accept(&self) -> io::Result<()> {
        std::fs::rename(&self.new, &self.reviewed)
    }

    /// Throws the new snapshot away.
    pub fn reject(&self) -> io::Result<()> {
        std::fs::remove_file(&self.new)
    }
}

/// Removes the pending snapshot beside `reviewed`, if any: called when a run
/// matched the reviewed snapshot, so that no stale `.snap.new` is left to review.
pub fn clear_pending(reviewed: &Path) -> io::Result<()> {
    let mut new = reviewed.as_os_str().to_owned();
    new.push(".new");
    match std::fs::remove_file(PathBuf::from(new)) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

fn line_diff(old: &str, new: &str) -> String {
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = String::new();
    for change in diff.iter_all_changes() {
        let sign = match change.tag() {
            similar::ChangeTag::Delete => '-',
            similar::ChangeTag::Insert => '+',
            similar::ChangeTag::Equal => ' ',
        };
        let _ = write!(out, "{sign} {}", change.value());
        if !change.value().ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "---\nsource: harness/src/checks/readbacks.rs\n---\n";

    #[test]
    fn pending_snapshots_are_found_diffed_accepted_and_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let snapshots = dir.path().to_path_buf();
        std::fs::write(
            snapshots.join("readbacks__net.snap"),
            format!("{HEADER}host syncs per step: 1 (budget 1)\nsrc/lib.rs · Net::step · a\n"),
        )
        .unwrap();
        std::fs::write(
            snapshots.join("readbacks__net.snap.new"),
            format!(
                "{HEADER}host syncs per step: 2 (budget 1)\nsrc/lib.rs · Net::step · a\nsrc/lib.rs · Net::step · b\n"
            ),
        )
        .unwrap();
        std::fs::write(
            snapshots.join("readbacks__gpt.snap.new"),
            format!("{HEADER}no host syncs\n"),
        )
        .unwrap();
        let found = pending(&[snapshots.clone(), dir.path().join("missing")]).unwrap();
        assert_eq!(found.len(), 2);
        assert_eq!(found[0].reviewed, snapshots.join("readbacks__gpt.snap"));
        assert_eq!(found[0].diff().unwrap(), "+ no host syncs\n");
        assert_eq!(
            found[1].diff().unwrap(),
            "- host syncs per step: 1 (budget 1)\n+ host syncs per step: 2 (budget 1)\n  \
             src/lib.rs · Net::step · a\n+ src/lib.rs · Net::step · b\n"
        );
        found[0].accept().unwrap();
        found[1].reject().unwrap();
        assert!(pending(std::slice::from_ref(&snapshots))
            .unwrap()
            .is_empty());
        assert!(snapshots.join("readbacks__gpt.snap").is_file());
        assert!(
            std::fs::read_to_string(snapshots.join("readbacks__net.snap"))
                .unwrap()
                .contains("per step: 1")
        );
    }

    #[test]
    fn a_stale_pending_snapshot_is_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let reviewed = dir.path().join("readbacks__net.snap");
        std::fs::write(dir.path().join("readbacks__net.snap.new"), "x").unwrap();
        clear_pending(&reviewed).unwrap();
        clear_pending(&reviewed).unwrap();
        assert!(pending(&[dir.path().to_path_buf()]).unwrap().is_empty());
    }
}
