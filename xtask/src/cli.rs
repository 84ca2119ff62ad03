//! The command line: every verb of `cargo xtask` and its arguments.

use std::path::PathBuf;

pub use cargo_devcheck::cli::{MatrixArgs, MergeArgs};
use clap::{Parser, Subcommand};

/// devcheck's tasks. Those that build or run the harness provision libtorch first
/// (fast once done); `merge`, `compare` and `install-hook` need none. The verbs
/// `cargo devcheck` also has are that crate's code, run on the built-in cases.
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
    /// Run the device matrix: built-in cases × devices × checks, with a JSON report
    /// (`cargo devcheck matrix` on devcheck's own cases).
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
        /// EXPECTED ACTUAL [--json] [--rtol R --atol A] [--equal-nan].
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
        /// Options for the sweep (`devcheck-matrix sweep`).
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
        /// With `--real`: only the sets of this kind, as
        /// `lints/bench/verdicts/sets.toml` lists them (default: both,
        /// printed apart).
        #[arg(long, value_name = "KIND", requires = "real", value_parser = ["development", "held-out"])]
        sets: Option<String>,
        /// With `--real`: list every false warning and miss of the development
        /// sets with its verdict's reason (never a held-out set's).
        #[arg(long, requires = "real")]
        detail: bool,
    },
    /// Time the built-in steps with and without the op observer, on every device here.
    ///
    /// `--help` lists the options (`--device D`, `--ms N`, `--batch-multiplier N`, `--json PATH`).
    #[command(disable_help_flag = true)]
    BenchObserver {
        /// Options for `devcheck-matrix observer-cost`.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Time a new user's way from an empty repository to the first report, as the
    /// README gives it: install cargo-devcheck, the first `cargo devcheck matrix`,
    /// review, the green run; and how much of the first build is devcheck's own.
    BenchFirstReport {
        /// Where to make the user's repository (emptied first; default:
        /// `target/bench-first-report`).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// Install a git pre-commit hook that runs devcheck-lint on the staged Rust files.
    InstallHook {
        /// Replace an existing pre-commit hook that is not devcheck's.
        #[arg(long)]
        force: bool,
    },
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
        assert_eq!(
            args.summary,
            Some(devcheck_report::summary::SummaryFormat::Markdown)
        );
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
