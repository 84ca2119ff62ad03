//! Memory: live and peak memory per step, and growth across epochs with the
//! caches emptied at each boundary. Accelerators are measured by their caching
//! allocator; the CPU by the exact bytes of live tensors (libtorch's
//! memory-reporting hook) with the process RSS recorded beside them, since RSS
//! also counts what the C allocator keeps after tensors are freed.

use devcheck_report::metrics::{EpochMemory, MemoryMetrics, StepMemory};

use super::state::CaseState;
use super::Verdict;
use crate::case::Case;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::shim::TensorMemory;
use crate::trainer::Trainer;

/// Bytes in MiB for messages.
pub(crate) fn mib(bytes: u64) -> String {
    format!("{:.2} MiB", bytes as f64 / (1024.0 * 1024.0))
}

/// Resident set size of this process, where the platform tells.
pub fn process_rss() -> Option<u64> {
    memory_stats::memory_stats().map(|s| s.physical_mem as u64)
}

/// Returns freed heap memory to the system, so RSS reflects live memory.
pub(crate) fn trim_host_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Live bytes (current) and the step's peak on `device`, above `baseline`
/// (what the device held before the case was built).
pub(crate) fn measure(
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
            let bytes = tracker.read(device.backend());
            (bytes.current, bytes.peak)
        }
    })
}

/// Growth of live memory from the first epoch's end to the last's, as a fraction.
pub fn growth(first: u64, last: u64) -> f64 {
    (last as f64 - first as f64) / (first.max(1) as f64)
}

/// What [`measure_epochs`] saw, in bytes above the device's memory before the case.
pub(crate) struct MeasuredEpochs {
    /// Device memory before the case was built (0 on the CPU).
    pub baseline: u64,
    /// Memory after every step.
    pub per_step: Vec<StepMemory>,
    /// Memory at every epoch's end, caches emptied.
    pub per_epoch: Vec<EpochMemory>,
}

impl MeasuredEpochs {
    /// Live bytes at each epoch's end.
    pub fn live_bytes(&self) -> Vec<u64> {
        self.per_epoch.iter().map(|epoch| epoch.live).collect()
    }

    /// Growth of live memory from the first epoch's end to the last's.
    pub fn growth(&self) -> f64 {
        let live = self.live_bytes();
        growth(
            live.first().copied().unwrap_or(0),
            live.last().copied().unwrap_or(0),
        )
    }

    /// The highest peak of the steps in `steps`.
    pub fn peak_bytes(steps: &[StepMemory]) -> u64 {
        steps.iter().map(|step| step.peak).max().unwrap_or(0)
    }
}

/// Trains `epochs` × `steps_per_epoch` steps from `weights`, measuring live and
/// peak memory after every step and live memory at every epoch's end.
pub(crate) fn measure_epochs(
    case: &Case,
    device: DeviceSpec,
    weights: &crate::case::Named,
    epochs: usize,
    steps_per_epoch: usize,
) -> Result<MeasuredEpochs, TrialError> {
    // One throwaway step first, so that one-off allocations (library workspaces,
    // kernel caches) land in the baseline rather than in the case's first epoch.
    {
        let mut warm = Trainer::new(case, device, case.kind(), weights)?;
        warm.run_step(0)?;
    }
    device.synchronize()?;
    device.empty_cache()?;
    let baseline = device.memory()?.map_or(0, |stats| stats.allocated_current);
    let tracker = TensorMemory::start()?;
    let mut trainer = Trainer::new(case, device, case.kind(), weights)?;
    let mut per_step = Vec::new();
    let mut per_epoch = Vec::new();
    let mut step = 0u64;
    for _ in 0..epochs {
        for _ in 0..steps_per_epoch {
            device.reset_peak_memory()?;
            tracker.reset_peak();
            trainer.run_step(step)?;
            step += 1;
            let (current, peak) = measure(device, &tracker, baseline)?;
            per_step.push(StepMemory { current, peak });
        }
        device.synchronize()?;
        device.empty_cache()?;
        trim_host_heap();
        let (live, _) = measure(device, &tracker, baseline)?;
        per_epoch.push(EpochMemory {
            live,
            rss: process_rss(),
        });
    }
    Ok(MeasuredEpochs {
        baseline,
        per_step,
        per_epoch,
    })
}

/// How memory is measured on `device`, for reports.
pub fn measured_by(device: DeviceSpec) -> &'static str {
    if device.is_accelerator() {
        "caching allocator, above the device's memory before the case"
    } else {
        "live tensor bytes (libtorch memory hook)"
    }
}

/// Runs the case's epochs and fails when live memory grows beyond its limit.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let limits = case.memory;
    let measured = measure_epochs(
        case,
        device,
        &state.weights()?,
        limits.epochs,
        limits.steps_per_epoch,
    )?;
    let live = measured.live_bytes();
    let (first, last) = (
        live.first().copied().unwrap_or(0),
        live.last().copied().unwrap_or(0),
    );
    let grew = measured.growth();
    let peak = MeasuredEpochs::peak_bytes(&measured.per_step);
    let metrics = MemoryMetrics {
        measured_by: measured_by(device).to_owned(),
        baseline_bytes: measured.baseline,
        per_step: measured.per_step,
        per_epoch: measured.per_epoch,
        peak_bytes: peak,
        growth: grew,
        max_growth: limits.max_growth,
    };
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
