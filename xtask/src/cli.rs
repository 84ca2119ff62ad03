//! The command line: every verb of `cargo xtask` and its arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// devcheck's tasks. Those that build or run the harness provision libtorch first
/// (fast once done); `merge` and `install-hook` need none.
#[derive(Debug, Parser)]
#[command(name = "cargo xtask", bin_name = "cargo xtask", version, about)]
pub struct Cli {
    /// The task to run.
    #[command(subcommand)]
    pub task: Task,
}

/// One verb of `cargo xtask`.
#[derive(Debug, Subcommand)]
pub enum Task {
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
    /// Join the reports of several machines (or nextest partitions) into one matrix.
    ///
    /// Needs no libtorch. Refuses reports of different cases or commits.
    /// Exit status: 0 when merged (even if trials failed), 2 on refusal or bad input.
    Merge(MergeArgs),
    /// Compare two safetensors files (matrix --dump, or written by PyTorch) tensor by
    /// tensor with torch.testing.assert_close's rules; `--help` lists the options.
    ///
    /// Exit status: 0 within tolerance, 1 a tensor beyond it, 2 bad input.
    #[command(disable_help_flag = true)]
    Compare {
        /// EXPECTED ACTUAL [--json] [--rtol R --atol A] [--equal-nan], for devcheck-compare.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Double a case's batch until out of memory or a ceiling (throughput and peak
    /// memory per size), or record memory over epochs; table, JSON and SVG plot.
    ///
    /// `--help` lists the options (`--case NAME [--device D] [--epochs N] …`).
    #[command(disable_help_flag = true)]
    Sweep {
        /// Options for devcheck-sweep.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
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
    /// Time devcheck-lint against a bare parallel syn parse of the same files,
    /// or with `--real DIR` score it against the judged findings in real code.
    BenchLint {
        /// Files or directories (default: the cargo registry sources).
        paths: Vec<PathBuf>,
        /// Lint the repositories under DIR (one directory each, named as in
        /// `lints/bench/verdicts/`) and print precision and recall.
        #[arg(long, value_name = "DIR", conflicts_with = "paths")]
        real: Option<PathBuf>,
    },
    /// Time the built-in steps with and without the op observer, on every device here.
    ///
    /// `--help` lists the options (`--device D`, `--ms N`, `--batch-multiplier N`, `--json PATH`).
    #[command(disable_help_flag = true)]
    BenchObserver {
        /// Options for devcheck-observer-cost.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Install a git pre-commit hook that runs devcheck-lint on the staged Rust files.
    InstallHook {
        /// Replace an existing pre-commit hook that is not devcheck's.
        #[arg(long)]
        force: bool,
    },
}

/// `cargo xtask matrix`.
#[derive(Debug, clap::Args)]
pub struct MatrixArgs {
    /// Where to write the JSON report.
    #[arg(long, default_value = "target/devcheck/report.json")]
    pub report: PathBuf,
    /// Also run the planted-fault cases (they must fail their own check).
    #[arg(long)]
    pub faults: bool,
    /// Run only trials whose name contains this (`cnn::`, `::tolerance::`, `::cuda:0`).
    #[arg(long)]
    pub filter: Option<String>,
    /// Run only on this device (cpu, cuda:N, mps); repeatable.
    #[arg(long = "device", value_name = "DEVICE")]
    pub devices: Vec<String>,
    /// Save every case's outputs, loss, gradients and parameters per step and device
    /// as DIR/<case>/<device>.safetensors (compare them with `cargo xtask compare`).
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    /// Print a summary of the report on stdout (the matrix's own output goes to stderr).
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub summary: Option<SummaryFormat>,
    /// Arguments for the test runner itself (`--list`, `--exact`, `--format terse`, …).
    #[arg(last = true)]
    pub runner_args: Vec<String>,
}

/// `cargo xtask merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The reports to join: from `cargo xtask matrix`, a GPU bundle, nextest
    /// fragments, or earlier merges.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Where to write the merged report.
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
    /// Print a summary of the merged report on stdout.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub summary: Option<SummaryFormat>,
}

/// The shapes `--summary` can print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SummaryFormat {
    /// GitHub-flavoured Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`.
    Markdown,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn command_line_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn merge_takes_reports_out_and_summary() {
        let cli = Cli::try_parse_from([
            "cargo xtask",
            "merge",
            "a.json",
            "b.json",
            "--out",
            "c.json",
            "--summary",
            "markdown",
        ])
        .unwrap();
        let Task::Merge(args) = cli.task else {
            panic!("parsed as another task: {:?}", cli.task)
        };
        assert_eq!(args.reports, [PathBuf::from("a.json"), "b.json".into()]);
        assert_eq!(args.out, PathBuf::from("c.json"));
        assert_eq!(args.summary, Some(SummaryFormat::Markdown));
    }

    #[test]
    fn summary_accepts_only_markdown() {
        let error =
            Cli::try_parse_from(["cargo xtask", "matrix", "--summary", "html"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
    }

    #[test]
    fn compare_and_sweep_pass_their_arguments_through() {
        let cli = Cli::try_parse_from([
            "cargo xtask",
            "compare",
            "a.safetensors",
            "b.safetensors",
            "--rtol",
            "-1",
            "--help",
        ])
        .unwrap();
        let Task::Compare { args } = cli.task else {
            panic!("parsed as another task: {:?}", cli.task)
        };
        assert_eq!(
            args,
            ["a.safetensors", "b.safetensors", "--rtol", "-1", "--help"]
        );
        let cli = Cli::try_parse_from(["cargo xtask", "sweep", "--case", "cnn", "--epochs", "5"])
            .unwrap();
        let Task::Sweep { args } = cli.task else {
            panic!("parsed as another task: {:?}", cli.task)
        };
        assert_eq!(args, ["--case", "cnn", "--epochs", "5"]);
    }

    #[test]
    fn merge_needs_out() {
        let error = Cli::try_parse_from(["cargo xtask", "merge", "a.json"]).unwrap_err();
        assert_eq!(
            error.kind(),
            clap::error::ErrorKind::MissingRequiredArgument
        );
    }
}
