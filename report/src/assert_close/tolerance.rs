//! How close two values must be, and `assert_close`'s defaults per dtype.

use serde::{Deserialize, Serialize};

use crate::dtype::DType;

/// How close two values must be: `|actual - expected| <= atol + rtol * |expected|`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Relative tolerance, scaled by `|expected|`.
    pub rtol: f64,
    /// Absolute tolerance.
    pub atol: f64,
    /// Whether a NaN matches a NaN in the same place.
    pub equal_nan: bool,
}

impl Tolerance {
    /// `assert_close`'s default tolerance for one dtype (`_DTYPE_PRECISIONS`;
    /// every dtype it does not list, integers, bool and the 1-byte floats, must
    /// be equal).
    pub fn for_dtype(dtype: DType) -> Tolerance {
        let (rtol, atol) = match dtype {
            DType::Float16 => (1e-3, 1e-5),
            DType::BFloat16 => (1.6e-2, 1e-5),
            DType::Float32 => (1.3e-6, 1e-5),
            DType::Float64 => (1e-7, 1e-7),
            DType::Bool
            | DType::UInt8
            | DType::Int8
            | DType::Int16
            | DType::Int32
            | DType::Int64
            | DType::Float8(_) => (0.0, 0.0),
        };
        Tolerance {
            rtol,
            atol,
            equal_nan: false,
        }
    }

    /// `assert_close`'s default for a pair (`default_tolerances`): the looser of
    /// the two dtypes' tolerances, rtol and atol each taken separately.
    pub fn for_pair(actual: DType, expected: DType) -> Tolerance {
        let (a, e) = (Self::for_dtype(actual), Self::for_dtype(expected));
        Tolerance {
            rtol: a.rtol.max(e.rtol),
            atol: a.atol.max(e.atol),
            equal_nan: false,
        }
    }

    /// The same tolerance, with NaN matching NaN or not.
    pub fn with_equal_nan(self, equal_nan: bool) -> Tolerance {
        Tolerance { equal_nan, ..self }
    }

    /// Whether both tolerances are zero, so that closeness is equality.
    pub fn is_exact(self) -> bool {
        self.rtol == 0.0 && self.atol == 0.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Float8Format;

    fn pair(tolerance: Tolerance) -> (f64, f64) {
        (tolerance.rtol, tolerance.atol)
    }

    #[test]
    fn defaults_per_dtype_are_dtype_precisions() {
        assert_eq!(pair(Tolerance::for_dtype(DType::Float16)), (1e-3, 1e-5));
        assert_eq!(pair(Tolerance::for_dtype(DType::BFloat16)), (1.6e-2, 1e-5));
        assert_eq!(pair(Tolerance::for_dtype(DType::Float32)), (1.3e-6, 1e-5));
        assert_eq!(pair(Tolerance::for_dtype(DType::Float64)), (1e-7, 1e-7));
        for exact in [DType::Bool, DType::UInt8, DType::Int32, DType::Int64] {
            assert!(Tolerance::for_dtype(exact).is_exact(), "{exact}");
        }
        assert!(Tolerance::for_dtype(DType::Float8(Float8Format::E4M3Fn)).is_exact());
        assert!(!Tolerance::for_dtype(DType::Float16).equal_nan);
    }

    #[test]
    fn a_pair_takes_the_looser_of_each() {
        let of = |a, e| pair(Tolerance::for_pair(a, e));
        assert_eq!(of(DType::Float32, DType::Float16), (1e-3, 1e-5));
        assert_eq!(of(DType::Float64, DType::BFloat16), (1.6e-2, 1e-5));
        assert_eq!(of(DType::Int64, DType::Float64), (1e-7, 1e-7));
        assert_eq!(of(DType::Int32, DType::Int64), (0.0, 0.0));
        assert!(
            Tolerance::for_pair(DType::Float32, DType::Float32)
                .with_equal_nan(true)
                .equal_nan
        );
    }
}
