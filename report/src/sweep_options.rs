//! The sweep's options, one definition for both sides of the command line:
//! a devcheck test binary parses them (`<binary> sweep …`) and `cargo devcheck
//! sweep` takes them in any order beside its own and hands them on.

use std::ffi::OsString;

/// How a sweep runs: the device, its limits, or memory over epochs instead.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct SweepOptions {
    /// The device (cpu, cuda:N, mps; default: the first accelerator, else cpu).
    #[arg(long, value_name = "DEVICE")]
    pub device: Option<String>,
    /// Stop before a size whose peak memory would pass this many MiB
    /// (default: 4096 on the CPU; none on an accelerator, which stops at out of memory).
    #[arg(long, value_name = "MIB")]
    pub max_memory_mb: Option<u64>,
    /// Largest batch multiplier tried (default 4096).
    #[arg(long, value_name = "N")]
    pub max_batch_multiplier: Option<i64>,
    /// Milliseconds spent timing each size (default 500).
    #[arg(long, value_name = "MS")]
    pub timing_ms: Option<u64>,
    /// Record memory over this many epochs instead of sweeping the batch.
    #[arg(long, value_name = "N")]
    pub epochs: Option<usize>,
    /// Steps per epoch with `--epochs` (default: the case's memory setting).
    #[arg(long, value_name = "N")]
    pub steps_per_epoch: Option<usize>,
    /// The batch multiplier used with `--epochs` (default 1).
    #[arg(long, value_name = "N")]
    pub batch_multiplier: Option<i64>,
}

impl SweepOptions {
    /// The options as arguments that parse back to them.
    pub fn to_args(&self) -> Vec<OsString> {
        let mut args = Vec::new();
        let mut push = |flag: &str, value: Option<String>| {
            if let Some(value) = value {
                args.push(OsString::from(flag));
                args.push(OsString::from(value));
            }
        };
        push("--device", self.device.clone());
        push("--max-memory-mb", self.max_memory_mb.map(|n| n.to_string()));
        push(
            "--max-batch-multiplier",
            self.max_batch_multiplier.map(|n| n.to_string()),
        );
        push("--timing-ms", self.timing_ms.map(|n| n.to_string()));
        push("--epochs", self.epochs.map(|n| n.to_string()));
        push(
            "--steps-per-epoch",
            self.steps_per_epoch.map(|n| n.to_string()),
        );
        push(
            "--batch-multiplier",
            self.batch_multiplier.map(|n| n.to_string()),
        );
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Wrapper {
        #[command(flatten)]
        options: SweepOptions,
    }

    #[test]
    fn options_handed_on_parse_back_to_themselves() {
        let options = SweepOptions {
            device: Some("cuda:1".into()),
            max_memory_mb: Some(2048),
            max_batch_multiplier: Some(64),
            timing_ms: Some(100),
            epochs: Some(3),
            steps_per_epoch: Some(7),
            batch_multiplier: Some(2),
        };
        let args = std::iter::once(OsString::from("sweep")).chain(options.to_args());
        assert_eq!(Wrapper::try_parse_from(args).unwrap().options, options);
        let none = SweepOptions::default();
        assert!(none.to_args().is_empty());
    }
}
