//! `cargo xtask`: the project's automation, as ordinary Rust.
//!
//! It never links libtorch: it provisions libtorch first, then builds and runs
//! the crates that need it with the right environment.

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
            let mut command = cargo(Some(&torch));
            command.args([
                "run",
                "--quiet",
                "--package",
                "devcheck",
                "--bin",
                "devcheck-doctor",
                "--",
            ]);
            if json {
                command.arg("--json");
            }
            status(&mut command)
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
    }
}

fn setup() -> Result<Libtorch> {
    let torch = libtorch::ensure()?;
    eprintln!("{}", torch.describe());
    Ok(torch)
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
