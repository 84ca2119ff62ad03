//! Intended host reads. The op observer sees every read of device data in a
//! step, wrapped or not; reading through these wrappers
//! (`readbacks::scalar_f64(&loss)?` instead of `loss.double_value(&[])`) marks
//! the read as intended, which the readbacks check shows beside its site. Every
//! read still counts against the case's budget.

use tch::{TchError, Tensor};

// Never inlined, and never a tail call (`black_box` after the call keeps the
// frame): the observer recognizes an intended read by this frame.

/// Reads a one-element tensor as `f64` (an intended `double_value`).
#[inline(never)]
pub fn scalar_f64(tensor: &Tensor) -> Result<f64, TchError> {
    std::hint::black_box(tensor.f_double_value(&[]))
}

/// Reads a one-element tensor as `i64` (an intended `int64_value`).
#[inline(never)]
pub fn scalar_i64(tensor: &Tensor) -> Result<i64, TchError> {
    std::hint::black_box(tensor.f_int64_value(&[]))
}

/// Copies a tensor's values to a `Vec<f32>` (an intended bulk read).
#[inline(never)]
pub fn vec_f32(tensor: &Tensor) -> Result<Vec<f32>, TchError> {
    std::hint::black_box(Vec::<f32>::try_from(
        &tensor.f_flatten(0, -1)?.f_to_kind(tch::Kind::Float)?,
    ))
}

/// Copies a tensor's values to a `Vec<f64>` (an intended bulk read).
#[inline(never)]
pub fn vec_f64(tensor: &Tensor) -> Result<Vec<f64>, TchError> {
    std::hint::black_box(Vec::<f64>::try_from(
        &tensor.f_flatten(0, -1)?.f_to_kind(tch::Kind::Double)?,
    ))
}

/// Copies a tensor's values to a `Vec<i64>` (an intended bulk read).
#[inline(never)]
pub fn vec_i64(tensor: &Tensor) -> Result<Vec<i64>, TchError> {
    std::hint::black_box(Vec::<i64>::try_from(
        &tensor.f_flatten(0, -1)?.f_to_kind(tch::Kind::Int64)?,
    ))
}

/// Copies a tensor to the CPU (an intended `to_device(Device::Cpu)`).
#[inline(never)]
pub fn to_host(tensor: &Tensor) -> Result<Tensor, TchError> {
    std::hint::black_box(tensor.f_to_device(tch::Device::Cpu))
}
