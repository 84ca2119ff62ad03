//! Why a trial could not reach a verdict.

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
    /// The case itself is inconsistent.
    #[error("{0}")]
    Case(String),
}
