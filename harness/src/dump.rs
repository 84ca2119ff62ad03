//! Tensors saved as safetensors, the format the ecosystem shares with Python:
//! `matrix --dump DIR` writes each case's trajectory per device as
//! `DIR/<case>/<device>.safetensors`; `devcheck_report::dump` reads such files
//! (or any written by PyTorch) back, without libtorch, for `compare`.
//!
//! A trajectory file holds, for every step `k` the tolerance check runs,
//! `step<k>.output.<name>`, `step<k>.loss`, `step<k>.grad.<parameter>` and
//! `step<k>.param.<parameter>` (parameters after the optimizer step), in the
//! case's dtype, with the case, device, dtype, torch version, host and commit in
//! the file's metadata.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use devcheck_report::dump::keys;
use safetensors::tensor::{Dtype, View};
use tch::Tensor;
use thiserror::Error;

use crate::case::Named;
use crate::device::DeviceSpec;

/// Why a dump could not be written: what devcheck-report's reader says of a
/// file (I/O, not safetensors), or a tensor that cannot go into one.
#[derive(Debug, Error)]
pub enum DumpError {
    /// The file could not be written, or safetensors refused it.
    #[error(transparent)]
    File(#[from] devcheck_report::dump::DumpError),
    /// A tensor of a dtype safetensors does not carry.
    #[error("{path}: tensor `{name}` has dtype {dtype}, which devcheck cannot write")]
    Dtype {
        /// The file.
        path: PathBuf,
        /// The tensor.
        name: String,
        /// Its dtype.
        dtype: String,
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
    let io = |source| devcheck_report::dump::DumpError::Io {
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
    .map_err(|source| devcheck_report::dump::DumpError::Format {
        path: path.to_owned(),
        source,
    })?;
    crate::files::write_atomically(path, &buffer).map_err(io)?;
    Ok(())
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
    metadata.insert(keys::CASE.to_owned(), case.to_owned());
    metadata.insert(keys::DEVICE.to_owned(), device.to_string());
    metadata.insert(keys::DTYPE.to_owned(), dtype.to_owned());
    metadata.insert(keys::STEPS.to_owned(), trajectory.len().to_string());
    metadata.insert(
        keys::HOST.to_owned(),
        gethostname::gethostname().to_string_lossy().into_owned(),
    );
    if let Ok(version) = crate::environment::Environment::collect().map(|e| e.libtorch_version) {
        metadata.insert(keys::TORCH.to_owned(), version);
    }
    if let Some(commit) = crate::environment::git_commit() {
        metadata.insert(keys::COMMIT.to_owned(), commit);
    }
    write(&path, &tensors, &metadata)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::Kind;

    #[test]
    fn every_dtype_is_written_with_its_metadata_as_the_report_crate_reads_it() {
        use devcheck_report::dump::read;
        use devcheck_report::{DType, Values};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/cpu.safetensors");
        let base = Tensor::from_slice(&[1.5f64, -2.25, f64::NAN, 0.0]).reshape([2, 2]);
        let kinds = [
            (Kind::Half, DType::Float16),
            (Kind::BFloat16, DType::BFloat16),
            (Kind::Float, DType::Float32),
            (Kind::Double, DType::Float64),
            (Kind::Int64, DType::Int64),
            (Kind::Bool, DType::Bool),
        ];
        let tensors: Vec<(String, Tensor)> = kinds
            .iter()
            .map(|(k, _)| {
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
        for (kind, dtype) in kinds {
            let name = format!("t.{kind:?}");
            let read = back.tensor(&name).unwrap_or_else(|| panic!("no {name}"));
            assert_eq!(read.dtype(), dtype, "{name}");
            assert_eq!(read.shape(), [2, 2], "{name}");
            let as_f64: Vec<f64> = match read.values() {
                Values::Float16(v) => v.iter().map(|x| x.to_f64()).collect(),
                Values::BFloat16(v) => v.iter().map(|x| x.to_f64()).collect(),
                Values::Float32(v) => v.iter().map(|&x| f64::from(x)).collect(),
                Values::Float64(v) => v.clone(),
                Values::Int64(v) => v.iter().map(|&x| x as f64).collect(),
                Values::Bool(v) => v.iter().map(|&x| f64::from(u8::from(x))).collect(),
                other => panic!("{name}: {other:?}"),
            };
            let expected: &[f64] = if dtype == DType::Int64 {
                &[1.0, -2.0, 0.0, 0.0]
            } else if dtype == DType::Bool {
                &[1.0, 1.0, 0.0, 0.0]
            } else {
                &[1.5, -2.25, 0.0, 0.0]
            };
            assert_eq!(as_f64, expected, "{name}");
        }
        let Values::Float32(nan) = back.tensor("nan").unwrap().values() else {
            panic!("nan is not float32")
        };
        assert_eq!(
            nan.iter().map(|x| x.is_nan()).collect::<Vec<_>>(),
            [false, false, true, false]
        );
        assert_eq!(&nan[..2], [1.5, -2.25]);
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    #[test]
    fn device_file_names_have_no_colon() {
        assert_eq!(file_name(DeviceSpec::Cuda(1)), "cuda-1.safetensors");
        assert_eq!(file_name(DeviceSpec::Mps), "mps.safetensors");
    }
}
