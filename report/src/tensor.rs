//! A tensor's values on the host: a dtype, a shape and the elements in
//! row-major order, as read from a dump or copied out of a device tensor.

use half::{bf16, f16};
use thiserror::Error;

use crate::dtype::{DType, Float8Format};

/// One tensor's values on the host, in row-major (C) order.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTensor {
    shape: Vec<usize>,
    values: Values,
}

/// The elements of a tensor, typed by its dtype.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// `torch.bool`.
    Bool(Vec<bool>),
    /// `torch.uint8`.
    UInt8(Vec<u8>),
    /// `torch.int8`.
    Int8(Vec<i8>),
    /// `torch.int16`.
    Int16(Vec<i16>),
    /// `torch.int32`.
    Int32(Vec<i32>),
    /// `torch.int64`.
    Int64(Vec<i64>),
    /// `torch.float16`.
    Float16(Vec<f16>),
    /// `torch.bfloat16`.
    BFloat16(Vec<bf16>),
    /// `torch.float32`.
    Float32(Vec<f32>),
    /// `torch.float64`.
    Float64(Vec<f64>),
    /// A 1-byte float, as its bits.
    Float8(Float8Format, Vec<u8>),
}

/// Values that do not make a tensor of the shape given.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TensorError {
    /// The number of values is not the product of the shape.
    #[error(
        "{values} values do not fill shape {shape:?}, which holds {elements}: \
         give one value per element, in row-major order"
    )]
    Count {
        /// The shape asked for.
        shape: Vec<usize>,
        /// How many elements it holds.
        elements: usize,
        /// How many values were given.
        values: usize,
    },
    /// The number of bytes is not the shape's elements times the dtype's size.
    #[error(
        "{bytes} bytes do not hold a {dtype} tensor of shape {shape:?}, which takes {expected}: \
         give the elements' little-endian bytes in row-major order"
    )]
    Bytes {
        /// The dtype asked for.
        dtype: DType,
        /// The shape asked for.
        shape: Vec<usize>,
        /// How many bytes that takes.
        expected: usize,
        /// How many bytes were given.
        bytes: usize,
    },
    /// The shape holds more elements than memory can.
    #[error("shape {0:?} holds more elements than this machine can address")]
    TooLarge(Vec<usize>),
}

impl Values {
    /// The dtype of these values.
    pub fn dtype(&self) -> DType {
        match self {
            Values::Bool(_) => DType::Bool,
            Values::UInt8(_) => DType::UInt8,
            Values::Int8(_) => DType::Int8,
            Values::Int16(_) => DType::Int16,
            Values::Int32(_) => DType::Int32,
            Values::Int64(_) => DType::Int64,
            Values::Float16(_) => DType::Float16,
            Values::BFloat16(_) => DType::BFloat16,
            Values::Float32(_) => DType::Float32,
            Values::Float64(_) => DType::Float64,
            Values::Float8(format, _) => DType::Float8(*format),
        }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        match self {
            Values::Bool(v) => v.len(),
            Values::UInt8(v) | Values::Float8(_, v) => v.len(),
            Values::Int8(v) => v.len(),
            Values::Int16(v) => v.len(),
            Values::Int32(v) => v.len(),
            Values::Int64(v) => v.len(),
            Values::Float16(v) => v.len(),
            Values::BFloat16(v) => v.len(),
            Values::Float32(v) => v.len(),
            Values::Float64(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Elements of `dtype` from their little-endian bytes; `bytes` holds whole elements.
    fn from_le_bytes(dtype: DType, bytes: &[u8]) -> Values {
        fn each<const N: usize, T>(bytes: &[u8], convert: impl Fn([u8; N]) -> T) -> Vec<T> {
            bytes
                .chunks_exact(N)
                .map(|chunk| convert(chunk.try_into().expect("chunks of N bytes")))
                .collect()
        }
        match dtype {
            // Writers store 0 and 1; any other byte is read as true.
            DType::Bool => Values::Bool(bytes.iter().map(|b| *b != 0).collect()),
            DType::UInt8 => Values::UInt8(bytes.to_vec()),
            DType::Int8 => Values::Int8(each(bytes, i8::from_le_bytes)),
            DType::Int16 => Values::Int16(each(bytes, i16::from_le_bytes)),
            DType::Int32 => Values::Int32(each(bytes, i32::from_le_bytes)),
            DType::Int64 => Values::Int64(each(bytes, i64::from_le_bytes)),
            DType::Float16 => Values::Float16(each(bytes, f16::from_le_bytes)),
            DType::BFloat16 => Values::BFloat16(each(bytes, bf16::from_le_bytes)),
            DType::Float32 => Values::Float32(each(bytes, f32::from_le_bytes)),
            DType::Float64 => Values::Float64(each(bytes, f64::from_le_bytes)),
            DType::Float8(format) => Values::Float8(format, bytes.to_vec()),
        }
    }
}

impl HostTensor {
    /// A tensor of `shape` (empty for a 0-dim tensor) holding `values` in row-major order.
    pub fn new(shape: Vec<usize>, values: Values) -> Result<HostTensor, TensorError> {
        let elements = elements(&shape)?;
        if elements != values.len() {
            return Err(TensorError::Count {
                shape,
                elements,
                values: values.len(),
            });
        }
        Ok(HostTensor { shape, values })
    }

    /// A tensor of `dtype` and `shape` from its elements' little-endian bytes, as
    /// safetensors stores them and as `Tensor::copy_data_u8` copies them out on
    /// a little-endian host.
    pub fn from_le_bytes(
        dtype: DType,
        shape: Vec<usize>,
        bytes: &[u8],
    ) -> Result<HostTensor, TensorError> {
        let expected = elements(&shape)?
            .checked_mul(dtype.size_in_bytes())
            .ok_or_else(|| TensorError::TooLarge(shape.clone()))?;
        if bytes.len() != expected {
            return Err(TensorError::Bytes {
                dtype,
                shape,
                expected,
                bytes: bytes.len(),
            });
        }
        Ok(HostTensor {
            values: Values::from_le_bytes(dtype, bytes),
            shape,
        })
    }

    /// The shape; empty for a 0-dim tensor.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The dtype.
    pub fn dtype(&self) -> DType {
        self.values.dtype()
    }

    /// The elements in row-major order.
    pub fn values(&self) -> &Values {
        &self.values
    }

    /// The number of elements (1 for a 0-dim tensor).
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether the tensor has no elements (a dimension of size 0).
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }
}

fn elements(shape: &[usize]) -> Result<usize, TensorError> {
    shape
        .iter()
        .try_fold(1usize, |product, size| product.checked_mul(*size))
        .ok_or_else(|| TensorError::TooLarge(shape.to_vec()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_little_endian_elements() {
        let bytes: Vec<u8> = [1.5f32, -2.0, 0.25, 8.0]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let tensor = HostTensor::from_le_bytes(DType::Float32, vec![2, 2], &bytes).unwrap();
        assert_eq!(tensor.dtype(), DType::Float32);
        assert_eq!(tensor.shape(), [2, 2]);
        assert_eq!(
            tensor.values(),
            &Values::Float32(vec![1.5, -2.0, 0.25, 8.0])
        );

        let half = HostTensor::from_le_bytes(DType::BFloat16, vec![], &[0x80, 0x3f]).unwrap();
        assert_eq!(half.values(), &Values::BFloat16(vec![bf16::ONE]));
        assert_eq!(half.len(), 1);
        let flags = HostTensor::from_le_bytes(DType::Bool, vec![3], &[0, 1, 2]).unwrap();
        assert_eq!(flags.values(), &Values::Bool(vec![false, true, true]));
    }

    #[test]
    fn empty_and_zero_dim_shapes() {
        let empty = HostTensor::new(vec![0, 3], Values::Int64(vec![])).unwrap();
        assert!(empty.is_empty());
        let scalar = HostTensor::new(vec![], Values::Float64(vec![0.5])).unwrap();
        assert_eq!((scalar.len(), scalar.shape().len()), (1, 0));
    }

    #[test]
    fn wrong_counts_are_refused_with_the_numbers() {
        let error = HostTensor::new(vec![2, 3], Values::Float32(vec![0.0; 5])).unwrap_err();
        assert_eq!(
            error.to_string(),
            "5 values do not fill shape [2, 3], which holds 6: give one value per element, in row-major order"
        );
        let error = HostTensor::from_le_bytes(DType::Float16, vec![3], &[0; 5]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "5 bytes do not hold a float16 tensor of shape [3], which takes 6: \
             give the elements' little-endian bytes in row-major order"
        );
        assert_eq!(
            HostTensor::from_le_bytes(DType::Int64, vec![usize::MAX, 2], &[]),
            Err(TensorError::TooLarge(vec![usize::MAX, 2]))
        );
    }
}
