//! Floating-point arithmetic as libtorch's CPU kernels do it in each dtype, so
//! that closeness and differences round exactly as they do in PyTorch.
//!
//! float16 and bfloat16 compute every operation in float32 and round the
//! result back (c10's `Half`/`BFloat16` operators and the vectorized kernels
//! alike). A Python float meets a tensor in two ways: `tensor * rtol` reads the
//! scalar as float32 for the reduced dtypes (`mul_kernel` takes
//! `original_scalar_value<opmath_t>`), while `tensor + atol` first narrows it
//! to the tensor's dtype (the iterator casts the wrapped scalar to the common
//! dtype, through float32 as c10's conversions from double do).

use half::{bf16, f16};

/// A floating-point dtype's values and arithmetic.
pub(crate) trait Real: Copy {
    /// Zero, which masked elements take.
    const ZERO: Self;
    /// An integer converted as c10 converts it (through float32 for the 2-byte floats).
    fn from_integer(value: i64) -> Self;
    /// A value already representable in this dtype (promotion only widens floats).
    fn from_exact(value: f64) -> Self;
    /// The value, exactly, as Python's `.item()` gives it.
    fn to_f64(self) -> f64;
    /// `isnan`.
    fn is_nan(self) -> bool;
    /// `isfinite`.
    fn is_finite(self) -> bool;
    /// `==` (so `-0 == 0` and NaN equals nothing).
    fn equals(self, other: Self) -> bool;
    /// `<=`.
    fn at_most(self, other: Self) -> bool;
    /// `abs`.
    fn abs(self) -> Self;
    /// `self - other` in this dtype.
    fn minus(self, other: Self) -> Self;
    /// `self / other` in this dtype.
    fn divided_by(self, other: Self) -> Self;
    /// `tensor * scalar` for a Python float `scalar`.
    fn times_scalar(self, scalar: f64) -> Self;
    /// `tensor + scalar` for a Python float `scalar`.
    fn plus_scalar(self, scalar: f64) -> Self;
}

macro_rules! reduced_float {
    ($type:ty) => {
        impl Real for $type {
            const ZERO: Self = <$type>::ZERO;

            fn from_integer(value: i64) -> Self {
                <$type>::from_f32(value as f32)
            }
            fn from_exact(value: f64) -> Self {
                <$type>::from_f64(value)
            }
            fn to_f64(self) -> f64 {
                f64::from(self)
            }
            fn is_nan(self) -> bool {
                <$type>::is_nan(self)
            }
            fn is_finite(self) -> bool {
                <$type>::is_finite(self)
            }
            fn equals(self, other: Self) -> bool {
                self.to_f32() == other.to_f32()
            }
            fn at_most(self, other: Self) -> bool {
                self.to_f32() <= other.to_f32()
            }
            fn abs(self) -> Self {
                <$type>::from_bits(self.to_bits() & 0x7fff)
            }
            fn minus(self, other: Self) -> Self {
                <$type>::from_f32(self.to_f32() - other.to_f32())
            }
            fn divided_by(self, other: Self) -> Self {
                <$type>::from_f32(self.to_f32() / other.to_f32())
            }
            fn times_scalar(self, scalar: f64) -> Self {
                <$type>::from_f32(self.to_f32() * scalar as f32)
            }
            fn plus_scalar(self, scalar: f64) -> Self {
                let narrowed = <$type>::from_f32(scalar as f32);
                <$type>::from_f32(self.to_f32() + narrowed.to_f32())
            }
        }
    };
}

reduced_float!(f16);
reduced_float!(bf16);

impl Real for f32 {
    const ZERO: Self = 0.0;

    fn from_integer(value: i64) -> Self {
        value as f32
    }
    fn from_exact(value: f64) -> Self {
        value as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
    fn is_nan(self) -> bool {
        f32::is_nan(self)
    }
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }
    fn equals(self, other: Self) -> bool {
        self == other
    }
    fn at_most(self, other: Self) -> bool {
        self <= other
    }
    fn abs(self) -> Self {
        f32::abs(self)
    }
    fn minus(self, other: Self) -> Self {
        self - other
    }
    fn divided_by(self, other: Self) -> Self {
        self / other
    }
    fn times_scalar(self, scalar: f64) -> Self {
        self * scalar as f32
    }
    fn plus_scalar(self, scalar: f64) -> Self {
        self + scalar as f32
    }
}

impl Real for f64 {
    const ZERO: Self = 0.0;

    fn from_integer(value: i64) -> Self {
        value as f64
    }
    fn from_exact(value: f64) -> Self {
        value
    }
    fn to_f64(self) -> f64 {
        self
    }
    fn is_nan(self) -> bool {
        f64::is_nan(self)
    }
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }
    fn equals(self, other: Self) -> bool {
        self == other
    }
    fn at_most(self, other: Self) -> bool {
        self <= other
    }
    fn abs(self) -> Self {
        f64::abs(self)
    }
    fn minus(self, other: Self) -> Self {
        self - other
    }
    fn divided_by(self, other: Self) -> Self {
        self / other
    }
    fn times_scalar(self, scalar: f64) -> Self {
        self * scalar
    }
    fn plus_scalar(self, scalar: f64) -> Self {
        self + scalar
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float16_rounds_every_operation() {
        let a = f16::from_f32(1000.0);
        let b = f16::from_f32(0.3);
        // 1000 - 0.300048828125 is 999.699951171875, and float16 near 1000 steps by 0.5.
        assert_eq!(a.minus(b).to_f64(), 999.5);
        assert_eq!(
            f16::from_f32(1.0).divided_by(f16::from_f32(3.0)).to_f64(),
            0.333251953125
        );
    }

    #[test]
    fn reduced_floats_read_a_multiplier_as_float32_but_narrow_an_addend() {
        let one = bf16::ONE;
        // 0.3f is 0.30000001192092896; bfloat16(0.3) is 0.30078125.
        assert_eq!(one.times_scalar(0.3).to_f64(), 0.30078125);
        assert_eq!(bf16::ZERO.plus_scalar(0.3).to_f64(), 0.30078125);
        let three = f16::from_f32(3.0);
        // 3 * 0.001f = 0.003000000026 rounds to float16 0.0030002593994140625,
        // where 3 * float16(0.001) would give 0.003002166748046875.
        assert_eq!(three.times_scalar(1e-3).to_f64(), 0.0030002593994140625);
        // float16(1e-5) is the subnormal 168 * 2^-24.
        assert_eq!(f16::ZERO.plus_scalar(1e-5).to_f64(), 168.0 * 2f64.powi(-24));
    }

    #[test]
    fn float32_reads_scalars_as_float32() {
        assert_eq!(1.0f32.times_scalar(1.3e-6), 1.3e-6f32);
        assert_eq!(0.0f32.plus_scalar(1e-5), 1e-5f32);
    }

    #[test]
    fn integers_convert_through_float32() {
        // 2^24 + 1 is not a float32; float16 overflows past 65504.
        assert_eq!(<f32 as Real>::from_integer(16_777_217), 16_777_216.0);
        assert!(f16::from_integer(70_000).to_f64().is_infinite());
        assert_eq!(bf16::from_integer(257).to_f64(), 256.0);
    }

    #[test]
    fn abs_clears_only_the_sign() {
        assert_eq!(f16::from_f32(-2.5).abs().to_f64(), 2.5);
        assert!(bf16::NAN.abs().is_nan());
        assert_eq!(f16::NEG_INFINITY.abs(), f16::INFINITY);
    }
}
