//! Memory: live and peak memory per step, and growth across epochs with the
//! caches emptied at each boundary. Accelerators are measured by their caching
//! allocator; the CPU by the exact bytes of live tensors (libtorch's
//! memory-reporting hook) with the process RSS recorded beside them, since RSS
//! also counts what the C allocator keeps after tensors are freed.

use serde_json::json;

use crate::case::Case;
use crate::check::Verdict;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::runner::CaseState;
use crate::shim::{Backend, TensorMemory};
use crate::trainer::Trainer;

/// Bytes in MiB for messages.
fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Resident set size of this process, where the platform tells.
pub fn process_rss() -> Option<u64> {
    memory_stats::memory_stats().map(|s| s.physical_mem as u64)
}

/// Returns freed heap memory to the system, so RSS reflects live memory.
fn trim_host_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Live bytes (current) and the step's peak on `device`, above `baseline`
/// (what the device held before the case was built).
fn measure(
    device: DeviceSpec,
    tracker: &TensorMemory,
    baseline: u64,
) -> Result<(u64, u64), TrialError> {
    Ok(match device.memory()? {
        Some(stats) => (
            stats.allocated_current.saturating_sub(baseline),
            stats
                .allocated_peak
                .unwrap_or(stats.allocated_current)
                .saturating_sub(baseline),
        ),
        None => {
            let bytes = tracker.read(Backend::Cpu);
            (bytes.current, bytes.peak)
        }
    })
}

/// Growth of live memory from the first epoch's end to the last's, as a fraction.
pub fn growth(first: u64, last: u64) -> f64 {
    (last as f64 - first as f64) / (first.max(1) as f64)
}

/// Runs the case's epochs and fails when live memory grows beyond its limit.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let limits = case.memory;
    // One throwaway step first, so that one-off allocations (library workspaces,
    // kernel caches) land in the baseline rather than in the case's first epoch.
    {
        let mut warm = Trainer::new(case, device, case.kind(), &state.weights()?)?;
        warm.run_step(0)?;
    }
    device.synchronize()?;
    device.empty_cache()?;
    let baseline = device.memory()?.map_or(0, |stats| stats.allocated_current);
    let tracker = TensorMemory::start()?;
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    let mut steps = Vec::new();
    let mut epochs = Vec::new();
    let mut step = 0u64;
    for _ in 0..limits.epochs {
        for _ in 0..limits.steps_per_epoch {
            device.reset_peak_memory()?;
            tracker.reset_peak();
            trainer.run_step(step)?;
            step += 1;
            let (current, peak) = measure(device, &tracker, baseline)?;
            steps.push(json!({"current": current, "peak": peak}));
        }
        device.synchronize()?;
        device.empty_cache()?;
        trim_host_heap();
        let (live, _) = measure(device, &tracker, baseline)?;
        epochs.push(json!({"live": live, "rss": process_rss()}));
    }
    let live: Vec<u64> = epochs.iter().filter_map(|e| e["live"].as_u64()).collect();
    let (first, last) = (
        live.first().copied().unwrap_or(0),
        live.last().copied().unwrap_or(0),
    );
    let grew = growth(first, last);
    let peak = steps
        .iter()
        .filter_map(|s| s["peak"].as_u64())
        .max()
        .unwrap_or(0);
    let metrics = json!({
        "measured_by": if device.is_accelerator() { "caching allocator, above the device's memory before the case" } else { "live tensor bytes (libtorch memory hook)" },
        "baseline_bytes": baseline,
        "per_step": steps,
        "per_epoch": epochs,
        "peak_bytes": peak,
        "growth": grew,
        "max_growth": limits.max_growth,
    });
    let summary = format!(
        "live memory {} → {} over {} epochs ({:+.1} %), peak {} per step",
        mib(first),
        mib(last),
        limits.epochs,
        grew * 100.0,
        mib(peak)
    );
    Ok(if grew > limits.max_growth {
        Verdict::fail(
            format!(
                "{summary}: more than the {:.0} % allowed — are tensors (or their autograd graphs) kept across steps?",
                limits.max_growth * 100.0
            ),
            metrics,
        )
    } else {
        Verdict::pass(summary, metrics)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_is_relative_to_the_first_epoch() {
        assert_eq!(growth(100, 126), 0.26);
        assert_eq!(growth(100, 90), -0.1);
        assert_eq!(growth(0, 0), 0.0);
    }
}
