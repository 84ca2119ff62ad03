//! What devcheck writes and reads without libtorch: matrix reports ([`report`],
//! with each check's figures typed in [`metrics`]; joined across machines and
//! nextest partitions by [`merge`], shown as the device × check table of
//! [`device_matrix`] and the Markdown of [`summary`]),
//! and dump files (safetensors tensors with devcheck's metadata, [`dump`]) with
//! their comparison tensor by tensor with the exact semantics of PyTorch's
//! `torch.testing.assert_close` ([`assert_close`], [`compare_files`], and the
//! `compare` command's behaviour in [`cli`]), so that a reviewer merges reports
//! and compares dumps on a machine without libtorch.
//!
//! This crate never depends on tch, torch-sys or libtorch: tensors are host
//! arrays ([`HostTensor`]), and comparisons reproduce libtorch's CPU
//! arithmetic in each dtype.

pub mod assert_close;
pub mod cli;
pub mod compare_files;
pub mod device_matrix;
pub mod dtype;
pub mod dump;
pub mod exit;
pub mod files;
mod float8;
pub mod merge;
pub mod metrics;
pub mod python;
pub mod report;
pub mod snapshots;
pub mod summary;
pub mod sweep_options;
pub mod tensor;

pub use assert_close::{compare, isclose, CompareError, Comparison, Tolerance};
pub use dtype::{DType, Float8Format, ScalarType};
pub use tensor::{HostTensor, Values};
