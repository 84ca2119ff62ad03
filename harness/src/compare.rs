//! The tolerance check's comparisons: tch tensors are copied to the host and
//! compared by devcheck-report's `torch.testing.assert_close` (its exact
//! semantics: default tolerances per dtype, dtype promotion, closeness and the
//! greatest differences over the mismatched elements in the compared dtype).
//! It is the one implementation devcheck has: dumps and `cargo devcheck
//! compare` use it too, and none of its arithmetic depends on a tch release.
//! Two deliberate differences from `assert_close`: tensors of different dtypes
//! are always promoted (as with `check_dtype=False`), and tensors on different
//! devices are always compared on the host (as with `check_device=False`).
//! Quantized tensors are compared dequantized, as float32.

use devcheck_report::assert_close;
pub use devcheck_report::assert_close::{Comparison, Tolerance};
use devcheck_report::dtype::DType;
use devcheck_report::tensor::HostTensor;
use tch::{Device, Kind, TchError, Tensor};
use thiserror::Error;

pub(crate) use devcheck_report::python::tuple_repr;

use crate::version::{dtype_of, kind_name};

/// `assert_close`'s default tolerance for one tch kind (`_DTYPE_PRECISIONS`):
/// a complex kind's is its components', a quantized one's is float32's.
pub fn tolerance_for(kind: Kind) -> Tolerance {
    Tolerance::for_dtype(compared_dtype(kind))
}

/// `assert_close`'s default for a pair of kinds: the looser of the two
/// kinds' tolerances, rtol and atol each taken separately.
pub fn tolerance_for_pair(actual: Kind, expected: Kind) -> Tolerance {
    Tolerance::for_pair(compared_dtype(actual), compared_dtype(expected))
}

/// The dtype whose tolerance a kind takes.
fn compared_dtype(kind: Kind) -> DType {
    match kind {
        Kind::ComplexHalf => DType::Float16,
        Kind::ComplexFloat => DType::Float32,
        Kind::ComplexDouble => DType::Float64,
        Kind::QInt8 | Kind::QUInt8 | Kind::QInt32 => DType::Float32,
        other => dtype_of(other).expect("every other kind has a dtype"),
    }
}

/// Why two tensors could not be compared.
#[derive(Debug, Error)]
pub enum CompareError {
    /// `assert_close` refuses the pair: shapes, dtypes or tolerances.
    #[error(transparent)]
    AssertClose(#[from] assert_close::CompareError),
    /// A tensor holds no values, or values of a dtype that cannot be compared numerically.
    #[error("cannot compare the {side} tensor: {reason}")]
    Unsupported {
        /// `"actual"` or `"expected"`.
        side: &'static str,
        /// What is wrong and what to do about it.
        reason: String,
    },
    /// libtorch raised an error while copying a tensor to the host.
    #[error("libtorch failed while copying a tensor to the host: {0}")]
    Torch(#[from] TchError),
}

/// Compares `actual` with `expected` as `torch.testing.assert_close` does, on
/// the host: both are copied there, then promoted to a common dtype and
/// compared in its arithmetic (float16 differences rounded to float16, integer
/// ones taken in int64).
pub fn compare(
    actual: &Tensor,
    expected: &Tensor,
    tolerance: Tolerance,
) -> Result<Comparison, CompareError> {
    let actual_kind = kind_of(actual, "actual")?;
    let expected_kind = kind_of(expected, "expected")?;
    if is_quantized(actual_kind) != is_quantized(expected_kind) {
        let (side, kind) = if is_quantized(actual_kind) {
            ("expected", expected_kind)
        } else {
            ("actual", actual_kind)
        };
        return Err(CompareError::Unsupported {
            side,
            reason: format!(
                "it is {} but the other tensor is quantized; dequantize the other one first",
                kind_name(kind)
            ),
        });
    }
    let actual = host_tensor(actual, actual_kind, "actual")?;
    let expected = host_tensor(expected, expected_kind, "expected")?;
    Ok(assert_close::compare(&actual, &expected, tolerance)?)
}

/// The kind of a tensor, or why it has none that can be compared.
fn kind_of(tensor: &Tensor, side: &'static str) -> Result<Kind, CompareError> {
    if !tensor.defined() {
        return Err(CompareError::Unsupported {
            side,
            reason: "it is undefined; pass a tensor that holds values".to_string(),
        });
    }
    tensor.f_kind().map_err(|error| CompareError::Unsupported {
        side,
        reason: format!("its dtype is not one tch supports ({error}); convert it to int64 or a float dtype first"),
    })
}

/// A copy of `tensor`'s values on the host, dequantized if quantized.
fn host_tensor(
    tensor: &Tensor,
    kind: Kind,
    side: &'static str,
) -> Result<HostTensor, CompareError> {
    let mut host = tensor.f_to_device(Device::Cpu)?;
    if is_quantized(kind) {
        host = host.f_dequantize()?;
    }
    let kind = host.f_kind()?;
    let dtype = dtype_of(kind).ok_or_else(|| CompareError::Unsupported {
        side,
        reason: format!(
            "{} tensors are not compared; compare `Tensor::view_as_real` of both instead",
            kind_name(kind)
        ),
    })?;
    let host = host.f_contiguous()?;
    let shape: Vec<usize> = host.size().iter().map(|&n| n as usize).collect();
    let elements: usize = shape.iter().product();
    let mut bytes = vec![0u8; elements * dtype.size_in_bytes()];
    if elements > 0 {
        host.f_copy_data_u8(&mut bytes, elements)?;
    }
    HostTensor::from_le_bytes(dtype, shape, &bytes).map_err(|error| CompareError::Unsupported {
        side,
        reason: error.to_string(),
    })
}

fn is_quantized(kind: Kind) -> bool {
    matches!(kind, Kind::QInt8 | Kind::QUInt8 | Kind::QInt32)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A case recorded from `torch.testing.assert_close` in PyTorch 2.11 on the CPU.
    struct Fixture {
        name: &'static str,
        shape: &'static [i64],
        actual_kind: Kind,
        expected_kind: Kind,
        actual: &'static [f64],
        expected: &'static [f64],
        tolerance: Tolerance,
        /// Whether `tolerance` is assert_close's default for the pair of dtypes.
        default_tolerance: bool,
        mismatched: u64,
        max_abs_diff: f64,
        max_abs_index: &'static [i64],
        max_rel_diff: f64,
        max_rel_index: &'static [i64],
        /// assert_close's message after its header line.
        message: &'static str,
    }

    // Generated by running assert_close on these tensors and recording its message
    // and the arguments it passed to `_make_mismatch_msg`.
    const FIXTURES: &[Fixture] = &[
    Fixture {
        name: "float32_mixed_mismatches",
        shape: &[3, 4],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[1.5409960746765137, -0.2924289107322693, -2.1787893772125244, 0.5684312582015991, -1.0845223665237427, -1.3985954523086548, 2.9999999242136255e-05, 0.8380263447761536, -0.7192485928535461, -0.40334352850914, -0.5966353416442871, 0.18205469846725464],
        expected: &[1.5409960746765137, -0.293428897857666, -2.1787893772125244, 0.5684312582015991, -1.0845223665237427, -1.3985954523086548, 0.0, 0.8380263447761536, -0.7192575931549072, -0.40334352850914, -0.5966353416442871, 0.18203648924827576],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 3,
        max_abs_diff: 0.0009999871253967285,
        max_abs_index: &[0, 1],
        max_rel_diff: f64::INFINITY,
        max_rel_index: &[1, 2],
        message: "Mismatched elements: 3 / 12 (25.0%)\nGreatest absolute difference: 0.0009999871253967285 at index (0, 1) (up to 1e-05 allowed)\nGreatest relative difference: inf at index (1, 2) (up to 1.3e-06 allowed)",
    },
    Fixture {
        name: "float32_nan_and_infinities",
        shape: &[3, 4],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[-0.8566746115684509, 1.1006041765213013, -1.0711873769760132, f64::NAN, -0.06631749868392944, f64::INFINITY, -0.8919953107833862, -1.5091077089309692, 0.3703935444355011, 1.4565025568008423, f64::NEG_INFINITY, 0.7748488187789917],
        expected: &[-0.8566746115684509, 1.1006041765213013, -1.0711873769760132, 0.1227012425661087, -0.5663174986839294, f64::INFINITY, -0.8919953107833862, -1.5091077089309692, 0.3703935444355011, 1.4565025568008423, f64::INFINITY, 0.7748488187789917],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 3,
        max_abs_diff: f64::NAN,
        max_abs_index: &[0, 3],
        max_rel_diff: f64::NAN,
        max_rel_index: &[0, 3],
        message: "Mismatched elements: 3 / 12 (25.0%)\nGreatest absolute difference: nan at index (0, 3) (up to 1e-05 allowed)\nGreatest relative difference: nan at index (0, 3) (up to 1.3e-06 allowed)",
    },
    Fixture {
        name: "float16_mismatches",
        shape: &[3, 4],
        actual_kind: Kind::Half,
        expected_kind: Kind::Half,
        actual: &[0.201904296875, 1.263671875, -1.2900390625, -0.791015625, -0.0208740234375, -0.71826171875, 0.5185546875, 1.0, 0.1920166015625, 0.5439453125, -2.21875, 0.259033203125],
        expected: &[0.19189453125, 1.263671875, -1.2900390625, -0.791015625, -0.0208740234375, -0.71826171875, 0.5185546875, 5.960464477539063e-08, 0.1920166015625, 0.54296875, -2.21875, 0.259033203125],
        tolerance: Tolerance { rtol: 0.001, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 3,
        max_abs_diff: 1.0,
        max_abs_index: &[1, 3],
        max_rel_diff: f64::INFINITY,
        max_rel_index: &[1, 3],
        message: "Mismatched elements: 3 / 12 (25.0%)\nGreatest absolute difference: 1.0 at index (1, 3) (up to 1e-05 allowed)\nGreatest relative difference: inf at index (1, 3) (up to 0.001 allowed)",
    },
    Fixture {
        name: "float16_rounded_differences",
        shape: &[3, 4],
        actual_kind: Kind::Half,
        expected_kind: Kind::Half,
        actual: &[-1.029296875, -0.5009765625, 0.2734375, -0.79296875, -0.040435791015625, 0.2880859375, -0.007537841796875, -0.91455078125, -1.0888671875, -0.2666015625, 1000.0, -0.218994140625],
        expected: &[-1.029296875, -0.5009765625, 0.2734375, -0.91796875, -0.040435791015625, 0.2880859375, -0.007537841796875, -0.91455078125, -1.0888671875, -0.2666015625, 0.300048828125, -0.218994140625],
        tolerance: Tolerance { rtol: 0.001, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 2,
        max_abs_diff: 999.5,
        max_abs_index: &[2, 2],
        max_rel_diff: 3332.0,
        max_rel_index: &[2, 2],
        message: "Mismatched elements: 2 / 12 (16.7%)\nGreatest absolute difference: 999.5 at index (2, 2) (up to 1e-05 allowed)\nGreatest relative difference: 3332.0 at index (2, 2) (up to 0.001 allowed)",
    },
    Fixture {
        name: "bfloat16_mismatches",
        shape: &[3, 4],
        actual_kind: Kind::BFloat16,
        expected_kind: Kind::BFloat16,
        actual: &[2.0625, -0.035400390625, 0.0654296875, -0.765625, 1.1015625, 2.78125, 0.1748046875, -0.9296875, -1.5078125, -0.66015625, 1.3203125, 0.287109375],
        expected: &[2.0625, -0.035400390625, 0.0625, -0.765625, 1.1015625, 2.75, 0.1748046875, -0.9296875, -1.5078125, -0.66015625, 1.3203125, 0.037109375],
        tolerance: Tolerance { rtol: 0.016, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 2,
        max_abs_diff: 0.25,
        max_abs_index: &[2, 3],
        max_rel_diff: 6.75,
        max_rel_index: &[2, 3],
        message: "Mismatched elements: 2 / 12 (16.7%)\nGreatest absolute difference: 0.25 at index (2, 3) (up to 1e-05 allowed)\nGreatest relative difference: 6.75 at index (2, 3) (up to 0.016 allowed)",
    },
    Fixture {
        name: "float64_nan_in_expected",
        shape: &[2, 3, 2],
        actual_kind: Kind::Double,
        expected_kind: Kind::Double,
        actual: &[-0.28490930246326757, -0.1334417428738957, 1.8929104298879018, 3.111044261837153, -0.4583948002707041, -0.3359880730056498, -1.5699861127268284, 1.2315003988210944, 1.3946317721738462, 1.1711024219411732, 0.4335119383253867, 1e-07],
        expected: &[-0.28490930246326757, -0.1334417428738957, 1.8929104298879018, 3.111044261837153, -0.4583958002707041, -0.3359880730056498, -1.5699861127268284, f64::NAN, 1.3946317721738462, 1.1711024219411732, 0.4335119383253867, 0.0],
        tolerance: Tolerance { rtol: 1e-07, atol: 1e-07, equal_nan: false },
        default_tolerance: true,
        mismatched: 2,
        max_abs_diff: f64::NAN,
        max_abs_index: &[1, 0, 1],
        max_rel_diff: f64::NAN,
        max_rel_index: &[1, 0, 1],
        message: "Mismatched elements: 2 / 12 (16.7%)\nGreatest absolute difference: nan at index (1, 0, 1) (up to 1e-07 allowed)\nGreatest relative difference: nan at index (1, 0, 1) (up to 1e-07 allowed)",
    },
    Fixture {
        name: "float32_equal_nan",
        shape: &[3, 4],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[f64::NAN, 0.8870960474014282, 0.7679574489593506, 0.05711299926042557, 0.22395838797092438, 0.551964282989502, -0.5787979960441589, 0.0177221167832613, 0.13182635605335236, 1.0197668075561523, -0.34683889150619507, 0.4520224630832672],
        expected: &[f64::NAN, 0.8870960474014282, 0.7679574489593506, 0.05711299926042557, 0.22395838797092438, 0.551964282989502, -0.5787979960441589, 0.0177221167832613, 0.13182635605335236, 1.0197668075561523, -0.4468388855457306, 0.4520224630832672],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: true },
        default_tolerance: true,
        mismatched: 1,
        max_abs_diff: 0.09999999403953552,
        max_abs_index: &[2, 2],
        max_rel_diff: 0.22379429638385773,
        max_rel_index: &[2, 2],
        message: "Mismatched elements: 1 / 12 (8.3%)\nGreatest absolute difference: 0.09999999403953552 at index (2, 2) (up to 1e-05 allowed)\nGreatest relative difference: 0.22379429638385773 at index (2, 2) (up to 1.3e-06 allowed)",
    },
    Fixture {
        name: "float32_nan_vs_nan",
        shape: &[3, 4],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[f64::NAN, 0.8870960474014282, 0.7679574489593506, 0.05711299926042557, 0.22395838797092438, 0.551964282989502, -0.5787979960441589, 0.0177221167832613, 0.13182635605335236, 1.0197668075561523, -0.34683889150619507, 0.4520224630832672],
        expected: &[f64::NAN, 0.8870960474014282, 0.7679574489593506, 0.05711299926042557, 0.22395838797092438, 0.551964282989502, -0.5787979960441589, 0.0177221167832613, 0.13182635605335236, 1.0197668075561523, -0.4468388855457306, 0.4520224630832672],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 2,
        max_abs_diff: f64::NAN,
        max_abs_index: &[0, 0],
        max_rel_diff: f64::NAN,
        max_rel_index: &[0, 0],
        message: "Mismatched elements: 2 / 12 (16.7%)\nGreatest absolute difference: nan at index (0, 0) (up to 1e-05 allowed)\nGreatest relative difference: nan at index (0, 0) (up to 1.3e-06 allowed)",
    },
    Fixture {
        name: "float32_vs_float16",
        shape: &[3, 4],
        actual_kind: Kind::Float,
        expected_kind: Kind::Half,
        actual: &[-0.97607421875, 0.7117814421653748, -0.75830078125, -0.6435546875, -0.64599609375, -0.1590576171875, -1.7818769216537476, 0.84765625, 0.2459716796875, -0.1312255859375, -0.178466796875, -0.595703125],
        expected: &[-0.97607421875, 0.71142578125, -0.75830078125, -0.6435546875, -0.64599609375, -0.1590576171875, -1.7783203125, 0.84765625, 0.2459716796875, -0.1312255859375, -0.178466796875, -0.595703125],
        tolerance: Tolerance { rtol: 0.001, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 1,
        max_abs_diff: 0.0035566091537475586,
        max_abs_index: &[1, 2],
        max_rel_diff: 0.001999982399865985,
        max_rel_index: &[1, 2],
        message: "Mismatched elements: 1 / 12 (8.3%)\nGreatest absolute difference: 0.0035566091537475586 at index (1, 2) (up to 1e-05 allowed)\nGreatest relative difference: 0.001999982399865985 at index (1, 2) (up to 0.001 allowed)",
    },
    Fixture {
        name: "bfloat16_vs_float16",
        shape: &[3, 4],
        actual_kind: Kind::BFloat16,
        expected_kind: Kind::Half,
        actual: &[0.2734375, 0.56640625, -0.671875, -1.2109375, 1.34375, 2.375, -0.56640625, -1.15625, 3.0, 0.875, -2.671875, -0.03125],
        expected: &[0.27392578125, 0.56787109375, -0.67333984375, -1.2099609375, 1.34375, 2.3828125, -0.56640625, -1.1533203125, 2.900390625, 0.87548828125, -2.671875, -0.031341552734375],
        tolerance: Tolerance { rtol: 0.016, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 1,
        max_abs_diff: 0.099609375,
        max_abs_index: &[2, 0],
        max_rel_diff: 0.03434343263506889,
        max_rel_index: &[2, 0],
        message: "Mismatched elements: 1 / 12 (8.3%)\nGreatest absolute difference: 0.099609375 at index (2, 0) (up to 1e-05 allowed)\nGreatest relative difference: 0.03434343263506889 at index (2, 0) (up to 0.016 allowed)",
    },
    Fixture {
        name: "float32_percent_rounding",
        shape: &[16],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.5, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
        expected: &[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 1,
        max_abs_diff: 0.5,
        max_abs_index: &[9],
        max_rel_diff: 0.0555555559694767,
        max_rel_index: &[9],
        message: "Mismatched elements: 1 / 16 (6.2%)\nGreatest absolute difference: 0.5 at index (9,) (up to 1e-05 allowed)\nGreatest relative difference: 0.0555555559694767 at index (9,) (up to 1.3e-06 allowed)",
    },
    Fixture {
        name: "int64_mismatches",
        shape: &[3, 4],
        actual_kind: Kind::Int64,
        expected_kind: Kind::Int64,
        actual: &[1.0, 8.0, -3.0, 7.0, 2.0, 2.0, 2.0, 9.0, 4.0, 4.0, 8.0, 1.0],
        expected: &[1.0, 5.0, -3.0, 7.0, 0.0, 2.0, 2.0, 9.0, 4.0, 4.0, 8.0, -1.0],
        tolerance: Tolerance { rtol: 0.0, atol: 0.0, equal_nan: false },
        default_tolerance: true,
        mismatched: 3,
        max_abs_diff: 3.0,
        max_abs_index: &[0, 1],
        max_rel_diff: f64::INFINITY,
        max_rel_index: &[1, 0],
        message: "Mismatched elements: 3 / 12 (25.0%)\nGreatest absolute difference: 3 at index (0, 1)\nGreatest relative difference: inf at index (1, 0)",
    },
    Fixture {
        name: "float32_ties",
        shape: &[3, 4],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[1.0, 2.0, 3.0, 4.5, 4.5, 6.0, 7.0, 8.0, 9.0, 10.5, 11.0, 12.0],
        expected: &[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 3,
        max_abs_diff: 0.5,
        max_abs_index: &[0, 3],
        max_rel_diff: 0.125,
        max_rel_index: &[0, 3],
        message: "Mismatched elements: 3 / 12 (25.0%)\nGreatest absolute difference: 0.5 at index (0, 3) (up to 1e-05 allowed)\nGreatest relative difference: 0.125 at index (0, 3) (up to 1.3e-06 allowed)",
    },
    Fixture {
        name: "float32_custom_tolerance",
        shape: &[5],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[1.0499999523162842, 2.0, 4.5, 8.100000381469727, 0.20000000298023224],
        expected: &[1.0, 2.0, 4.0, 8.0, 0.0],
        tolerance: Tolerance { rtol: 0.01, atol: 0.05, equal_nan: false },
        default_tolerance: false,
        mismatched: 2,
        max_abs_diff: 0.5,
        max_abs_index: &[2],
        max_rel_diff: f64::INFINITY,
        max_rel_index: &[4],
        message: "Mismatched elements: 2 / 5 (40.0%)\nGreatest absolute difference: 0.5 at index (2,) (up to 0.05 allowed)\nGreatest relative difference: inf at index (4,) (up to 0.01 allowed)",
    },
    Fixture {
        name: "float32_scalar",
        shape: &[],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[1.5],
        expected: &[0.0],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 1,
        max_abs_diff: 1.5,
        max_abs_index: &[],
        max_rel_diff: f64::INFINITY,
        max_rel_index: &[],
        message: "Absolute difference: 1.5 (up to 1e-05 allowed)\nRelative difference: inf (up to 1.3e-06 allowed)",
    },
    Fixture {
        name: "float32_scalar_nan",
        shape: &[],
        actual_kind: Kind::Float,
        expected_kind: Kind::Float,
        actual: &[f64::NAN],
        expected: &[2.0],
        tolerance: Tolerance { rtol: 1.3e-06, atol: 1e-05, equal_nan: false },
        default_tolerance: true,
        mismatched: 1,
        max_abs_diff: f64::NAN,
        max_abs_index: &[],
        max_rel_diff: f64::NAN,
        max_rel_index: &[],
        message: "Absolute difference: nan (up to 1e-05 allowed)\nRelative difference: nan (up to 1.3e-06 allowed)",
    },
    ];

    fn tensor(values: &[f64], shape: &[i64], kind: Kind) -> Tensor {
        Tensor::from_slice(values).to_kind(kind).reshape(shape)
    }

    fn indices(index: &[usize]) -> Vec<i64> {
        index.iter().map(|&i| i as i64).collect()
    }

    /// Equality of floats in which NaN equals NaN: the statistics must reproduce NaNs too.
    fn assert_same(actual: f64, expected: f64, what: &str) {
        assert!(
            actual == expected || (actual.is_nan() && expected.is_nan()),
            "{what}: got {actual:e}, expected {expected:e}"
        );
    }

    #[test]
    fn agrees_with_pytorch_assert_close() {
        for fixture in FIXTURES {
            let name = fixture.name;
            let actual = tensor(fixture.actual, fixture.shape, fixture.actual_kind);
            let expected = tensor(fixture.expected, fixture.shape, fixture.expected_kind);
            if fixture.default_tolerance {
                assert_eq!(
                    tolerance_for_pair(fixture.actual_kind, fixture.expected_kind)
                        .with_equal_nan(fixture.tolerance.equal_nan),
                    fixture.tolerance,
                    "{name}: default tolerance"
                );
            }
            let result = compare(&actual, &expected, fixture.tolerance).unwrap();
            assert!(!result.passed, "{name}");
            assert_eq!(result.mismatched, fixture.mismatched, "{name}: mismatched");
            assert_eq!(result.total, fixture.actual.len() as u64, "{name}: total");
            assert_same(result.max_abs_diff, fixture.max_abs_diff, name);
            assert_eq!(
                indices(&result.max_abs_index),
                fixture.max_abs_index,
                "{name}"
            );
            assert_same(result.max_rel_diff, fixture.max_rel_diff, name);
            assert_eq!(
                indices(&result.max_rel_index),
                fixture.max_rel_index,
                "{name}"
            );
            assert_eq!(result.describe(), fixture.message, "{name}: message");
        }
    }

    #[test]
    fn identical_tensors_pass() {
        let values = tensor(
            &[0.5, -1.0, 2.0, f64::INFINITY, 0.0, 3.0],
            &[2, 3],
            Kind::Float,
        );
        let result = compare(&values, &values, tolerance_for(Kind::Float)).unwrap();
        assert!(result.passed);
        assert_eq!((result.mismatched, result.total), (0, 6));
        assert_eq!((result.max_abs_diff, result.max_rel_diff), (0.0, 0.0));
        assert_eq!(result.max_abs_index, vec![0, 0]);
        assert_eq!(result.dtype.name(), "float32");
        assert_eq!(result.describe(), "Mismatched elements: 0 / 6 (0.0%)");
    }

    #[test]
    fn float32_just_inside_and_just_outside_tolerance() {
        // At expected = 1 float32 allows 1e-5 + 1.3e-6 = 1.13e-5, between 92 and 101 ulps of 1.
        let ulp = f64::powi(2.0, -23);
        let expected = tensor(&[1.0], &[1], Kind::Float);
        let tolerance = tolerance_for(Kind::Float);

        let inside = tensor(&[1.0 + 92.0 * ulp], &[1], Kind::Float);
        let result = compare(&inside, &expected, tolerance).unwrap();
        assert!(result.passed);
        assert_eq!(result.mismatched, 0);

        let outside = tensor(&[1.0 + 101.0 * ulp], &[1], Kind::Float);
        let result = compare(&outside, &expected, tolerance).unwrap();
        assert!(!result.passed);
        assert_eq!(result.mismatched, 1);
        assert_eq!(result.max_abs_diff, 101.0 * ulp);
        assert_eq!(result.max_rel_diff, 101.0 * ulp);
        assert_eq!(
            result.describe(),
            "Mismatched elements: 1 / 1 (100.0%)\n\
             Greatest absolute difference: 1.2040138244628906e-05 at index (0,) (up to 1e-05 allowed)\n\
             Greatest relative difference: 1.2040138244628906e-05 at index (0,) (up to 1.3e-06 allowed)"
        );
    }

    #[test]
    fn greatest_differences_are_located_separately_in_2d() {
        let expected = tensor(&[1.0, 2.0, 100.0, 0.01, 5.0, 6.0], &[2, 3], Kind::Double);
        let actual = tensor(&[1.0, 2.0, 101.0, 0.02, 5.0, 6.0], &[2, 3], Kind::Double);
        let result = compare(&actual, &expected, tolerance_for(Kind::Double)).unwrap();
        assert_eq!(result.mismatched, 2);
        assert_eq!(
            (result.max_abs_diff, result.max_abs_index.clone()),
            (1.0, vec![0, 2])
        );
        assert_eq!(result.max_rel_index, vec![1, 0]);
        assert_eq!(result.max_rel_diff, (0.02 - 0.01) / 0.01);
    }

    #[test]
    fn nan_matches_nan_only_with_equal_nan() {
        let nan = tensor(&[f64::NAN, 1.0], &[2], Kind::Float);
        let strict = compare(&nan, &nan, tolerance_for(Kind::Float)).unwrap();
        assert!(!strict.passed);
        assert_eq!(strict.mismatched, 1);
        assert!(strict.max_abs_diff.is_nan());
        assert_eq!(strict.max_abs_index, vec![0]);

        let lenient = tolerance_for(Kind::Float).with_equal_nan(true);
        assert!(compare(&nan, &nan, lenient).unwrap().passed);
    }

    #[test]
    fn nan_against_a_number_is_a_mismatch_even_with_equal_nan() {
        let actual = tensor(&[f64::NAN, 1.0], &[2], Kind::Float);
        let expected = tensor(&[1.0, 1.0], &[2], Kind::Float);
        let tolerance = tolerance_for(Kind::Float).with_equal_nan(true);
        let result = compare(&actual, &expected, tolerance).unwrap();
        assert_eq!(result.mismatched, 1);
        assert!(result.max_abs_diff.is_nan() && result.max_rel_diff.is_nan());
    }

    #[test]
    fn equal_infinities_match_and_opposite_ones_do_not() {
        let infinities = tensor(&[f64::INFINITY, f64::NEG_INFINITY], &[2], Kind::Float);
        let tolerance = tolerance_for(Kind::Float);
        assert!(compare(&infinities, &infinities, tolerance).unwrap().passed);

        let flipped = tensor(&[f64::INFINITY, f64::INFINITY], &[2], Kind::Float);
        let result = compare(&infinities, &flipped, tolerance).unwrap();
        assert_eq!(result.mismatched, 1);
        assert_eq!(result.max_abs_diff, f64::INFINITY);
        assert_eq!(result.max_abs_index, vec![1]);
        // inf / inf
        assert!(result.max_rel_diff.is_nan());
    }

    #[test]
    fn zero_expected_gives_infinite_relative_difference() {
        let actual = tensor(&[0.0, 1e-3], &[2], Kind::Float);
        let expected = tensor(&[0.0, 0.0], &[2], Kind::Float);
        let result = compare(&actual, &expected, tolerance_for(Kind::Float)).unwrap();
        assert_eq!(result.mismatched, 1);
        assert_eq!(result.max_rel_diff, f64::INFINITY);
        assert_eq!(result.max_rel_index, vec![1]);
    }

    #[test]
    fn default_tolerances_per_dtype() {
        let pair = |kind| {
            let tolerance = tolerance_for(kind);
            (tolerance.rtol, tolerance.atol)
        };
        assert_eq!(pair(Kind::Half), (1e-3, 1e-5));
        assert_eq!(pair(Kind::BFloat16), (1.6e-2, 1e-5));
        assert_eq!(pair(Kind::Float), (1.3e-6, 1e-5));
        assert_eq!(pair(Kind::Double), (1e-7, 1e-7));
        assert_eq!(pair(Kind::ComplexFloat), (1.3e-6, 1e-5));
        assert_eq!(pair(Kind::Int64), (0.0, 0.0));
        assert_eq!(pair(Kind::Bool), (0.0, 0.0));
        assert!(!tolerance_for(Kind::Half).equal_nan);
    }

    #[test]
    fn mixed_dtypes_take_the_looser_tolerance_of_each_kind() {
        let pair = |actual, expected| {
            let tolerance = tolerance_for_pair(actual, expected);
            (tolerance.rtol, tolerance.atol)
        };
        assert_eq!(pair(Kind::Float, Kind::Half), (1e-3, 1e-5));
        assert_eq!(pair(Kind::Double, Kind::BFloat16), (1.6e-2, 1e-5));
        assert_eq!(pair(Kind::Int64, Kind::Double), (1e-7, 1e-7));
        assert_eq!(pair(Kind::Int, Kind::Int64), (0.0, 0.0));
    }

    #[test]
    fn mixed_dtypes_are_compared_in_the_promoted_dtype() {
        let actual = tensor(&[1.0, 2.0], &[2], Kind::BFloat16);
        let expected = tensor(&[1.0, 2.5], &[2], Kind::Half);
        let result = compare(
            &actual,
            &expected,
            tolerance_for_pair(Kind::BFloat16, Kind::Half),
        );
        assert_eq!(result.unwrap().dtype.name(), "float32");
    }

    #[test]
    fn shape_mismatch_is_an_error() {
        let actual = Tensor::zeros([2, 3], (Kind::Float, Device::Cpu));
        let expected = Tensor::zeros([3, 2], (Kind::Float, Device::Cpu));
        let error = compare(&actual, &expected, tolerance_for(Kind::Float)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "shape [2, 3] vs expected [3, 2]: compare tensors of the same shape"
        );
    }

    #[test]
    fn undefined_tensor_is_an_error() {
        let defined = Tensor::zeros([1], (Kind::Float, Device::Cpu));
        let error = compare(&defined, &Tensor::new(), tolerance_for(Kind::Float));
        assert!(matches!(
            error,
            Err(CompareError::Unsupported {
                side: "expected",
                ..
            })
        ));
    }

    #[test]
    fn empty_tensors_pass() {
        let empty = Tensor::zeros([0, 4], (Kind::Float, Device::Cpu));
        let result = compare(&empty, &empty, tolerance_for(Kind::Float)).unwrap();
        assert!(result.passed);
        assert_eq!((result.mismatched, result.total), (0, 0));
        assert!(result.max_abs_index.is_empty());
    }

    #[test]
    fn scalar_differences_are_taken_in_double_precision() {
        let actual = tensor(&[1000.0], &[], Kind::Half);
        let expected = tensor(&[0.3], &[], Kind::Half);
        let result = compare(&actual, &expected, tolerance_for(Kind::Half)).unwrap();
        assert!(result.max_abs_index.is_empty());
        // float16 0.3 is 0.300048828125; in float16 arithmetic the difference would be 999.5.
        assert_eq!(result.max_abs_diff, 999.699951171875);
        assert_eq!(
            result.describe(),
            "Absolute difference: 999.699951171875 (up to 1e-05 allowed)\n\
             Relative difference: 3331.790886899919 (up to 0.001 allowed)"
        );
    }

    #[test]
    fn uint8_differences_do_not_wrap_around() {
        let actual = Tensor::from_slice(&[0u8, 7]);
        let expected = Tensor::from_slice(&[1u8, 7]);
        let result = compare(&actual, &expected, tolerance_for(Kind::Uint8)).unwrap();
        assert_eq!(result.max_abs_diff, 1.0);
        assert_eq!(
            result.describe(),
            "Mismatched elements: 1 / 2 (50.0%)\n\
             Greatest absolute difference: 1 at index (0,)\n\
             Greatest relative difference: 1.0 at index (0,)"
        );
    }

    // tch 0.18 (libtorch 2.5) added the 1-byte floats.
    #[cfg(torch_2_5)]
    #[test]
    fn float8_is_compared_bitwise() {
        let actual = tensor(&[1.0, 2.0], &[2], Kind::Float8e4m3fn);
        let expected = tensor(&[1.0, 2.5], &[2], Kind::Float8e4m3fn);
        let exact = tolerance_for(Kind::Float8e4m3fn);
        assert_eq!((exact.rtol, exact.atol), (0.0, 0.0));
        let result = compare(&actual, &expected, exact).unwrap();
        assert_eq!((result.mismatched, result.max_abs_diff), (1, 0.5));

        let loose = tolerance_for(Kind::Float);
        let error = compare(&actual, &expected, loose).unwrap_err();
        assert_eq!(
            error.to_string(),
            "float8_e4m3fn tensors are compared bitwise: use rtol = 0 and atol = 0, \
             not rtol = 1.3e-6 and atol = 1e-5"
        );
    }

    #[test]
    fn quantized_tensors_compare_dequantized_but_not_with_plain_ones() {
        let values = tensor(&[0.5, 1.0, 1.5], &[3], Kind::Float);
        let quantized = values.quantize_per_tensor(0.5, 0, Kind::QInt8);
        let tolerance = tolerance_for(Kind::QInt8);
        let result = compare(&quantized, &quantized, tolerance).unwrap();
        assert!(result.passed);
        assert_eq!(result.dtype.name(), "float32");
        let error = compare(&quantized, &values, tolerance).unwrap_err();
        assert!(matches!(
            error,
            CompareError::Unsupported {
                side: "expected",
                ..
            }
        ));
    }

    #[test]
    fn json_round_trips_non_finite_numbers_as_strings() {
        let actual = tensor(&[f64::NAN, 1.0], &[2], Kind::Float);
        let expected = tensor(&[1.0, 0.0], &[2], Kind::Float);
        let result = compare(&actual, &expected, tolerance_for(Kind::Float)).unwrap();
        let json = serde_json::to_string(&result).unwrap();
        assert!(json.contains(r#""max_abs_diff":"nan""#), "{json}");
        let back: Comparison = serde_json::from_str(&json).unwrap();
        assert!(back.max_abs_diff.is_nan());
        assert_eq!(serde_json::to_string(&back).unwrap(), json);

        let infinite: Comparison = serde_json::from_str(
            &json.replace(r#""max_rel_diff":"nan""#, r#""max_rel_diff":"-inf""#),
        )
        .unwrap();
        assert_eq!(infinite.max_rel_diff, f64::NEG_INFINITY);
        assert!(serde_json::from_str::<Comparison>(&json.replace("\"nan\"", "\"NaN\"")).is_err());
    }

    #[test]
    fn non_contiguous_tensors_are_compared_by_their_logical_index() {
        // A transposed view: its storage holds 1..6 row by row, its elements do not.
        let transposed = tensor(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3], Kind::Float).tr();
        assert!(!transposed.is_contiguous());
        let same = tensor(&[1.0, 4.0, 2.0, 5.0, 3.0, 6.0], &[3, 2], Kind::Float);
        assert!(
            compare(&transposed, &same, tolerance_for(Kind::Float))
                .unwrap()
                .passed
        );
        let last_differs = tensor(&[1.0, 4.0, 2.0, 5.0, 3.0, 7.0], &[3, 2], Kind::Float);
        let result = compare(&transposed, &last_differs, tolerance_for(Kind::Float)).unwrap();
        assert_eq!(result.mismatched, 1);
        assert_eq!(result.max_abs_index, vec![2, 1]);
        assert_eq!(result.max_abs_diff, 1.0);
    }

    #[test]
    fn complex_tensors_are_refused_with_what_to_compare_instead() {
        let complex = Tensor::zeros([2], (Kind::ComplexFloat, Device::Cpu));
        let error = compare(&complex, &complex, tolerance_for(Kind::ComplexFloat)).unwrap_err();
        assert_eq!(
            error.to_string(),
            "cannot compare the actual tensor: complex64 tensors are not compared; \
             compare `Tensor::view_as_real` of both instead"
        );
    }
}
