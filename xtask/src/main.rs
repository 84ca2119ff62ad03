//! `cargo xtask`: the project's automation, as ordinary Rust.
//!
//! It never links libtorch: it provisions libtorch first, then builds and runs
//! the crates that need it with the right environment.

mod bundle;
mod hook;
mod libtorch;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};

use libtorch::Libtorch;

/// devcheck's tasks. Every task provisions libtorch first (fast once done).
#[derive(Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version, about)]
struct Cli {
    #[command(subcommand)]
    task: Task,
}

#[derive(Subcommand)]
enum Task {
    /// Find or provision libtorch 2.11 and print which one is used.
    Setup,
    /// Report backends (built / available / devices), versions, host and flags.
    Doctor {
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Run the device matrix: built-in cases × devices × checks, with a JSON report.
    Matrix(MatrixArgs),
    /// Build the matrix into a folder that runs where there is no cargo (a GPU host).
    GpuBundle {
        /// The folder to create.
        #[arg(long)]
        out: PathBuf,
    },
    /// Run the whole suite: rustfmt, clippy, unit, lint, snapshot and end-to-end tests.
    Test {
        /// Arguments passed to `cargo test` after the workspace selection.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Time devcheck-lint against a bare parallel syn parse of the same files.
    BenchLint {
        /// Files or directories (default: the cargo registry sources).
        paths: Vec<PathBuf>,
    },
    /// Install a git pre-commit hook that runs devcheck-lint on the staged Rust files.
    InstallHook {
        /// Replace an existing pre-commit hook that is not devcheck's.
        #[arg(long)]
        force: bool,
    },
}

#[derive(clap::Args)]
struct MatrixArgs {
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/devcheck/report.json")]
    report: PathBuf,
    /// Also run the planted-fault cases (they must fail their own check).
    #[arg(long)]
    faults: bool,
    /// Run only trials whose name contains this (`cnn::`, `::tolerance::`, `::cuda:0`).
    #[arg(long)]
    filter: Option<String>,
    /// Run only on this device (cpu, cuda:N, mps); repeatable.
    #[arg(long = "device", value_name = "DEVICE")]
    devices: Vec<String>,
    /// Arguments for the test runner itself (`--list`, `--exact`, `--format terse`, …).
    #[arg(last = true)]
    runner_args: Vec<String>,
}

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
        Task::Doctor { json } => {
            let torch = setup()?;
            let mut command = harness_binary(&torch, "devcheck-doctor");
            if json {
                command.arg("--json");
            }
            status(&mut command)
        }
        Task::Matrix(args) => matrix(&args),
        Task::GpuBundle { out } => {
            let torch = setup()?;
            let mut build = cargo(Some(&torch));
            build.args(["build", "--release", "--package", "devcheck"]);
            for binary in bundle::BINARIES {
                build.args(["--bin", binary]);
            }
            if status(&mut build)? != ExitCode::SUCCESS {
                bail!("building the bundle's binaries failed");
            }
            let root = workspace_root();
            let target = std::env::var_os("CARGO_TARGET_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("target"));
            let size = bundle::assemble(
                &root,
                &target.join("release"),
                &out,
                true,
                git_commit(&root).as_deref(),
            )?;
            eprintln!(
                "devcheck: bundle in {} ({:.1} MiB): run `{}/run.sh --report report.json`",
                out.display(),
                size as f64 / 1048576.0,
                out.display()
            );
            Ok(ExitCode::SUCCESS)
        }
        Task::Test { args } => test(&args),
        Task::BenchLint { paths } => {
            let mut command = cargo(None);
            command.args([
                "bench",
                "--package",
                "devcheck-lint",
                "--bench",
                "registry",
                "--",
            ]);
            command.args(paths);
            status(&mut command)
        }
        Task::InstallHook { force } => {
            let hook = hook::install(&workspace_root(), force)?;
            eprintln!("devcheck: installed {}", hook.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn setup() -> Result<Libtorch> {
    let torch = libtorch::ensure()?;
    eprintln!("{}", torch.describe());
    Ok(torch)
}

/// Builds and runs `devcheck-matrix` with libtorch's environment.
fn matrix(args: &MatrixArgs) -> Result<ExitCode> {
    let torch = setup()?;
    let root = workspace_root();
    let mut command = harness_binary(&torch, "devcheck-matrix");
    let report = if args.report.is_absolute() {
        args.report.clone()
    } else {
        root.join(&args.report)
    };
    command.arg("--report").arg(&report);
    command
        .arg("--snapshots")
        .arg(root.join("snapshots/matrix"));
    if args.faults {
        command.arg("--faults");
    }
    for device in &args.devices {
        command.arg("--device").arg(device);
    }
    if let Some(filter) = &args.filter {
        command.arg(filter);
    }
    command.args(&args.runner_args);
    // MPS reads this when libtorch loads; the matrix's fallback check needs it on.
    command.env("PYTORCH_ENABLE_MPS_FALLBACK", "1");
    if let Some(commit) = git_commit(&root) {
        command.env("DEVCHECK_GIT_COMMIT", commit);
    }
    status(&mut command)
}

fn git_commit(root: &std::path::Path) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    let commit = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !commit.is_empty()).then_some(commit)
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
        let mut command = cargo(Some(&torch));
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

/// `cargo run` of one of the harness's binaries, with libtorch's environment;
/// its arguments follow.
fn harness_binary(torch: &Libtorch, bin: &str) -> Command {
    let mut command = cargo(Some(torch));
    command.args([
        "run",
        "--quiet",
        "--package",
        "devcheck",
        "--bin",
        bin,
        "--",
    ]);
    command
}

/// A cargo command in the workspace root, with libtorch's environment when given.
fn cargo(torch: Option<&Libtorch>) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(workspace_root());
    if let Some(torch) = torch {
        torch.apply(&mut command);
    }
    command
}

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives one level below the workspace root")
        .to_path_buf()
}

/// Runs a command to completion, passing its exit code through.
fn status(command: &mut Command) -> Result<ExitCode> {
    let status = command
        .status()
        .with_context(|| format!("failed to start {:?}", command.get_program()))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}
