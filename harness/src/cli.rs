//! A devcheck test binary's command line: one binary does every runtime job
//! on the cases it was given. A verb is the first argument:
//!
//! - `sweep --case NAME [--device D] [--epochs N] …`: how far a case scales;
//! - `doctor [--json]`: what this machine's libtorch can run;
//! - `compare EXPECTED ACTUAL [--json] …`: two dumps compared (no libtorch needed);
//! - `observer-cost [--device D] [--ms N] …`: the op observer's cost on the cases;
//! - `cases`: the case names, one per line.
//!
//! Without one it is the matrix: libtest's interface plus devcheck's options,
//! one clap definition ([`Options`]), so that either comes in any position.
//!
//! `cargo devcheck` runs a user's test binaries through these verbs, and the
//! built-in cases' binary (`devcheck-matrix`) is one more user of them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use devcheck_report::exit;
use devcheck_report::sweep_options::SweepOptions;

use crate::case::Case;
use crate::device::{self, DeviceSpec, UnknownDevice};
use crate::environment::{Environment, Severity};
use crate::error::TrialError;
use crate::runner::Options;
use crate::shim::ShimError;
use crate::sweep::{self, PlotError, SweepLimits};

/// Runs what the command line asks of `cases`: the matrix, or one of the verbs.
pub fn main(cases: Vec<Case>) -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let program = std::env::args()
        .next()
        .unwrap_or_else(|| "devcheck".to_owned());
    match args.first().map(String::as_str) {
        Some("sweep") => verb(
            SweepArgs::try_parse_from(with_name(&program, "sweep", &args)),
            |a| sweep_verb(&cases, a),
        ),
        Some("doctor") => verb(
            DoctorArgs::try_parse_from(with_name(&program, "doctor", &args)),
            doctor_verb,
        ),
        Some("observer-cost") => verb(
            CostArgs::try_parse_from(with_name(&program, "observer-cost", &args)),
            |a| cost_verb(&cases, a),
        ),
        Some("compare") => devcheck_report::cli::main(with_name(&program, "compare", &args)),
        Some("cases") => {
            for case in cases.iter().filter(|c| c.fault().is_none()) {
                println!("{}", case.name());
            }
            ExitCode::SUCCESS
        }
        _ => match Options::parse(&args) {
            Ok(options) => crate::runner::run_with(cases, options),
            Err(error) => error.print(),
        },
    }
}

fn with_name(program: &str, verb: &str, args: &[String]) -> Vec<String> {
    std::iter::once(format!("{program} {verb}"))
        .chain(args.iter().skip(1).cloned())
        .collect()
}

/// Why a verb could not do what was asked (exit code 2).
#[derive(Debug, thiserror::Error)]
enum VerbError {
    /// libtorch could not be loaded or asked.
    #[error("libtorch is not usable: {0}")]
    Libtorch(ShimError),
    /// The devices could not be discovered.
    #[error("{0}")]
    Discovery(ShimError),
    /// Doctor could not collect the environment.
    #[error("could not inspect libtorch: {0}")]
    Inspect(ShimError),
    /// A device name that names no device.
    #[error(transparent)]
    UnknownDevice(#[from] UnknownDevice),
    /// A device this machine has, but cannot run.
    #[error("{device} cannot run here: {reason}")]
    CannotRun { device: DeviceSpec, reason: String },
    /// A device this machine does not have.
    #[error("{0}: no such device on this machine")]
    NoSuchDevice(DeviceSpec),
    /// A case name that names no case.
    #[error("no case named `{name}`; cases: {}", .cases.join(", "))]
    NoSuchCase { name: String, cases: Vec<String> },
    /// A sweep's limits out of range.
    #[error("{0}")]
    Limits(&'static str),
    /// The sweep or the cost measurement itself.
    #[error("{0}")]
    Trial(#[from] TrialError),
    /// The observer's cost on one case and device.
    #[error("{case} on {device}: {error}")]
    Cost {
        case: String,
        device: DeviceSpec,
        error: Box<TrialError>,
    },
    /// The sweep's plot.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// Figures that would not serialize.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A result file that could not be written.
    #[error("cannot write {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Runs a verb, or prints clap's help or usage error (exit 0 or 2).
fn verb<A>(
    parsed: Result<A, clap::Error>,
    run: impl FnOnce(A) -> Result<ExitCode, VerbError>,
) -> ExitCode {
    match parsed {
        Ok(args) => match run(args) {
            Ok(code) => code,
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::from(exit::USAGE)
            }
        },
        Err(error) => {
            let _ = error.print();
            ExitCode::from(if error.use_stderr() {
                exit::USAGE
            } else {
                exit::SUCCESS
            })
        }
    }
}

/// Writes a result file whole or not at all.
fn write(path: &std::path::Path, bytes: &[u8]) -> Result<(), VerbError> {
    crate::files::write_atomically(path, bytes).map_err(|source| VerbError::Write {
        path: path.to_owned(),
        source,
    })
}

/// Sweep a case's batch size (or its epochs) on one device.
///
/// Exit status: 0 when the sweep ended at out of memory, the ceiling or the
/// largest multiplier; 1 when the step failed at a larger batch (the error
/// names its line); 2 on bad input.
#[derive(Parser)]
struct SweepArgs {
    /// The case (`cases` lists them).
    #[arg(long, required_unless_present = "list")]
    case: Option<String>,
    /// The device, its limits, or epochs.
    #[command(flatten)]
    options: devcheck_report::sweep_options::SweepOptions,
    /// Directory for `<case>-<device>-{batch,epochs}.{json,svg}`.
    #[arg(long, default_value = "target/devcheck/sweep")]
    out: PathBuf,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
}

/// The first accelerator this machine can run, else the CPU; or the device
/// asked for, which must be able to run here.
fn chosen_device(asked: Option<DeviceSpec>) -> Result<DeviceSpec, VerbError> {
    crate::init().map_err(VerbError::Libtorch)?;
    let slots = device::discover().map_err(VerbError::Discovery)?;
    match asked {
        Some(device) => match slots.iter().find(|s| s.device == device) {
            Some(slot) => match &slot.unavailable {
                Some(reason) => Err(VerbError::CannotRun {
                    device,
                    reason: reason.clone(),
                }),
                None => Ok(device),
            },
            None => Err(VerbError::NoSuchDevice(device)),
        },
        None => Ok(slots
            .iter()
            .filter(|s| s.unavailable.is_none())
            .map(|s| s.device)
            .find(|d| d.is_accelerator())
            .unwrap_or(DeviceSpec::Cpu)),
    }
}

fn sweep_verb(cases: &[Case], args: SweepArgs) -> Result<ExitCode, VerbError> {
    if args.list {
        for case in cases.iter().filter(|c| c.fault().is_none()) {
            println!("{}", case.name());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let options = args.options;
    let max_batch_multiplier = options
        .max_batch_multiplier
        .unwrap_or(DEFAULT_MAX_BATCH_MULTIPLIER);
    let batch_multiplier = options.batch_multiplier.unwrap_or(1);
    let timing_ms = options.timing_ms.unwrap_or(DEFAULT_TIMING_MS);
    let asked = options
        .device
        .as_deref()
        .map(str::parse::<DeviceSpec>)
        .transpose()?;
    let name = args.case.as_deref().unwrap_or_default();
    let case = cases
        .iter()
        .find(|c| c.name() == name)
        .ok_or_else(|| VerbError::NoSuchCase {
            name: name.to_owned(),
            cases: cases
                .iter()
                .filter(|c| c.fault().is_none())
                .map(|c| c.name().to_owned())
                .collect(),
        })?
        .clone();
    if max_batch_multiplier < 1 || batch_multiplier < 1 {
        return Err(VerbError::Limits("batch multipliers must be at least 1"));
    }
    if timing_ms == 0 || options.epochs == Some(0) || options.steps_per_epoch == Some(0) {
        return Err(VerbError::Limits(
            "--timing-ms, --epochs and --steps-per-epoch must be at least 1",
        ));
    }
    let device = chosen_device(asked)?;
    let stem = format!("{}-{}", case.name(), device.to_string().replace(':', "-"));
    let Swept {
        table,
        json,
        svg,
        kind,
        broke,
    } = sweep_on(case, device, &options)?;
    print!("{table}");
    let json_path = args.out.join(format!("{stem}-{kind}.json"));
    let svg_path = args.out.join(format!("{stem}-{kind}.svg"));
    let text = serde_json::to_string_pretty(&json)? + "\n";
    write(&json_path, text.as_bytes())?;
    write(&svg_path, svg.as_bytes())?;
    eprintln!("wrote {} and {}", json_path.display(), svg_path.display());
    if let Some(stopped) = broke {
        eprintln!("error: the sweep of `{name}` on {device} could not grow the batch: {stopped}");
        return Ok(ExitCode::from(exit::FAILURE));
    }
    Ok(ExitCode::SUCCESS)
}

/// The largest batch multiplier a sweep tries, unless told.
const DEFAULT_MAX_BATCH_MULTIPLIER: i64 = 4096;

/// Milliseconds of measuring per batch size, unless told.
const DEFAULT_TIMING_MS: u64 = 500;

/// What a sweep made: its table, figures and plot, its kind (`batch` or
/// `epochs`), and why the batch could not grow if the step broke.
struct Swept {
    table: String,
    json: serde_json::Value,
    svg: String,
    kind: &'static str,
    broke: Option<String>,
}

/// Sweeps `case`'s batch size on `device`, or its memory over epochs.
fn sweep_on(case: Case, device: DeviceSpec, options: &SweepOptions) -> Result<Swept, VerbError> {
    match options.epochs {
        Some(epochs) => {
            let case = case.batch_multiplier(options.batch_multiplier.unwrap_or(1));
            let steps = options
                .steps_per_epoch
                .unwrap_or(case.memory_limits().steps_per_epoch);
            let result = sweep::epoch_sweep(&case, device, epochs, steps)?;
            Ok(Swept {
                table: sweep::epoch_table(&result),
                json: sweep::epoch_json(&result),
                svg: sweep::epoch_svg(&result)?,
                kind: "epochs",
                broke: None,
            })
        }
        None => {
            let ceiling = options
                .max_memory_mb
                .or((!device.is_accelerator()).then_some(4096))
                .map(|mb| mb << 20);
            let limits = SweepLimits {
                ceiling,
                max_multiplier: options
                    .max_batch_multiplier
                    .unwrap_or(DEFAULT_MAX_BATCH_MULTIPLIER),
                time_per_size: Duration::from_millis(
                    options.timing_ms.unwrap_or(DEFAULT_TIMING_MS),
                ),
            };
            let result = sweep::batch_sweep(&case, device, limits)?;
            Ok(Swept {
                table: sweep::batch_table(&result),
                json: sweep::batch_json(&result),
                svg: sweep::batch_svg(&result)?,
                kind: "batch",
                broke: result.step_failed.then(|| result.stopped.clone()),
            })
        }
    }
}

/// What this libtorch can run on, and what to fix.
#[derive(Parser)]
struct DoctorArgs {
    /// One JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

fn doctor_verb(args: DoctorArgs) -> Result<ExitCode, VerbError> {
    let env = Environment::collect().map_err(VerbError::Inspect)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&env)?);
    } else {
        print!("{}", env.render());
    }
    let broken = env.findings().iter().any(|f| f.severity == Severity::Error);
    Ok(if broken {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// Time the cases' steps with and without the op observer.
#[derive(Parser)]
struct CostArgs {
    /// Devices to measure on (default: every usable device here).
    #[arg(long = "device")]
    devices: Vec<DeviceSpec>,
    /// Milliseconds of measuring per case and device.
    #[arg(long, default_value_t = 2000)]
    ms: u64,
    /// Repeat every batch N times (a heavier step, bound by the device).
    #[arg(long, default_value_t = 1)]
    batch_multiplier: i64,
    /// Write the figures as JSON here too.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn cost_verb(cases: &[Case], args: CostArgs) -> Result<ExitCode, VerbError> {
    crate::init().map_err(VerbError::Libtorch)?;
    let devices: Vec<DeviceSpec> = if args.devices.is_empty() {
        device::discover()
            .map_err(VerbError::Discovery)?
            .into_iter()
            .filter(|slot| slot.unavailable.is_none())
            .map(|slot| slot.device)
            .collect()
    } else {
        args.devices
            .into_iter()
            .map(|d| chosen_device(Some(d)))
            .collect::<Result<_, _>>()?
    };
    let mut costs = Vec::new();
    for device in devices {
        for case in cases.iter().filter(|c| c.fault().is_none()) {
            let case = case.clone().batch_multiplier(args.batch_multiplier);
            let measured =
                crate::observer::cost::measure(&case, device, Duration::from_millis(args.ms))
                    .map_err(|error| VerbError::Cost {
                        case: case.name().to_owned(),
                        device,
                        error: Box::new(error),
                    })?;
            costs.push(measured);
        }
    }
    print!("{}", crate::observer::cost::table(&costs));
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&costs)?;
        write(&path, text.as_bytes())?;
    }
    Ok(ExitCode::SUCCESS)
}
