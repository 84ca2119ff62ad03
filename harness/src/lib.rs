//! devcheck: a device-correctness test matrix for tch (libtorch) training code.
//!
//! It answers, for CPU, every CUDA device and Apple MPS: does this training step
//! really run where I think, agree with the CPU, get timed honestly, avoid hidden
//! host syncs and operator fallbacks, and keep its memory flat? The facilities tch
//! lacks (device synchronize, allocator statistics, device events, CUDA
//! sync-debug mode, warning capture, the op observer) come from a small C++ shim;
//! the op observer watches every op a step runs, on every device.
//!
//! A test target needs [`run`] and what a case is made of: [`Case`], [`Batch`],
//! [`Model`], [`StepOutput`] (with [`Tolerance`] and [`MemoryLimits`] for its
//! settings). The documented extension points are [`readbacks`] (reads marked
//! as intended), [`optim`] (optimizers whose state devcheck can inspect),
//! [`init`], and [`run_with`] with [`Options`] for a harness that sets options
//! in code. Everything else is the harness's own.

mod case;
#[doc(hidden)] // the built-in cases, for this repository's devcheck-matrix binary
pub mod cases;
mod cause;
mod checks;
mod cli;
mod compare;
mod device;
mod dump;
mod environment;
mod error;
mod observer;
pub mod optim;
pub mod readbacks;
mod report;
mod runner;
mod shim;
mod sweep;
mod trainer;
mod version;

use std::sync::{Mutex, MutexGuard, OnceLock};

#[doc(hidden)] // a planted fault's kind, for the built-in cases
pub use case::Fault;
pub use case::{Batch, Case, MemoryLimits, Model, Named, StepOutput};
pub use checks::timing::TimingBudget;
pub use compare::Tolerance;
/// Result files written whole or not at all (shared with the tools that read them).
pub use devcheck_report::files;
/// The formats of `--summary` ([`Options::summary`]).
pub use devcheck_report::summary::SummaryFormat;
pub use device::{DeviceSpec, UnknownDevice};
pub use runner::{run_with, NoTests, Options, OptionsError};
pub use shim::{CudaLibrary, ShimError};

/// Runs `cases` as the test binary's command line asks: the matrix (libtest's
/// interface and devcheck's options, see [`Options`]), or one of its verbs
/// (`sweep`, `doctor`, `compare`, `observer-cost`, `cases`). Call it from
/// `main` of a `harness = false` test target.
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
