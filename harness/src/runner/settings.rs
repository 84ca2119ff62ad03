//! What a matrix run is asked to do: devcheck's options and libtest's
//! arguments as one clap definition (so each may come in any position, as
//! `cargo test` and cargo-nextest pass them), the `DEVCHECK_*` variables
//! under them, and the cases' own settings, all checked before anything runs.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use devcheck_report::summary::SummaryFormat;
use libtest_mimic::Arguments;

use crate::case::Case;
use crate::checks::timing::TimingBudget;
use crate::device::DeviceSpec;

/// The runner's options and libtest's arguments, command line and
/// environment resolved: what [`run_with`](super::run_with) runs.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Where to write the JSON report (also `DEVCHECK_REPORT`).
    pub report: Option<PathBuf>,
    /// Include the planted-fault cases.
    pub faults: bool,
    /// Directory of the reviewed readback snapshots (also `DEVCHECK_SNAPSHOTS`).
    pub snapshots: Option<PathBuf>,
    /// Only these devices (default: every device found); each must be able to
    /// run here, or nothing runs (also `DEVCHECK_DEVICES`, comma-separated).
    pub devices: Option<Vec<DeviceSpec>>,
    /// Devices that must be able to run here, without restricting the run to
    /// them (also `DEVCHECK_REQUIRE_DEVICES`): for CI jobs that must not skip.
    pub required_devices: Vec<DeviceSpec>,
    /// Timing budget per timing trial.
    pub timing: TimingBudget,
    /// Repeat every batch this many times along its first dimension (1: as the case says).
    pub batch_multiplier: Option<i64>,
    /// Longest a trial may run before it is failed as hung, unless its case sets
    /// its own limit (also `DEVCHECK_TRIAL_TIMEOUT`, in seconds; default 300 s).
    pub trial_timeout: Option<Duration>,
    /// Write the report as `<dir>/<host>-<pid>.json`, one file per process: for
    /// cargo-nextest, which runs every trial in a process of its own (also
    /// `DEVCHECK_REPORT_DIR`). Join the files with `cargo xtask merge`.
    pub report_dir: Option<PathBuf>,
    /// Save each case's tensors per device as safetensors under this directory.
    pub dump: Option<PathBuf>,
    /// What to do when a filter matches no trial.
    pub no_tests: NoTests,
    /// Print the report's summary in this format on stdout, and everything
    /// else on stderr.
    pub summary: Option<SummaryFormat>,
    /// libtest's own arguments: the filter, `--list`, `--exact`, `--ignored`, …
    pub libtest: Arguments,
}

/// What to do when a filter matches no trial (cargo-nextest's `--no-tests`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NoTests {
    /// An error before anything runs (what `cargo xtask matrix` asks for).
    Fail,
    /// A warning, and success: `cargo test FILTER` hands its filter to every
    /// test binary, so a harness in a test target must not fail on another's filter.
    #[default]
    Warn,
    /// Silent success.
    Pass,
}

impl std::str::FromStr for NoTests {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "fail" => Ok(NoTests::Fail),
            "warn" => Ok(NoTests::Warn),
            "pass" => Ok(NoTests::Pass),
            other => Err(format!(
                "`--no-tests` takes `fail`, `warn` or `pass`, got `{other}`"
            )),
        }
    }
}

/// Why the options could not be read.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// The command line, as clap says it (or a help request: `--help`,
    /// `--devcheck-help`, which clap answers the same way).
    #[error(transparent)]
    CommandLine(#[from] clap::Error),
    /// A `DEVCHECK_*` variable's value.
    #[error("{0}")]
    Environment(String),
}

impl OptionsError {
    /// Prints the help, or the error with where to look, and gives the exit
    /// code: success for help, usage otherwise.
    pub fn print(&self) -> std::process::ExitCode {
        use devcheck_report::exit;
        match self {
            OptionsError::CommandLine(error) => {
                let _ = error.print();
                std::process::ExitCode::from(if error.use_stderr() {
                    exit::USAGE
                } else {
                    exit::SUCCESS
                })
            }
            OptionsError::Environment(message) => {
                eprintln!("error: {message}\n(`--devcheck-help` lists devcheck's options)");
                std::process::ExitCode::from(exit::USAGE)
            }
        }
    }
}

/// devcheck's options and libtest's, as a test binary's command line has them.
#[derive(Debug, Parser)]
#[command(
    args_override_self = true,
    disable_version_flag = true,
    next_help_heading = "devcheck options (before or among libtest's)",
    help_template = "USAGE: [OPTIONS] [FILTER]\n\n{all-args}\n\n{after-help}",
    after_help = VERBS_HELP
)]
struct CommandLine {
    /// Write the JSON report here (env DEVCHECK_REPORT).
    #[arg(
        long,
        value_name = "PATH",
        allow_hyphen_values = true,
        overrides_with = "report_dir"
    )]
    report: Option<PathBuf>,
    /// Write the report as DIR/<host>-<pid>.json, a file per process, for
    /// cargo-nextest (env DEVCHECK_REPORT_DIR); join with `cargo devcheck merge`.
    #[arg(
        long,
        value_name = "DIR",
        allow_hyphen_values = true,
        overrides_with = "report"
    )]
    report_dir: Option<PathBuf>,
    /// Include the planted-fault cases.
    #[arg(long)]
    faults: bool,
    /// Directory of the reviewed readback snapshots (env DEVCHECK_SNAPSHOTS).
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    snapshots: Option<PathBuf>,
    /// Run only on device D (cpu, cuda:N, mps); repeatable; a device that
    /// cannot run here stops the run with exit code 2 (env DEVCHECK_DEVICES=a,b).
    #[arg(long = "device", value_name = "D", allow_hyphen_values = true)]
    devices: Vec<DeviceSpec>,
    /// Fail with exit code 2 unless D can run here, still running every device
    /// found; repeatable (env DEVCHECK_REQUIRE_DEVICES=a,b).
    #[arg(long = "require-device", value_name = "D", allow_hyphen_values = true)]
    required_devices: Vec<DeviceSpec>,
    /// Time budget of each timing trial in milliseconds (default 1500).
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = timing_ms)]
    timing_ms: Option<u64>,
    /// Repeat every batch N times along its first dimension.
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = batch_multiplier)]
    batch_multiplier: Option<i64>,
    /// Fail a trial still running after S seconds as hung (default 300; env
    /// DEVCHECK_TRIAL_TIMEOUT); a case's own limit wins.
    #[arg(long, value_name = "S", allow_hyphen_values = true, value_parser = trial_timeout)]
    trial_timeout: Option<Duration>,
    /// Save outputs, loss, gradients and parameters of every step as
    /// DIR/<case>/<device>.safetensors (compare with `cargo devcheck compare`).
    #[arg(long, value_name = "DIR", allow_hyphen_values = true)]
    dump: Option<PathBuf>,
    /// When a filter matches no trial: fail, warn (default) or pass.
    #[arg(long, value_name = "WHAT", allow_hyphen_values = true)]
    no_tests: Option<NoTests>,
    /// Print the report's summary on stdout (markdown), the matrix's own output
    /// on stderr, for `>> "$GITHUB_STEP_SUMMARY"`.
    #[arg(long, value_name = "FORMAT", allow_hyphen_values = true)]
    summary: Option<SummaryFormat>,
    /// Print this help (devcheck's options, then libtest's).
    #[arg(long = "devcheck-help", action = clap::ArgAction::HelpShort)]
    devcheck_help: Option<bool>,
    #[command(flatten, next_help_heading = "libtest options")]
    libtest: Arguments,
}

/// The verbs, after the options in `--devcheck-help`.
const VERBS_HELP: &str = "verbs, instead of the matrix (`<verb> --help` for each):
  sweep --case NAME   how far a case's batch scales, or its memory over epochs
  doctor              what this libtorch can run here
  compare A B         two dumps compared with torch.testing.assert_close's rules
  observer-cost       the op observer's cost on the cases' steps
  cases               the case names, one per line";

fn timing_ms(text: &str) -> Result<u64, String> {
    text.parse().ok().filter(|ms| *ms > 0).ok_or_else(|| {
        format!("`--timing-ms` takes a whole number of milliseconds greater than 0, got `{text}`")
    })
}

fn batch_multiplier(text: &str) -> Result<i64, String> {
    text.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
        format!("`--batch-multiplier` takes a whole number of at least 1, got `{text}`")
    })
}

fn trial_timeout(text: &str) -> Result<Duration, String> {
    parse_seconds("--trial-timeout", text)
}

fn parse_seconds(flag: &str, text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{flag}` takes a number of seconds greater than 0, got `{text}`"))
}

/// A comma-separated device list from the environment, if set.
fn device_list(variable: &str) -> Result<Option<Vec<DeviceSpec>>, OptionsError> {
    match std::env::var(variable) {
        Ok(text) if !text.trim().is_empty() => text
            .split(',')
            .map(|d| {
                d.trim()
                    .parse::<DeviceSpec>()
                    .map_err(|e| OptionsError::Environment(format!("{variable}: {e}")))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Ok(None),
    }
}

impl Options {
    /// Reads devcheck's options and libtest's arguments from `args` (the
    /// command line without the program's name), in any order, over the
    /// `DEVCHECK_*` variables; errors name the bad argument or variable.
    pub fn parse(args: &[String]) -> Result<Options, OptionsError> {
        let program = std::env::args()
            .next()
            .unwrap_or_else(|| "devcheck".to_owned());
        let line = CommandLine::try_parse_from(std::iter::once(&program).chain(args))?;
        Options::resolve(line)
    }

    /// The command line over the environment: a command line's value replaces
    /// the variable's (its devices replace the variable's list; required
    /// devices add to it).
    fn resolve(line: CommandLine) -> Result<Options, OptionsError> {
        let environment_timeout = match std::env::var("DEVCHECK_TRIAL_TIMEOUT") {
            Ok(text) => Some(
                parse_seconds("DEVCHECK_TRIAL_TIMEOUT", &text)
                    .map_err(OptionsError::Environment)?,
            ),
            Err(_) => None,
        };
        let environment_devices = device_list("DEVCHECK_DEVICES")?;
        let mut required_devices = device_list("DEVCHECK_REQUIRE_DEVICES")?.unwrap_or_default();
        required_devices.extend(line.required_devices);
        // The last of `--report` and `--report-dir` wins; either replaces both variables.
        let (report, report_dir) = if line.report.is_some() || line.report_dir.is_some() {
            (line.report, line.report_dir)
        } else {
            (
                std::env::var_os("DEVCHECK_REPORT").map(PathBuf::from),
                std::env::var_os("DEVCHECK_REPORT_DIR").map(PathBuf::from),
            )
        };
        let mut timing = TimingBudget::default();
        if let Some(ms) = line.timing_ms {
            timing.max_time = Duration::from_millis(ms);
        }
        Ok(Options {
            report,
            report_dir,
            faults: line.faults,
            snapshots: line
                .snapshots
                .or_else(|| std::env::var_os("DEVCHECK_SNAPSHOTS").map(PathBuf::from)),
            devices: if line.devices.is_empty() {
                environment_devices
            } else {
                Some(line.devices)
            },
            required_devices,
            timing,
            batch_multiplier: line.batch_multiplier,
            trial_timeout: line.trial_timeout.or(environment_timeout),
            dump: line.dump,
            no_tests: line.no_tests.unwrap_or_default(),
            summary: line.summary,
            libtest: line.libtest,
        })
    }

    /// Where this process writes its report, if anywhere (`--report-dir` wins
    /// over `DEVCHECK_REPORT`; the last of `--report` and `--report-dir` wins).
    pub fn report_path(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.report_dir {
            let host = gethostname::gethostname().to_string_lossy().into_owned();
            return Some(dir.join(format!("{host}-{}.json", std::process::id())));
        }
        self.report.clone()
    }

    /// The directory of the reviewed snapshots: `--snapshots`, else the
    /// crate's `snapshots/`. Absolute: insta resolves a relative snapshot path
    /// against the source file of the assertion (inside devcheck), not against
    /// the working directory.
    pub(super) fn snapshot_dir(&self) -> Option<PathBuf> {
        self.snapshots
            .clone()
            .or_else(|| {
                std::env::var_os("CARGO_MANIFEST_DIR").map(|d| PathBuf::from(d).join("snapshots"))
            })
            .map(|dir| std::path::absolute(&dir).unwrap_or(dir))
    }

    /// The cases this run runs: the planted faults only with `--faults`, each
    /// batch repeated `--batch-multiplier` times.
    pub(super) fn selected(&self, cases: &[Case]) -> Vec<Case> {
        cases
            .iter()
            .filter(|c| self.faults || c.fault().is_none())
            .map(|c| match self.batch_multiplier {
                Some(times) => c.clone().batch_multiplier(times),
                None => c.clone(),
            })
            .collect()
    }
}

/// insta's settings for the readbacks check, unless the user set them.
pub(super) fn configure_insta() {
    if std::env::var_os("INSTA_OUTPUT").is_none() {
        // The readbacks check says what changed and how to review it; insta's own
        // diff and its advice to run cargo-insta would repeat it, less precisely.
        std::env::set_var("INSTA_OUTPUT", "none");
    }
    if std::env::var_os("INSTA_WORKSPACE_ROOT").is_none() {
        if let Ok(cwd) = std::env::current_dir() {
            // insta otherwise asks cargo, which may not exist where the matrix runs.
            std::env::set_var("INSTA_WORKSPACE_ROOT", cwd);
        }
    }
}

/// Every problem of the cases' settings, and names used twice.
pub(super) fn configuration_problems(cases: &[Case]) -> Vec<String> {
    let mut problems: Vec<String> = cases.iter().flat_map(Case::problems).collect();
    let mut seen = std::collections::BTreeSet::new();
    for case in cases {
        if !seen.insert(case.name()) {
            problems.push(format!(
                "two cases are named `{}`: trial names and snapshots would collide",
                case.name()
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn devcheck_options_and_libtest_arguments_come_in_any_order() {
        let options = Options::parse(&strings(&[
            "--report=out.json",
            "--faults",
            "--device",
            "cuda:1",
            "cnn::",
            "--device=cpu",
            "--exact",
            "--timing-ms",
            "200",
        ]))
        .unwrap();
        assert_eq!(options.report, Some(PathBuf::from("out.json")));
        assert!(options.faults);
        assert_eq!(
            options.devices,
            Some(vec![DeviceSpec::Cuda(1), DeviceSpec::Cpu])
        );
        assert_eq!(options.timing.max_time, Duration::from_millis(200));
        assert_eq!(options.libtest.filter.as_deref(), Some("cnn::"));
        assert!(options.libtest.exact);
    }

    #[test]
    fn bad_options_are_named() {
        let error = Options::parse(&strings(&["--device", "tpu"]))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("unknown device `tpu`: expected `cpu`, `cuda`, `cuda:N` or `mps`"),
            "{error}"
        );
        let error = Options::parse(&strings(&["--report"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("--report <PATH>"), "{error}");
        let error = Options::parse(&strings(&["--timing-ms", "soon"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("got `soon`"), "{error}");
        let error = Options::parse(&strings(&["--trial-timeout", "-5"]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("got `-5`"), "{error}");
    }

    #[test]
    fn time_limits_and_report_dirs_parse() {
        let options = Options::parse(&strings(&[
            "--report",
            "report.json",
            "--trial-timeout",
            "2.5",
            "--report-dir",
            "parts",
            "--no-tests=fail",
        ]))
        .unwrap();
        assert_eq!(options.trial_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(options.no_tests, NoTests::Fail);
        assert_eq!(
            options.report, None,
            "the last of --report and --report-dir wins"
        );
        let path = options.report_path().unwrap();
        assert_eq!(path.parent(), Some(std::path::Path::new("parts")));
        assert!(path
            .to_string_lossy()
            .ends_with(&format!("-{}.json", std::process::id())));
    }

    #[test]
    fn help_is_clap_s_answer_not_an_error() {
        let error = Options::parse(&strings(&["--devcheck-help"])).unwrap_err();
        let OptionsError::CommandLine(error) = error else {
            panic!("help is the command line's");
        };
        assert!(!error.use_stderr());
        let help = error.to_string();
        assert!(help.contains("--report-dir <DIR>"), "{help}");
        assert!(help.contains("--test-threads"), "{help}");
        assert!(help.contains("observer-cost"), "{help}");
    }
}
