//! Where a file sits in its workspace: which compilation unit (a crate's
//! library, one binary, example, test or bench) and which module, so that
//! crate-local names resolve by path the way rustc resolves them, instead
//! of merging every function of the same name.

use std::path::{Component, Path, PathBuf};

/// What kind of target a unit is.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// `src/` (the library, or the binary of a crate without one).
    Lib,
    /// `src/bin/<name>`.
    Bin(String),
    /// `examples/<name>`.
    Example(String),
    /// `tests/<name>`.
    Test(String),
    /// `benches/<name>`.
    Bench(String),
    /// Anything else (`build.rs`, loose files): one unit per top directory.
    Other(String),
}

/// A file's place: its unit's target and its module path within the unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileScope {
    /// The target the file is compiled into.
    pub target: Target,
    /// Module path within that target (`["models", "bert"]`).
    pub module: Vec<String>,
}

impl FileScope {
    /// Whether the file is test code by location (`tests/`).
    pub fn is_test(&self) -> bool {
        matches!(self.target, Target::Test(_))
    }
}

/// Targets a manifest places outside cargo's default layout: `[lib] path`
/// and `[[bin]]`, `[[example]]`, `[[test]]`, `[[bench]]` entries with a
/// `path`, relative to the crate root; and the features each target
/// entry requires.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeclaredTargets {
    /// The library's root file, when not `src/lib.rs`.
    pub lib: Option<PathBuf>,
    /// Other targets' root files.
    pub roots: Vec<(Target, PathBuf)>,
    /// Binaries cargo builds only with features (`required-features =
    /// ["torch"]`), with or without a `path`.
    pub required: Vec<(Target, Vec<String>)>,
}

impl DeclaredTargets {
    /// The first feature `target` requires that `on` leaves off: cargo
    /// skips the target in a build without it (`cargo build --release`
    /// builds no binary whose `required-features` the default lacks).
    pub fn missing_feature(&self, target: &Target, on: impl Fn(&str) -> bool) -> Option<&str> {
        self.required
            .iter()
            .filter(|(t, _)| t == target)
            .flat_map(|(_, features)| features)
            .map(String::as_str)
            .find(|feature| !on(feature))
    }
}

/// The targets a manifest declares with explicit paths.
pub fn declared_targets(manifest: &toml::Table) -> DeclaredTargets {
    fn path_of(entry: &toml::Value) -> Option<&str> {
        entry.get("path").and_then(toml::Value::as_str)
    }
    let lib = manifest
        .get("lib")
        .and_then(path_of)
        .map(manifest_relative)
        .filter(|p| p != Path::new("src/lib.rs"));
    let mut roots = Vec::new();
    let mut required = Vec::new();
    for (key, make) in [
        ("bin", Target::Bin as fn(String) -> Target),
        ("example", Target::Example),
        ("test", Target::Test),
        ("bench", Target::Bench),
    ] {
        for entry in manifest
            .get(key)
            .and_then(toml::Value::as_array)
            .into_iter()
            .flatten()
        {
            let path = path_of(entry);
            let name = entry.get("name").and_then(toml::Value::as_str).map_or_else(
                || {
                    path.and_then(|p| Path::new(p).file_stem())
                        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
                },
                str::to_owned,
            );
            let features: Vec<String> = entry
                .get("required-features")
                .and_then(toml::Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(toml::Value::as_str)
                .map(str::to_owned)
                .collect();
            // An example, test or bench is built only when asked for by
            // name, with the features it needs; `cargo build --release`
            // skips a binary whose features the default lacks.
            if key == "bin" && !features.is_empty() && !name.is_empty() {
                required.push((make(name.clone()), features));
            }
            if let Some(path) = path {
                roots.push((make(name), manifest_relative(path)));
            }
        }
    }
    DeclaredTargets {
        lib,
        roots,
        required,
    }
}

/// A manifest's target path as a path relative to the crate root:
/// `./rust_part/src/lib.rs` is `rust_part/src/lib.rs`.
fn manifest_relative(path: &str) -> PathBuf {
    Path::new(path)
        .components()
        .filter(|c| !matches!(c, Component::CurDir))
        .collect()
}

/// The scope of `path`, given the root of the crate it belongs to (the
/// directory of the nearest `Cargo.toml`), or `None` outside any crate.
#[cfg(test)]
pub fn file_scope(path: &Path, crate_root: Option<&Path>) -> FileScope {
    file_scope_in(path, crate_root, &DeclaredTargets::default())
}

/// `file_scope`, honouring the targets the crate's manifest declares with
/// explicit paths: a declared root file is its target, and the files in
/// the directory of a library root declared outside `src/` are its modules.
pub fn file_scope_in(
    path: &Path,
    crate_root: Option<&Path>,
    declared: &DeclaredTargets,
) -> FileScope {
    let relative = crate_root
        .and_then(|root| path.strip_prefix(root).ok())
        .unwrap_or(path);
    if let Some((target, _)) = declared.roots.iter().find(|(_, root)| root == relative) {
        return FileScope {
            target: target.clone(),
            module: Vec::new(),
        };
    }
    if let Some(lib) = &declared.lib {
        let dir = lib.parent().unwrap_or(Path::new(""));
        let outside_default = !relative.starts_with("src")
            && !["tests", "examples", "benches"]
                .iter()
                .any(|d| relative.starts_with(d));
        if relative == lib.as_path() {
            return FileScope {
                target: Target::Lib,
                module: Vec::new(),
            };
        }
        if let (Ok(inside), true) = (relative.strip_prefix(dir), outside_default) {
            let mut module: Vec<String> = inside
                .components()
                .filter_map(|c| match c {
                    Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
                    _ => None,
                })
                .map(|s| s.strip_suffix(".rs").map_or(s.clone(), str::to_owned))
                .collect();
            if module.last().is_some_and(|last| last == "mod") {
                module.pop();
            }
            return FileScope {
                target: Target::Lib,
                module,
            };
        }
    }
    let parts: Vec<String> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    let stem = |name: &str| name.strip_suffix(".rs").unwrap_or(name).to_owned();
    // Module path from the files below a unit's root directory.
    let modules = |rest: &[String]| -> Vec<String> {
        let mut module: Vec<String> = rest.iter().map(|s| stem(s)).collect();
        if module
            .last()
            .is_some_and(|last| matches!(last.as_str(), "mod" | "lib" | "main"))
        {
            module.pop();
        }
        module
    };
    let named_unit = |rest: &[String]| -> (String, Vec<String>) {
        match rest {
            [] => (String::new(), Vec::new()),
            [single] => (stem(single), Vec::new()),
            [dir, inner @ ..] => (dir.clone(), modules(inner)),
        }
    };
    match parts.as_slice() {
        [src, bin, rest @ ..] if src == "src" && bin == "bin" && !rest.is_empty() => {
            let (name, module) = named_unit(rest);
            FileScope {
                target: Target::Bin(name),
                module,
            }
        }
        [src, rest @ ..] if src == "src" => FileScope {
            target: Target::Lib,
            module: modules(rest),
        },
        [dir, rest @ ..]
            if matches!(dir.as_str(), "examples" | "tests" | "benches") && !rest.is_empty() =>
        {
            let (name, module) = named_unit(rest);
            let target = match dir.as_str() {
                "examples" => Target::Example(name),
                "tests" => Target::Test(name),
                _ => Target::Bench(name),
            };
            FileScope { target, module }
        }
        [single] => FileScope {
            target: Target::Other(stem(single)),
            module: Vec::new(),
        },
        [dir, rest @ ..] => FileScope {
            target: Target::Other(dir.clone()),
            module: modules(rest),
        },
        [] => FileScope {
            target: Target::Other(String::new()),
            module: Vec::new(),
        },
    }
}

/// The name other crates use for this one: `[lib] name`, else
/// `[package] name` with `-` turned into `_`.
pub fn crate_name(manifest: &toml::Table) -> Option<String> {
    let lib = manifest
        .get("lib")
        .and_then(|l| l.get("name"))
        .and_then(toml::Value::as_str);
    let package = manifest
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(toml::Value::as_str);
    lib.or(package).map(|n| n.replace('-', "_"))
}

/// Whether a manifest makes its directory a workspace root.
pub fn is_workspace_root(manifest: &toml::Table) -> bool {
    manifest.contains_key("workspace")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(path: &str) -> (Target, Vec<String>) {
        let s = file_scope(Path::new(&format!("/r/{path}")), Some(Path::new("/r")));
        (s.target, s.module)
    }

    fn module(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn files_map_to_their_target_and_module() {
        assert_eq!(scope("src/lib.rs"), (Target::Lib, module(&[])));
        assert_eq!(scope("src/main.rs"), (Target::Lib, module(&[])));
        assert_eq!(
            scope("src/models/bert.rs"),
            (Target::Lib, module(&["models", "bert"]))
        );
        assert_eq!(
            scope("src/models/mod.rs"),
            (Target::Lib, module(&["models"]))
        );
        assert_eq!(
            scope("src/bin/train.rs"),
            (Target::Bin("train".into()), module(&[]))
        );
        assert_eq!(
            scope("examples/rl/a2c.rs"),
            (Target::Example("rl".into()), module(&["a2c"]))
        );
        assert_eq!(
            scope("examples/rl/main.rs"),
            (Target::Example("rl".into()), module(&[]))
        );
        assert_eq!(
            scope("examples/basics.rs"),
            (Target::Example("basics".into()), module(&[]))
        );
        assert_eq!(
            scope("tests/nn.rs"),
            (Target::Test("nn".into()), module(&[]))
        );
        assert_eq!(
            scope("build.rs"),
            (Target::Other("build".into()), module(&[]))
        );
        assert!(file_scope(Path::new("/r/tests/a.rs"), Some(Path::new("/r"))).is_test());
    }

    #[test]
    fn binaries_that_need_features_name_them() {
        let manifest: toml::Table = toml::from_str(
            "[[bin]]\nname = \"train\"\npath = \"src/bin/train.rs\"\nrequired-features = [\"torch\", \"cuda\"]\n\
             [[bin]]\nname = \"serve\"\nrequired-features = [\"torch\"]\n\
             [[bin]]\nname = \"plain\"\n\
             [[example]]\nname = \"sample\"\nrequired-features = [\"torch\"]\n",
        )
        .unwrap();
        let declared = declared_targets(&manifest);
        let missing = |target: Target, on: &[&str]| {
            declared
                .missing_feature(&target, |f| on.contains(&f))
                .map(str::to_owned)
        };
        assert_eq!(
            missing(Target::Bin("train".into()), &[]),
            Some("torch".into())
        );
        assert_eq!(
            missing(Target::Bin("train".into()), &["torch"]),
            Some("cuda".into())
        );
        assert_eq!(
            missing(Target::Bin("train".into()), &["torch", "cuda"]),
            None
        );
        assert_eq!(
            missing(Target::Bin("serve".into()), &[]),
            Some("torch".into())
        );
        assert_eq!(missing(Target::Bin("plain".into()), &[]), None);
        // An example is built only when asked for, with its features.
        assert_eq!(missing(Target::Example("sample".into()), &[]), None);
    }

    #[test]
    fn target_paths_may_start_with_the_crate_directory() {
        let manifest: toml::Table = toml::from_str(
            "[lib]\npath = \"./engine/lib.rs\"\n[[bin]]\nname = \"play\"\npath = \"./engine/play.rs\"\n",
        )
        .unwrap();
        let declared = declared_targets(&manifest);
        let scope = |path: &str| {
            file_scope_in(
                Path::new(&format!("/r/{path}")),
                Some(Path::new("/r")),
                &declared,
            )
            .target
        };
        assert_eq!(scope("engine/lib.rs"), Target::Lib);
        assert_eq!(scope("engine/play.rs"), Target::Bin("play".into()));
    }

    #[test]
    fn targets_declared_with_paths_place_their_files() {
        let manifest: toml::Table = toml::from_str(
            "[lib]\npath = \"lib.rs\"\n[[bin]]\nname = \"a2c\"\npath = \"bins/a2c.rs\"\n",
        )
        .unwrap();
        let declared = declared_targets(&manifest);
        let scope = |path: &str| {
            let s = file_scope_in(
                Path::new(&format!("/r/{path}")),
                Some(Path::new("/r")),
                &declared,
            );
            (s.target, s.module)
        };
        assert_eq!(scope("lib.rs"), (Target::Lib, module(&[])));
        assert_eq!(scope("a2c.rs"), (Target::Lib, module(&["a2c"])));
        assert_eq!(scope("ppo/mod.rs"), (Target::Lib, module(&["ppo"])));
        assert_eq!(
            scope("bins/a2c.rs"),
            (Target::Bin("a2c".into()), module(&[]))
        );
        assert_eq!(scope("tests/t.rs"), (Target::Test("t".into()), module(&[])));
    }

    #[test]
    fn crate_names_come_from_the_manifest() {
        let manifest: toml::Table = toml::from_str("[package]\nname = \"rust-bert\"\n").unwrap();
        assert_eq!(crate_name(&manifest).as_deref(), Some("rust_bert"));
        let manifest: toml::Table =
            toml::from_str("[package]\nname = \"a\"\n[lib]\nname = \"b_lib\"\n").unwrap();
        assert_eq!(crate_name(&manifest).as_deref(), Some("b_lib"));
        assert!(is_workspace_root(
            &toml::from_str("[workspace]\nmembers = []\n").unwrap()
        ));
    }
}
