//! `cargo xtask`: the project's automation, as ordinary Rust.
//!
//! It never links libtorch: it provisions libtorch first, then builds and runs
//! the crates that need it with the right environment. The verbs `cargo
//! devcheck` has too are that crate's code, run on the built-in cases.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use cargo_devcheck::project::{Built, Project, Target, TargetKind};
use cargo_devcheck::{cargo_command, hook, status};
use clap::Parser;

use xtask::cli::{Cli, Task};

mod first_report;

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.task) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(task: Task) -> Result<ExitCode> {
    match task {
        Task::Setup => {
            setup()?;
            Ok(ExitCode::SUCCESS)
        }
        Task::Doctor { json } => cargo_devcheck::doctor(&builtin(), &setup()?, json),
        Task::Matrix(args) => {
            let mut project = builtin();
            project.select(&args.packages, &args.tests)?;
            cargo_devcheck::matrix(&project, &setup()?, &args)
        }
        Task::Merge(args) => cargo_devcheck::merge(&args),
        Task::Compare { args } => Ok(devcheck_report::cli::main(
            std::iter::once("cargo xtask compare".to_owned()).chain(args),
        )),
        Task::Sweep { args } => verb(true, "sweep", &args),
        Task::BenchObserver { args } => {
            // Release, as a user's CI builds: the observer's cost is per op.
            verb(true, "observer-cost", &args)
        }
        Task::GpuBundle { out } => {
            let torch = setup()?;
            let project = builtin();
            // The bundle's own cargo-devcheck runs the binary and joins reports there.
            let mut helper = cargo_command(&project.root, None);
            helper.args(["build", "--release", "--package", "cargo-devcheck"]);
            if status(&mut helper)? != ExitCode::SUCCESS {
                bail!("building cargo-devcheck for the bundle failed");
            }
            let helper = project.target_dir.join("release/cargo-devcheck");
            cargo_devcheck::bundle(
                &project,
                &torch,
                &helper,
                &out,
                Some(cargo_devcheck::bundle::MAX_BYTES),
            )
        }
        Task::Test { args } => test(&args),
        Task::BenchLint {
            paths,
            real,
            sets,
            detail,
        } => {
            let mut command = cargo_command(&workspace_root(), None);
            let bench = if real.is_some() { "real" } else { "registry" };
            command.args([
                "bench",
                "--package",
                "devcheck-lint",
                "--bench",
                bench,
                "--",
            ]);
            match real {
                Some(dir) => {
                    command.arg(dir);
                    if let Some(kind) = sets {
                        command.args(["--sets", &kind]);
                    }
                    if detail {
                        command.arg("--detail");
                    }
                }
                None => {
                    command.args(paths);
                }
            }
            status(&mut command)
        }
        Task::BenchFirstReport { dir } => {
            // The libtorch the user's crate needs is provisioned first: the figure
            // is for a machine where it is cached.
            setup()?;
            let dir = dir.unwrap_or_else(|| first_report::default_dir(&builtin().target_dir));
            first_report::run(&workspace_root(), &dir)?;
            Ok(ExitCode::SUCCESS)
        }
        Task::InstallHook { force } => {
            let hook = hook::install(&workspace_root(), force)?;
            eprintln!("devcheck: installed {}", hook.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// devcheck's built-in cases as a project: one binary, `devcheck-matrix`,
/// whose snapshots are `snapshots/matrix`.
fn builtin() -> Project {
    let root = workspace_root();
    let target_dir = std::env::var_os("CARGO_TARGET_DIR")
        .map(|dir| root.join(dir))
        .unwrap_or_else(|| root.join("target"));
    Project {
        targets: vec![Target {
            package: "devcheck".into(),
            name: "devcheck-matrix".into(),
            kind: TargetKind::Bin,
            src_path: root.join("harness/src/bin/devcheck-matrix.rs"),
            package_dir: root.join("harness"),
            snapshots: root.join("snapshots/matrix"),
        }],
        root,
        target_dir,
    }
}

/// One of the test binary's verbs on the built-in cases, from the workspace root.
fn verb(release: bool, name: &str, args: &[String]) -> Result<ExitCode> {
    let torch = setup()?;
    let built: Vec<Built> = builtin().build(&torch, release, &[])?;
    let mut command = built[0].command(Some(&torch));
    command.current_dir(workspace_root()).arg(name).args(args);
    status(&mut command)
}

/// The suite `.ci/run` runs. Stops at the first failing step.
fn test(test_args: &[String]) -> Result<ExitCode> {
    let torch = setup()?;
    let steps: [(&str, Vec<&str>); 3] = [
        ("rustfmt", vec!["fmt", "--all", "--", "--check"]),
        (
            "clippy",
            vec![
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
        ),
        ("tests", vec!["test", "--workspace", "--locked"]),
    ];
    for (name, args) in steps {
        eprintln!("devcheck: == {name} ==");
        let mut command = cargo_command(&workspace_root(), Some(&torch));
        command.args(&args);
        if name == "tests" && !test_args.is_empty() {
            command.args(test_args);
        }
        let code = status(&mut command)?;
        if code != ExitCode::SUCCESS {
            bail!("`cargo {}` failed", args.join(" "));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The libtorch this workspace's tch (its lockfile's) needs.
fn setup() -> Result<cargo_devcheck::libtorch::Libtorch> {
    cargo_devcheck::setup(Some(&workspace_root().join("Cargo.toml")))
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}
