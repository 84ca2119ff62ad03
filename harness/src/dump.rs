//! Tensors saved as safetensors, the format the ecosystem shares with Python:
//! `matrix --dump DIR` writes each case's trajectory per device as
//! `DIR/<case>/<device>.safetensors`, and `devcheck-compare` reads two such
//! files (or any written by PyTorch) back.
//!
//! A trajectory file holds, for every step `k` the tolerance check runs,
//! `step<k>.output.<name>`, `step<k>.loss`, `step<k>.grad.<parameter>` and
//! `step<k>.param.<parameter>` (parameters after the optimizer step), in the
//! case's dtype, with the case, device, dtype, torch version, host and commit in
//! the file's metadata.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use safetensors::tensor::{Dtype, SafeTensors, View};
use safetensors::SafeTensorError;
use tch::{Kind, Tensor};
use thiserror::Error;

use crate::case::Named;
use crate::device::DeviceSpec;

/// Why a dump could not be written or read.
#[derive(Debug, Error)]
pub enum DumpError {
    /// The file could not be read or written.
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
    /// A tensor of a dtype safetensors (or this reader) does not carry.
    #[error("{path}: tensor `{name}` has dtype {dtype}, which devcheck cannot {action}")]
    Dtype {
        /// The file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// Its dtype.
        dtype: String,
        /// `read` or `write`.
        action: &'static str,
    },
    /// libtorch failed while converting a tensor.
    #[error("{path}: tensor `{name}`: {source}")]
    Torch {
        /// The file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// libtorch's error.
        source: tch::TchError,
    },
}

/// The file name of a device's dump (`cpu`, `cuda-0`, `mps`; no `:` so that it
/// is a valid name everywhere).
pub fn file_name(device: DeviceSpec) -> String {
    format!("{}.safetensors", device.to_string().replace(':', "-"))
}

/// One CPU tensor's bytes, ready for the file.
struct Bytes {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Bytes {
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

fn bytes_of(path: &Path, name: &str, tensor: &Tensor) -> Result<Bytes, DumpError> {
    let torch = |source| DumpError::Torch {
        path: path.to_owned(),
        name: name.to_owned(),
        source,
    };
    // tch's own conversion, for the same safetensors version.
    let dtype = Dtype::try_from(tensor.kind()).map_err(|_| DumpError::Dtype {
        path: path.to_owned(),
        name: name.to_owned(),
        dtype: format!("{:?}", tensor.kind()),
        action: "write",
    })?;
    let host = tensor
        .f_detach()
        .and_then(|t| t.f_to_device(tch::Device::Cpu))
        .and_then(|t| t.f_contiguous())
        .map_err(torch)?;
    let numel = host.numel();
    let mut data = vec![0u8; numel * host.kind().elt_size_in_bytes()];
    host.f_copy_data_u8(&mut data, numel).map_err(torch)?;
    Ok(Bytes {
        dtype,
        shape: host.size().iter().map(|&d| d as usize).collect(),
        data,
    })
}

/// Writes named tensors (any device; copied to the CPU) with `metadata` to
/// `path`, atomically: a reader sees no file or the whole file.
pub fn write(
    path: &Path,
    tensors: &[(String, Tensor)],
    metadata: &BTreeMap<String, String>,
) -> Result<(), DumpError> {
    let io = |source| DumpError::Io {
        path: path.to_owned(),
        source,
    };
    let bytes = tensors
        .iter()
        .map(|(name, tensor)| Ok((name.clone(), bytes_of(path, name, tensor)?)))
        .collect::<Result<Vec<_>, DumpError>>()?;
    let metadata: HashMap<String, String> = metadata.clone().into_iter().collect();
    let buffer = safetensors::tensor::serialize(
        bytes.iter().map(|(name, b)| (name.as_str(), b)),
        &Some(metadata),
    )
    .map_err(|source| DumpError::Format {
        path: path.to_owned(),
        source,
    })?;
    crate::files::write_atomically(path, &buffer).map_err(io)?;
    Ok(())
}

/// A file's tensors (on the CPU, in file order by name) and its metadata.
#[derive(Debug)]
pub struct Dump {
    /// The file's `__metadata__`, if it has one.
    pub metadata: BTreeMap<String, String>,
    /// The tensors.
    pub tensors: Named,
}

/// Reads a safetensors file, whoever wrote it.
pub fn read(path: &Path) -> Result<Dump, DumpError> {
    let buffer = std::fs::read(path).map_err(|source| DumpError::Io {
        path: path.to_owned(),
        source,
    })?;
    let format = |source| DumpError::Format {
        path: path.to_owned(),
        source,
    };
    let (_, header) = SafeTensors::read_metadata(&buffer).map_err(format)?;
    let metadata = header
        .metadata()
        .clone()
        .unwrap_or_default()
        .into_iter()
        .collect();
    let file = SafeTensors::deserialize(&buffer).map_err(format)?;
    let mut tensors = file
        .tensors()
        .into_iter()
        .map(|(name, view)| {
            if Kind::try_from(view.dtype()).is_err() {
                return Err(DumpError::Dtype {
                    path: path.to_owned(),
                    name,
                    dtype: format!("{:?}", view.dtype()),
                    action: "read",
                });
            }
            let tensor = Tensor::try_from(view).map_err(|source| DumpError::Torch {
                path: path.to_owned(),
                name: name.clone(),
                source,
            })?;
            Ok((name, tensor))
        })
        .collect::<Result<Named, DumpError>>()?;
    tensors.sort_by(|a, b| natural_order(&a.0, &b.0));
    Ok(Dump { metadata, tensors })
}

/// Orders names with their digit runs compared as numbers (`step2` < `step10`).
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
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
        if order != std::cmp::Ordering::Equal {
            return order;
        }
    }
    ca.len().cmp(&cb.len()).then(a.cmp(b))
}

/// Writes a device's trajectory as `dir/<case>/<device>.safetensors`; returns the path.
pub fn write_trajectory(
    dir: &Path,
    case: &str,
    device: DeviceSpec,
    dtype: &str,
    trajectory: &[Named],
) -> Result<PathBuf, DumpError> {
    let path = dir.join(case).join(file_name(device));
    let tensors: Vec<(String, Tensor)> = trajectory
        .iter()
        .enumerate()
        .flat_map(|(step, named)| {
            named
                .iter()
                .map(move |(name, t)| (format!("step{step}.{name}"), t.shallow_clone()))
        })
        .collect();
    let mut metadata = BTreeMap::new();
    metadata.insert("devcheck.case".to_owned(), case.to_owned());
    metadata.insert("devcheck.device".to_owned(), device.to_string());
    metadata.insert("devcheck.dtype".to_owned(), dtype.to_owned());
    metadata.insert("devcheck.steps".to_owned(), trajectory.len().to_string());
    metadata.insert(
        "devcheck.host".to_owned(),
        gethostname::gethostname().to_string_lossy().into_owned(),
    );
    if let Ok(version) = crate::environment::Environment::collect().map(|e| e.libtorch_version) {
        metadata.insert("devcheck.torch".to_owned(), version);
    }
    if let Some(commit) = crate::environment::git_commit() {
        metadata.insert("devcheck.commit".to_owned(), commit);
    }
    write(&path, &tensors, &metadata)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_dtype_with_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/cpu.safetensors");
        let base = Tensor::from_slice(&[1.5f64, -2.25, f64::NAN, 0.0]).reshape([2, 2]);
        let tensors: Vec<(String, Tensor)> = [
            Kind::Half,
            Kind::BFloat16,
            Kind::Float,
            Kind::Double,
            Kind::Int64,
            Kind::Bool,
        ]
        .iter()
        .map(|k| {
            (
                format!("t.{k:?}"),
                base.nan_to_num(0.0, None, None).to_kind(*k),
            )
        })
        .chain([("nan".to_owned(), base.to_kind(Kind::Float))])
        .collect();
        let mut metadata = BTreeMap::new();
        metadata.insert("devcheck.case".to_owned(), "x".to_owned());
        write(&path, &tensors, &metadata).unwrap();
        let back = read(&path).unwrap();
        assert_eq!(back.metadata, metadata);
        assert_eq!(back.tensors.len(), tensors.len());
        for (name, original) in &tensors {
            let (_, read) = back.tensors.iter().find(|(n, _)| n == name).unwrap();
            assert_eq!(read.kind(), original.kind(), "{name}");
            assert_eq!(read.size(), original.size(), "{name}");
            assert!(
                read.isnan()
                    .eq_tensor(&original.isnan())
                    .all()
                    .int64_value(&[])
                    == 1,
                "{name}"
            );
            assert!(read
                .nan_to_num(0.0, None, None)
                .equal(&original.nan_to_num(0.0, None, None)));
        }
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn a_file_that_is_not_safetensors_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("report.json");
        std::fs::write(&path, b"{\"schema\": 1}").unwrap();
        let error = read(&path).unwrap_err().to_string();
        assert!(
            error.starts_with(&format!("{}: not a safetensors file", path.display())),
            "{error}"
        );
        let missing = read(&dir.path().join("absent.safetensors"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("absent.safetensors: No such file"),
            "{missing}"
        );
    }

    #[test]
    fn names_sort_with_numbers_as_numbers() {
        let mut names = vec!["step10.loss", "step2.loss", "step2.grad.w", "step1.param.b"];
        names.sort_by(|a, b| natural_order(a, b));
        assert_eq!(
            names,
            ["step1.param.b", "step2.grad.w", "step2.loss", "step10.loss"]
        );
    }

    #[test]
    fn device_file_names_have_no_colon() {
        assert_eq!(file_name(DeviceSpec::Cuda(1)), "cuda-1.safetensors");
        assert_eq!(file_name(DeviceSpec::Mps), "mps.safetensors");
    }
}
