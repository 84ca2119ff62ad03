//! Dumps: safetensors files of named tensors with a `__metadata__` map, read
//! into host arrays. `matrix --dump DIR` writes one per case and device
//! (`DIR/<case>/<device>.safetensors`), PyTorch's `safetensors.torch.save_file`
//! writes the same format, and this reads either without libtorch.
//!
//! A trajectory dump holds, for every step `k` the tolerance check runs,
//! `step<k>.output.<name>`, `step<k>.loss`, `step<k>.grad.<parameter>` and
//! `step<k>.param.<parameter>`, with the [`keys`] below in its metadata.

use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, SafeTensors};
use safetensors::SafeTensorError;
use thiserror::Error;

use crate::dtype::DType;
use crate::tensor::{HostTensor, TensorError};

/// The metadata keys devcheck writes into a trajectory dump.
pub mod keys {
    /// The case's name (`classifier`).
    pub const CASE: &str = "devcheck.case";
    /// The device it ran on (`cpu`, `cuda:0`, `mps`).
    pub const DEVICE: &str = "devcheck.device";
    /// The case's dtype (`float32`).
    pub const DTYPE: &str = "devcheck.dtype";
    /// How many steps the file holds.
    pub const STEPS: &str = "devcheck.steps";
    /// The machine's host name.
    pub const HOST: &str = "devcheck.host";
    /// The libtorch version that ran the steps.
    pub const TORCH: &str = "devcheck.torch";
    /// The git commit of the code that ran.
    pub const COMMIT: &str = "devcheck.commit";
}

/// Why a dump could not be read.
#[derive(Debug, Error)]
pub enum DumpError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: std::io::Error,
    },
    /// The file is not a valid safetensors file.
    #[error("{path}: not a safetensors file ({source})")]
    Format {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        source: SafeTensorError,
    },
    /// A tensor of a dtype devcheck does not compare (uint16, uint32, uint64).
    #[error("{path}: tensor `{name}` has dtype {dtype}, which devcheck cannot read")]
    Dtype {
        /// The file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// Its dtype, as safetensors names it (`U16`).
        dtype: String,
    },
    /// A tensor whose bytes do not match its shape and dtype.
    #[error("{path}: tensor `{name}`: {source}")]
    Tensor {
        /// The file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// What is wrong with it.
        source: TensorError,
    },
}

/// A file's tensors (in [`natural_order`] of their names) and its metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Dump {
    /// The file's `__metadata__`, empty if it has none.
    pub metadata: BTreeMap<String, String>,
    /// The tensors by name.
    pub tensors: Vec<(String, HostTensor)>,
}

impl Dump {
    /// The tensor named `name`, if the file has one.
    pub fn tensor(&self, name: &str) -> Option<&HostTensor> {
        self.tensors
            .iter()
            .find(|(candidate, _)| candidate == name)
            .map(|(_, tensor)| tensor)
    }
}

/// Reads a safetensors file, whoever wrote it.
pub fn read(path: &Path) -> Result<Dump, DumpError> {
    let buffer = std::fs::read(path).map_err(|source| DumpError::Io {
        path: path.to_owned(),
        source,
    })?;
    from_bytes(path, &buffer)
}

/// Reads a safetensors file's bytes; `path` names the file in errors.
pub fn from_bytes(path: &Path, buffer: &[u8]) -> Result<Dump, DumpError> {
    let format = |source| DumpError::Format {
        path: path.to_owned(),
        source,
    };
    let (_, header) = SafeTensors::read_metadata(buffer).map_err(format)?;
    let metadata = header
        .metadata()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let file = SafeTensors::deserialize(buffer).map_err(format)?;
    let mut views = file.tensors();
    // Sorted first, so that the first unreadable tensor named is always the same one.
    views.sort_by(|a, b| natural_order(&a.0, &b.0));
    let tensors = views
        .into_iter()
        .map(|(name, view)| {
            let Some(dtype) = dtype_of(view.dtype()) else {
                return Err(DumpError::Dtype {
                    path: path.to_owned(),
                    dtype: format!("{:?}", view.dtype()),
                    name,
                });
            };
            match HostTensor::from_le_bytes(dtype, view.shape().to_vec(), view.data()) {
                Ok(tensor) => Ok((name, tensor)),
                Err(source) => Err(DumpError::Tensor {
                    path: path.to_owned(),
                    name,
                    source,
                }),
            }
        })
        .collect::<Result<Vec<_>, DumpError>>()?;
    Ok(Dump { metadata, tensors })
}

/// The dtype of a safetensors dtype; none for the unsigned integers wider than a
/// byte, which tch (and so the harness) cannot hold either, and for any dtype a
/// later safetensors adds.
fn dtype_of(dtype: Dtype) -> Option<DType> {
    Some(match dtype {
        Dtype::BOOL => DType::Bool,
        Dtype::U8 => DType::UInt8,
        Dtype::I8 => DType::Int8,
        Dtype::I16 => DType::Int16,
        Dtype::I32 => DType::Int32,
        Dtype::I64 => DType::Int64,
        Dtype::F16 => DType::Float16,
        Dtype::BF16 => DType::BFloat16,
        Dtype::F32 => DType::Float32,
        Dtype::F64 => DType::Float64,
        _ => return None,
    })
}

/// Orders names with their digit runs compared as numbers (`step2` < `step10`).
pub fn natural_order(a: &str, b: &str) -> Ordering {
    fn chunks(text: &str) -> Vec<(bool, &str)> {
        let mut out = Vec::new();
        let mut start = 0;
        let bytes = text.as_bytes();
        for i in 1..=bytes.len() {
            if i == bytes.len() || bytes[i].is_ascii_digit() != bytes[start].is_ascii_digit() {
                out.push((bytes[start].is_ascii_digit(), &text[start..i]));
                start = i;
            }
        }
        out
    }
    let (ca, cb) = (chunks(a), chunks(b));
    for ((da, ta), (db, tb)) in ca.iter().zip(cb.iter()) {
        let order = if *da && *db {
            let (na, nb) = (ta.trim_start_matches('0'), tb.trim_start_matches('0'));
            na.len().cmp(&nb.len()).then(na.cmp(nb))
        } else {
            ta.cmp(tb)
        };
        if order != Ordering::Equal {
            return order;
        }
    }
    ca.len().cmp(&cb.len()).then(a.cmp(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;
    use std::collections::HashMap;

    use crate::tensor::Values;

    /// A tensor as safetensors serializes it.
    struct Raw {
        dtype: Dtype,
        shape: Vec<usize>,
        data: Vec<u8>,
    }

    impl safetensors::tensor::View for &Raw {
        fn dtype(&self) -> Dtype {
            self.dtype
        }
        fn shape(&self) -> &[usize] {
            &self.shape
        }
        fn data(&self) -> Cow<'_, [u8]> {
            Cow::Borrowed(&self.data)
        }
        fn data_len(&self) -> usize {
            self.data.len()
        }
    }

    fn file(tensors: &[(&str, Raw)], metadata: Option<HashMap<String, String>>) -> Vec<u8> {
        safetensors::tensor::serialize(tensors.iter().map(|(n, t)| (*n, t)), &metadata).unwrap()
    }

    #[test]
    fn reads_tensors_in_natural_order_with_metadata() {
        let f32s = |values: &[f32]| values.iter().flat_map(|v| v.to_le_bytes()).collect();
        let bytes = file(
            &[
                (
                    "step10.loss",
                    Raw {
                        dtype: Dtype::F32,
                        shape: vec![],
                        data: f32s(&[0.5]),
                    },
                ),
                (
                    "step2.loss",
                    Raw {
                        dtype: Dtype::F32,
                        shape: vec![],
                        data: f32s(&[0.25]),
                    },
                ),
                (
                    "step2.mask",
                    Raw {
                        dtype: Dtype::BOOL,
                        shape: vec![2],
                        data: vec![1, 0],
                    },
                ),
            ],
            Some(HashMap::from([(keys::CASE.to_owned(), "net".to_owned())])),
        );
        let dump = from_bytes(Path::new("net/cpu.safetensors"), &bytes).unwrap();
        assert_eq!(dump.metadata[keys::CASE], "net");
        let names: Vec<&str> = dump.tensors.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["step2.loss", "step2.mask", "step10.loss"]);
        assert_eq!(
            dump.tensor("step2.mask").unwrap().values(),
            &Values::Bool(vec![true, false])
        );
        assert_eq!(
            dump.tensor("step10.loss").unwrap().shape(),
            [] as [usize; 0]
        );
        assert!(dump.tensor("step3.loss").is_none());
    }

    #[test]
    fn a_file_without_metadata_has_an_empty_map() {
        let bytes = file(
            &[(
                "x",
                Raw {
                    dtype: Dtype::I64,
                    shape: vec![0],
                    data: vec![],
                },
            )],
            None,
        );
        let dump = from_bytes(Path::new("x.safetensors"), &bytes).unwrap();
        assert!(dump.metadata.is_empty());
        assert!(dump.tensors[0].1.is_empty());
    }

    #[test]
    fn a_file_that_is_not_safetensors_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        std::fs::write(&path, b"{\"schema\": 1}").unwrap();
        let error = read(&path).unwrap_err();
        assert!(matches!(error, DumpError::Format { .. }), "{error}");
        let message = error.to_string();
        assert!(
            message.starts_with(&format!("{}: not a safetensors file (", path.display())),
            "{message}"
        );
    }

    #[test]
    fn a_missing_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let error = read(&dir.path().join("absent.safetensors")).unwrap_err();
        assert!(
            matches!(&error, DumpError::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound)
        );
        assert!(
            error
                .to_string()
                .contains("absent.safetensors: No such file"),
            "{error}"
        );
    }

    #[test]
    fn wide_unsigned_integers_are_refused_by_name() {
        let bytes = file(
            &[
                (
                    "b",
                    Raw {
                        dtype: Dtype::U32,
                        shape: vec![1],
                        data: vec![0; 4],
                    },
                ),
                (
                    "a",
                    Raw {
                        dtype: Dtype::U16,
                        shape: vec![1],
                        data: vec![0; 2],
                    },
                ),
            ],
            None,
        );
        let error = from_bytes(Path::new("u.safetensors"), &bytes).unwrap_err();
        assert_eq!(
            error.to_string(),
            "u.safetensors: tensor `a` has dtype U16, which devcheck cannot read"
        );
    }

    #[test]
    fn names_sort_with_numbers_as_numbers() {
        let mut names = vec![
            "step10.loss",
            "step2.loss",
            "step2.grad.w",
            "step1.param.b",
            "step02.x",
        ];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            names,
            [
                "step1.param.b",
                "step2.grad.w",
                "step2.loss",
                "step02.x",
                "step10.loss"
            ]
        );
    }
}
