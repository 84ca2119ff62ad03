//! Where a file sits in its workspace: which compilation unit (a crate's
//! library, one binary, example, test or bench) and which module, so that
//! crate-local names resolve by path the way rustc resolves them, instead
//! of merging every function of the same name.

use std::path::{Component, Path};

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

/// The scope of `path`, given the root of the crate it belongs to (the
/// directory of the nearest `Cargo.toml`), or `None` outside any crate.
pub fn file_scope(path: &Path, crate_root: Option<&Path>) -> FileScope {
    let relative = crate_root
        .and_then(|root| path.strip_prefix(root).ok())
        .unwrap_or(path);
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
