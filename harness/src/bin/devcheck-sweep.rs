//! `devcheck-sweep`: how far a built-in case scales on one device. Doubles the
//! batch until out of memory or a ceiling (throughput and peak memory per
//! size), or with `--epochs` records memory over many epochs; prints a table
//! and writes JSON and an SVG plot. What `cargo xtask sweep` runs.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;

use devcheck::sweep::{self, SweepLimits};
use devcheck::{Case, DeviceSpec};

/// Sweep a case's batch size (or its epochs) on one device.
#[derive(Parser)]
#[command(name = "devcheck-sweep", version)]
struct Args {
    /// The case (a built-in one; see `--list`).
    #[arg(long, required_unless_present = "list")]
    case: Option<String>,
    /// The device (cpu, cuda:N, mps; default: the first accelerator, else cpu).
    #[arg(long)]
    device: Option<String>,
    /// Stop before a size whose peak memory would pass this many MiB
    /// (default: 4096 on the CPU; none on an accelerator, which stops at out of memory).
    #[arg(long, value_name = "MIB")]
    max_memory_mb: Option<u64>,
    /// Largest batch multiplier tried.
    #[arg(long, default_value_t = 4096)]
    max_batch_multiplier: i64,
    /// Milliseconds spent timing each size.
    #[arg(long, default_value_t = 500)]
    timing_ms: u64,
    /// Record memory over this many epochs instead of sweeping the batch.
    #[arg(long)]
    epochs: Option<usize>,
    /// Steps per epoch with `--epochs` (default: the case's memory setting).
    #[arg(long)]
    steps_per_epoch: Option<usize>,
    /// The batch multiplier used with `--epochs`.
    #[arg(long, default_value_t = 1)]
    batch_multiplier: i64,
    /// Directory for `<case>-<device>-{batch,epochs}.{json,svg}`.
    #[arg(long, default_value = "target/devcheck/sweep")]
    out: PathBuf,
    /// List the cases and exit.
    #[arg(long)]
    list: bool,
}

fn cases() -> Vec<Case> {
    devcheck::cases::builtin()
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &Args) -> Result<(), String> {
    let all = cases();
    if args.list {
        for case in &all {
            println!("{}", case.name());
        }
        return Ok(());
    }
    let name = args.case.as_deref().unwrap_or_default();
    let case = all
        .iter()
        .find(|c| c.name() == name)
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(Case::name).collect();
            format!("no case named `{name}`; cases: {}", names.join(", "))
        })?
        .clone();
    if args.max_batch_multiplier < 1 || args.batch_multiplier < 1 {
        return Err("batch multipliers must be at least 1".to_owned());
    }
    if args.timing_ms == 0 || args.epochs == Some(0) || args.steps_per_epoch == Some(0) {
        return Err("--timing-ms, --epochs and --steps-per-epoch must be at least 1".to_owned());
    }
    devcheck::init().map_err(|e| format!("libtorch is not usable: {e}"))?;
    let slots = devcheck::device::discover().map_err(|e| e.to_string())?;
    let device = match &args.device {
        Some(text) => {
            let device: DeviceSpec = text
                .parse()
                .map_err(|e: devcheck::UnknownDevice| e.to_string())?;
            match slots.iter().find(|s| s.device == device) {
                Some(slot) => match &slot.unavailable {
                    Some(reason) => return Err(reason.clone()),
                    None => device,
                },
                None => return Err(format!("{device}: no such device on this machine")),
            }
        }
        None => slots
            .iter()
            .filter(|s| s.unavailable.is_none())
            .map(|s| s.device)
            .find(|d| d.is_accelerator())
            .unwrap_or(DeviceSpec::Cpu),
    };
    let stem = format!("{}-{}", case.name(), device.to_string().replace(':', "-"));
    let (table, json, svg, kind) = match args.epochs {
        Some(epochs) => {
            let case = case.batch_multiplier(args.batch_multiplier);
            let steps = args.steps_per_epoch.unwrap_or(case_steps(&case));
            let result =
                sweep::epoch_sweep(&case, device, epochs, steps).map_err(|e| e.to_string())?;
            (
                sweep::epoch_table(&result),
                sweep::epoch_json(&result),
                sweep::epoch_svg(&result)?,
                "epochs",
            )
        }
        None => {
            let ceiling = args
                .max_memory_mb
                .or((!device.is_accelerator()).then_some(4096))
                .map(|mb| mb << 20);
            let limits = SweepLimits {
                ceiling,
                max_multiplier: args.max_batch_multiplier,
                time_per_size: Duration::from_millis(args.timing_ms),
            };
            let result = sweep::batch_sweep(&case, device, limits).map_err(|e| e.to_string())?;
            (
                sweep::batch_table(&result),
                sweep::batch_json(&result),
                sweep::batch_svg(&result)?,
                "batch",
            )
        }
    };
    print!("{table}");
    let json_path = args.out.join(format!("{stem}-{kind}.json"));
    let svg_path = args.out.join(format!("{stem}-{kind}.svg"));
    let text = serde_json::to_string_pretty(&json).map_err(|e| e.to_string())? + "\n";
    devcheck::files::write_atomically(&json_path, text.as_bytes())
        .map_err(|e| format!("{}: {e}", json_path.display()))?;
    devcheck::files::write_atomically(&svg_path, svg.as_bytes())
        .map_err(|e| format!("{}: {e}", svg_path.display()))?;
    eprintln!("wrote {} and {}", json_path.display(), svg_path.display());
    Ok(())
}

fn case_steps(case: &Case) -> usize {
    case.memory_limits().steps_per_epoch
}
