//! Runs cases × checks × devices as libtest-mimic trials (so `cargo test`
//! filters, `--list`, `--exact`, `--ignored` and cargo-nextest work), records
//! every trial in the report as it ends, and prints the table.
//!
//! By concern: `settings` (the command line and the environment, one clap
//! definition: [`Options`]), `devices` (which devices run), `filter` (a filter
//! that matches nothing), `trials` (one trial under its time limit), `progress`
//! (the bar on a terminal), `sink` (the report as the run goes, and signals)
//! and `summary` (`--summary`). This module puts them in order: everything
//! that can refuse the run is checked before the first trial.

mod devices;
mod filter;
mod progress;
mod settings;
mod sink;
mod summary;
mod trials;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use devcheck_report::exit;
use devcheck_report::report::{DeviceNotRun, Report};

use crate::case::Case;
use crate::checks::state::CaseState;
use crate::checks::Check;
use crate::device::{self, DeviceSlot};
use crate::environment::{git_commit, Environment};
use crate::shim::ShimError;

pub use settings::{NoTests, Options, OptionsError};

/// Runs the cases: every case × check × device, as libtest-mimic trials.
///
/// Bad configuration (a case with impossible settings, two cases of one name, a
/// device asked for that cannot run here, a filter that matches nothing under
/// `--no-tests fail`, a report that cannot be written) is refused with exit
/// code 2 before any trial runs.
pub fn run_with(cases: Vec<Case>, mut options: Options) -> ExitCode {
    match options.summary.take() {
        Some(format) => summary::run_summarized(cases, options, format),
        None => run_matrix(cases, options),
    }
}

/// The matrix, its report and table, without a summary.
fn run_matrix(cases: Vec<Case>, options: Options) -> ExitCode {
    match plan(&cases, options) {
        Ok(plan) => run_planned(plan),
        Err(refusal) => {
            refusal.print();
            ExitCode::from(exit::USAGE)
        }
    }
}

/// Why a run stopped before its first trial (exit code 2).
#[derive(Debug)]
enum Refusal {
    /// An earlier run's report that could not be removed.
    StaleReport {
        path: PathBuf,
        error: std::io::Error,
    },
    /// The cases' settings, and names used twice.
    Configuration(Vec<String>),
    /// libtorch could not say what this machine is or has.
    Libtorch(ShimError),
    /// Devices asked for that cannot run here; `restricted` when the run was
    /// limited to devices (`--device`), not only requiring them.
    Devices {
        problems: Vec<String>,
        restricted: bool,
    },
    /// A filter that matches no trial, under `--no-tests fail`.
    NoMatch(String),
    /// The report cannot be written.
    Report {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl Refusal {
    /// Says why on stderr, and that nothing ran where the refusal is the run's.
    fn print(&self) {
        match self {
            Refusal::StaleReport { path, error } => eprintln!(
                "error: cannot remove the previous report {}: {error}\ndevcheck: nothing was run",
                path.display()
            ),
            Refusal::Configuration(problems) => {
                for problem in problems {
                    eprintln!("error: {problem}");
                }
                eprintln!("devcheck: nothing was run");
            }
            Refusal::Libtorch(error) => eprintln!("error: libtorch is not usable: {error}"),
            Refusal::Devices {
                problems,
                restricted,
            } => {
                for problem in problems {
                    eprintln!("error: {problem}");
                }
                if *restricted {
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
            }
            Refusal::NoMatch(message) => eprintln!("error: {message}"),
            Refusal::Report { path, error } => eprintln!(
                "error: cannot write the report to {}: {error}\ndevcheck: nothing was run",
                path.display()
            ),
        }
    }
}

/// A run that nothing can refuse any more.
struct Plan {
    options: Options,
    report: Report,
    report_path: Option<PathBuf>,
    selected: Vec<Case>,
    slots: Vec<DeviceSlot>,
    snapshots: Option<PathBuf>,
}

/// Checks everything that can refuse the run, in the order a user fixes it,
/// and writes the empty report.
fn plan(cases: &[Case], mut options: Options) -> Result<Plan, Refusal> {
    let listing = options.libtest.list;
    let report_path = options.report_path().filter(|_| !listing);
    if let Some(path) = &report_path {
        // Whatever happens next, an earlier run's report must not pass for this one's.
        remove_previous_report(path)?;
    }
    let problems = settings::configuration_problems(cases);
    if !problems.is_empty() {
        return Err(Refusal::Configuration(problems));
    }
    devices::ensure_mps_fallback_enabled();
    // Timing, memory and sync-debug mode are process-wide: one trial at a time.
    options.libtest.test_threads.get_or_insert(1);
    let (environment, found) = Environment::collect()
        .and_then(|env| Ok((env, device::discover()?)))
        .map_err(Refusal::Libtorch)?;
    let slots = devices::select(found, options.devices.as_deref(), &options.required_devices)?;
    let snapshots = options.snapshot_dir();
    settings::configure_insta();
    let selected = options.selected(cases);
    let report = start_report(environment, &selected, &slots);
    filter::check(&options.libtest, options.no_tests, cases, &selected, &slots)?;
    if let Some(path) = &report_path {
        report.write(path).map_err(|error| Refusal::Report {
            path: path.clone(),
            error,
        })?;
    }
    Ok(Plan {
        options,
        report,
        report_path,
        selected,
        slots,
        snapshots,
    })
}

fn remove_previous_report(path: &Path) -> Result<(), Refusal> {
    match std::fs::remove_file(path) {
        Err(error) if path.exists() => Err(Refusal::StaleReport {
            path: path.to_owned(),
            error,
        }),
        _ => Ok(()),
    }
}

/// The report before any trial: this process's environment, the cases and
/// the devices that cannot run here.
fn start_report(environment: Environment, selected: &[Case], slots: &[DeviceSlot]) -> Report {
    let mut report = crate::report::start(
        environment,
        git_commit(),
        gethostname::gethostname().to_string_lossy().into_owned(),
    );
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
    report
}

/// Runs (or lists) the trials, one at a time unless asked otherwise.
fn run_planned(plan: Plan) -> ExitCode {
    let Plan {
        mut options,
        report,
        report_path,
        selected,
        slots,
        snapshots,
    } = plan;
    let arguments = &mut options.libtest;
    let total = selected.len() * Check::ALL.len() * slots.len();
    let progress = progress::bar(arguments, total);
    let sink = Arc::new(sink::Sink::new(report, report_path, progress));
    sink::exit_on_signals(&sink);
    let mut trials = Vec::with_capacity(total);
    for case in selected {
        let state = Arc::new(
            CaseState::new(case, snapshots.clone(), options.timing)
                .with_default_time_limit(options.trial_timeout)
                .with_dump(options.dump.clone()),
        );
        for check in Check::ALL {
            for slot in &slots {
                trials.push(trials::make_trial(&state, check, slot, &sink, arguments));
            }
        }
    }
    let conclusion = libtest_mimic::run(arguments, trials);
    if arguments.list {
        return ExitCode::SUCCESS;
    }
    sink.finish();
    if conclusion.has_failed() {
        ExitCode::from(exit::TRIALS_FAILED)
    } else {
        ExitCode::SUCCESS
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            settings::configuration_problems(&cases),
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
        assert_eq!(run_with(cases, options), ExitCode::from(exit::USAGE));
        assert!(!report.exists(), "nothing ran, nothing written");
    }
}
