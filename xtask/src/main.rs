//! `cargo xtask`: the project's automation, as ordinary Rust.
//!
//! It never links libtorch: it provisions libtorch first, then builds and runs
//! the crates that need it with the right environment.

mod bundle;
mod hook;
mod libtorch;

use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use clap::Parser;

use libtorch::Libtorch;
use xtask::cli::{Cli, MatrixArgs, MergeArgs, Task};
use xtask::device_matrix::DeviceMatrix;
use xtask::merge::{merge, Input};
use xtask::report::{self, Report};
use xtask::summary;

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
        Task::Merge(args) => merge_reports(&args),
        Task::Compare { args } => {
            let torch = setup()?;
            let mut command = harness_binary(&torch, "devcheck-compare");
            command.args(args);
            status(&mut command)
        }
        Task::Sweep { args } => {
            let torch = setup()?;
            let mut command = harness_binary(&torch, "devcheck-sweep");
            command.args(args);
            status(&mut command)
        }
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
        Task::BenchLint { paths, real } => {
            let mut command = cargo(None);
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
                Some(dir) => command.arg(dir),
                None => command.args(paths),
            };
            status(&mut command)
        }
        Task::BenchObserver { args } => {
            let torch = setup()?;
            // Release, as a user's CI builds: the observer's cost is per op.
            let mut command = cargo(Some(&torch));
            command.args([
                "run",
                "--quiet",
                "--release",
                "--package",
                "devcheck",
                "--bin",
                "devcheck-observer-cost",
                "--",
            ]);
            command.args(args);
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
    if let Some(dir) = &args.dump {
        command.arg("--dump").arg(root.join(dir));
    }
    // A filter that matches nothing is a typo here, not another binary's filter.
    command.args(["--no-tests", "fail"]);
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
    let Some(format) = args.summary else {
        return status(&mut command);
    };
    // stdout carries only the summary, so `>> "$GITHUB_STEP_SUMMARY"` takes
    // nothing else; the matrix's own output goes to stderr.
    let stderr = std::io::stderr()
        .as_fd()
        .try_clone_to_owned()
        .context("cannot duplicate stderr for the matrix's output")?;
    command.stdout(Stdio::from(stderr));
    let started = SystemTime::now();
    let code = status(&mut command)?;
    // A failed matrix still has a report worth summarizing; keep its exit code.
    // A report older than this run is a previous run's: the build failed.
    let fresh = std::fs::metadata(&report)
        .and_then(|m| m.modified())
        .is_ok_and(|modified| modified + Duration::from_secs(2) >= started);
    match report::load(&report) {
        Ok(report) if fresh => print!("{}", summary::render(format, &report)),
        Ok(_) => {
            eprintln!(
                "error: no summary: {} is from an earlier run",
                args.report.display()
            );
            print!("{}", summary::no_report(format, &args.report));
        }
        Err(error) => {
            eprintln!("error: no summary: {error}");
            print!("{}", summary::no_report(format, &args.report));
        }
    }
    Ok(code)
}

/// Pure JSON work: no libtorch, so it runs in a CI job with no torch.
fn merge_reports(args: &MergeArgs) -> Result<ExitCode> {
    let refuse = |error: &dyn std::fmt::Display| {
        eprintln!("error: {error}");
        Ok(ExitCode::from(2))
    };
    let mut inputs = Vec::with_capacity(args.reports.len());
    for path in &args.reports {
        match report::load(path) {
            Ok(report) => inputs.push(Input {
                name: path.display().to_string(),
                report,
            }),
            Err(error) => return refuse(&error),
        }
    }
    let merged = match merge(&inputs) {
        Ok(merged) => merged,
        Err(error) => return refuse(&error),
    };
    for warning in &merged.warnings {
        eprintln!("warning: {warning}");
    }
    write_atomically(&args.out, &merged.report)
        .with_context(|| format!("cannot write {}", args.out.display()))?;
    eprint!("{}", DeviceMatrix::new(&merged.report).table());
    eprintln!("merged report: {}", args.out.display());
    if let Some(format) = args.summary {
        print!("{}", summary::render(format, &merged.report));
    }
    Ok(ExitCode::SUCCESS)
}

/// A reader sees the old file or the new one, never half of one.
fn write_atomically(path: &Path, report: &Report) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    serde_json::to_writer_pretty(&mut file, report)?;
    std::io::Write::write_all(&mut file, b"\n")?;
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

fn git_commit(root: &Path) -> Option<String> {
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
