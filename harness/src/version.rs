//! What differs between the tch releases devcheck builds against (0.13 to
//! 0.26), on the Rust side: the one module that names a `torch_2_N` cfg. Those
//! cfgs come from build.rs, which reads the version of the libtorch torch-sys
//! linked; the C++ side's differences are `shim/compat.h`'s.

#[cfg(torch_2_5)]
use devcheck_report::dtype::Float8Format;
use devcheck_report::dtype::{DType, ScalarType};
use tch::Kind;

/// Whether the shim can read the CUDA caching allocator's statistics (libtorch
/// 2.9 made them reachable without CUDA's headers). Before, CUDA memory is
/// measured by the tensor-memory tracker, as the CPU's is.
pub(crate) const CUDA_ALLOCATOR_STATS: bool = cfg!(torch_2_9);

/// Whether device events can be timed (`c10::Event::elapsedTime`, libtorch 2.4).
pub(crate) const DEVICE_EVENT_TIMING: bool = cfg!(torch_2_4);

/// Why the timing check has no device-event figure on this libtorch.
pub(crate) const NO_DEVICE_EVENT_TIMING: &str =
    "device event timing needs libtorch 2.4 or newer (tch 0.17 or newer)";

/// The dtype PyTorch has for a tch kind, as devcheck-report names it.
pub fn scalar_type(kind: Kind) -> ScalarType {
    ScalarType::Compared(match kind {
        Kind::Bool => DType::Bool,
        Kind::Uint8 => DType::UInt8,
        Kind::Int8 => DType::Int8,
        Kind::Int16 => DType::Int16,
        Kind::Int => DType::Int32,
        Kind::Int64 => DType::Int64,
        Kind::Half => DType::Float16,
        Kind::BFloat16 => DType::BFloat16,
        Kind::Float => DType::Float32,
        Kind::Double => DType::Float64,
        // tch 0.18 (libtorch 2.5) added the 1-byte floats.
        #[cfg(torch_2_5)]
        Kind::Float8e5m2 => DType::Float8(Float8Format::E5M2),
        #[cfg(torch_2_5)]
        Kind::Float8e4m3fn => DType::Float8(Float8Format::E4M3Fn),
        #[cfg(torch_2_5)]
        Kind::Float8e5m2fnuz => DType::Float8(Float8Format::E5M2Fnuz),
        #[cfg(torch_2_5)]
        Kind::Float8e4m3fnuz => DType::Float8(Float8Format::E4M3Fnuz),
        Kind::ComplexHalf => return ScalarType::Complex32,
        Kind::ComplexFloat => return ScalarType::Complex64,
        Kind::ComplexDouble => return ScalarType::Complex128,
        Kind::QInt8 => return ScalarType::QInt8,
        Kind::QUInt8 => return ScalarType::QUInt8,
        Kind::QInt32 => return ScalarType::QInt32,
    })
}

/// The dtype devcheck-report compares for a tch kind; `None` for the complex
/// and quantized kinds, which it does not hold.
pub(crate) fn dtype_of(kind: Kind) -> Option<DType> {
    scalar_type(kind).compared()
}

/// PyTorch's name for a kind (`float32`, `float8_e4m3fn`, `complex64`): devcheck-report's.
pub fn kind_name(kind: Kind) -> &'static str {
    scalar_type(kind).name()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_dtype_devcheck_report_holds_has_its_kind() {
        let mut kinds = vec![
            Kind::Bool,
            Kind::Uint8,
            Kind::Int8,
            Kind::Int16,
            Kind::Int,
            Kind::Int64,
            Kind::Half,
            Kind::BFloat16,
            Kind::Float,
            Kind::Double,
        ];
        #[cfg(torch_2_5)]
        kinds.extend([
            Kind::Float8e5m2,
            Kind::Float8e4m3fn,
            Kind::Float8e5m2fnuz,
            Kind::Float8e4m3fnuz,
        ]);
        let dtypes: Vec<DType> = kinds.iter().filter_map(|&k| dtype_of(k)).collect();
        assert_eq!(dtypes.len(), kinds.len());
        // This workspace builds tch 0.24 (libtorch 2.11): every dtype is there.
        assert_eq!(dtypes.len(), DType::ALL.len());
        for dtype in DType::ALL {
            assert!(dtypes.contains(&dtype), "{dtype:?}");
        }
    }

    #[test]
    fn names_are_pytorchs() {
        assert_eq!(kind_name(Kind::Float), "float32");
        assert_eq!(kind_name(Kind::Int), "int32");
        assert_eq!(kind_name(Kind::ComplexHalf), "complex32");
        assert_eq!(kind_name(Kind::QUInt8), "quint8");
        assert_eq!(kind_name(Kind::QInt32), "qint32");
    }
}
