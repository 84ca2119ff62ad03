//! The op observer's cost on the built-in steps: each timed with and without
//! it, on every device here (or those given), and the ratio printed.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use devcheck::device::{self, DeviceSpec};
use devcheck::observer::cost;

/// Times the built-in steps with and without the op observer.
#[derive(Parser)]
#[command(name = "devcheck-observer-cost")]
struct Args {
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
    json: Option<std::path::PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if let Err(error) = devcheck::init() {
        eprintln!("error: libtorch is not usable: {error}");
        return ExitCode::from(2);
    }
    let devices = if args.devices.is_empty() {
        match device::discover() {
            Ok(found) => found
                .into_iter()
                .filter(|slot| slot.unavailable.is_none())
                .map(|slot| slot.device)
                .collect(),
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
        }
    } else {
        args.devices
    };
    let mut costs = Vec::new();
    for device in devices {
        for case in devcheck::cases::builtin()
            .into_iter()
            .filter(|c| c.fault().is_none())
        {
            let case = case.batch_multiplier(args.batch_multiplier);
            match cost::measure(&case, device, Duration::from_millis(args.ms)) {
                Ok(measured) => costs.push(measured),
                Err(error) => {
                    eprintln!("error: {} on {device}: {error}", case.name());
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    print!("{}", cost::table(&costs));
    if let Some(path) = args.json {
        let text = serde_json::to_string_pretty(&costs).expect("plain data serializes");
        if let Err(error) = devcheck::files::write_atomically(&path, text.as_bytes()) {
            eprintln!("error: cannot write {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    }
    ExitCode::SUCCESS
}
