//! The greatest differences over the mismatched elements, as assert_close's
//! failure message computes them (`make_tensor_mismatch_msg` for tensors,
//! `make_scalar_mismatch_msg` for 0-dim ones).
//!
//! For tensors: `|actual - expected|` in the compared dtype (integers and bool
//! in int64), zeroed where the elements match; the relative difference divides
//! that by `|expected|` (for integers a true division, into float32), zeroed
//! again; each maximum is located as `torch.max(t, 0)` locates it on the CPU:
//! the first greatest element, or the first NaN.

use super::arithmetic::Real;

/// The greatest differences and their flat indices.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Greatest {
    pub(crate) abs_diff: f64,
    pub(crate) abs_index: usize,
    pub(crate) rel_diff: f64,
    pub(crate) rel_index: usize,
}

/// Greatest differences of two floating-point tensors of the same dtype.
pub(crate) fn greatest_reals<T: Real>(actual: &[T], expected: &[T], matches: &[bool]) -> Greatest {
    let abs_diff: Vec<T> = actual
        .iter()
        .zip(expected)
        .zip(matches)
        .map(|((&a, &e), &matched)| if matched { T::ZERO } else { a.minus(e).abs() })
        .collect();
    let rel_diff = abs_diff
        .iter()
        .zip(expected)
        .zip(matches)
        .map(|((&diff, &e), &matched)| {
            if matched {
                T::ZERO
            } else {
                diff.divided_by(e.abs())
            }
        });
    let (abs_diff, abs_index) = max_with_index(abs_diff.iter().copied());
    let (rel_diff, rel_index) = max_with_index(rel_diff);
    Greatest {
        abs_diff: abs_diff.to_f64(),
        abs_index,
        rel_diff: rel_diff.to_f64(),
        rel_index,
    }
}

/// Greatest differences of two integer (or bool) tensors, widened to int64.
pub(crate) fn greatest_integers(actual: &[i64], expected: &[i64], matches: &[bool]) -> Greatest {
    // int64 arithmetic wraps in libtorch as it does here.
    let abs_diff: Vec<i64> = actual
        .iter()
        .zip(expected)
        .zip(matches)
        .map(|((&a, &e), &matched)| {
            if matched {
                0
            } else {
                a.wrapping_sub(e).wrapping_abs()
            }
        })
        .collect();
    let rel_diff = abs_diff
        .iter()
        .zip(expected)
        .zip(matches)
        .map(|((&diff, &e), &matched)| {
            if matched {
                0.0
            } else {
                f32::from_integer(diff) / f32::from_integer(e.wrapping_abs())
            }
        });
    let (abs_diff, abs_index) = max_with_index(abs_diff.iter().map(|&diff| Exact(diff)));
    let (rel_diff, rel_index) = max_with_index(rel_diff);
    Greatest {
        abs_diff: abs_diff.0 as f64,
        abs_index,
        rel_diff: f64::from(rel_diff),
        rel_index,
    }
}

/// Differences of two 0-dim floating-point tensors: Python floats, in double precision.
pub(crate) fn scalar_reals(actual: f64, expected: f64) -> (f64, f64) {
    let abs_diff = (actual - expected).abs();
    let rel_diff = if expected == 0.0 {
        f64::INFINITY
    } else {
        abs_diff / expected.abs()
    };
    (abs_diff, rel_diff)
}

/// Differences of two 0-dim integer (or bool) tensors: Python ints, which do not overflow.
pub(crate) fn scalar_integers(actual: i64, expected: i64) -> (f64, f64) {
    let (actual, expected) = (i128::from(actual), i128::from(expected));
    let abs_diff = (actual - expected).abs() as f64;
    let rel_diff = if expected == 0 {
        f64::INFINITY
    } else {
        abs_diff / expected.abs() as f64
    };
    (abs_diff, rel_diff)
}

/// An int64 difference ordered as integers are (never NaN).
#[derive(Clone, Copy)]
struct Exact(i64);

/// What the maximum needs of an element.
trait Ordered: Copy {
    fn at_most(self, other: Self) -> bool;
    fn is_nan(self) -> bool;
}

impl<T: Real> Ordered for T {
    fn at_most(self, other: Self) -> bool {
        Real::at_most(self, other)
    }
    fn is_nan(self) -> bool {
        Real::is_nan(self)
    }
}

impl Ordered for Exact {
    fn at_most(self, other: Self) -> bool {
        self.0 <= other.0
    }
    fn is_nan(self) -> bool {
        false
    }
}

/// `torch.max(values, 0)` on the CPU (`max_kernel_impl`): an element replaces
/// the maximum unless it is `<=` it, and the first NaN ends the search.
fn max_with_index<T: Ordered>(mut values: impl Iterator<Item = T>) -> (T, usize) {
    let mut greatest = values.next().expect("mismatched tensors have elements");
    let mut index = 0;
    if greatest.is_nan() {
        return (greatest, 0);
    }
    for (i, value) in values.enumerate() {
        if !value.at_most(greatest) {
            greatest = value;
            index = i + 1;
            if value.is_nan() {
                break;
            }
        }
    }
    (greatest, index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::f16;

    #[test]
    fn only_mismatched_elements_compete() {
        let actual = [10.0f32, 1.5, 2.0];
        let expected = [0.0f32, 1.0, 1.0];
        let greatest = greatest_reals(&actual, &expected, &[true, false, false]);
        assert_eq!((greatest.abs_diff, greatest.abs_index), (1.0, 2));
        assert_eq!((greatest.rel_diff, greatest.rel_index), (1.0, 2));
    }

    #[test]
    fn the_first_of_equal_maxima_wins() {
        let greatest = greatest_reals(&[2.0f64, 3.0, 2.0], &[1.0, 2.0, 1.0], &[false; 3]);
        assert_eq!((greatest.abs_diff, greatest.abs_index), (1.0, 0));
        assert_eq!((greatest.rel_diff, greatest.rel_index), (1.0, 0));
    }

    #[test]
    fn the_first_nan_wins() {
        let actual = [5.0f32, f32::NAN, 100.0, f32::NAN];
        let greatest = greatest_reals(&actual, &[0.0; 4], &[false; 4]);
        assert!(greatest.abs_diff.is_nan());
        assert_eq!(greatest.abs_index, 1);
        let first = greatest_reals(&[f32::NAN, 7.0], &[0.0, 0.0], &[false, false]);
        assert_eq!(first.abs_index, 0);
    }

    #[test]
    fn zero_expected_gives_infinity_and_zero_over_zero_is_masked() {
        let greatest = greatest_reals(&[0.0f32, 1e-3], &[0.0, 0.0], &[true, false]);
        assert_eq!((greatest.rel_diff, greatest.rel_index), (f64::INFINITY, 1));
    }

    #[test]
    fn float16_differences_are_float16() {
        let actual = [f16::from_f32(1000.0)];
        let expected = [f16::from_f32(0.3)];
        let greatest = greatest_reals(&actual, &expected, &[false]);
        assert_eq!(greatest.abs_diff, 999.5);
        // 999.5 / 0.300048828125 = 3331.12… rounds to float16 3332.
        assert_eq!(greatest.rel_diff, 3332.0);
    }

    #[test]
    fn integer_differences_do_not_wrap_and_divide_into_float32() {
        let greatest = greatest_integers(&[0, 7, 3], &[255, 7, 0], &[false, true, false]);
        assert_eq!((greatest.abs_diff, greatest.abs_index), (255.0, 0));
        assert_eq!((greatest.rel_diff, greatest.rel_index), (f64::INFINITY, 2));
        let third = greatest_integers(&[1], &[3], &[false]);
        assert_eq!(third.rel_diff, f64::from(2.0f32 / 3.0));
    }

    #[test]
    fn scalars_are_python_numbers() {
        assert_eq!(
            scalar_reals(1000.0, 0.300048828125),
            (999.699951171875, 999.699951171875 / 0.300048828125)
        );
        assert_eq!(scalar_reals(1.5, 0.0), (1.5, f64::INFINITY));
        let (abs, rel) = scalar_reals(f64::NAN, 2.0);
        assert!(abs.is_nan() && rel.is_nan());
        assert_eq!(
            scalar_integers(i64::MIN, i64::MAX),
            (2f64.powi(64) - 1.0, (2f64.powi(64) - 1.0) / i64::MAX as f64)
        );
        assert_eq!(scalar_integers(1, 0), (1.0, f64::INFINITY));
    }
}
