//! A devcheck test binary's command line: one binary does every runtime job
//! on the cases it was given. With no verb it is the matrix (libtest's
//! interface plus devcheck's options, see [`crate::runner`]); with a verb:
//!
//! - `sweep --case NAME [--device D] [--epochs N] …`: how far a case scales;
//! - `doctor [--json]`: what this machine's libtorch can run;
//! - `compare EXPECTED ACTUAL [--json] …`: two dumps compared (no libtorch needed);
//! - `observer-cost [--device D] [--ms N] …`: the op observer's cost on the cases;
//! - `cases`: the case names, one per line.
//!
//! The matrix also takes `--summary markdown`: the report's summary on stdout,
//! everything else on stderr.
//!
//! `cargo devcheck` runs a user's test binaries through these verbs, and the
//! built-in cases' binary (`devcheck-matrix`) is one more user of them.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use crate::case::Case;
use crate::device::{self, DeviceSpec};
use crate::environment::{Environment, Severity};
use crate::sweep::{self, SweepLimits};

/// The verbs a test binary answers besides the matrix.
pub const VERBS: [&str; 5] = ["sweep", "doctor", "compare", "observer-cost", "cases"];

/// Runs what the command line asks of `cases`: the matrix, or one of [`VERBS`].
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
        _ => matrix(cases, args),
    }
}

/// The matrix, with `--summary FORMAT` handled here: the runner's output goes
/// to stderr and the summary of its report to stdout.
fn matrix(cases: Vec<Case>, args: Vec<String>) -> ExitCode {
    let (format, args) = match take_summary(args) {
        Ok(split) => split,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    let Some(format) = format else {
        return crate::runner::run_args(cases, &args);
    };
    let (mut options, rest) = match crate::runner::parse_or_explain(&args) {
        Ok(parsed) => parsed,
        Err(code) => return code,
    };
    // Without --report, the summary reads a report of its own.
    let scratch;
    let report = match &options.report {
        Some(path) => path.clone(),
        None => {
            scratch = match tempfile::Builder::new().suffix(".json").tempfile() {
                Ok(file) => file.into_temp_path(),
                Err(error) => {
                    eprintln!("error: cannot make a report file for the summary: {error}");
                    return ExitCode::from(2);
                }
            };
            let _ = std::fs::remove_file(&scratch);
            options.report = Some(scratch.to_path_buf());
            scratch.to_path_buf()
        }
    };
    let code = {
        let _stdout = StdoutToStderr::new();
        crate::runner::run_with(cases, options, rest)
    };
    match devcheck_report::report::load(&report) {
        Ok(loaded) => print!("{}", devcheck_report::summary::render(format, &loaded)),
        Err(error) => {
            eprintln!("error: no summary: {error}");
            print!("{}", devcheck_report::summary::no_report(format, &report));
        }
    }
    code
}

/// Splits `--summary FORMAT` (or `--summary=FORMAT`) from the arguments.
fn take_summary(
    args: Vec<String>,
) -> Result<(Option<devcheck_report::summary::SummaryFormat>, Vec<String>), String> {
    let mut format = None;
    let mut rest = Vec::with_capacity(args.len());
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let value = if arg == "--summary" {
            Some(args.next().ok_or("`--summary` takes a format: markdown")?)
        } else {
            arg.strip_prefix("--summary=").map(str::to_owned)
        };
        match value {
            Some(value) => format = Some(value.parse()?),
            None => rest.push(arg),
        }
    }
    Ok((format, rest))
}

/// While alive, what is written to stdout goes to stderr (file descriptor 1
/// points at 2), so that stdout carries only the summary.
struct StdoutToStderr {
    #[cfg(unix)]
    saved: Option<std::os::fd::OwnedFd>,
}

impl StdoutToStderr {
    fn new() -> Self {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        {
            use std::os::fd::{AsFd, AsRawFd};
            let saved = std::io::stdout().as_fd().try_clone_to_owned().ok();
            // SAFETY: dup2 on two open descriptors of this process.
            if saved.is_some() && unsafe { libc::dup2(std::io::stderr().as_raw_fd(), 1) } < 0 {
                return Self { saved: None };
            }
            Self { saved }
        }
        #[cfg(not(unix))]
        Self {}
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        if let Some(saved) = self.saved.take() {
            use std::os::fd::AsRawFd;
            // SAFETY: as in `new`.
            unsafe { libc::dup2(saved.as_raw_fd(), 1) };
        }
    }
}

fn with_name(program: &str, verb: &str, args: &[String]) -> Vec<String> {
    std::iter::once(format!("{program} {verb}"))
        .chain(args.iter().skip(1).cloned())
        .collect()
}

/// Runs a verb, or prints clap's help or usage error (exit 0 or 2).
fn verb<A>(
    parsed: Result<A, clap::Error>,
    run: impl FnOnce(A) -> Result<ExitCode, String>,
) -> ExitCode {
    match parsed {
        Ok(args) => match run(args) {
            Ok(code) => code,
            Err(message) => {
                eprintln!("error: {message}");
                ExitCode::from(2)
            }
        },
        Err(error) => {
            let _ = error.print();
            ExitCode::from(if error.use_stderr() { 2 } else { 0 })
        }
    }
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
fn chosen_device(asked: Option<DeviceSpec>) -> Result<DeviceSpec, String> {
    crate::init().map_err(|e| format!("libtorch is not usable: {e}"))?;
    let slots = device::discover().map_err(|e| e.to_string())?;
    match asked {
        Some(device) => match slots.iter().find(|s| s.device == device) {
            Some(slot) => match &slot.unavailable {
                Some(reason) => Err(format!("{device} cannot run here: {reason}")),
                None => Ok(device),
            },
            None => Err(format!("{device}: no such device on this machine")),
        },
        None => Ok(slots
            .iter()
            .filter(|s| s.unavailable.is_none())
            .map(|s| s.device)
            .find(|d| d.is_accelerator())
            .unwrap_or(DeviceSpec::Cpu)),
    }
}

fn sweep_verb(cases: &[Case], args: SweepArgs) -> Result<ExitCode, String> {
    if args.list {
        for case in cases.iter().filter(|c| c.fault().is_none()) {
            println!("{}", case.name());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let options = args.options;
    let max_batch_multiplier = options.max_batch_multiplier.unwrap_or(4096);
    let batch_multiplier = options.batch_multiplier.unwrap_or(1);
    let timing_ms = options.timing_ms.unwrap_or(500);
    let asked = options
        .device
        .as_deref()
        .map(str::parse::<DeviceSpec>)
        .transpose()
        .map_err(|e| e.to_string())?;
    let name = args.case.as_deref().unwrap_or_default();
    let case = cases
        .iter()
        .find(|c| c.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = cases
                .iter()
                .filter(|c| c.fault().is_none())
                .map(Case::name)
                .collect();
            format!("no case named `{name}`; cases: {}", names.join(", "))
        })?
        .clone();
    if max_batch_multiplier < 1 || batch_multiplier < 1 {
        return Err("batch multipliers must be at least 1".to_owned());
    }
    if timing_ms == 0 || options.epochs == Some(0) || options.steps_per_epoch == Some(0) {
        return Err("--timing-ms, --epochs and --steps-per-epoch must be at least 1".to_owned());
    }
    let device = chosen_device(asked)?;
    let stem = format!("{}-{}", case.name(), device.to_string().replace(':', "-"));
    let (table, json, svg, kind, broke) = match options.epochs {
        Some(epochs) => {
            let case = case.batch_multiplier(batch_multiplier);
            let steps = options
                .steps_per_epoch
                .unwrap_or(case.memory_limits().steps_per_epoch);
            let result =
                sweep::epoch_sweep(&case, device, epochs, steps).map_err(|e| e.to_string())?;
            (
                sweep::epoch_table(&result),
                sweep::epoch_json(&result),
                sweep::epoch_svg(&result)?,
                "epochs",
                None,
            )
        }
        None => {
            let ceiling = options
                .max_memory_mb
                .or((!device.is_accelerator()).then_some(4096))
                .map(|mb| mb << 20);
            let limits = SweepLimits {
                ceiling,
                max_multiplier: max_batch_multiplier,
                time_per_size: Duration::from_millis(timing_ms),
            };
            let result = sweep::batch_sweep(&case, device, limits).map_err(|e| e.to_string())?;
            (
                sweep::batch_table(&result),
                sweep::batch_json(&result),
                sweep::batch_svg(&result)?,
                "batch",
                result.step_failed.then(|| result.stopped.clone()),
            )
        }
    };
    print!("{table}");
    let json_path = args.out.join(format!("{stem}-{kind}.json"));
    let svg_path = args.out.join(format!("{stem}-{kind}.svg"));
    let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n";
    crate::files::write_atomically(&json_path, text.as_bytes())
        .map_err(|e| format!("{}: {e}", json_path.display()))?;
    crate::files::write_atomically(&svg_path, svg.as_bytes())
        .map_err(|e| format!("{}: {e}", svg_path.display()))?;
    eprintln!("wrote {} and {}", json_path.display(), svg_path.display());
    if let Some(stopped) = broke {
        eprintln!("error: the sweep of `{name}` on {device} could not grow the batch: {stopped}");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// What this libtorch can run on, and what to fix.
#[derive(Parser)]
struct DoctorArgs {
    /// One JSON object instead of the table.
    #[arg(long)]
    json: bool,
}

fn doctor_verb(args: DoctorArgs) -> Result<ExitCode, String> {
    let env = Environment::collect().map_err(|e| format!("could not inspect libtorch: {e}"))?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&env).map_err(|e| e.to_string())?
        );
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

fn cost_verb(cases: &[Case], args: CostArgs) -> Result<ExitCode, String> {
    crate::init().map_err(|e| format!("libtorch is not usable: {e}"))?;
    let devices: Vec<DeviceSpec> = if args.devices.is_empty() {
        device::discover()
            .map_err(|e| e.to_string())?
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
                    .map_err(|e| format!("{} on {device}: {e}", case.name()))?;
            costs.push(measured);
        }
    }
    print!("{}", crate::observer::cost::table(&costs));
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&costs).map_err(|e| e.to_string())?;
        crate::files::write_atomically(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok(ExitCode::SUCCESS)
}
