//! What devcheck writes and reads without libtorch. For now that is dump files
//! (safetensors tensors with devcheck's metadata, [`dump`]) and their
//! comparison tensor by tensor with the exact semantics of PyTorch's
//! `torch.testing.assert_close` ([`assert_close`], [`compare_files`], and the
//! `compare` command's behaviour in [`cli`]), so that a reviewer compares two
//! dumps on a machine without libtorch. Reports will move in later.
//!
//! This crate never depends on tch, torch-sys or libtorch: tensors are host
//! arrays ([`HostTensor`]), and comparisons reproduce libtorch's CPU
//! arithmetic in each dtype.

pub mod assert_close;
pub mod cli;
pub mod compare_files;
pub mod dtype;
pub mod dump;
mod float8;
pub mod python;
pub mod tensor;

pub use assert_close::{compare, isclose, CompareError, Comparison, Tolerance};
pub use dtype::{DType, Float8Format};
pub use tensor::{HostTensor, Values};
