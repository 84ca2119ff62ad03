//! The repository devcheck runs in: its cargo workspace, the test targets that
//! hold devcheck cases, and the executables cargo builds for them.
//!
//! A devcheck target is a `[[test]]` with `harness = false` in a package that
//! depends on devcheck, whose source names devcheck (its `main` calls
//! `devcheck::run(cases)`). `cargo metadata` lists packages, dependencies and
//! targets; `harness`, which it does not show, is read from the manifest.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use cargo_metadata::{Message, MetadataCommand};

use crate::libtorch::Libtorch;

/// What kind of cargo target holds the cases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A `[[test]]` with `harness = false` (what a user writes).
    Test,
    /// A `[[bin]]` (devcheck's own built-in cases).
    Bin,
}

/// One binary that holds devcheck cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Its package.
    pub package: String,
    /// The target's name (`devices` for `tests/devices.rs`).
    pub name: String,
    /// Test or binary.
    pub kind: TargetKind,
    /// Its main source file.
    pub src_path: PathBuf,
    /// The package's directory: the binary's working directory, as under `cargo test`.
    pub package_dir: PathBuf,
    /// Its reviewed readback snapshots (`<package>/snapshots`, where the test
    /// binary looks by default).
    pub snapshots: PathBuf,
}

impl Target {
    /// `package/target` as messages name it (a bundle's: `package-target`).
    pub fn label(&self) -> String {
        if self.package.is_empty() {
            // A bundle's target, already named `<package>-<target>`.
            return self.name.clone();
        }
        format!("{}/{}", self.package, self.name)
    }

    /// A file name for what belongs to this target alone.
    pub fn file_stem(&self) -> String {
        format!("{}-{}", self.package, self.name)
    }
}

/// A built target.
#[derive(Debug, Clone)]
pub struct Built {
    /// The target.
    pub target: Target,
    /// The executable cargo wrote.
    pub executable: PathBuf,
}

/// A workspace and its devcheck targets.
#[derive(Debug, Clone)]
pub struct Project {
    /// The workspace root.
    pub root: PathBuf,
    /// Cargo's target directory.
    pub target_dir: PathBuf,
    /// The targets with cases, in the order cargo lists them.
    pub targets: Vec<Target>,
}

impl Project {
    /// The workspace of `manifest_path` (else of the working directory) and
    /// its devcheck targets; an error, with what to add, when it has none.
    pub fn discover(manifest_path: Option<&Path>) -> Result<Self> {
        let mut command = MetadataCommand::new();
        command.no_deps();
        if let Some(path) = manifest_path {
            command.manifest_path(path);
        }
        let metadata = command
            .exec()
            .context("`cargo metadata` failed: is this inside a cargo project?")?;
        let mut targets = Vec::new();
        for package in metadata.workspace_packages() {
            if !package.dependencies.iter().any(|d| d.name == "devcheck") {
                continue;
            }
            let manifest = package.manifest_path.as_std_path();
            let without_harness = tests_without_harness(manifest)?;
            let package_dir = manifest.parent().expect("a manifest is in a directory");
            for target in &package.targets {
                let is_test = target.kind.contains(&cargo_metadata::TargetKind::Test);
                if !is_test || !without_harness.contains(&target.name) {
                    continue;
                }
                let src = target.src_path.as_std_path();
                let source = std::fs::read_to_string(src)
                    .with_context(|| format!("cannot read {}", src.display()))?;
                if !source.contains("devcheck") {
                    continue;
                }
                targets.push(Target {
                    package: package.name.to_string(),
                    name: target.name.clone(),
                    kind: TargetKind::Test,
                    src_path: src.to_path_buf(),
                    package_dir: package_dir.to_path_buf(),
                    snapshots: package_dir.join("snapshots"),
                });
            }
        }
        if targets.is_empty() {
            bail!(
                "no devcheck test target in the workspace at {}\n  \
                 = help: add to a package's Cargo.toml `[dev-dependencies] devcheck = …` and\n          \
                 `[[test]] name = \"devices\"` with `harness = false`, and in tests/devices.rs a\n          \
                 `fn main() -> std::process::ExitCode {{ devcheck::run(cases) }}` (README: \"Use devcheck in your project\")",
                metadata.workspace_root
            );
        }
        Ok(Self {
            root: metadata.workspace_root.into_std_path_buf(),
            target_dir: metadata.target_directory.into_std_path_buf(),
            targets,
        })
    }

    /// Keeps the targets of `packages` (if any) named in `names` (if any).
    pub fn select(&mut self, packages: &[String], names: &[String]) -> Result<()> {
        for (wanted, what) in [(packages, "package"), (names, "test target")] {
            for name in wanted {
                let known = self.targets.iter().any(|t| {
                    if what == "package" {
                        &t.package == name
                    } else {
                        &t.name == name
                    }
                });
                if !known {
                    let all: Vec<String> = self.targets.iter().map(Target::label).collect();
                    bail!(
                        "no devcheck {what} named `{name}`; devcheck targets here: {}",
                        all.join(", ")
                    );
                }
            }
        }
        self.targets.retain(|t| {
            (packages.is_empty() || packages.contains(&t.package))
                && (names.is_empty() || names.contains(&t.name))
        });
        Ok(())
    }

    /// Builds every target (in release with `release`) with libtorch's
    /// environment and `env`, and returns the executables. Cargo's own output
    /// goes to stderr.
    pub fn build(
        &self,
        torch: &Libtorch,
        release: bool,
        env: &[(&str, &str)],
    ) -> Result<Vec<Built>> {
        let mut built = Vec::new();
        let mut packages: Vec<&str> = self.targets.iter().map(|t| t.package.as_str()).collect();
        packages.dedup();
        for package in packages {
            for kind in [TargetKind::Test, TargetKind::Bin] {
                let targets: Vec<&Target> = self
                    .targets
                    .iter()
                    .filter(|t| t.package == package && t.kind == kind)
                    .collect();
                if targets.is_empty() {
                    continue;
                }
                let mut command = crate::cargo_command(&self.root, Some(torch));
                match kind {
                    TargetKind::Test => command.args(["test", "--no-run"]),
                    TargetKind::Bin => command.arg("build"),
                };
                command.args([
                    "--message-format=json-render-diagnostics",
                    "--package",
                    package,
                ]);
                if release {
                    command.arg("--release");
                }
                for target in &targets {
                    let flag = match kind {
                        TargetKind::Test => "--test",
                        TargetKind::Bin => "--bin",
                    };
                    command.args([flag, &target.name]);
                }
                for (key, value) in env {
                    command.env(key, value);
                }
                command.stdout(Stdio::piped());
                let mut child = command.spawn().context("cannot run cargo")?;
                let stdout = child.stdout.take().expect("piped");
                let mut executables = Vec::new();
                for message in Message::parse_stream(BufReader::new(stdout)) {
                    if let Message::CompilerArtifact(artifact) =
                        message.context("reading cargo's messages")?
                    {
                        if let Some(executable) = artifact.executable {
                            executables.push((
                                artifact.target.src_path.into_std_path_buf(),
                                executable.into_std_path_buf(),
                            ));
                        }
                    }
                }
                let status = child.wait().context("waiting for cargo")?;
                if !status.success() {
                    bail!("building {package}'s devcheck targets failed ({status})");
                }
                for target in targets {
                    let executable = executables
                        .iter()
                        .rev()
                        .find(|(src, _)| *src == target.src_path)
                        .map(|(_, exe)| exe.clone())
                        .with_context(|| {
                            format!("cargo built no executable for {}", target.label())
                        })?;
                    built.push(Built {
                        target: target.clone(),
                        executable,
                    });
                }
            }
        }
        Ok(built)
    }
}

impl Built {
    /// A command for this binary as `cargo test` runs it: in its package's
    /// directory with `CARGO_MANIFEST_DIR`, libtorch's environment, and the
    /// MPS fallback on (the fallback check needs it, and MPS reads it when
    /// libtorch loads).
    pub fn command(&self, torch: Option<&Libtorch>) -> Command {
        let mut command = Command::new(&self.executable);
        command
            .current_dir(&self.target.package_dir)
            .env("CARGO_MANIFEST_DIR", &self.target.package_dir)
            .env("PYTORCH_ENABLE_MPS_FALLBACK", "1");
        if let Some(torch) = torch {
            torch.apply(&mut command);
        }
        command
    }
}

/// Names of the `[[test]]` targets of a manifest with `harness = false`.
fn tests_without_harness(manifest: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(manifest)
        .with_context(|| format!("cannot read {}", manifest.display()))?;
    let value: toml::Table =
        toml::from_str(&text).with_context(|| format!("cannot parse {}", manifest.display()))?;
    let tests = value
        .get("test")
        .and_then(|t| t.as_array())
        .map(Vec::as_slice)
        .unwrap_or_default();
    Ok(tests
        .iter()
        .filter(|t| t.get("harness").and_then(|h| h.as_bool()) == Some(false))
        .filter_map(|t| t.get("name").and_then(|n| n.as_str()).map(str::to_owned))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tests_without_harness_are_read_from_the_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let manifest = dir.path().join("Cargo.toml");
        std::fs::write(
            &manifest,
            "[package]\nname = \"m\"\nversion = \"0.1.0\"\n\n\
             [[test]]\nname = \"devices\"\nharness = false\n\n\
             [[test]]\nname = \"unit\"\n\n\
             [[test]]\nname = \"other\"\nharness = true\n",
        )
        .unwrap();
        assert_eq!(tests_without_harness(&manifest).unwrap(), ["devices"]);
        std::fs::write(&manifest, "[package\n").unwrap();
        let error = format!("{:#}", tests_without_harness(&manifest).unwrap_err());
        assert!(error.starts_with("cannot parse"), "{error}");
    }
}
