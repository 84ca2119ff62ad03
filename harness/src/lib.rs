//! devcheck: a device-correctness test matrix for tch (libtorch) training code.
//!
//! It answers, for CPU, every CUDA device and Apple MPS: does this training step
//! really run where I think, agree with the CPU, get timed honestly, avoid hidden
//! host syncs and operator fallbacks, and keep its memory flat? The facilities tch
//! lacks (device synchronize, allocator statistics, device events, CUDA
//! sync-debug mode, warning capture, the op observer) come from a small C++ shim
//! in [`shim`]; [`observer`] watches every op a step runs, on every device.

pub mod case;
pub mod cases;
mod cause;
pub mod checks;
pub mod cli;
pub mod compare;
pub mod device;
pub mod dump;
pub mod environment;
mod error;
pub mod observer;
pub mod optim;
pub mod readbacks;
pub mod report;
pub mod runner;
pub mod shim;
pub mod sweep;
mod trainer;
pub mod version;

use std::sync::{Mutex, MutexGuard, OnceLock};

pub use case::{Batch, Case, Fault, MemoryLimits, Model, StepOutput};
pub use checks::{Check, Verdict};
/// Result files written whole or not at all (shared with the tools that read them).
pub use devcheck_report::files;
pub use device::{DeviceSlot, DeviceSpec, UnknownDevice};
pub use environment::Environment;
pub use error::TrialError;
pub use runner::{run_with, Options};
pub use shim::{Backend, CudaLibrary, ShimError};

/// Runs `cases` as the test binary's command line asks: the matrix (libtest's
/// interface and devcheck's options, see [`runner`]), or one of the verbs of
/// [`cli`] (`sweep`, `doctor`, `compare`, `observer-cost`, `cases`). Call it
/// from `main` of a `harness = false` test target.
pub fn run(cases: Vec<Case>) -> std::process::ExitCode {
    cli::main(cases)
}

/// Prepares libtorch for devcheck: loads `libtorch_cuda` if the linker dropped
/// it. Idempotent; every devcheck entry point calls it first, and programs that
/// query libtorch (for example `tch::Cuda::is_available`) before using devcheck
/// should call it before that.
pub fn init() -> Result<CudaLibrary, ShimError> {
    static STATE: OnceLock<Result<CudaLibrary, ShimError>> = OnceLock::new();
    STATE.get_or_init(shim::ensure_cuda_loaded).clone()
}

/// Locks a mutex, taking it over if a panicking thread poisoned it: a trial
/// that panics must not take its siblings down.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
