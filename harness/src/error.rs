//! Why a trial could not reach a verdict.

use std::sync::Arc;

use crate::compare::CompareError;
use crate::dump::DumpError;
use crate::shim::ShimError;

/// What stopped a trial before its check could conclude.
#[derive(Debug, thiserror::Error)]
pub enum TrialError {
    /// libtorch raised an error.
    #[error("{}", crate::cause::from_tch(.0))]
    Torch(#[from] tch::TchError),
    /// A shim call failed.
    #[error("{0}")]
    Shim(#[from] ShimError),
    /// The op observer failed.
    #[error("{0}")]
    Observer(#[from] crate::observer::ObserverError),
    /// The step panicked: the panic's one-line cause, with the user's line.
    #[error("{0}")]
    Panicked(#[from] crate::cause::Panic),
    /// A libtorch error the step returned, at the line the observer found for it.
    #[error("at {site}: {error}")]
    At {
        /// The user's line and the call made there.
        site: String,
        /// The error.
        error: Box<TrialError>,
    },
    /// What a shared run of the case (initial weights, reference, CPU
    /// baseline) failed with, when an earlier trial made it: every trial that
    /// needs the run fails with the same cause.
    #[error("{0}")]
    Shared(Arc<TrialError>),
    /// The float64 (or `Case::reference_dtype`) reference run on the CPU failed,
    /// while the step itself ran in the case's dtype on `device`.
    #[error(
        "the {reference} reference run on the CPU failed (the step itself ran in {dtype} on \
         {device}): {error}; if the step makes {dtype} tensors itself (tch's `onehot` is always \
         float32), set `Case::reference_dtype(Kind::Float)`"
    )]
    Reference {
        /// The reference dtype's name.
        reference: &'static str,
        /// The case's dtype's name.
        dtype: &'static str,
        /// The device the step ran on.
        device: crate::device::DeviceSpec,
        /// Why the reference run failed.
        error: Box<TrialError>,
    },
    /// Two tensors could not be compared.
    #[error("comparing `{name}`: {error}")]
    Compare {
        /// The tensor.
        name: String,
        /// Why.
        error: CompareError,
    },
    /// The step fails with its inputs in other memory layouts, even with the
    /// inputs it refuses alone kept as they were.
    #[error("with its inputs in other memory layouts the step fails: {0}")]
    Relaid(Box<TrialError>),
    /// `--dump` could not write the case's tensors.
    #[error("cannot write the dump: {0}")]
    Dump(#[from] DumpError),
    /// The case itself is inconsistent.
    #[error("{0}")]
    Case(String),
}
