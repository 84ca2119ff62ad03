//! The command line of `cargo devcheck`: every verb and its arguments. Their
//! argument structs are shared with devcheck's own `cargo xtask`.

use std::path::PathBuf;

use clap::{Parser, Subcommand};
use devcheck_report::summary::SummaryFormat;

/// devcheck on this repository's own cases: the device matrix and its checks
/// (placement, tolerance, readbacks, timing, fallback, memory), sweeps, dumps,
/// reports and the lint. Verbs that build or run cases find or provision
/// the libtorch of the workspace's tch first; `merge`, `summary`, `compare`, `lint` and
/// `install-hook` need none.
#[derive(Debug, Parser)]
#[command(name = "cargo devcheck", bin_name = "cargo devcheck", version)]
pub struct Cli {
    /// The Cargo.toml of the workspace (default: the one around the working directory).
    #[arg(long, global = true, value_name = "PATH")]
    pub manifest_path: Option<PathBuf>,
    /// The verb.
    #[command(subcommand)]
    pub verb: Verb,
}

/// One verb of `cargo devcheck`.
#[derive(Debug, Subcommand)]
pub enum Verb {
    /// Find or provision the libtorch this workspace's tch needs and print which one is used.
    Setup {
        /// Print `export` lines for a shell (`eval "$(cargo devcheck setup --print-env)"`),
        /// so that plain `cargo test` finds libtorch too.
        #[arg(long)]
        print_env: bool,
    },
    /// Report what this machine's libtorch can run (backends, devices, versions, flags).
    Doctor {
        /// Print one JSON object instead of the table.
        #[arg(long)]
        json: bool,
    },
    /// Build and run every devcheck test target: cases × devices × checks, one JSON report.
    Matrix(MatrixArgs),
    /// Double a case's batch until out of memory or a ceiling, or record memory over epochs.
    Sweep(SweepArgs),
    /// Review the readback snapshots a run left pending: show each change, then
    /// accept it into the reviewed `.snap` or reject it (as `cargo insta review`).
    ///
    /// Asks for each on a terminal; elsewhere, `--accept` or `--reject` says what to do
    /// with all of them. Exit status: 0 when nothing is left pending, 1 otherwise.
    Review {
        /// Accept every pending snapshot without asking.
        #[arg(long, conflicts_with = "reject")]
        accept: bool,
        /// Reject every pending snapshot without asking.
        #[arg(long)]
        reject: bool,
    },
    /// Join the reports of several machines (or nextest partitions) into one matrix.
    ///
    /// Refuses reports of different cases or commits. Exit status: 0 when merged
    /// (even if trials failed), 2 on refusal or bad input.
    Merge(MergeArgs),
    /// Print a report's summary (for `$GITHUB_STEP_SUMMARY` or a pull-request comment).
    Summary {
        /// The report.
        report: PathBuf,
        /// The summary's format.
        #[arg(long, default_value = "markdown", value_name = "FORMAT")]
        format: SummaryFormat,
    },
    /// Compare two safetensors files (matrix --dump, or written by PyTorch) with
    /// torch.testing.assert_close's rules; `--help` lists the options.
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
    /// Run devcheck-lint (host syncs in hot loops); `--help` lists its options.
    #[command(disable_help_flag = true)]
    Lint {
        /// Paths and options for devcheck-lint.
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "ARGS"
        )]
        args: Vec<String>,
    },
    /// Install a git pre-commit hook that lints the staged Rust files.
    InstallHook {
        /// Replace an existing pre-commit hook that is not devcheck's.
        #[arg(long)]
        force: bool,
    },
    /// Build the targets into a folder that runs where there is no cargo (a GPU host,
    /// a Mac without Rust): binaries, reviewed snapshots and `run.sh`.
    Bundle {
        /// The folder to create (replaced if it exists).
        #[arg(long)]
        out: PathBuf,
        /// Only this package's targets; repeatable.
        #[arg(long = "package", short = 'p', value_name = "PACKAGE")]
        packages: Vec<String>,
        /// Only this test target; repeatable.
        #[arg(long = "test", value_name = "NAME")]
        tests: Vec<String>,
    },
    /// Run a bundle's targets (what its run.sh does once libtorch is found).
    #[command(hide = true, disable_help_flag = true)]
    RunBundle {
        /// The bundle's folder.
        bundle: PathBuf,
        /// run.sh's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Join the reports of one run's test targets.
    #[command(hide = true)]
    Join {
        /// The reports.
        #[arg(required = true)]
        reports: Vec<PathBuf>,
        /// Where to write the joined report.
        #[arg(long)]
        out: PathBuf,
    },
}

/// `matrix`.
#[derive(Debug, Clone, clap::Args)]
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
    /// Run only on this device (cpu, cuda:N, mps); repeatable. One that cannot run here fails the run.
    #[arg(long = "device", value_name = "DEVICE")]
    pub devices: Vec<String>,
    /// Fail (exit 2, nothing run) unless this device can run here, still running every
    /// device found; repeatable. For CI jobs that must not pass by skipping the GPU.
    #[arg(long = "require-device", value_name = "DEVICE")]
    pub required_devices: Vec<String>,
    /// Time budget of each timing trial in milliseconds (default 1500).
    #[arg(long, value_name = "MS")]
    pub timing_ms: Option<u64>,
    /// Fail a trial still running after this many seconds as hung (default 300).
    #[arg(long, value_name = "SECONDS")]
    pub trial_timeout: Option<f64>,
    /// Repeat every batch this many times along its first dimension.
    #[arg(long, value_name = "N")]
    pub batch_multiplier: Option<i64>,
    /// Save every case's outputs, loss, gradients and parameters per step and device
    /// as DIR/<case>/<device>.safetensors (compare them with `compare`).
    #[arg(long, value_name = "DIR")]
    pub dump: Option<PathBuf>,
    /// Print a summary of the report on stdout (everything else goes to stderr).
    #[arg(long, value_name = "FORMAT")]
    pub summary: Option<SummaryFormat>,
    /// Only this package's targets; repeatable.
    #[arg(long = "package", short = 'p', value_name = "PACKAGE")]
    pub packages: Vec<String>,
    /// Only this test target; repeatable.
    #[arg(long = "test", value_name = "NAME")]
    pub tests: Vec<String>,
    /// Build in release mode (as a GPU bundle does).
    #[arg(long)]
    pub release: bool,
    /// Arguments for the test binaries themselves (libtest's `--list`, `--exact`, …).
    #[arg(last = true)]
    pub runner_args: Vec<String>,
}

/// `sweep`.
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// The case.
    #[arg(long)]
    pub case: String,
    /// Directory for `<case>-<device>-{batch,epochs}.{json,svg}` (default: target/devcheck/sweep).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Build in release mode (throughput as a release build runs).
    #[arg(long)]
    pub release: bool,
    /// The device, its limits, or memory over epochs: in any order.
    #[command(flatten)]
    pub options: devcheck_report::sweep_options::SweepOptions,
}

/// `merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// The reports to join: from `matrix`, a bundle, nextest fragments, or earlier merges.
    #[arg(required = true, value_name = "REPORT")]
    pub reports: Vec<PathBuf>,
    /// Where to write the merged report.
    #[arg(long, value_name = "PATH")]
    pub out: PathBuf,
    /// Print a summary of the merged report on stdout.
    #[arg(long, value_name = "FORMAT")]
    pub summary: Option<SummaryFormat>,
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
    fn matrix_takes_packages_tests_and_runner_arguments() {
        let cli = Cli::try_parse_from([
            "cargo devcheck",
            "matrix",
            "-p",
            "model",
            "--test",
            "devices",
            "--summary",
            "markdown",
            "--",
            "--timing-ms",
            "300",
        ])
        .unwrap();
        let Verb::Matrix(args) = cli.verb else {
            panic!("parsed as {:?}", cli.verb)
        };
        assert_eq!(args.packages, ["model"]);
        assert_eq!(args.tests, ["devices"]);
        assert_eq!(args.summary, Some(SummaryFormat::Markdown));
        assert_eq!(args.runner_args, ["--timing-ms", "300"]);
        let error =
            Cli::try_parse_from(["cargo devcheck", "matrix", "--summary", "html"]).unwrap_err();
        assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
    }

    #[test]
    fn sweep_takes_its_options_in_any_order() {
        let cli = Cli::try_parse_from([
            "cargo devcheck",
            "sweep",
            "--device",
            "cpu",
            "--out",
            "sweeps",
            "--epochs",
            "5",
            "--case",
            "mnist",
        ])
        .unwrap();
        let Verb::Sweep(args) = cli.verb else {
            panic!("parsed as {:?}", cli.verb)
        };
        assert_eq!(args.case, "mnist");
        assert_eq!(args.out, Some(PathBuf::from("sweeps")));
        assert_eq!(args.options.device.as_deref(), Some("cpu"));
        assert_eq!(args.options.epochs, Some(5));
    }

    #[test]
    fn devcheck_s_options_need_no_double_dash() {
        let cli = Cli::try_parse_from([
            "cargo devcheck",
            "matrix",
            "--require-device",
            "cuda:0",
            "--timing-ms",
            "300",
            "--device",
            "cpu",
        ])
        .unwrap();
        let Verb::Matrix(args) = cli.verb else {
            panic!("parsed as {:?}", cli.verb)
        };
        assert_eq!(args.required_devices, ["cuda:0"]);
        assert_eq!(args.timing_ms, Some(300));
        assert_eq!(args.devices, ["cpu"]);
    }
}
