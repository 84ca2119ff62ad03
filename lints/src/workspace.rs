//! The cargo layout around the files being linted: each file's crate (the
//! nearest `Cargo.toml` above it), the crate's name and default features,
//! and the workspace the crate belongs to. Crates of one workspace are
//! analysed together, so calls into a sibling crate are followed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::analysis::hot_path::Features;
use crate::analysis::scope;

/// What a crate's manifest says.
#[derive(Clone, Debug)]
pub(crate) struct Manifest {
    /// The name other crates use for it.
    pub name: Option<String>,
    /// Whether it declares a `[workspace]`.
    pub workspace_root: bool,
    /// Its default features, plus those the configuration adds.
    pub features: Arc<Features>,
    /// Targets it declares with explicit paths.
    pub targets: scope::DeclaredTargets,
    /// It is prepared for crates.io (its `[package]` has a `description`
    /// and no `publish = false`): other crates call its public functions.
    pub published: bool,
}

/// A file's crate and workspace.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Membership {
    /// The crate's root directory (holding its `Cargo.toml`).
    pub crate_root: Option<PathBuf>,
    /// The workspace root (the crate root when it is in no workspace).
    pub workspace: Option<PathBuf>,
}

/// Reads each directory's manifest once.
pub(crate) struct Layout {
    extra_features: Vec<String>,
    crate_roots: HashMap<PathBuf, Option<PathBuf>>,
    manifests: HashMap<PathBuf, Option<Manifest>>,
    workspaces: HashMap<PathBuf, PathBuf>,
    outside: Arc<Features>,
}

impl Layout {
    /// A layout whose crates are built with `extra_features` on top of
    /// their default ones.
    pub(crate) fn new(extra_features: &[String]) -> Layout {
        Layout {
            extra_features: extra_features.to_vec(),
            crate_roots: HashMap::new(),
            manifests: HashMap::new(),
            workspaces: HashMap::new(),
            outside: Arc::new(Features::only(extra_features)),
        }
    }

    /// The crate and workspace `path` belongs to.
    pub(crate) fn membership(&mut self, path: &Path) -> Membership {
        let crate_root = self.crate_root(path);
        let workspace = crate_root.as_ref().map(|root| self.workspace_of(root));
        Membership {
            crate_root,
            workspace,
        }
    }

    /// The features a file of this crate is compiled with.
    pub(crate) fn features(&mut self, crate_root: Option<&Path>) -> Arc<Features> {
        let outside = self.outside.clone();
        crate_root
            .and_then(|root| self.manifest(root))
            .map_or(outside, |m| m.features.clone())
    }

    /// The targets the crate's manifest declares with explicit paths.
    pub(crate) fn declared_targets(&mut self, crate_root: Option<&Path>) -> scope::DeclaredTargets {
        crate_root
            .and_then(|root| self.manifest(root))
            .map(|m| m.targets.clone())
            .unwrap_or_default()
    }

    /// Whether the crate is prepared for crates.io (see [`Manifest`]).
    pub(crate) fn published(&mut self, crate_root: &Path) -> bool {
        self.manifest(crate_root).is_some_and(|m| m.published)
    }

    /// The crate's name, from its manifest.
    pub(crate) fn crate_name(&mut self, crate_root: &Path) -> Option<String> {
        self.manifest(crate_root).and_then(|m| m.name.clone())
    }

    /// The nearest directory above `path` holding a `Cargo.toml`.
    fn crate_root(&mut self, path: &Path) -> Option<PathBuf> {
        let mut visited = Vec::new();
        let mut found = None;
        for dir in path.ancestors().skip(1) {
            if let Some(known) = self.crate_roots.get(dir) {
                found = known.clone();
                break;
            }
            visited.push(dir.to_owned());
            if manifest_path(dir).is_file() {
                found = Some(dir.to_owned());
                break;
            }
        }
        for dir in visited {
            self.crate_roots.insert(dir, found.clone());
        }
        found
    }

    fn manifest(&mut self, dir: &Path) -> Option<&Manifest> {
        if !self.manifests.contains_key(dir) {
            let manifest = std::fs::read_to_string(manifest_path(dir))
                .ok()
                .map(|text| {
                    let table = toml::from_str::<toml::Table>(&text).ok();
                    Manifest {
                        name: table.as_ref().and_then(scope::crate_name),
                        workspace_root: table.as_ref().is_some_and(scope::is_workspace_root),
                        features: Arc::new(Features::from_manifest(&text, &self.extra_features)),
                        targets: table
                            .as_ref()
                            .map(scope::declared_targets)
                            .unwrap_or_default(),
                        published: table.as_ref().is_some_and(published),
                    }
                });
            self.manifests.insert(dir.to_owned(), manifest);
        }
        self.manifests.get(dir).and_then(Option::as_ref)
    }

    /// The nearest directory at or above the crate root whose manifest
    /// declares a `[workspace]`; the crate root itself when there is none.
    fn workspace_of(&mut self, crate_root: &Path) -> PathBuf {
        if let Some(known) = self.workspaces.get(crate_root) {
            return known.clone();
        }
        let mut found = crate_root.to_owned();
        for dir in crate_root.ancestors() {
            let is_root = manifest_path(dir).is_file()
                && self.manifest(dir).is_some_and(|m| m.workspace_root);
            if is_root {
                found = dir.to_owned();
                break;
            }
        }
        self.workspaces.insert(crate_root.to_owned(), found.clone());
        found
    }
}

/// A `[package]` with a `description` (crates.io requires one) that does
/// not say `publish = false`.
fn published(table: &toml::Table) -> bool {
    let Some(package) = table.get("package").and_then(toml::Value::as_table) else {
        return false;
    };
    package.contains_key("description")
        && package.get("publish").and_then(toml::Value::as_bool) != Some(false)
}

fn manifest_path(dir: &Path) -> PathBuf {
    if dir.as_os_str().is_empty() {
        PathBuf::from("Cargo.toml")
    } else {
        dir.join("Cargo.toml")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crates_join_the_workspace_above_them() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = [\"a\"]\n").unwrap();
        std::fs::create_dir_all(root.join("a/src")).unwrap();
        std::fs::write(
            root.join("a/Cargo.toml"),
            "[package]\nname = \"a-crate\"\n[features]\ndefault = [\"x\"]\nx = []\n",
        )
        .unwrap();
        let mut layout = Layout::new(&[]);
        let member = layout.membership(&root.join("a/src/lib.rs"));
        assert_eq!(member.crate_root.as_deref(), Some(root.join("a").as_path()));
        assert_eq!(member.workspace.as_deref(), Some(root));
        assert_eq!(
            layout.crate_name(&root.join("a")).as_deref(),
            Some("a_crate")
        );
        assert_eq!(
            *layout.features(Some(&root.join("a"))),
            Features::from_manifest("[features]\ndefault = [\"x\"]\nx = []\n", &[])
        );
        assert!(!layout.published(&root.join("a")));
        std::fs::write(
            root.join("a/Cargo.toml"),
            "[package]\nname = \"a-crate\"\ndescription = \"A crate.\"\n",
        )
        .unwrap();
        assert!(Layout::new(&[]).published(&root.join("a")));
        std::fs::write(
            root.join("a/Cargo.toml"),
            "[package]\nname = \"a-crate\"\ndescription = \"A crate.\"\npublish = false\n",
        )
        .unwrap();
        assert!(!Layout::new(&[]).published(&root.join("a")));
        let loose = layout.membership(Path::new("/nonexistent-devcheck-dir/x.rs"));
        assert_eq!(loose, Membership::default());
    }
}
