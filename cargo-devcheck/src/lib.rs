//! `cargo devcheck`: devcheck's verbs in any repository whose tests use it.
//!
//! Install it with `cargo install --path cargo-devcheck` (or `--git`), then in
//! your repository `cargo devcheck matrix`. It finds your devcheck test
//! targets (`[[test]]` with `harness = false` in packages that depend on
//! devcheck, see [`project`]), provisions libtorch ([`libtorch`]), builds them
//! and runs them through the verbs every devcheck test binary answers
//! (`devcheck::run`), and joins what they write into one report. It never
//! links libtorch itself.
//!
//! The same verbs are a library for a repository's own xtask:
//!
//! ```no_run
//! // xtask/src/main.rs: `cargo xtask devcheck matrix`, …
//! fn main() -> std::process::ExitCode {
//!     let args = std::env::args_os().skip(2);
//!     cargo_devcheck::main(std::iter::once("cargo xtask devcheck".into()).chain(args))
//! }
//! ```

pub mod bundle;
pub mod cli;
pub mod hook;
pub mod libtorch;
pub mod project;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context, Result};
use clap::Parser;
use devcheck_report::device_matrix::DeviceMatrix;
use devcheck_report::exit;
use devcheck_report::merge::{join, merge as merge_inputs, Input};
use devcheck_report::report::{self, Report};
use devcheck_report::summary;

use cli::{Cli, MatrixArgs, MergeArgs, SweepArgs, Verb};
use libtorch::Libtorch;
use project::{Built, Project};

/// Runs the command line `args`, the program's name first (`cargo-devcheck`,
/// then the `devcheck` cargo passes to a subcommand, which is skipped).
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let mut args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args.get(1).is_some_and(|a| a == "devcheck") {
        args.remove(1);
    }
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            });
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(exit::USAGE)
        }
    }
}

/// Runs one parsed command line.
pub fn run(cli: Cli) -> Result<ExitCode> {
    let manifest = cli.manifest_path.as_deref();
    match cli.verb {
        Verb::Setup { print_env } => {
            let torch = setup(manifest)?;
            if print_env {
                for (key, value) in torch.child_env() {
                    match value {
                        Some(value) => println!(
                            "export {key}='{}'",
                            value.to_string_lossy().replace('\'', "'\\''")
                        ),
                        None => println!("unset {key}"),
                    }
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Verb::Doctor { json } => {
            let project = Project::discover(manifest)?;
            doctor(&project, &setup(manifest)?, json)
        }
        Verb::Matrix(args) => {
            let mut project = Project::discover(manifest)?;
            project.select(&args.packages, &args.tests)?;
            matrix(&project, &setup(manifest)?, &args)
        }
        Verb::Sweep(args) => {
            let project = Project::discover(manifest)?;
            sweep(&project, &setup(manifest)?, &args)
        }
        Verb::Review { accept, reject } => {
            let project = Project::discover(manifest)?;
            let decision = match (accept, reject) {
                (true, _) => Some(Decision::Accept),
                (_, true) => Some(Decision::Reject),
                _ => None,
            };
            review(&project, decision)
        }
        Verb::Merge(args) => merge(&args),
        Verb::Summary { report, format } => {
            let loaded = report::load(&report)?;
            print!("{}", summary::render(format, &loaded));
            Ok(ExitCode::SUCCESS)
        }
        Verb::Compare { args } => Ok(devcheck_report::cli::main(
            std::iter::once("cargo devcheck compare".to_owned()).chain(args),
        )),
        Verb::Lint { args } => Ok(devcheck_lint::cli::main(
            std::iter::once("cargo devcheck lint".to_owned()).chain(args),
        )),
        Verb::InstallHook { force } => {
            let cwd = std::env::current_dir().context("cannot read the working directory")?;
            let hook = hook::install(&cwd, force)?;
            eprintln!("devcheck: installed {}", shown(&hook));
            Ok(ExitCode::SUCCESS)
        }
        Verb::Bundle {
            out,
            packages,
            tests,
        } => {
            let mut project = Project::discover(manifest)?;
            project.select(&packages, &tests)?;
            let helper = std::env::current_exe().context("cannot find cargo-devcheck itself")?;
            bundle(&project, &setup(manifest)?, &helper, &out, None)
        }
        Verb::RunBundle { bundle, args } => bundle::run(&bundle, &args),
        Verb::Join { reports, out } => {
            let inputs = load_all(&reports)?;
            write_report(&out, &join(&inputs)?)?;
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Finds or provisions the libtorch that the tch of the workspace of
/// `manifest_path` (else of the working directory) needs, and says which one.
pub fn setup(manifest_path: Option<&Path>) -> Result<Libtorch> {
    let wanted = libtorch::Wanted::of_workspace(manifest_path)?;
    let torch = libtorch::ensure(&wanted)?;
    eprintln!("{} for tch {}", torch.describe(), wanted.tch);
    Ok(torch)
}

/// `doctor`: the first target's `doctor` verb (every target links the same libtorch).
pub fn doctor(project: &Project, torch: &Libtorch, json: bool) -> Result<ExitCode> {
    let built = project.build(torch, false, &[])?;
    let first = built.first().context("no devcheck target was built")?;
    let mut command = first.command(Some(torch));
    command.arg("doctor");
    if json {
        command.arg("--json");
    }
    status(&mut command)
}

/// What to do with a pending snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Make it the reviewed snapshot.
    Accept,
    /// Throw it away.
    Reject,
    /// Leave it pending.
    Skip,
}

/// `review`: every pending readback snapshot of the project's targets, shown
/// as a diff and accepted or rejected (`decision`, else asked on the terminal).
pub fn review(project: &Project, decision: Option<Decision>) -> Result<ExitCode> {
    use std::io::{BufRead as _, IsTerminal as _, Write as _};
    let mut dirs: Vec<PathBuf> = project
        .targets
        .iter()
        .map(|t| t.snapshots.clone())
        .collect();
    dirs.sort();
    dirs.dedup();
    let pending = devcheck_report::snapshots::pending(&dirs)
        .context("cannot read the snapshot directories")?;
    if pending.is_empty() {
        eprintln!("devcheck: no snapshot is waiting for review");
        return Ok(ExitCode::SUCCESS);
    }
    let asking = decision.is_none() && std::io::stdin().is_terminal();
    let mut left = 0;
    for snapshot in &pending {
        let reviewed = shown(&snapshot.reviewed);
        let first = !snapshot.reviewed.exists();
        eprintln!(
            "\n{} {reviewed}",
            if first {
                "new snapshot"
            } else {
                "changed snapshot"
            }
        );
        eprint!(
            "{}",
            snapshot
                .diff()
                .with_context(|| format!("cannot read {}", shown(&snapshot.new)))?
        );
        let choice = match decision {
            Some(decision) => decision,
            None if asking => loop {
                eprint!("accept (a), reject (r) or skip (s)? ");
                let _ = std::io::stderr().flush();
                let mut answer = String::new();
                if std::io::stdin().lock().read_line(&mut answer)? == 0 {
                    break Decision::Skip;
                }
                match answer.trim() {
                    "a" | "accept" => break Decision::Accept,
                    "r" | "reject" => break Decision::Reject,
                    "s" | "skip" => break Decision::Skip,
                    _ => {}
                }
            },
            None => Decision::Skip,
        };
        match choice {
            Decision::Accept => {
                snapshot
                    .accept()
                    .with_context(|| format!("cannot accept {reviewed}"))?;
                eprintln!("accepted: {reviewed} (commit it)");
            }
            Decision::Reject => {
                snapshot
                    .reject()
                    .with_context(|| format!("cannot reject {}", shown(&snapshot.new)))?;
                eprintln!("rejected");
            }
            Decision::Skip => left += 1,
        }
    }
    if left > 0 {
        eprintln!(
            "\ndevcheck: {left} snapshot(s) still pending{}",
            if asking {
                ""
            } else {
                ": run `cargo devcheck review` on a terminal, or pass --accept or --reject"
            }
        );
        return Ok(ExitCode::from(exit::FAILURE));
    }
    Ok(ExitCode::SUCCESS)
}

/// `matrix`: builds every target, runs each with the same options, and joins
/// their reports into `args.report` (one report, one table, one summary).
pub fn matrix(project: &Project, torch: &Libtorch, args: &MatrixArgs) -> Result<ExitCode> {
    let built = project.build(torch, args.release, &[])?;
    let mut binary_args = Vec::new();
    if args.faults {
        binary_args.push("--faults".to_owned());
    }
    if let Some(dir) = &args.dump {
        binary_args.push("--dump".to_owned());
        binary_args.push(std::path::absolute(dir)?.display().to_string());
    }
    for device in &args.devices {
        binary_args.push("--device".to_owned());
        binary_args.push(device.clone());
    }
    for device in &args.required_devices {
        binary_args.push("--require-device".to_owned());
        binary_args.push(device.clone());
    }
    let numbers = [
        ("--timing-ms", args.timing_ms.map(|n| n.to_string())),
        ("--trial-timeout", args.trial_timeout.map(|s| s.to_string())),
        (
            "--batch-multiplier",
            args.batch_multiplier.map(|n| n.to_string()),
        ),
    ];
    for (flag, value) in numbers {
        if let Some(value) = value {
            binary_args.push(flag.to_owned());
            binary_args.push(value);
        }
    }
    // One target's filter that matches nothing is no typo when another's matches.
    binary_args.push("--no-tests".to_owned());
    binary_args.push(if built.len() > 1 { "pass" } else { "fail" }.to_owned());
    binary_args.extend(args.filter.iter().cloned());
    binary_args.extend(args.runner_args.iter().cloned());
    let run = Run {
        torch: Some(torch),
        parts: project.target_dir.join("devcheck/parts"),
        report: args.report.clone(),
        args: binary_args,
        summary: args.summary,
        filter: args.filter.clone(),
        commit: git_commit(&project.root),
    };
    run_targets(&built, &run)
}

/// How [`run_targets`] runs a set of built targets.
#[derive(Debug, Clone)]
pub struct Run<'a> {
    /// libtorch's environment for the binaries (none when the caller set it up).
    pub torch: Option<&'a Libtorch>,
    /// Where each target writes its own report.
    pub parts: PathBuf,
    /// Where the joined report goes.
    pub report: PathBuf,
    /// Options and libtest arguments for every binary.
    pub args: Vec<String>,
    /// Print the joined report's summary on stdout, everything else on stderr.
    pub summary: Option<summary::SummaryFormat>,
    /// The filter, when one was given: matching no trial of any target is an error.
    pub filter: Option<String>,
    /// The commit the binaries were built from, for the reports.
    pub commit: Option<String>,
}

/// Runs each built target with `run.args` and its own report and snapshots,
/// then joins the reports into `run.report`. The exit code is the first
/// failing target's (a target that refuses to run, exit 2, stops the rest).
pub fn run_targets(built: &[Built], run: &Run) -> Result<ExitCode> {
    let report_path = std::path::absolute(&run.report)?;
    // A run that is refused or interrupted must not leave the last run's report
    // looking current (a CI job would upload it).
    match std::fs::remove_file(&report_path) {
        Err(error) if report_path.exists() => {
            bail!(
                "cannot remove the previous report {}: {error}",
                shown(&report_path)
            )
        }
        _ => {}
    }
    std::fs::create_dir_all(&run.parts)
        .with_context(|| format!("cannot create {}", shown(&run.parts)))?;
    let several = built.len() > 1;
    let mut code = ExitCode::SUCCESS;
    let mut inputs = Vec::new();
    for target in built {
        let part = run
            .parts
            .join(format!("{}.json", target.target.file_stem()));
        let _ = std::fs::remove_file(&part);
        let mut command = target.command(run.torch);
        command
            .arg("--report")
            .arg(&part)
            .env("DEVCHECK_REPORT_PART", "1");
        command.arg("--snapshots").arg(&target.target.snapshots);
        command.args(&run.args);
        if let Some(commit) = &run.commit {
            command.env("DEVCHECK_GIT_COMMIT", commit);
        }
        if run.summary.is_some() {
            // stdout carries only the summary; the matrix's output goes to stderr.
            use std::os::fd::AsFd;
            let stderr = std::io::stderr()
                .as_fd()
                .try_clone_to_owned()
                .context("cannot duplicate stderr")?;
            command.stdout(Stdio::from(stderr));
        }
        if several {
            eprintln!("devcheck: == {} ==", target.target.label());
        }
        let this = status(&mut command)?;
        match report::load(&part) {
            Ok(report) => inputs.push(Input {
                name: target.target.label(),
                report,
            }),
            Err(_) if this != ExitCode::SUCCESS => {
                // Refused before running (exit 2: a device that cannot run,
                // bad options): the others would refuse too.
                eprintln!("devcheck: {} wrote no report", target.target.label());
                return Ok(this);
            }
            Err(error) => bail!("{}: {error}", target.target.label()),
        }
        if this != ExitCode::SUCCESS && code == ExitCode::SUCCESS {
            code = this;
        }
    }
    let joined = join(&inputs)?;
    if let Some(filter) = run.filter.as_ref().filter(|_| joined.trials.is_empty()) {
        eprintln!("error: `{filter}` matches no trial of any devcheck target");
        return Ok(ExitCode::from(exit::USAGE));
    }
    write_report(&report_path, &joined)?;
    if several {
        eprint!("\n{}", DeviceMatrix::new(&joined).table());
    }
    eprintln!("report: {}", shown(&report_path));
    if let Some(format) = run.summary {
        print!("{}", summary::render(format, &joined));
    }
    Ok(code)
}

/// The cases a built target holds (its `cases` verb).
pub fn cases_of(built: &Built, torch: Option<&Libtorch>) -> Result<Vec<String>> {
    let output = built
        .command(torch)
        .arg("cases")
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("cannot run {}", built.target.label()))?;
    if !output.status.success() {
        bail!("{} could not list its cases", built.target.label());
    }
    Ok(String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_owned)
        .collect())
}

/// The target that holds `case`, if any.
pub fn owner_of<'a>(
    built: &'a [Built],
    torch: Option<&Libtorch>,
    case: &str,
) -> Result<Option<&'a Built>> {
    for target in built {
        if cases_of(target, torch)?.iter().any(|c| c == case) {
            return Ok(Some(target));
        }
    }
    Ok(None)
}

/// `sweep`: runs the sweep verb of the target that has the case.
pub fn sweep(project: &Project, torch: &Libtorch, args: &SweepArgs) -> Result<ExitCode> {
    let built = project.build(torch, args.release, &[])?;
    let Some(owner) = owner_of(&built, Some(torch), &args.case)? else {
        let mut known = Vec::new();
        for target in &built {
            known.extend(cases_of(target, Some(torch))?);
        }
        eprintln!(
            "error: no case named `{}`; cases: {}",
            args.case,
            known.join(", ")
        );
        return Ok(ExitCode::from(exit::USAGE));
    };
    let out = match &args.out {
        Some(out) => std::path::absolute(out)?,
        None => project.target_dir.join("devcheck/sweep"),
    };
    let mut command = owner.command(Some(torch));
    command
        .args(["sweep", "--case", &args.case, "--out"])
        .arg(&out)
        .args(args.options.to_args());
    status(&mut command)
}

/// `bundle`: the targets built in release with line tables, their snapshots,
/// `helper` (a cargo-devcheck) and `run.sh`, in `out` (at most `max_bytes`).
pub fn bundle(
    project: &Project,
    torch: &Libtorch,
    helper: &Path,
    out: &Path,
    max_bytes: Option<u64>,
) -> Result<ExitCode> {
    let built = project.build(torch, true, &[("CARGO_PROFILE_RELEASE_DEBUG", "limited")])?;
    let size = bundle::assemble(
        &project.root,
        &built,
        helper,
        out,
        git_commit(&project.root).as_deref(),
        max_bytes,
    )?;
    eprintln!(
        "devcheck: bundle in {} ({:.1} MiB): copy it to the machine and run `{}/run.sh --report report.json`",
        shown(out),
        size as f64 / 1048576.0,
        shown(out)
    );
    Ok(ExitCode::SUCCESS)
}

/// `merge`: pure JSON work, no libtorch.
pub fn merge(args: &MergeArgs) -> Result<ExitCode> {
    let inputs = match load_all(&args.reports) {
        Ok(inputs) => inputs,
        Err(error) => {
            eprintln!("error: {error:#}");
            return Ok(ExitCode::from(exit::USAGE));
        }
    };
    let merged = match merge_inputs(&inputs) {
        Ok(merged) => merged,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(exit::USAGE));
        }
    };
    for warning in &merged.warnings {
        eprintln!("warning: {warning}");
    }
    write_report(&args.out, &merged.report)?;
    eprint!("{}", DeviceMatrix::new(&merged.report).table());
    eprintln!("merged report: {}", args.out.display());
    if let Some(format) = args.summary {
        print!("{}", summary::render(format, &merged.report));
    }
    Ok(ExitCode::SUCCESS)
}

fn load_all(paths: &[PathBuf]) -> Result<Vec<Input>> {
    paths
        .iter()
        .map(|path| {
            Ok(Input {
                name: path.display().to_string(),
                report: report::load(path)?,
            })
        })
        .collect()
}

/// Writes a report as pretty JSON, atomically: a reader sees the old file or
/// the new one, never half of one.
pub fn write_report(path: &Path, report: &Report) -> Result<()> {
    report
        .write(path)
        .with_context(|| format!("cannot write {}", shown(path)))
}

/// A path as messages show it: relative to the working directory when under it.
pub fn shown(path: &Path) -> String {
    let cwd = std::env::current_dir().unwrap_or_default();
    path.strip_prefix(&cwd)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// The commit checked out at `root`, if it is a git repository.
pub fn git_commit(root: &Path) -> Option<String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    let commit = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !commit.is_empty()).then_some(commit)
}

/// A cargo command in `root`, with libtorch's environment when given.
pub fn cargo_command(root: &Path, torch: Option<&Libtorch>) -> Command {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(cargo);
    command.current_dir(root);
    if let Some(torch) = torch {
        torch.apply(&mut command);
    }
    command
}

/// Runs a command to completion, passing its exit code through.
pub fn status(command: &mut Command) -> Result<ExitCode> {
    let status = command
        .status()
        .with_context(|| format!("failed to start {:?}", command.get_program()))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(exit::FAILURE)),
        None => ExitCode::FAILURE,
    })
}
