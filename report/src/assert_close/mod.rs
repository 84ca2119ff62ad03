//! Tensor comparison with the semantics of PyTorch's `torch.testing.assert_close`,
//! on host arrays, without libtorch.
//!
//! The verdict and the statistics agree element for element with
//! `torch/testing/_comparison.py` (PyTorch 2.11) on the CPU: default
//! tolerances per dtype (`_DTYPE_PRECISIONS`, [`Tolerance::for_pair`]), dtype
//! promotion before comparing (`TensorLikePair._equalize_attributes`,
//! [`DType::promote`]), closeness as `torch.isclose` computes it in the
//! promoted dtype's own arithmetic ([`isclose`]), and the greatest differences
//! over the mismatched elements only (`make_tensor_mismatch_msg`).
//! Tensors of different dtypes are always promoted, as with `check_dtype=False`.
//! 1-byte floats are compared bitwise, as assert_close does; where assert_close's
//! message then names only the first mismatched index, [`Comparison`] still
//! carries the greatest differences, taken on the values widened exactly to
//! float32 (as devcheck's libtorch-based comparison did).

mod arithmetic;
mod closeness;
mod mismatch;
pub mod non_finite;
mod tolerance;

use half::{bf16, f16};
use serde::{Deserialize, Serialize};
use thiserror::Error;

use self::arithmetic::Real;
use self::mismatch::Greatest;
pub use self::tolerance::Tolerance;
use crate::dtype::{DType, PromotionError};
use crate::python;
use crate::tensor::{HostTensor, Values};

/// The outcome of a comparison and `assert_close`'s mismatch statistics.
///
/// The greatest differences are taken over mismatched elements only, so they are
/// 0 (at the first element) when everything matches. A NaN difference wins the
/// maximum, as `torch.max` propagates NaN. In JSON, non-finite numbers are
/// written as the strings `"nan"`, `"inf"` and `"-inf"` and read back the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// Whether every element is close.
    pub passed: bool,
    /// Number of elements that are not close.
    pub mismatched: u64,
    /// Number of elements compared.
    pub total: u64,
    /// Shape of both tensors.
    pub shape: Vec<usize>,
    /// The dtype both tensors were promoted to and compared in.
    pub dtype: DType,
    /// Greatest `|actual - expected|` over mismatched elements.
    #[serde(with = "non_finite")]
    pub max_abs_diff: f64,
    /// Where `max_abs_diff` is; empty for 0-dim tensors.
    pub max_abs_index: Vec<usize>,
    /// Greatest `|actual - expected| / |expected|` over mismatched elements.
    #[serde(with = "non_finite")]
    pub max_rel_diff: f64,
    /// Where `max_rel_diff` is; empty for 0-dim tensors.
    pub max_rel_index: Vec<usize>,
    /// Relative tolerance used.
    #[serde(with = "non_finite")]
    pub rtol: f64,
    /// Absolute tolerance used.
    #[serde(with = "non_finite")]
    pub atol: f64,
}

/// Why two tensors could not be compared.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CompareError {
    /// The shapes differ, so elements cannot be paired.
    #[error("shape {actual:?} vs expected {expected:?}: compare tensors of the same shape")]
    ShapeMismatch {
        /// Shape of the actual tensor.
        actual: Vec<usize>,
        /// Shape of the expected tensor.
        expected: Vec<usize>,
    },
    /// The dtypes have no common dtype to compare in.
    #[error(transparent)]
    Promotion(#[from] PromotionError),
    /// A tolerance below zero (or NaN), which `torch.isclose` refuses.
    #[error(
        "tolerances must be ≥ 0, as torch.isclose requires: \
         got rtol = {rtol:e} and atol = {atol:e}"
    )]
    NegativeTolerance {
        /// Relative tolerance asked for.
        rtol: f64,
        /// Absolute tolerance asked for.
        atol: f64,
    },
    /// A non-zero tolerance for 1-byte floats, which `assert_close` only compares bitwise.
    #[error("{dtype} tensors are compared bitwise: use rtol = 0 and atol = 0, not rtol = {rtol:e} and atol = {atol:e}")]
    BitwiseOnly {
        /// The 1-byte float dtype.
        dtype: DType,
        /// Relative tolerance asked for.
        rtol: f64,
        /// Absolute tolerance asked for.
        atol: f64,
    },
}

/// Both tensors' values in the dtype they are compared in.
enum Promoted {
    /// Integers and bool, compared as int64 (exact for every one of them).
    Integers(Vec<i64>, Vec<i64>),
    Float16(Vec<f16>, Vec<f16>),
    BFloat16(Vec<bf16>, Vec<bf16>),
    Float32(Vec<f32>, Vec<f32>),
    Float64(Vec<f64>, Vec<f64>),
}

/// Compares `actual` with `expected` as `torch.testing.assert_close` does.
///
/// Both tensors are promoted to a common dtype and compared in its arithmetic:
/// float16 differences are rounded to float16, integer ones taken in int64,
/// exactly as `assert_close` does on the CPU.
pub fn compare(
    actual: &HostTensor,
    expected: &HostTensor,
    tolerance: Tolerance,
) -> Result<Comparison, CompareError> {
    let dtype = check(actual, expected, tolerance)?;
    let mut result = Comparison {
        passed: true,
        mismatched: 0,
        total: actual.len() as u64,
        shape: actual.shape().to_vec(),
        dtype,
        max_abs_diff: 0.0,
        max_abs_index: Vec::new(),
        max_rel_diff: 0.0,
        max_rel_index: Vec::new(),
        rtol: tolerance.rtol,
        atol: tolerance.atol,
    };
    if actual.is_empty() {
        return Ok(result);
    }
    let promoted = promote(actual.values(), expected.values(), dtype);
    let matches = promoted.close(tolerance);
    result.mismatched = matches.iter().filter(|matched| !**matched).count() as u64;
    result.passed = result.mismatched == 0;
    if result.passed {
        result.max_abs_index = unravel(0, &result.shape);
        result.max_rel_index = result.max_abs_index.clone();
        return Ok(result);
    }

    if result.shape.is_empty() {
        (result.max_abs_diff, result.max_rel_diff) = promoted.scalar_differences();
        return Ok(result);
    }

    let greatest = promoted.greatest_differences(&matches);
    result.max_abs_diff = greatest.abs_diff;
    result.max_abs_index = unravel(greatest.abs_index, &result.shape);
    result.max_rel_diff = greatest.rel_diff;
    result.max_rel_index = unravel(greatest.rel_index, &result.shape);
    Ok(result)
}

/// Which elements are close, in row-major order: `torch.isclose` on the two
/// tensors promoted to their common dtype, as assert_close calls it.
pub fn isclose(
    actual: &HostTensor,
    expected: &HostTensor,
    tolerance: Tolerance,
) -> Result<Vec<bool>, CompareError> {
    let dtype = check(actual, expected, tolerance)?;
    Ok(promote(actual.values(), expected.values(), dtype).close(tolerance))
}

/// What must hold before elements are compared; returns the dtype they are compared in.
fn check(
    actual: &HostTensor,
    expected: &HostTensor,
    tolerance: Tolerance,
) -> Result<DType, CompareError> {
    if actual.shape() != expected.shape() {
        return Err(CompareError::ShapeMismatch {
            actual: actual.shape().to_vec(),
            expected: expected.shape().to_vec(),
        });
    }
    let dtype = actual.dtype().promote(expected.dtype())?;
    if !(tolerance.rtol >= 0.0 && tolerance.atol >= 0.0) {
        return Err(CompareError::NegativeTolerance {
            rtol: tolerance.rtol,
            atol: tolerance.atol,
        });
    }
    // assert_close refuses a tolerance for 1-byte floats before it looks at a value.
    if matches!(dtype, DType::Float8(_)) && !tolerance.is_exact() {
        return Err(CompareError::BitwiseOnly {
            dtype,
            rtol: tolerance.rtol,
            atol: tolerance.atol,
        });
    }
    Ok(dtype)
}

impl Promoted {
    /// `torch.isclose` element by element.
    fn close(&self, tolerance: Tolerance) -> Vec<bool> {
        match self {
            Promoted::Integers(a, e) => closeness::close_integers(a, e, tolerance),
            Promoted::Float16(a, e) => closeness::close_reals(a, e, tolerance),
            Promoted::BFloat16(a, e) => closeness::close_reals(a, e, tolerance),
            Promoted::Float32(a, e) => closeness::close_reals(a, e, tolerance),
            Promoted::Float64(a, e) => closeness::close_reals(a, e, tolerance),
        }
    }

    /// The differences of two 0-dim tensors, as Python numbers.
    fn scalar_differences(&self) -> (f64, f64) {
        match self {
            Promoted::Integers(a, e) => mismatch::scalar_integers(a[0], e[0]),
            Promoted::Float16(a, e) => mismatch::scalar_reals(a[0].to_f64(), e[0].to_f64()),
            Promoted::BFloat16(a, e) => mismatch::scalar_reals(a[0].to_f64(), e[0].to_f64()),
            Promoted::Float32(a, e) => mismatch::scalar_reals(a[0].to_f64(), e[0].to_f64()),
            Promoted::Float64(a, e) => mismatch::scalar_reals(a[0], e[0]),
        }
    }

    /// The greatest differences over the elements `matches` marks false.
    fn greatest_differences(&self, matches: &[bool]) -> Greatest {
        match self {
            Promoted::Integers(a, e) => mismatch::greatest_integers(a, e, matches),
            Promoted::Float16(a, e) => mismatch::greatest_reals(a, e, matches),
            Promoted::BFloat16(a, e) => mismatch::greatest_reals(a, e, matches),
            Promoted::Float32(a, e) => mismatch::greatest_reals(a, e, matches),
            Promoted::Float64(a, e) => mismatch::greatest_reals(a, e, matches),
        }
    }
}

impl Comparison {
    /// The statistics lines of `assert_close`'s failure message (without its header).
    ///
    /// For 0-dim tensors these are the "Absolute difference" and "Relative
    /// difference" lines, without the "Expected … but got …" line. A passing
    /// comparison describes itself as "Mismatched elements: 0 / N (0.0%)".
    pub fn describe(&self) -> String {
        if self.passed {
            return format!("Mismatched elements: 0 / {} (0.0%)", self.total);
        }
        // With both tolerances zero assert_close checks equality and names no allowance.
        let allowance = |tolerance: f64| {
            if self.rtol == 0.0 && self.atol == 0.0 {
                String::new()
            } else {
                format!(" (up to {} allowed)", python::float_repr(tolerance))
            }
        };
        // Integer differences are Python ints in assert_close, printed without ".0".
        let abs_diff = if self.dtype.is_floating_point() {
            python::float_repr(self.max_abs_diff)
        } else {
            format!("{}", self.max_abs_diff as i64)
        };
        let rel_diff = python::float_repr(self.max_rel_diff);
        if self.shape.is_empty() {
            return format!(
                "Absolute difference: {abs_diff}{}\nRelative difference: {rel_diff}{}",
                allowance(self.atol),
                allowance(self.rtol),
            );
        }
        // Python's f"{x:.1%}" multiplies by 100 first, then rounds half to even as Rust does.
        let percent = self.mismatched as f64 / self.total as f64 * 100.0;
        format!(
            "Mismatched elements: {} / {} ({percent:.1}%)\n\
             Greatest absolute difference: {abs_diff} at index {}{}\n\
             Greatest relative difference: {rel_diff} at index {}{}",
            self.mismatched,
            self.total,
            python::tuple_repr(&self.max_abs_index),
            allowance(self.atol),
            python::tuple_repr(&self.max_rel_index),
            allowance(self.rtol),
        )
    }
}

/// Both tensors' values converted to `dtype` (their promotion), as
/// `Tensor.to(dtype)` converts them; 1-byte floats are widened to float32,
/// which keeps equality and NaN-ness, all that a bitwise comparison reads.
fn promote(actual: &Values, expected: &Values, dtype: DType) -> Promoted {
    match dtype {
        DType::Bool | DType::UInt8 | DType::Int8 | DType::Int16 | DType::Int32 | DType::Int64 => {
            Promoted::Integers(integers(actual), integers(expected))
        }
        DType::Float16 => Promoted::Float16(reals(actual), reals(expected)),
        DType::BFloat16 => Promoted::BFloat16(reals(actual), reals(expected)),
        DType::Float32 | DType::Float8(_) => Promoted::Float32(reals(actual), reals(expected)),
        DType::Float64 => Promoted::Float64(reals(actual), reals(expected)),
    }
}

/// Integer or bool values as int64; only called when the promoted dtype is an integer one.
fn integers(values: &Values) -> Vec<i64> {
    match values {
        Values::Bool(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Values::UInt8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Values::Int8(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Values::Int16(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Values::Int32(v) => v.iter().map(|&x| i64::from(x)).collect(),
        Values::Int64(v) => v.clone(),
        Values::Float16(_)
        | Values::BFloat16(_)
        | Values::Float32(_)
        | Values::Float64(_)
        | Values::Float8(..) => unreachable!("floats never promote to an integer dtype"),
    }
}

/// Values converted to the floating-point dtype `T` they promote to.
fn reals<T: Real>(values: &Values) -> Vec<T> {
    match values {
        Values::Bool(v) => v.iter().map(|&x| T::from_integer(i64::from(x))).collect(),
        Values::UInt8(v) => v.iter().map(|&x| T::from_integer(i64::from(x))).collect(),
        Values::Int8(v) => v.iter().map(|&x| T::from_integer(i64::from(x))).collect(),
        Values::Int16(v) => v.iter().map(|&x| T::from_integer(i64::from(x))).collect(),
        Values::Int32(v) => v.iter().map(|&x| T::from_integer(i64::from(x))).collect(),
        Values::Int64(v) => v.iter().map(|&x| T::from_integer(x)).collect(),
        Values::Float16(v) => v.iter().map(|&x| T::from_exact(f64::from(x))).collect(),
        Values::BFloat16(v) => v.iter().map(|&x| T::from_exact(f64::from(x))).collect(),
        Values::Float32(v) => v.iter().map(|&x| T::from_exact(f64::from(x))).collect(),
        Values::Float64(v) => v.iter().map(|&x| T::from_exact(x)).collect(),
        Values::Float8(format, bits) => bits
            .iter()
            .map(|&x| T::from_exact(f64::from(crate::float8::to_f32(*format, x))))
            .collect(),
    }
}

/// A flat row-major index as a multi-index of `shape` (empty for 0-dim tensors).
fn unravel(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for (slot, &size) in index.iter_mut().zip(shape).rev() {
        *slot = flat % size;
        flat /= size;
    }
    index
}

#[cfg(test)]
mod tests;
