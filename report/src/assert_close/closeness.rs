//! Which elements are close: `torch.isclose` (ATen's `TensorCompare.cpp`),
//! element for element, in the compared dtype's own arithmetic.
//!
//! `close = actual == expected`, or both NaN under `equal_nan`; with both
//! tolerances zero that is all. Otherwise also close where
//! `|actual - expected|` is finite and at most `atol + |rtol * expected|`.
//! Integers and bool take the second test in float32 (the default dtype), as
//! isclose casts them: the difference is `float32(actual) - float32(expected)`.

use super::arithmetic::Real;
use super::tolerance::Tolerance;

/// Closeness of two floating-point tensors of the same dtype.
pub(crate) fn close_reals<T: Real>(
    actual: &[T],
    expected: &[T],
    tolerance: Tolerance,
) -> Vec<bool> {
    actual
        .iter()
        .zip(expected)
        .map(|(&a, &e)| {
            let equal = a.equals(e) || (tolerance.equal_nan && a.is_nan() && e.is_nan());
            if equal || tolerance.is_exact() {
                return equal;
            }
            let allowed = e
                .times_scalar(tolerance.rtol)
                .abs()
                .plus_scalar(tolerance.atol);
            let error = a.minus(e).abs();
            error.is_finite() && error.at_most(allowed)
        })
        .collect()
}

/// Closeness of two integer (or bool) tensors, widened to int64.
pub(crate) fn close_integers(actual: &[i64], expected: &[i64], tolerance: Tolerance) -> Vec<bool> {
    actual
        .iter()
        .zip(expected)
        .map(|(&a, &e)| {
            if a == e || tolerance.is_exact() {
                return a == e;
            }
            let (a, e) = (f32::from_integer(a), f32::from_integer(e));
            let allowed = e
                .times_scalar(tolerance.rtol)
                .abs()
                .plus_scalar(tolerance.atol);
            // Finite: float32 holds every int64 difference.
            (a - e).abs() <= allowed
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    fn tolerance(rtol: f64, atol: f64) -> Tolerance {
        Tolerance {
            rtol,
            atol,
            equal_nan: false,
        }
    }

    #[test]
    fn float32_boundary_at_one() {
        // At expected = 1, float32 allows 1e-5 + 1.3e-6 = 1.13e-5: 94 ulps of 1 pass, 95 do not.
        let ulp = f32::EPSILON;
        let actual = [1.0 + 94.0 * ulp, 1.0 + 95.0 * ulp, 1.0 - 191.0 * ulp / 2.0];
        let close = close_reals(&actual, &[1.0; 3], tolerance(1.3e-6, 1e-5));
        assert_eq!(close, [true, false, false]);
    }

    #[test]
    fn float16_allowance_is_rounded_to_float16() {
        // rtol * 1 = 0.001f rounds to float16 0.0010004043579101562; plus
        // float16(1e-5) rounds to 0.0010108947753906250, a sum in float16.
        let one = f16::ONE;
        let near = |steps: f32| f16::from_f32(1.0 + steps * 2f32.powi(-10));
        let close = close_reals(&[near(1.0), near(2.0)], &[one, one], tolerance(1e-3, 1e-5));
        // 1 + 2^-10 = 1.0009765625 is within; 1 + 2^-9 is not.
        assert_eq!(close, [true, false]);
    }

    #[test]
    fn bfloat16_compares_in_bfloat16() {
        let e = bf16::from_f32(3.0);
        let a = bf16::from_f32(3.0 + 2f32.powi(-6) * 3.0);
        // rtol 0.016 * 3 = 0.048 rounds to bfloat16 0.048095703125; |a - e| = 0.046875.
        assert_eq!(close_reals(&[a], &[e], tolerance(1.6e-2, 1e-5)), [true]);
    }

    #[test]
    fn nan_is_close_to_nan_only_with_equal_nan() {
        let nan = [f32::NAN, 1.0];
        assert_eq!(
            close_reals(&nan, &nan, tolerance(1.3e-6, 1e-5)),
            [false, true]
        );
        let lenient = tolerance(1.3e-6, 1e-5).with_equal_nan(true);
        assert_eq!(close_reals(&nan, &nan, lenient), [true, true]);
        assert_eq!(close_reals(&[f32::NAN], &[1.0], lenient), [false]);
    }

    #[test]
    fn infinities_are_close_only_when_equal() {
        let inf = f64::INFINITY;
        let loose = tolerance(1.0, 1.0);
        assert_eq!(
            close_reals(&[inf, -inf, inf, 1.0], &[inf, -inf, -inf, inf], loose),
            [true, true, false, false]
        );
    }

    #[test]
    fn zero_tolerance_is_equality() {
        let exact = tolerance(0.0, 0.0);
        assert_eq!(
            close_reals(&[0.0f64, -0.0, 1.0], &[-0.0, 0.0, 1.0 + 1e-16], exact),
            [true, true, true]
        );
        assert_eq!(
            close_reals(&[1.0f64], &[1.0 + f64::EPSILON], exact),
            [false]
        );
        assert_eq!(
            close_integers(&[3, i64::MAX], &[3, i64::MAX - 1], exact),
            [true, false]
        );
    }

    #[test]
    fn integers_with_a_tolerance_are_compared_in_float32() {
        let loose = tolerance(0.01, 0.001);
        assert_eq!(
            close_integers(&[100, 101, 102], &[100, 100, 100], loose),
            [true, true, false]
        );
        // float32 cannot tell 2^24 + 1 from 2^24, so isclose calls them close.
        assert_eq!(
            close_integers(&[16_777_217], &[16_777_216], tolerance(0.0, 0.5)),
            [true]
        );
    }
}
