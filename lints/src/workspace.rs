//! The cargo layout around the files being linted: each file's crate (the
//! nearest `Cargo.toml` above it), the crate's name and default features,
//! and the workspace the crate belongs to. Crates of one workspace are
//! analysed together, so calls into a sibling crate are followed.

use std::collections::{HashMap, HashSet};
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
    /// and a `license`, and no `publish = false`): other crates call its
    /// public functions.
    pub published: bool,
    /// Its `[workspace]`'s `members` and `exclude` patterns, when it is a
    /// workspace root.
    pub members: Vec<String>,
    pub exclude: Vec<String>,
    /// It has a `[package]`.
    pub package: bool,
    /// Its `[package] workspace = ".."` names its workspace root.
    pub names_workspace: bool,
    /// The directories of its path dependencies, relative to it.
    pub path_deps: Vec<PathBuf>,
    /// It depends on tch itself (or on `torch-sys`), in any dependency
    /// table, under its own name or renamed.
    pub tch_dep: bool,
    /// The manifest itself, for what it asks of its dependencies.
    pub table: Option<toml::Table>,
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
    /// Per workspace root, the crate roots cargo takes as its members.
    members: HashMap<PathBuf, HashSet<PathBuf>>,
    /// Per crate root, whether its workspace does not hold it.
    unheld: HashMap<PathBuf, bool>,
    /// Per crate root, whether it uses tch (see [`Layout::uses_tch`]).
    tch: HashMap<PathBuf, bool>,
    /// Per workspace root, whether its `members` names a directory the
    /// checkout lacks (see [`Layout::called_from_elsewhere`]).
    missing_member: HashMap<PathBuf, bool>,
    /// Per crate root, its features in a build of its whole workspace.
    unified: HashMap<PathBuf, Arc<Features>>,
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
            members: HashMap::new(),
            unheld: HashMap::new(),
            tch: HashMap::new(),
            missing_member: HashMap::new(),
            unified: HashMap::new(),
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

    /// The features a file of this crate is compiled with: its default
    /// ones, and those the other members of its workspace turn on for it
    /// (cargo builds a workspace with one set of features per crate: a
    /// member's `default = ["torch"]` with `torch = ["engine/torch"]`, or
    /// its dependency `engine = { path = "..", features = ["torch"] }`,
    /// turns `torch` on in `engine`).
    pub(crate) fn features(&mut self, crate_root: Option<&Path>) -> Arc<Features> {
        let outside = self.outside.clone();
        let Some(root) = crate_root else {
            return outside;
        };
        let Some(own) = self.manifest(root).map(|m| m.features.clone()) else {
            return outside;
        };
        if let Some(known) = self.unified.get(root) {
            return known.clone();
        }
        let workspace = self.workspace_of(root);
        if self.manifest(&workspace).is_some_and(|m| m.workspace_root) {
            self.unify(&workspace);
        }
        // A crate its workspace does not hold keeps its own features,
        // remembered so that the workspace is not unified again for it.
        self.unified.entry(root.to_owned()).or_insert(own).clone()
    }

    /// Works out the features of every member of the workspace at `root`
    /// as one build of it turns them on, until no member asks another
    /// for more.
    fn unify(&mut self, root: &Path) {
        if !self.members.contains_key(root) {
            let members = self.workspace_members(root);
            self.members.insert(root.to_owned(), members);
        }
        let mut members: Vec<PathBuf> = self.members[root].iter().cloned().collect();
        members.sort();
        // Each member's manifest, read (and cloned) once for all rounds.
        let manifests: Vec<(PathBuf, toml::Table)> = members
            .iter()
            .filter_map(|member| {
                let table = self.manifest(member)?.table.clone()?;
                Some((member.clone(), table))
            })
            .collect();
        let shared = self
            .manifest(root)
            .and_then(|m| m.table.as_ref())
            .map(workspace_dependencies)
            .unwrap_or_default();
        let mut asked: HashMap<PathBuf, Vec<String>> = HashMap::new();
        let mut features: HashMap<PathBuf, Features> = HashMap::new();
        // Each round only adds features, so this ends; the bound guards
        // against a manifest cargo itself would refuse.
        for _ in 0..manifests.len() + 2 {
            let mut changed = false;
            for (member, table) in &manifests {
                let mut start = self.extra_features.clone();
                start.extend(asked.get(member).into_iter().flatten().cloned());
                let (on, of_deps) = Features::closure(Some(table), &start);
                for (target, feature) in dependency_requests(table, &on, &of_deps) {
                    let target = match target {
                        DepPath::Own(path) => normalize(&member.join(path)),
                        DepPath::Shared(name) => match shared.get(&name) {
                            Some(path) => normalize(&root.join(path)),
                            None => continue,
                        },
                    };
                    if !self.members[root].contains(&target) {
                        continue;
                    }
                    let list = asked.entry(target).or_default();
                    if !list.contains(&feature) {
                        list.push(feature);
                        changed = true;
                    }
                }
                features.insert(member.clone(), on);
            }
            if !changed {
                break;
            }
        }
        for (member, on) in features {
            self.unified.insert(member, Arc::new(on));
        }
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

    /// Whether code the checkout lacks may call the crate's functions: it
    /// is prepared for crates.io (see [`Manifest`]), or it is a member of a
    /// workspace whose `members` names a directory without a `Cargo.toml`
    /// (a crate left out of the repository, say a gitignored driver), so
    /// "nothing calls it" cannot be known.
    pub(crate) fn called_from_elsewhere(&mut self, crate_root: &Path) -> bool {
        if self.published(crate_root) {
            return true;
        }
        let root = self.workspace_of(crate_root);
        if let Some(&known) = self.missing_member.get(&root) {
            return known;
        }
        let missing = self.manifest(&root).is_some_and(|m| {
            m.members
                .iter()
                .filter(|pattern| !pattern.contains(['*', '?', '[']))
                .any(|pattern| !manifest_path(&normalize(&root.join(pattern))).is_file())
        });
        self.missing_member.insert(root, missing);
        missing
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
                        members: table
                            .as_ref()
                            .map(|t| workspace_list(t, "members"))
                            .unwrap_or_default(),
                        exclude: table
                            .as_ref()
                            .map(|t| workspace_list(t, "exclude"))
                            .unwrap_or_default(),
                        package: table.as_ref().is_some_and(|t| t.contains_key("package")),
                        names_workspace: table.as_ref().is_some_and(|t| {
                            t.get("package").and_then(|p| p.get("workspace")).is_some()
                        }),
                        path_deps: table.as_ref().map(path_dependencies).unwrap_or_default(),
                        // An unreadable manifest says nothing: count it in.
                        tch_dep: table.as_ref().is_none_or(depends_on_tch),
                        table,
                    }
                });
            self.manifests.insert(dir.to_owned(), manifest);
        }
        self.manifests.get(dir).and_then(Option::as_ref)
    }

    /// Whether the crate can use tch: it depends on tch, or on a crate of
    /// its own tree (a path dependency) that does, which may hand tch's
    /// types on (`pub use tch::Tensor`). A crate that cannot has no tch
    /// tensor: its `Tensor` is another library's (burn's, candle's), whose
    /// operations tch's rules do not describe. A crate without a readable
    /// manifest counts as using tch.
    pub(crate) fn uses_tch(&mut self, crate_root: &Path) -> bool {
        if let Some(&known) = self.tch.get(crate_root) {
            return known;
        }
        // A cycle of path dependencies adds nothing.
        self.tch.insert(crate_root.to_owned(), false);
        let (direct, deps) = match self.manifest(crate_root) {
            None => (true, Vec::new()),
            Some(m) => (m.tch_dep, m.path_deps.clone()),
        };
        let uses = direct
            || deps
                .iter()
                .any(|dep| self.uses_tch(&normalize(&crate_root.join(dep))));
        self.tch.insert(crate_root.to_owned(), uses);
        uses
    }

    /// Whether cargo refuses to build the crate: it sits under a workspace
    /// root that neither lists it among its `members` (directly, by a
    /// pattern, or as a path dependency of a member) nor `exclude`s it, and
    /// its manifest names no workspace of its own. Cargo stops with
    /// "current package believes it's in a workspace when it's not", so
    /// none of its code runs.
    pub(crate) fn outside_its_workspace(&mut self, crate_root: &Path) -> bool {
        if let Some(&known) = self.unheld.get(crate_root) {
            return known;
        }
        let unheld = self.unheld_by_workspace(crate_root);
        self.unheld.insert(crate_root.to_owned(), unheld);
        unheld
    }

    fn unheld_by_workspace(&mut self, crate_root: &Path) -> bool {
        let root = self.workspace_of(crate_root);
        if root == crate_root || self.manifest(crate_root).is_none_or(|m| m.names_workspace) {
            return false;
        }
        let Some(relative) = crate_root.strip_prefix(&root).ok().map(normalize) else {
            return false;
        };
        let excluded = self.manifest(&root).is_some_and(|m| {
            m.exclude
                .iter()
                .any(|e| relative.starts_with(normalize(Path::new(e))))
        });
        if excluded {
            return false;
        }
        let target = normalize(crate_root);
        if !self.members.contains_key(&root) {
            let members = self.workspace_members(&root);
            self.members.insert(root.clone(), members);
        }
        !self.members[&root].contains(&target)
    }

    /// The crate roots cargo takes as members of the workspace at `root`:
    /// the root package, the directories its `members` patterns match, and
    /// the path dependencies of members that lie under the root.
    fn workspace_members(&mut self, root: &Path) -> HashSet<PathBuf> {
        let (patterns, package) = self
            .manifest(root)
            .map(|m| (m.members.clone(), m.package))
            .unwrap_or_default();
        let mut queue: Vec<PathBuf> = patterns
            .iter()
            .flat_map(|pattern| expand_member(root, pattern))
            .collect();
        if package {
            queue.push(root.to_owned());
        }
        let under = normalize(root);
        let mut members: HashSet<PathBuf> = HashSet::new();
        while let Some(dir) = queue.pop() {
            let dir = normalize(&dir);
            if members.contains(&dir) || !manifest_path(&dir).is_file() {
                continue;
            }
            let deps = self
                .manifest(&dir)
                .map(|m| m.path_deps.clone())
                .unwrap_or_default();
            queue.extend(
                deps.iter()
                    .map(|dep| normalize(&dir.join(dep)))
                    .filter(|dep| dep.starts_with(&under)),
            );
            members.insert(dir);
        }
        members
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

/// A `[package]` with a `description` and a `license` (crates.io requires
/// both) that does not say `publish = false`.
fn published(table: &toml::Table) -> bool {
    let Some(package) = table.get("package").and_then(toml::Value::as_table) else {
        return false;
    };
    // crates.io takes a crate with a description and a license; either
    // may come from the workspace (`license.workspace = true`).
    package.contains_key("description")
        && (package.contains_key("license") || package.contains_key("license-file"))
        && package.get("publish").and_then(toml::Value::as_bool) != Some(false)
}

/// `[workspace] members` or `exclude`, with `./` and trailing `/` dropped.
fn workspace_list(table: &toml::Table, key: &str) -> Vec<String> {
    table
        .get("workspace")
        .and_then(|w| w.get(key))
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(toml::Value::as_str)
        .map(|s| s.trim_start_matches("./").trim_end_matches('/').to_owned())
        .collect()
}

/// The `path` of every dependency, in `[dependencies]`, `[dev-dependencies]`,
/// `[build-dependencies]` and their `[target.*]` forms.
fn path_dependencies(table: &toml::Table) -> Vec<PathBuf> {
    dependencies(table)
        .filter_map(|(_, dep)| dep.get("path").and_then(toml::Value::as_str))
        .map(PathBuf::from)
        .collect()
}

/// Where a dependency lives: a path of its own entry, relative to the
/// manifest, or the entry of that name in the workspace's
/// `[workspace.dependencies]` (`engine = { workspace = true }`).
enum DepPath {
    Own(PathBuf),
    Shared(String),
}

/// The features a manifest built with `on` asks of its path dependencies:
/// those its dependency entries list (`features = ["torch"]`) and those
/// its enabled features name (`engine/torch`, `asked`). An optional
/// dependency counts only where an enabled feature turns it on.
fn dependency_requests(
    table: &toml::Table,
    on: &Features,
    asked: &[(String, String)],
) -> Vec<(DepPath, String)> {
    let mut out = Vec::new();
    let built: Vec<(&str, &toml::Value)> = built_dependencies(table).collect();
    let place = |name: &str| -> Option<DepPath> {
        let (_, dep) = built.iter().find(|(n, _)| *n == name)?;
        if let Some(path) = dep.get("path").and_then(toml::Value::as_str) {
            return Some(DepPath::Own(PathBuf::from(path)));
        }
        dep.get("workspace")
            .and_then(toml::Value::as_bool)
            .filter(|w| *w)
            .map(|_| DepPath::Shared(name.to_owned()))
    };
    for (name, dep) in &built {
        let optional = dep.get("optional").and_then(toml::Value::as_bool) == Some(true);
        if optional && !on.has(name) && !asked.iter().any(|(d, _)| d == name) {
            continue;
        }
        let listed = dep.get("features").and_then(toml::Value::as_array);
        for feature in listed.into_iter().flatten().filter_map(toml::Value::as_str) {
            if let Some(path) = place(name) {
                out.push((path, feature.to_owned()));
            }
        }
    }
    for (name, feature) in asked {
        if let Some(path) = place(name) {
            out.push((path, feature.clone()));
        }
    }
    out
}

/// The path of each `[workspace.dependencies]` entry that has one, by name.
fn workspace_dependencies(table: &toml::Table) -> HashMap<String, PathBuf> {
    table
        .get("workspace")
        .and_then(|w| w.get("dependencies"))
        .and_then(toml::Value::as_table)
        .into_iter()
        .flatten()
        .filter_map(|(name, dep)| {
            let path = dep.get("path").and_then(toml::Value::as_str)?;
            Some((name.clone(), PathBuf::from(path)))
        })
        .collect()
}

/// The dependencies a build (not a test) compiles: `[dependencies]` and
/// `[build-dependencies]`, of every target.
fn built_dependencies(table: &toml::Table) -> impl Iterator<Item = (&str, &toml::Value)> {
    dependency_tables(
        table,
        &["dependencies", "build-dependencies", "build_dependencies"],
    )
}

/// Whether a manifest depends on tch (or its `torch-sys`), by name or
/// renamed (`torch = { package = "tch" }`).
fn depends_on_tch(table: &toml::Table) -> bool {
    const TCH: [&str; 2] = ["tch", "torch-sys"];
    dependencies(table).any(|(name, dep)| {
        let package = dep.get("package").and_then(toml::Value::as_str);
        TCH.contains(&package.unwrap_or(name))
    })
}

/// Every dependency a manifest declares, of every kind and target: its
/// name and its entry.
fn dependencies(table: &toml::Table) -> impl Iterator<Item = (&str, &toml::Value)> {
    dependency_tables(
        table,
        &[
            "dependencies",
            "dev-dependencies",
            "dev_dependencies",
            "build-dependencies",
        ],
    )
}

/// The entries of the dependency tables named `kinds`, at the top level and
/// under every `[target.'cfg(..)']`: each dependency's name and entry.
fn dependency_tables<'t>(
    table: &'t toml::Table,
    kinds: &'static [&'static str],
) -> impl Iterator<Item = (&'t str, &'t toml::Value)> {
    let targets = table
        .get("target")
        .and_then(toml::Value::as_table)
        .into_iter()
        .flat_map(|t| t.values())
        .filter_map(toml::Value::as_table);
    std::iter::once(table)
        .chain(targets)
        .flat_map(move |t| kinds.iter().filter_map(move |k| t.get(*k)))
        .filter_map(toml::Value::as_table)
        .flat_map(|deps| deps.iter().map(|(name, dep)| (name.as_str(), dep)))
}

/// The directories a `members` pattern names under `root`: each segment
/// with a glob character is matched against the directory's entries.
fn expand_member(root: &Path, pattern: &str) -> Vec<PathBuf> {
    let mut dirs = vec![root.to_owned()];
    for segment in pattern.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if !segment.contains(['*', '?', '[']) {
            dirs = dirs.into_iter().map(|d| d.join(segment)).collect();
            continue;
        }
        let Ok(glob) = globset::Glob::new(segment) else {
            return Vec::new();
        };
        let matcher = glob.compile_matcher();
        dirs = dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .flatten()
            .flatten()
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .filter(|entry| matcher.is_match(entry.file_name()))
            .map(|entry| entry.path())
            .collect();
    }
    dirs
}

/// `path` with `.` dropped and `..` applied, without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
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
        // A description alone does not make a crate crates.io takes.
        // A described package with these further keys.
        let described = |keys: &str| {
            let text = format!("[package]\nname = \"a-crate\"\ndescription = \"A crate.\"\n{keys}");
            std::fs::write(root.join("a/Cargo.toml"), text).unwrap();
        };
        described("");
        assert!(!Layout::new(&[]).published(&root.join("a")));
        described("license = \"MIT\"\n");
        assert!(Layout::new(&[]).published(&root.join("a")));
        described("license = \"MIT\"\npublish = false\n");
        assert!(!Layout::new(&[]).published(&root.join("a")));
        assert!(!Layout::new(&[]).called_from_elsewhere(&root.join("a")));
        // A member the checkout lacks (a gitignored driver) may call it.
        std::fs::write(
            root.join("Cargo.toml"),
            "[workspace]\nmembers = [\"a\", \"tools/run\"]\n",
        )
        .unwrap();
        assert!(Layout::new(&[]).called_from_elsewhere(&root.join("a")));
        let loose = layout.membership(Path::new("/nonexistent-devcheck-dir/x.rs"));
        assert_eq!(loose, Membership::default());
    }

    #[test]
    fn crates_their_workspace_does_not_hold_are_never_built() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, text: &str| {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "Cargo.toml",
            "[workspace]\nmembers = [\"./app\", \"crates/*\"]\nexclude = [\"scratch\"]\n",
        );
        write(
            "app/Cargo.toml",
            "[package]\nname = \"app\"\n[dependencies]\nutil = { path = \"../util\" }\n",
        );
        write("util/Cargo.toml", "[package]\nname = \"util\"\n");
        write("crates/net/Cargo.toml", "[package]\nname = \"net\"\n");
        write("scratch/try/Cargo.toml", "[package]\nname = \"try\"\n");
        write(
            "old/Cargo.toml",
            "[package]\nname = \"old\"\n[dependencies]\napp = { path = \"../app\" }\n",
        );
        write(
            "own/Cargo.toml",
            "[package]\nname = \"own\"\nworkspace = \"..\"\n",
        );
        let mut layout = Layout::new(&[]);
        for held in ["app", "util", "crates/net", "scratch/try", "own"] {
            assert!(!layout.outside_its_workspace(&root.join(held)), "{held}");
        }
        assert!(layout.outside_its_workspace(&root.join("old")));
        assert!(!layout.outside_its_workspace(root));
    }
}
