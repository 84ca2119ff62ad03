//! The values of PyTorch's 1-byte floats, widened exactly to `f32` (c10's
//! `Float8_*` types): assert_close compares them bitwise, so only equality and
//! NaN-ness matter, and widening keeps both.

use crate::dtype::Float8Format;

/// The value of one 1-byte float.
pub(crate) fn to_f32(format: Float8Format, bits: u8) -> f32 {
    let (exponent_bits, bias, nan_at_sign_only, infinities) = match format {
        Float8Format::E5M2 => (5, 15, false, true),
        Float8Format::E4M3Fn => (4, 7, false, false),
        Float8Format::E5M2Fnuz => (5, 16, true, false),
        Float8Format::E4M3Fnuz => (4, 8, true, false),
    };
    let mantissa_bits = 7 - exponent_bits;
    let negative = bits & 0x80 != 0;
    let exponent = i32::from((bits & 0x7f) >> mantissa_bits);
    let mantissa = i32::from(bits & ((1 << mantissa_bits) - 1));
    let all_ones = (1 << exponent_bits) - 1;
    if nan_at_sign_only {
        // The "fnuz" formats spend the negative zero on their only NaN.
        if bits == 0x80 {
            return f32::NAN;
        }
    } else if exponent == all_ones {
        if infinities {
            if mantissa != 0 {
                return f32::NAN;
            }
            return if negative {
                f32::NEG_INFINITY
            } else {
                f32::INFINITY
            };
        }
        // e4m3fn keeps every all-ones exponent finite but the one with an all-ones mantissa.
        if mantissa == (1 << mantissa_bits) - 1 {
            return f32::NAN;
        }
    }
    let magnitude = if exponent == 0 {
        mantissa as f32 * 2f32.powi(1 - bias - mantissa_bits)
    } else {
        ((1 << mantissa_bits) + mantissa) as f32 * 2f32.powi(exponent - bias - mantissa_bits)
    };
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e4m3fn_extremes() {
        let value = |bits| to_f32(Float8Format::E4M3Fn, bits);
        assert_eq!(value(0x00), 0.0);
        assert!(value(0x80).is_sign_negative() && value(0x80) == 0.0);
        assert_eq!(value(0x01), 2f32.powi(-9));
        assert_eq!(value(0x08), 2f32.powi(-6));
        assert_eq!(value(0x38), 1.0);
        assert_eq!(value(0x7e), 448.0);
        assert_eq!(value(0xfe), -448.0);
        assert!(value(0x7f).is_nan() && value(0xff).is_nan());
        assert_eq!(value(0x78), 256.0);
    }

    #[test]
    fn e5m2_has_infinities() {
        let value = |bits| to_f32(Float8Format::E5M2, bits);
        assert_eq!(value(0x3c), 1.0);
        assert_eq!(value(0x01), 2f32.powi(-16));
        assert_eq!(value(0x7b), 57344.0);
        assert_eq!(value(0x7c), f32::INFINITY);
        assert_eq!(value(0xfc), f32::NEG_INFINITY);
        assert!(value(0x7d).is_nan() && value(0xff).is_nan());
    }

    #[test]
    fn fnuz_formats_have_one_nan_and_no_negative_zero() {
        for format in [Float8Format::E5M2Fnuz, Float8Format::E4M3Fnuz] {
            assert!(to_f32(format, 0x80).is_nan());
            assert_eq!(to_f32(format, 0x00), 0.0);
            assert!((0..=255u8)
                .filter(|bits| *bits != 0x80)
                .all(|bits| to_f32(format, bits).is_finite()));
        }
        assert_eq!(to_f32(Float8Format::E4M3Fnuz, 0x40), 1.0);
        assert_eq!(to_f32(Float8Format::E4M3Fnuz, 0x7f), 240.0);
        assert_eq!(to_f32(Float8Format::E4M3Fnuz, 0x01), 2f32.powi(-10));
        assert_eq!(to_f32(Float8Format::E5M2Fnuz, 0x40), 1.0);
        assert_eq!(to_f32(Float8Format::E5M2Fnuz, 0x7f), 57344.0);
        assert_eq!(to_f32(Float8Format::E5M2Fnuz, 0x01), 2f32.powi(-17));
    }
}
