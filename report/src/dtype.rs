//! The dtypes devcheck compares, named and promoted as PyTorch names and
//! promotes them (`torch.promote_types`, c10's `promoteTypes`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use thiserror::Error;

/// A tensor's element type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// `torch.bool`.
    Bool,
    /// `torch.uint8`.
    UInt8,
    /// `torch.int8`.
    Int8,
    /// `torch.int16`.
    Int16,
    /// `torch.int32`.
    Int32,
    /// `torch.int64`.
    Int64,
    /// `torch.float16`.
    Float16,
    /// `torch.bfloat16`.
    BFloat16,
    /// `torch.float32`.
    Float32,
    /// `torch.float64`.
    Float64,
    /// One of the 1-byte floats.
    Float8(Float8Format),
}

/// The layouts of PyTorch's 1-byte floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Float8Format {
    /// `torch.float8_e5m2`: IEEE-like, with infinities.
    E5M2,
    /// `torch.float8_e4m3fn`: finite only, NaN at all ones.
    E4M3Fn,
    /// `torch.float8_e5m2fnuz`: finite only, one NaN (0x80), no negative zero.
    E5M2Fnuz,
    /// `torch.float8_e4m3fnuz`: finite only, one NaN (0x80), no negative zero.
    E4M3Fnuz,
}

/// Any dtype PyTorch has (c10's `ScalarType`): one devcheck compares, or a
/// complex or quantized one that it only names in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScalarType {
    /// A dtype devcheck holds as host values and compares.
    Compared(DType),
    /// `torch.complex32`.
    Complex32,
    /// `torch.complex64`.
    Complex64,
    /// `torch.complex128`.
    Complex128,
    /// `torch.qint8`.
    QInt8,
    /// `torch.quint8`.
    QUInt8,
    /// `torch.qint32`.
    QInt32,
}

/// Two dtypes that PyTorch does not promote to a common one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error(
    "{actual} and {expected} have no common dtype (PyTorch promotes no 1-byte float \
     with another dtype): convert one tensor to the other's dtype first"
)]
pub struct PromotionError {
    /// The actual tensor's dtype.
    pub actual: DType,
    /// The expected tensor's dtype.
    pub expected: DType,
}

/// A dtype name that is not one of PyTorch's.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error(
    "`{0}` is not a dtype devcheck compares: use PyTorch's name, such as `float32` or `bfloat16`"
)]
pub struct UnknownDType(pub String);

impl DType {
    /// Every dtype, in PyTorch's order of `ScalarType`.
    pub const ALL: [DType; 14] = [
        DType::UInt8,
        DType::Int8,
        DType::Int16,
        DType::Int32,
        DType::Int64,
        DType::Float16,
        DType::Float32,
        DType::Float64,
        DType::Bool,
        DType::BFloat16,
        DType::Float8(Float8Format::E5M2),
        DType::Float8(Float8Format::E4M3Fn),
        DType::Float8(Float8Format::E5M2Fnuz),
        DType::Float8(Float8Format::E4M3Fnuz),
    ];

    /// PyTorch's name for the dtype (`"float32"`).
    pub fn name(self) -> &'static str {
        match self {
            DType::Bool => "bool",
            DType::UInt8 => "uint8",
            DType::Int8 => "int8",
            DType::Int16 => "int16",
            DType::Int32 => "int32",
            DType::Int64 => "int64",
            DType::Float16 => "float16",
            DType::BFloat16 => "bfloat16",
            DType::Float32 => "float32",
            DType::Float64 => "float64",
            DType::Float8(Float8Format::E5M2) => "float8_e5m2",
            DType::Float8(Float8Format::E4M3Fn) => "float8_e4m3fn",
            DType::Float8(Float8Format::E5M2Fnuz) => "float8_e5m2fnuz",
            DType::Float8(Float8Format::E4M3Fnuz) => "float8_e4m3fnuz",
        }
    }

    /// Bytes per element.
    pub fn size_in_bytes(self) -> usize {
        match self {
            DType::Bool | DType::UInt8 | DType::Int8 | DType::Float8(_) => 1,
            DType::Int16 | DType::Float16 | DType::BFloat16 => 2,
            DType::Int32 | DType::Float32 => 4,
            DType::Int64 | DType::Float64 => 8,
        }
    }

    /// Whether PyTorch calls it a floating-point dtype (`dtype.is_floating_point`).
    pub fn is_floating_point(self) -> bool {
        matches!(
            self,
            DType::Float16 | DType::BFloat16 | DType::Float32 | DType::Float64 | DType::Float8(_)
        )
    }

    /// `torch.promote_types(self, other)` for the dtypes devcheck compares.
    pub fn promote(self, other: DType) -> Result<DType, PromotionError> {
        use DType::*;
        let promoted = match (self, other) {
            _ if self == other => self,
            (Float8(_), _) | (_, Float8(_)) => {
                return Err(PromotionError {
                    actual: self,
                    expected: other,
                })
            }
            (Bool, other) | (other, Bool) => other,
            // Neither holds the other's range.
            (UInt8, Int8) | (Int8, UInt8) | (Float16, BFloat16) | (BFloat16, Float16) => {
                if self.is_floating_point() {
                    Float32
                } else {
                    Int16
                }
            }
            (a, b) if a.is_floating_point() != b.is_floating_point() => {
                if a.is_floating_point() {
                    a
                } else {
                    b
                }
            }
            // The same kind (integers or floats), one wider than the other.
            (a, b) => {
                if a.size_in_bytes() >= b.size_in_bytes() {
                    a
                } else {
                    b
                }
            }
        };
        Ok(promoted)
    }
}

impl ScalarType {
    /// PyTorch's name for the dtype (`"float32"`, `"complex64"`): the one source
    /// of dtype names, for the harness's tch kinds as for dumps.
    pub fn name(self) -> &'static str {
        match self {
            ScalarType::Compared(dtype) => dtype.name(),
            ScalarType::Complex32 => "complex32",
            ScalarType::Complex64 => "complex64",
            ScalarType::Complex128 => "complex128",
            ScalarType::QInt8 => "qint8",
            ScalarType::QUInt8 => "quint8",
            ScalarType::QInt32 => "qint32",
        }
    }

    /// The dtype devcheck compares, if it is one.
    pub fn compared(self) -> Option<DType> {
        match self {
            ScalarType::Compared(dtype) => Some(dtype),
            _ => None,
        }
    }
}

impl From<DType> for ScalarType {
    fn from(dtype: DType) -> Self {
        ScalarType::Compared(dtype)
    }
}

impl Float8Format {
    /// The value of one element from its bits, widened exactly to float32.
    pub fn value(self, bits: u8) -> f32 {
        crate::float8::to_f32(self, bits)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for DType {
    type Err = UnknownDType;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        DType::ALL
            .into_iter()
            .find(|dtype| dtype.name() == name)
            .ok_or_else(|| UnknownDType(name.to_owned()))
    }
}

impl Serialize for DType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for DType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DType::*;

    #[test]
    fn names_round_trip() {
        for dtype in DType::ALL {
            assert_eq!(dtype.name().parse::<DType>(), Ok(dtype));
        }
        assert_eq!(
            "float".parse::<DType>().unwrap_err().to_string(),
            "`float` is not a dtype devcheck compares: use PyTorch's name, such as `float32` or `bfloat16`"
        );
    }

    /// `torch.promote_types` in PyTorch 2.11 for every pair of these dtypes, by rows.
    #[test]
    fn promotion_matches_torch_promote_types() {
        let order = [
            Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64,
        ];
        #[rustfmt::skip]
        let table = [
            // bool    uint8    int8     int16    int32    int64    float16  bfloat16 float32  float64
            [Bool,     UInt8,   Int8,    Int16,   Int32,   Int64,   Float16, BFloat16, Float32, Float64], // bool
            [UInt8,    UInt8,   Int16,   Int16,   Int32,   Int64,   Float16, BFloat16, Float32, Float64], // uint8
            [Int8,     Int16,   Int8,    Int16,   Int32,   Int64,   Float16, BFloat16, Float32, Float64], // int8
            [Int16,    Int16,   Int16,   Int16,   Int32,   Int64,   Float16, BFloat16, Float32, Float64], // int16
            [Int32,    Int32,   Int32,   Int32,   Int32,   Int64,   Float16, BFloat16, Float32, Float64], // int32
            [Int64,    Int64,   Int64,   Int64,   Int64,   Int64,   Float16, BFloat16, Float32, Float64], // int64
            [Float16,  Float16, Float16, Float16, Float16, Float16, Float16, Float32,  Float32, Float64], // float16
            [BFloat16, BFloat16,BFloat16,BFloat16,BFloat16,BFloat16,Float32, BFloat16, Float32, Float64], // bfloat16
            [Float32,  Float32, Float32, Float32, Float32, Float32, Float32, Float32,  Float32, Float64], // float32
            [Float64,  Float64, Float64, Float64, Float64, Float64, Float64, Float64,  Float64, Float64], // float64
        ];
        for (row, a) in order.iter().enumerate() {
            for (column, b) in order.iter().enumerate() {
                assert_eq!(a.promote(*b), Ok(table[row][column]), "{a} with {b}");
            }
        }
    }

    #[test]
    fn float8_promotes_only_with_itself() {
        let e4m3 = Float8(Float8Format::E4M3Fn);
        assert_eq!(e4m3.promote(e4m3), Ok(e4m3));
        let error = e4m3.promote(Float32).unwrap_err();
        assert_eq!(
            error.to_string(),
            "float8_e4m3fn and float32 have no common dtype (PyTorch promotes no 1-byte float \
             with another dtype): convert one tensor to the other's dtype first"
        );
        assert!(Bool.promote(Float8(Float8Format::E5M2)).is_err());
        assert!(e4m3.promote(Float8(Float8Format::E5M2)).is_err());
    }

    #[test]
    fn scalar_types_name_compared_dtypes_as_dtypes_do() {
        assert_eq!(ScalarType::from(Float32).name(), "float32");
        assert_eq!(
            ScalarType::from(Float8(Float8Format::E4M3Fn)).name(),
            "float8_e4m3fn"
        );
        assert_eq!(ScalarType::Complex32.name(), "complex32");
        assert_eq!(ScalarType::QUInt8.compared(), None);
    }

    #[test]
    fn serializes_as_pytorch_name() {
        assert_eq!(serde_json::to_string(&BFloat16).unwrap(), r#""bfloat16""#);
        assert_eq!(serde_json::from_str::<DType>(r#""int64""#).unwrap(), Int64);
        assert!(serde_json::from_str::<DType>(r#""Float""#).is_err());
    }
}
