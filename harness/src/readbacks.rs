//! Readbacks: tracked host reads. Use these wrappers for every read of device
//! data in a step (`readbacks::scalar_f64(&loss)?` instead of
//! `loss.double_value(&[])`); the check counts them per step, records where
//! they are, fails over the case's budget, and snapshots the sites so a pull
//! request that adds a read to the hot path shows up in review. On CUDA,
//! sync-debug mode also catches the syncs no wrapper saw.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::panic::Location;
use std::path::PathBuf;

use serde_json::json;
use tch::{TchError, Tensor};

use crate::case::Case;
use crate::check::Verdict;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::runner::CaseState;
use crate::shim::{self, SyncDebugMode, WarningCapture};
use crate::trainer::Trainer;

/// One tracked host read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Readback {
    /// `file:line:column` of the call.
    pub site: String,
    /// Which wrapper read (`scalar_f64`, `vec_f32`, …).
    pub what: &'static str,
}

thread_local! {
    static RECORDER: RefCell<Option<Vec<Readback>>> = const { RefCell::new(None) };
    static SYNC_DEBUG_ON: RefCell<bool> = const { RefCell::new(false) };
}

fn tracked<T>(what: &'static str, at: &Location<'_>, read: impl FnOnce() -> T) -> T {
    RECORDER.with(|r| {
        if let Some(list) = r.borrow_mut().as_mut() {
            list.push(Readback {
                site: format!("{}:{}:{}", at.file(), at.line(), at.column()),
                what,
            });
        }
    });
    // A tracked read is not an untracked sync: pause sync-debug mode around it.
    if SYNC_DEBUG_ON.with(|on| *on.borrow()) {
        let previous = shim::set_sync_debug_mode(SyncDebugMode::Off).ok();
        let value = read();
        if let Some(previous) = previous {
            let _ = shim::set_sync_debug_mode(previous);
        }
        value
    } else {
        read()
    }
}

/// Reads a one-element tensor as `f64` (a tracked `double_value`).
#[track_caller]
pub fn scalar_f64(tensor: &Tensor) -> Result<f64, TchError> {
    tracked("scalar_f64", Location::caller(), || {
        tensor.f_double_value(&[])
    })
}

/// Reads a one-element tensor as `i64` (a tracked `int64_value`).
#[track_caller]
pub fn scalar_i64(tensor: &Tensor) -> Result<i64, TchError> {
    tracked("scalar_i64", Location::caller(), || {
        tensor.f_int64_value(&[])
    })
}

/// Copies a tensor's values to a `Vec<f32>` (a tracked bulk read).
#[track_caller]
pub fn vec_f32(tensor: &Tensor) -> Result<Vec<f32>, TchError> {
    tracked("vec_f32", Location::caller(), || {
        Vec::<f32>::try_from(&tensor.f_flatten(0, -1)?.f_to_kind(tch::Kind::Float)?)
    })
}

/// Copies a tensor's values to a `Vec<f64>` (a tracked bulk read).
#[track_caller]
pub fn vec_f64(tensor: &Tensor) -> Result<Vec<f64>, TchError> {
    tracked("vec_f64", Location::caller(), || {
        Vec::<f64>::try_from(&tensor.f_flatten(0, -1)?.f_to_kind(tch::Kind::Double)?)
    })
}

/// Copies a tensor's values to a `Vec<i64>` (a tracked bulk read).
#[track_caller]
pub fn vec_i64(tensor: &Tensor) -> Result<Vec<i64>, TchError> {
    tracked("vec_i64", Location::caller(), || {
        Vec::<i64>::try_from(&tensor.f_flatten(0, -1)?.f_to_kind(tch::Kind::Int64)?)
    })
}

/// Copies a tensor to the CPU (a tracked `to_device(Device::Cpu)`).
#[track_caller]
pub fn to_host(tensor: &Tensor) -> Result<Tensor, TchError> {
    tracked("to_host", Location::caller(), || {
        tensor.f_to_device(tch::Device::Cpu)
    })
}

/// Records the tracked reads made while `body` runs on this thread.
pub fn record<T>(body: impl FnOnce() -> T) -> (T, Vec<Readback>) {
    RECORDER.with(|r| *r.borrow_mut() = Some(Vec::new()));
    let value = body();
    let reads = RECORDER.with(|r| r.borrow_mut().take()).unwrap_or_default();
    (value, reads)
}

/// An untracked synchronization that CUDA's sync-debug mode reported.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Untracked {
    site: String,
    message: String,
}

/// Runs `body` with CUDA sync-debug mode on (warn), returning the syncs it caught.
fn with_sync_debug<T>(body: impl FnOnce() -> T) -> Result<(T, Vec<Untracked>), TrialError> {
    let capture = WarningCapture::start()?;
    let previous = shim::set_sync_debug_mode(SyncDebugMode::Warn)?;
    SYNC_DEBUG_ON.with(|on| *on.borrow_mut() = true);
    let value = body();
    SYNC_DEBUG_ON.with(|on| *on.borrow_mut() = false);
    shim::set_sync_debug_mode(previous)?;
    let untracked = capture
        .warnings()
        .into_iter()
        .filter(|w| w.message.contains("synchroniz"))
        .map(|w| Untracked {
            site: w
                .caller
                .unwrap_or_else(|| "unknown (no Rust frame found)".to_owned()),
            message: crate::cause::torch_message(&w.message),
        })
        .collect();
    Ok((value, untracked))
}

/// Steps measured by the check (after one warm-up step).
const MEASURED_STEPS: u64 = 3;

/// Counts host reads per step against the budget and snapshots their sites.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    trainer.run_step(0)?;
    let sync_debug = matches!(device, DeviceSpec::Cuda(_));
    let mut per_step = Vec::new();
    let mut sites: BTreeMap<(String, &'static str), usize> = BTreeMap::new();
    let mut untracked_sites: BTreeMap<String, usize> = BTreeMap::new();
    for step in 1..=MEASURED_STEPS {
        let batch = trainer.batch(step)?;
        let mut run = || record(|| trainer.step(&batch));
        let ((result, reads), untracked) = if sync_debug {
            with_sync_debug(run)?
        } else {
            (run(), Vec::new())
        };
        result?;
        per_step.push(reads.len() + untracked.len());
        for read in reads {
            *sites.entry((read.site, read.what)).or_default() += 1;
        }
        for sync in untracked {
            *untracked_sites
                .entry(format!("{} ({})", sync.site, sync.message))
                .or_default() += 1;
        }
    }
    let max_per_step = per_step.iter().copied().max().unwrap_or(0);
    let site_lines: Vec<String> = sites
        .iter()
        .map(|((site, what), n)| format!("{site} {what} ×{} per step", n / MEASURED_STEPS as usize))
        .collect();
    let untracked_lines: Vec<String> = untracked_sites
        .iter()
        .map(|(site, n)| format!("{site} untracked ×{} per step", n / MEASURED_STEPS as usize))
        .collect();
    let metrics = json!({
        "readbacks_per_step": per_step,
        "budget": case.readback_budget,
        "sites": site_lines,
        "untracked": untracked_lines,
        "sync_debug": if sync_debug { "cuda sync-debug mode (warn)" } else { "not available on this device" },
    });
    if !untracked_lines.is_empty() {
        return Ok(Verdict::fail(
            format!(
                "{} untracked host sync(s) per step caught by CUDA sync-debug mode, first at {}: \
                 read through devcheck::readbacks so it is counted, or move it out of the step",
                untracked_lines.len(),
                untracked_lines[0]
            ),
            metrics,
        ));
    }
    if max_per_step > case.readback_budget {
        let first = site_lines.first().cloned().unwrap_or_default();
        return Ok(Verdict::fail(
            format!(
                "{max_per_step} host reads per step, budget {}: first at {first}",
                case.readback_budget
            ),
            metrics,
        ));
    }
    if let Some(dir) = state.snapshot_dir() {
        let snapshot = format!(
            "reads per step: {max_per_step} (budget {})\n{}",
            case.readback_budget,
            if site_lines.is_empty() {
                "no host reads".to_owned()
            } else {
                site_lines.join("\n")
            }
        );
        if let Err(diff) = assert_snapshot(dir, case.name(), &snapshot) {
            return Ok(Verdict::fail(diff, metrics));
        }
    }
    Ok(Verdict::pass(
        format!(
            "{max_per_step} host reads per step (budget {})",
            case.readback_budget
        ),
        metrics,
    ))
}

/// Compares the sites with the reviewed snapshot `readbacks__<case>.snap` in `dir`.
fn assert_snapshot(dir: &PathBuf, case: &str, content: &str) -> Result<(), String> {
    let name = format!("readbacks__{case}");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    crate::cause::quietly(|| settings.bind(|| insta::assert_snapshot!(name.as_str(), content)))
        .map_err(|_| {
            format!(
                "readback sites differ from the reviewed snapshot {}/{name}.snap: review the \
                 change (`cargo insta review`, or rerun with INSTA_UPDATE=always to accept it)",
                dir.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrappers_record_their_call_sites() {
        let t = Tensor::from_slice(&[1.5f64, 2.5]);
        let line = line!() + 2;
        let ((), reads) = record(|| {
            let _ = scalar_f64(&t.sum(tch::Kind::Double)).unwrap();
            let _ = vec_f64(&t).unwrap();
        });
        assert_eq!(reads.len(), 2);
        assert_eq!(reads[0].what, "scalar_f64");
        assert!(
            reads[0].site.ends_with(&format!("readbacks.rs:{line}:21")),
            "{}",
            reads[0].site
        );
        assert_eq!(reads[1].what, "vec_f64");
    }

    #[test]
    fn reads_outside_a_recording_are_not_kept() {
        let t = Tensor::from_slice(&[3i64]);
        assert_eq!(scalar_i64(&t).unwrap(), 3);
        let ((), reads) = record(|| {});
        assert!(reads.is_empty());
    }
}
