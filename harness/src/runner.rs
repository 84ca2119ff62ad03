//! Runs cases × checks × devices as libtest-mimic trials (so `cargo test`
//! filters, `--list`, `--exact`, `--ignored` and cargo-nextest work), records
//! every trial in the report as it ends, and prints the table.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use libtest_mimic::{Arguments, Completion, Trial};
use serde_json::json;

use crate::case::{kind_name, Case};
use crate::checks::state::CaseState;
pub use crate::checks::state::DEFAULT_TRIAL_TIMEOUT;
use crate::checks::timing::TimingBudget;
use crate::checks::Check;
use crate::device::{self, DeviceSlot, DeviceSpec};
use crate::environment::{git_commit, Environment};
use crate::error::TrialError;
use crate::lock;
use crate::shim;
use devcheck_report::report::{DeviceNotRun, Interruption, Outcome, Report, Trial as TrialRecord};

/// The runner's own options; everything else goes to libtest-mimic.
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

/// What `Options::parse` returns for `--devcheck-help`: print [`USAGE`], exit 0.
pub const HELP_REQUESTED: &str = "--devcheck-help";

/// A comma-separated device list from the environment, if set.
fn device_list(variable: &str) -> Result<Option<Vec<DeviceSpec>>, String> {
    match std::env::var(variable) {
        Ok(text) if !text.trim().is_empty() => text
            .split(',')
            .map(|d| {
                d.trim()
                    .parse::<DeviceSpec>()
                    .map_err(|e| format!("{variable}: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        _ => Ok(None),
    }
}

fn parse_seconds(flag: &str, text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| format!("`{flag}` takes a number of seconds greater than 0, got `{text}`"))
}

/// devcheck's own options, as `--devcheck-help` prints them.
pub const USAGE: &str = "devcheck options (before or among the libtest options):
  --report PATH     write the JSON report here (env DEVCHECK_REPORT)
  --report-dir DIR  write the report as DIR/<host>-<pid>.json, a file per process,
                    for cargo-nextest (env DEVCHECK_REPORT_DIR); join with `cargo devcheck merge`
  --faults          include the planted-fault cases
  --snapshots DIR   directory of the reviewed readback snapshots (env DEVCHECK_SNAPSHOTS)
  --device D        run only on device D (cpu, cuda:N, mps); repeatable; a device that
                    cannot run here stops the run with exit code 2 (env DEVCHECK_DEVICES=a,b)
  --require-device D  fail with exit code 2 unless D can run here, still running every
                    device found; repeatable (env DEVCHECK_REQUIRE_DEVICES=a,b)
  --timing-ms N     time budget of each timing trial in milliseconds (default 1500)
  --batch-multiplier N  repeat every batch N times along its first dimension
  --trial-timeout S fail a trial still running after S seconds as hung (default 300;
                    env DEVCHECK_TRIAL_TIMEOUT); a case's own limit wins
  --dump DIR        save outputs, loss, gradients and parameters of every step as
                    DIR/<case>/<device>.safetensors (compare with `cargo devcheck compare`)
  --no-tests WHAT   when a filter matches no trial: fail, warn (default) or pass
  --summary FORMAT  print the report's summary on stdout (markdown), the matrix's own
                    output on stderr, for `>> \"$GITHUB_STEP_SUMMARY\"`

verbs, instead of the matrix (`<verb> --help` for each):
  sweep --case NAME   how far a case's batch scales, or its memory over epochs
  doctor              what this libtorch can run here
  compare A B         two dumps compared with torch.testing.assert_close's rules
  observer-cost       the op observer's cost on the cases' steps
  cases               the case names, one per line";

impl Options {
    /// Splits devcheck's options from libtest's; errors name the bad argument.
    pub fn parse(args: &[String]) -> Result<(Options, Vec<String>), String> {
        let mut options = Options {
            report: std::env::var_os("DEVCHECK_REPORT").map(PathBuf::from),
            report_dir: std::env::var_os("DEVCHECK_REPORT_DIR").map(PathBuf::from),
            snapshots: std::env::var_os("DEVCHECK_SNAPSHOTS").map(PathBuf::from),
            trial_timeout: match std::env::var("DEVCHECK_TRIAL_TIMEOUT") {
                Ok(text) => Some(parse_seconds("DEVCHECK_TRIAL_TIMEOUT", &text)?),
                Err(_) => None,
            },
            devices: device_list("DEVCHECK_DEVICES")?,
            required_devices: device_list("DEVCHECK_REQUIRE_DEVICES")?.unwrap_or_default(),
            ..Options::default()
        };
        let mut rest = Vec::new();
        let mut from_command_line_devices = false;
        let mut iter = args.iter();
        while let Some(arg) = iter.next() {
            let (flag, inline) = match arg.split_once('=') {
                Some((f, v)) if f.starts_with("--") => (f, Some(v.to_owned())),
                _ => (arg.as_str(), None),
            };
            let mut value = |name: &str| {
                inline
                    .clone()
                    .or_else(|| iter.next().cloned())
                    .ok_or_else(|| format!("`{name}` needs a value\n\n{USAGE}"))
            };
            match flag {
                "--report" => {
                    options.report = Some(PathBuf::from(value("--report")?));
                    options.report_dir = None;
                }
                "--snapshots" => options.snapshots = Some(PathBuf::from(value("--snapshots")?)),
                "--faults" => options.faults = true,
                "--device" => {
                    let device = value("--device")?
                        .parse::<DeviceSpec>()
                        .map_err(|e| e.to_string())?;
                    if !from_command_line_devices {
                        // The command line replaces the environment's list.
                        options.devices = None;
                        from_command_line_devices = true;
                    }
                    options.devices.get_or_insert_with(Vec::new).push(device);
                }
                "--require-device" => {
                    let device = value("--require-device")?
                        .parse::<DeviceSpec>()
                        .map_err(|e| e.to_string())?;
                    options.required_devices.push(device);
                }
                "--timing-ms" => {
                    let text = value("--timing-ms")?;
                    let ms: u64 = text.parse().ok().filter(|ms| *ms > 0).ok_or_else(|| {
                        format!("`--timing-ms` takes a whole number of milliseconds greater than 0, got `{text}`")
                    })?;
                    options.timing.max_time = std::time::Duration::from_millis(ms);
                }
                "--batch-multiplier" => {
                    let text = value("--batch-multiplier")?;
                    let times: i64 = text.parse().ok().filter(|n| *n >= 1).ok_or_else(|| {
                        format!(
                            "`--batch-multiplier` takes a whole number of at least 1, got `{text}`"
                        )
                    })?;
                    options.batch_multiplier = Some(times);
                }
                "--report-dir" => {
                    options.report_dir = Some(PathBuf::from(value("--report-dir")?));
                    options.report = None;
                }
                "--dump" => options.dump = Some(PathBuf::from(value("--dump")?)),
                "--trial-timeout" => {
                    let text = value("--trial-timeout")?;
                    options.trial_timeout = Some(parse_seconds("--trial-timeout", &text)?);
                }
                "--no-tests" => {
                    options.no_tests = match value("--no-tests")?.as_str() {
                        "fail" => NoTests::Fail,
                        "warn" => NoTests::Warn,
                        "pass" => NoTests::Pass,
                        other => {
                            return Err(format!(
                                "`--no-tests` takes `fail`, `warn` or `pass`, got `{other}`"
                            ))
                        }
                    };
                }
                "--devcheck-help" => return Err(HELP_REQUESTED.to_owned()),
                _ => rest.push(arg.clone()),
            }
        }
        Ok((options, rest))
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
}

/// The record of one trial of `case`.
fn record(
    case: &Case,
    check: Check,
    device: DeviceSpec,
    outcome: Outcome,
    message: String,
    metrics: serde_json::Value,
    duration_ms: f64,
) -> TrialRecord {
    TrialRecord {
        name: trial_name(case, check, device),
        case: case.name().to_owned(),
        check: check.name().to_owned(),
        device: device.to_string(),
        outcome,
        message,
        metrics,
        caveat: None,
        machine: None,
        dtype: Some(kind_name(case.kind()).to_owned()),
        duration_ms: Some(duration_ms),
        rest: serde_json::Map::new(),
    }
}

fn elapsed_ms(started: Instant) -> f64 {
    started.elapsed().as_secs_f64() * 1e3
}

fn seconds(duration: Duration) -> String {
    let s = duration.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0} s")
    } else {
        format!("{s} s")
    }
}

/// Runs one trial on a thread of its own under the case's time limit. A trial
/// still running at the limit is failed as hung and its thread abandoned (Rust
/// cannot stop a thread); the case's later trials are failed at once, since
/// that thread may still hold the case's shared state.
fn execute_with_limit(state: &Arc<CaseState>, check: Check, device: DeviceSpec) -> TrialRecord {
    let started = Instant::now();
    let case = state.case();
    let failed = |message: String| {
        record(
            case,
            check,
            device,
            Outcome::Failed,
            message,
            json!({}),
            elapsed_ms(started),
        )
    };
    if let Some(hung) = state.hung() {
        return failed(format!(
            "not run: `{hung}` of this case hung, and its thread may still hold the case"
        ));
    }
    if let Some(sentence) = state.scaling_failure() {
        return failed(format!("not run: {sentence}"));
    }
    let (sender, receiver) = mpsc::channel();
    let worker = {
        let state = Arc::clone(state);
        std::thread::Builder::new()
            .name(trial_name(state.case(), check, device))
            // As much stack as a main thread: autograd of deep models recurses.
            .stack_size(8 << 20)
            .spawn(move || {
                let _ = sender.send(execute(&state, check, device));
            })
    };
    if let Err(error) = worker {
        return failed(format!("could not start the trial's thread: {error}"));
    }
    match receiver.recv_timeout(state.time_limit()) {
        Ok(record) => record,
        Err(RecvTimeoutError::Timeout) => {
            state.mark_hung(trial_name(case, check, device));
            failed(format!(
                "timed out: still running after {}, the time limit (a hang?); \
                 raise it with `--trial-timeout` or `Case::time_limit`",
                seconds(state.time_limit())
            ))
        }
        Err(RecvTimeoutError::Disconnected) => {
            failed("the trial's thread ended without a verdict".to_owned())
        }
    }
}

/// Steps tried when looking for the line of a step's returned error: as many
/// as any check runs before its first verdict.
const FAILING_STEPS: u64 = 4;

/// Runs one trial to a record; never panics, whatever the case does.
fn execute(state: &CaseState, check: Check, device: DeviceSpec) -> TrialRecord {
    let case = state.case();
    let started = Instant::now();
    let result = crate::cause::quietly(|| crate::checks::run(check, state, device));
    // A step that breaks only at a batch multiplier says so, once for the case.
    let scaled = |cause: String| state.diagnose_scaling(device, &cause).unwrap_or(cause);
    let mut caveat = None;
    let (outcome, message, metrics) = match result {
        Ok(Ok(verdict)) => {
            caveat = verdict.caveat;
            (
                if verdict.passed {
                    Outcome::Passed
                } else {
                    Outcome::Failed
                },
                verdict.message,
                verdict.metrics,
            )
        }
        Ok(Err(error @ TrialError::Torch(_))) => {
            // A libtorch error the step returned has no line: find it again.
            let weights = state.weights().ok();
            let at = weights.and_then(|w| {
                crate::trainer::failing_line(case, device, case.kind(), &w, FAILING_STEPS)
            });
            let cause = match at {
                Some(site) => format!("at {site}: {error}"),
                None => error.to_string(),
            };
            (Outcome::Failed, scaled(cause), json!({}))
        }
        Ok(Err(error)) => (Outcome::Failed, scaled(error.to_string()), json!({})),
        Err(panic) => (Outcome::Failed, scaled(panic.into_cause()), json!({})),
    };
    TrialRecord {
        caveat,
        ..record(
            case,
            check,
            device,
            outcome,
            message,
            metrics,
            elapsed_ms(started),
        )
    }
}

fn trial_name(case: &Case, check: Check, device: DeviceSpec) -> String {
    format!("{}::{}::{device}", case.name(), check.name())
}

/// Collects records and rewrites the report file after each one.
struct Sink {
    report: Mutex<Report>,
    path: Option<PathBuf>,
    progress: Option<indicatif::ProgressBar>,
    running: Mutex<Vec<String>>,
}

impl Sink {
    fn start(&self, name: &str) {
        lock(&self.running).push(name.to_owned());
    }

    fn record(&self, record: TrialRecord) {
        let mut report = lock(&self.report);
        lock(&self.running).retain(|n| *n != record.name);
        report.push(record);
        self.save(&report);
        if let Some(bar) = &self.progress {
            bar.inc(1);
        }
    }

    /// Marks the report interrupted and saves it: called on SIGINT/SIGTERM/SIGHUP.
    fn interrupt(&self) {
        let mut report = lock(&self.report);
        report.interrupted = Some(Interruption {
            by: "a termination signal (SIGINT, SIGTERM or SIGHUP)".to_owned(),
            in_flight: lock(&self.running).clone(),
        });
        self.save(&report);
        if let Some(bar) = &self.progress {
            bar.abandon();
        }
        if let Some(path) = &self.path {
            eprintln!(
                "\ndevcheck: interrupted; {} trials recorded in {} (marked incomplete)",
                report.trials.len(),
                path.display()
            );
        }
    }

    fn save(&self, report: &Report) {
        if let Some(path) = &self.path {
            if let Err(error) = report.write(path) {
                eprintln!(
                    "warning: could not write the report to {}: {error}",
                    path.display()
                );
            }
        }
    }
}

/// Runs the cases with options and libtest arguments `args` (the command
/// line without the program's name).
pub fn run_args(cases: Vec<Case>, args: &[String]) -> ExitCode {
    match parse_or_explain(args) {
        Ok((options, rest)) => run_with(cases, options, rest),
        Err(code) => code,
    }
}

/// The options, or the exit code after printing the usage (`--devcheck-help`)
/// or the error.
pub fn parse_or_explain(args: &[String]) -> Result<(Options, Vec<String>), ExitCode> {
    match Options::parse(args) {
        Ok(parsed) => Ok(parsed),
        Err(message) if message == HELP_REQUESTED => {
            println!("{USAGE}");
            Err(ExitCode::SUCCESS)
        }
        Err(message) => {
            eprintln!("error: {message}\n(`--devcheck-help` lists devcheck's options)");
            Err(ExitCode::from(2))
        }
    }
}

/// Runs the cases: every case × check × device, as libtest-mimic trials.
///
/// Bad configuration (a case with impossible settings, two cases of one name, a
/// filter that matches nothing under `--no-tests fail`, a report that cannot be
/// written) is refused with exit code 2 before any trial runs.
pub fn run_with(cases: Vec<Case>, options: Options, libtest_args: Vec<String>) -> ExitCode {
    let listing = libtest_args.iter().any(|a| a == "--list");
    if let Some(path) = options.report_path().filter(|_| !listing) {
        // Whatever happens next, an earlier run's report must not pass for this one's.
        if let Err(error) = std::fs::remove_file(&path) {
            if path.exists() {
                eprintln!(
                    "error: cannot remove the previous report {}: {error}\ndevcheck: nothing was run",
                    path.display()
                );
                return ExitCode::from(2);
            }
        }
    }
    let problems = configuration_problems(&cases);
    if !problems.is_empty() {
        for problem in &problems {
            eprintln!("error: {problem}");
        }
        eprintln!("devcheck: nothing was run");
        return ExitCode::from(2);
    }
    ensure_mps_fallback_enabled();
    let program = std::env::args()
        .next()
        .unwrap_or_else(|| "devcheck".to_owned());
    let mut arguments = Arguments::from_iter(std::iter::once(program).chain(libtest_args));
    // Timing, memory and sync-debug mode are process-wide: one trial at a time.
    arguments.test_threads.get_or_insert(1);

    let environment = match Environment::collect().and_then(|env| Ok((env, device::discover()?))) {
        Ok(found) => found,
        Err(error) => {
            eprintln!("error: libtorch is not usable: {error}");
            return ExitCode::from(2);
        }
    };
    let (environment, found) = environment;
    let (slots, refused) =
        select_devices(found, options.devices.as_deref(), &options.required_devices);
    if !refused.is_empty() {
        for problem in &refused {
            eprintln!("error: {problem}");
        }
        if options.devices.is_some() {
            eprintln!(
                "devcheck: nothing was run; leave out --device to run every device found here \
                 (devices not asked for are listed as not run)"
            );
        } else {
            eprintln!(
                "devcheck: nothing was run; run on a machine that has the device, or leave out \
                 --require-device to run the devices found here"
            );
        }
        return ExitCode::from(2);
    }
    // Absolute: insta resolves a relative snapshot path against the source file
    // of the assertion (inside devcheck), not against the working directory.
    let snapshots = options
        .snapshots
        .clone()
        .or_else(|| {
            std::env::var_os("CARGO_MANIFEST_DIR").map(|d| PathBuf::from(d).join("snapshots"))
        })
        .map(|dir| std::path::absolute(&dir).unwrap_or(dir));
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

    let mut report = crate::report::start(
        environment,
        git_commit(),
        gethostname::gethostname().to_string_lossy().into_owned(),
    );
    let selected: Vec<Case> = cases
        .iter()
        .filter(|c| options.faults || c.fault().is_none())
        .map(|c| match options.batch_multiplier {
            Some(times) => c.clone().batch_multiplier(times),
            None => c.clone(),
        })
        .collect();
    report.cases = Some(selected.iter().map(|c| c.name().to_owned()).collect());
    // Recorded whatever the filter, so that reports of nextest's one-trial
    // processes still say which devices this machine could not run.
    report.devices_not_run = Some(
        slots
            .iter()
            .filter_map(|slot| {
                slot.unavailable.as_ref().map(|reason| DeviceNotRun {
                    device: slot.device.to_string(),
                    reason: reason.clone(),
                })
            })
            .collect(),
    );

    if let Some(filter) = &arguments.filter {
        let matched = selected.iter().any(|case| {
            Check::ALL.iter().any(|check| {
                slots.iter().any(|slot| {
                    let name = trial_name(case, *check, slot.device);
                    if arguments.exact {
                        name == *filter
                    } else {
                        name.contains(filter.as_str())
                    }
                })
            })
        });
        if !matched && options.no_tests != NoTests::Pass {
            let message = no_match_message(filter, &cases, &selected, &slots);
            if options.no_tests == NoTests::Fail {
                eprintln!("error: {message}");
                return ExitCode::from(2);
            }
            eprintln!("warning: {message}");
        }
    }

    let report_path = options.report_path();
    if let Some(path) = &report_path {
        if !arguments.list {
            if let Err(error) = report.write(path) {
                eprintln!(
                    "error: cannot write the report to {}: {error}\ndevcheck: nothing was run",
                    path.display()
                );
                return ExitCode::from(2);
            }
        }
    }

    let total = selected.len() * Check::ALL.len() * slots.len();
    let progress = (!arguments.list
        && std::io::stderr().is_terminal()
        && arguments.format.is_none())
    .then(|| {
        arguments.quiet = true;
        let bar = indicatif::ProgressBar::new(total as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} trials {elapsed}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        bar
    });
    let sink = Arc::new(Sink {
        report: Mutex::new(report),
        path: if arguments.list { None } else { report_path },
        progress,
        running: Mutex::new(Vec::new()),
    });
    if sink.path.is_some() {
        let on_signal = Arc::clone(&sink);
        let installed = ctrlc::try_set_handler(move || {
            on_signal.interrupt();
            exit_now(130);
        });
        if let Err(error) = installed {
            // Another handler (the embedding program's) stays in charge; the report
            // is still rewritten after every trial, so it stays valid JSON.
            eprintln!("warning: no interrupt handler for the report ({error})");
        }
    }

    let mut trials = Vec::with_capacity(total);
    for case in selected {
        let state = Arc::new(
            CaseState::new(case, snapshots.clone(), options.timing)
                .with_default_time_limit(options.trial_timeout)
                .with_dump(options.dump.clone()),
        );
        for check in Check::ALL {
            for slot in &slots {
                trials.push(make_trial(&state, check, slot, &sink, &arguments));
            }
        }
    }
    if arguments.list {
        let _ = libtest_mimic::run(&arguments, trials);
        return ExitCode::SUCCESS;
    }
    let conclusion = libtest_mimic::run(&arguments, trials);
    if let Some(bar) = &sink.progress {
        bar.finish_and_clear();
    }
    let mut report = lock(&sink.report);
    report.complete = true;
    sink.save(&report);
    eprintln!("\n{}", crate::report::table(&report));
    // Under `cargo devcheck`, this report is one part of the run's report,
    // which cargo devcheck names once.
    if let Some(path) = sink
        .path
        .as_ref()
        .filter(|_| std::env::var_os("DEVCHECK_REPORT_PART").is_none())
    {
        eprintln!("report: {}", path.display());
    }
    if conclusion.has_failed() {
        ExitCode::from(101)
    } else {
        ExitCode::SUCCESS
    }
}

/// Ends the process at once, without running libtorch's static destructors
/// while a trial's thread may still be inside libtorch.
fn exit_now(code: i32) -> ! {
    #[cfg(unix)]
    // SAFETY: `_exit` ends the process; nothing after it runs.
    unsafe {
        libc::_exit(code)
    }
    #[cfg(not(unix))]
    std::process::exit(code)
}

/// Every problem of the cases' settings, and names used twice.
fn configuration_problems(cases: &[Case]) -> Vec<String> {
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

/// Why a filter matched nothing, with what there is and the nearest case name.
fn no_match_message(filter: &str, all: &[Case], selected: &[Case], slots: &[DeviceSlot]) -> String {
    let names = |cases: &[Case]| {
        cases
            .iter()
            .map(|c| c.name().to_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut message = format!("no trial matches the filter `{filter}`");
    let _ = std::fmt::Write::write_fmt(
        &mut message,
        format_args!(
            "\n  trials are named <case>::<check>::<device>\n  cases: {}\n  checks: {}\n  devices: {}",
            names(selected),
            Check::ALL.map(|c| c.name()).join(", "),
            slots
                .iter()
                .map(|s| s.device.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    );
    let head = filter.split("::").find(|p| !p.is_empty()).unwrap_or(filter);
    let nearest = all
        .iter()
        .map(|c| (strsim::jaro_winkler(head, c.name()), c))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((_, case)) = nearest {
        if case.fault().is_some() && !selected.iter().any(|c| c.name() == case.name()) {
            let _ = std::fmt::Write::write_fmt(
                &mut message,
                format_args!("\n  `{}` is a planted fault: add `--faults`", case.name()),
            );
        } else if case.name() != head {
            let _ = std::fmt::Write::write_fmt(
                &mut message,
                format_args!("\n  did you mean `{}`?", case.name()),
            );
        }
    }
    message
}

fn make_trial(
    state: &Arc<CaseState>,
    check: Check,
    slot: &DeviceSlot,
    sink: &Arc<Sink>,
    arguments: &Arguments,
) -> Trial {
    let name = trial_name(state.case(), check, slot.device);
    if let Some(reason) = slot.unavailable.clone() {
        let trial = Trial::ignorable_test(name.clone(), {
            let reason = reason.clone();
            move || Ok(Completion::ignored_with(reason))
        })
        .with_ignored_flag(true);
        if !arguments.is_filtered_out(&trial) && !arguments.list {
            sink.record(record(
                state.case(),
                check,
                slot.device,
                Outcome::Ignored,
                reason,
                json!({}),
                0.0,
            ));
        }
        return trial;
    }
    let (state, sink, device) = (Arc::clone(state), Arc::clone(sink), slot.device);
    Trial::test(name.clone(), move || {
        sink.start(&name);
        let ended = execute_with_limit(&state, check, device);
        let failure = (ended.outcome == Outcome::Failed).then(|| ended.message.clone());
        sink.record(ended);
        match failure {
            Some(message) => Err(message.into()),
            None => Ok(()),
        }
    })
}

/// The devices to run on: every device found, or only those asked for with
/// `--device`. A device asked for (with `--device` or `--require-device`) that
/// cannot run here is refused, with the reason: CI must not go green having run
/// nothing. Devices not asked for stay, marked unavailable, as not run.
fn select_devices(
    found: Vec<DeviceSlot>,
    wanted: Option<&[DeviceSpec]>,
    required: &[DeviceSpec],
) -> (Vec<DeviceSlot>, Vec<String>) {
    let mut refused = Vec::new();
    let mut check =
        |device: &DeviceSpec, how: &str| match found.iter().find(|s| s.device == *device) {
            Some(DeviceSlot {
                unavailable: None, ..
            }) => {}
            Some(DeviceSlot {
                unavailable: Some(reason),
                ..
            }) => refused.push(format!(
                "{device} was asked for with {how} but cannot run here: {reason}"
            )),
            None => refused.push(format!(
                "{device} was asked for with {how} but this machine has no such device"
            )),
        };
    for device in wanted.unwrap_or_default() {
        check(device, "--device");
    }
    for device in required {
        check(device, "--require-device");
    }
    let slots = match wanted {
        Some(wanted) => found
            .into_iter()
            .filter(|slot| wanted.contains(&slot.device))
            .collect(),
        None => found,
    };
    (slots, refused)
}

/// MPS reads `PYTORCH_ENABLE_MPS_FALLBACK` when libtorch loads, so on a machine
/// with MPS the process restarts itself with it set.
fn ensure_mps_fallback_enabled() {
    if std::env::var("PYTORCH_ENABLE_MPS_FALLBACK").as_deref() == Ok("1") {
        return;
    }
    // Before any other libtorch call, as everywhere (see `crate::init`).
    let _ = crate::init();
    if !shim::backend_info(shim::Backend::Mps)
        .map(|m| m.available)
        .unwrap_or(false)
    {
        return;
    }
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        if let Ok(exe) = std::env::current_exe() {
            let error = std::process::Command::new(exe)
                .args(std::env::args_os().skip(1))
                .env("PYTORCH_ENABLE_MPS_FALLBACK", "1")
                .exec();
            eprintln!("warning: could not restart with PYTORCH_ENABLE_MPS_FALLBACK=1 ({error}); fallbacks will raise");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn splits_devcheck_options_from_libtest_arguments() {
        let (options, rest) = Options::parse(&strings(&[
            "--report=out.json",
            "--faults",
            "--device",
            "cuda:1",
            "cnn::",
            "--exact",
            "--timing-ms",
            "200",
        ]))
        .unwrap();
        assert_eq!(options.report, Some(PathBuf::from("out.json")));
        assert!(options.faults);
        assert_eq!(options.devices, Some(vec![DeviceSpec::Cuda(1)]));
        assert_eq!(
            options.timing.max_time,
            std::time::Duration::from_millis(200)
        );
        assert_eq!(rest, strings(&["cnn::", "--exact"]));
    }

    #[test]
    fn bad_options_are_named() {
        let error = Options::parse(&strings(&["--device", "tpu"])).unwrap_err();
        assert_eq!(
            error,
            "unknown device `tpu`: expected `cpu`, `cuda`, `cuda:N` or `mps`"
        );
        let error = Options::parse(&strings(&["--report"])).unwrap_err();
        assert!(error.starts_with("`--report` needs a value"), "{error}");
        let error = Options::parse(&strings(&["--timing-ms", "soon"])).unwrap_err();
        assert!(error.contains("got `soon`"), "{error}");
    }

    #[test]
    fn impossible_settings_stop_the_run_before_anything_runs() {
        let case = || {
            Case::new(
                "net",
                |_vs| Err(tch::TchError::Kind("never built".into())),
                |_step| Err(tch::TchError::Kind("never made".into())),
            )
        };
        let negative = crate::compare::Tolerance {
            rtol: -0.5,
            atol: 0.0,
            equal_nan: false,
        };
        let cases = vec![case().tolerance(negative, "why"), case()];
        assert_eq!(
            configuration_problems(&cases),
            [
                "case `net`: tolerance has rtol = -0.5; it must be a finite number ≥ 0",
                "two cases are named `net`: trial names and snapshots would collide",
            ]
        );
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        let options = Options {
            report: Some(report.clone()),
            ..Options::default()
        };
        assert_eq!(run_with(cases, options, Vec::new()), ExitCode::from(2));
        assert!(!report.exists(), "nothing ran, nothing written");
    }

    #[test]
    fn time_limits_and_report_dirs_parse() {
        let (options, _) = Options::parse(&strings(&[
            "--trial-timeout",
            "2.5",
            "--report-dir",
            "parts",
            "--no-tests=fail",
        ]))
        .unwrap();
        assert_eq!(options.trial_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(options.no_tests, NoTests::Fail);
        let path = options.report_path().unwrap();
        assert_eq!(path.parent(), Some(std::path::Path::new("parts")));
        assert!(path
            .to_string_lossy()
            .ends_with(&format!("-{}.json", std::process::id())));
    }

    #[test]
    fn a_device_asked_for_that_cannot_run_is_refused_and_others_stay_not_run() {
        let found = vec![
            DeviceSlot {
                device: DeviceSpec::Cpu,
                unavailable: None,
            },
            DeviceSlot {
                device: DeviceSpec::Cuda(0),
                unavailable: Some("cuda: built, but no usable GPU or driver".into()),
            },
        ];
        let (slots, refused) = select_devices(found.clone(), Some(&[DeviceSpec::Cpu]), &[]);
        assert_eq!(slots.len(), 1);
        assert!(refused.is_empty());
        let (_, refused) = select_devices(
            found.clone(),
            Some(&[DeviceSpec::Cpu, DeviceSpec::Cuda(0), DeviceSpec::Cuda(3)]),
            &[],
        );
        assert_eq!(
            refused,
            [
                "cuda:0 was asked for with --device but cannot run here: cuda: built, but no usable GPU or driver",
                "cuda:3 was asked for with --device but this machine has no such device",
            ]
        );
        // Not asked for: listed as not run, the run goes on.
        let (slots, refused) = select_devices(found.clone(), None, &[]);
        assert_eq!(slots.len(), 2);
        assert!(refused.is_empty());
        let (slots, refused) = select_devices(found, None, &[DeviceSpec::Cuda(0)]);
        assert_eq!(slots.len(), 2);
        assert_eq!(refused.len(), 1);
        assert!(refused[0].starts_with("cuda:0 was asked for with --require-device"));
    }
}
