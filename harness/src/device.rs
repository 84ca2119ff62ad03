//! The devices a matrix runs on: naming, parsing, discovery, and the
//! device-generic operations (synchronize, memory, cache) behind one type.

use std::fmt;
use std::str::FromStr;

use crate::shim::{self, Backend, DeviceMemory, ShimError};

/// One concrete device: `cpu`, `cuda:N` or `mps`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DeviceSpec {
    /// The host CPU.
    Cpu,
    /// CUDA device N.
    Cuda(usize),
    /// The Apple GPU through Metal.
    Mps,
}

/// A device name that is not `cpu`, `cuda`, `cuda:N` or `mps`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown device `{0}`: expected `cpu`, `cuda`, `cuda:N` or `mps`")]
pub struct UnknownDevice(pub String);

impl DeviceSpec {
    /// The backend this device belongs to.
    pub fn backend(self) -> Backend {
        match self {
            DeviceSpec::Cpu => Backend::Cpu,
            DeviceSpec::Cuda(_) => Backend::Cuda,
            DeviceSpec::Mps => Backend::Mps,
        }
    }

    /// Device index within its backend (0 for cpu and mps).
    pub fn index(self) -> usize {
        match self {
            DeviceSpec::Cuda(i) => i,
            DeviceSpec::Cpu | DeviceSpec::Mps => 0,
        }
    }

    /// The tch device.
    pub fn to_tch(self) -> tch::Device {
        match self {
            DeviceSpec::Cpu => tch::Device::Cpu,
            DeviceSpec::Cuda(i) => tch::Device::Cuda(i),
            DeviceSpec::Mps => tch::Device::Mps,
        }
    }

    /// The spec of a tch device, where devcheck knows its kind.
    pub fn from_tch(device: tch::Device) -> Option<Self> {
        match device {
            tch::Device::Cpu => Some(DeviceSpec::Cpu),
            tch::Device::Cuda(i) => Some(DeviceSpec::Cuda(i)),
            tch::Device::Mps => Some(DeviceSpec::Mps),
            _ => None,
        }
    }

    /// Whether this is an accelerator (work is queued asynchronously).
    pub fn is_accelerator(self) -> bool {
        self != DeviceSpec::Cpu
    }

    /// Whether this libtorch lets the shim read this device's caching allocator
    /// (MPS always; CUDA from libtorch 2.9).
    fn has_allocator_stats(self) -> bool {
        self.backend() != Backend::Cuda || crate::version::CUDA_ALLOCATOR_STATS
    }

    /// Blocks until all queued work on this device is done. No-op on CPU.
    pub fn synchronize(self) -> Result<(), ShimError> {
        crate::init()?;
        if self.is_accelerator() {
            shim::synchronize(self.backend(), self.index())?;
        }
        Ok(())
    }

    /// Allocator figures of an accelerator; `None` on CPU (measured as RSS instead).
    /// `None` where the caching allocator cannot be read: on the CPU, and for
    /// CUDA on a libtorch before 2.9 (then the tensor-memory tracker measures it).
    pub fn memory(self) -> Result<Option<DeviceMemory>, ShimError> {
        crate::init()?;
        if !self.is_accelerator() || !self.has_allocator_stats() {
            return Ok(None);
        }
        shim::memory_stats(self.backend(), self.index()).map(Some)
    }

    /// Resets the allocator's peak figures. No-op on CPU.
    pub fn reset_peak_memory(self) -> Result<(), ShimError> {
        crate::init()?;
        if self.is_accelerator() && self.has_allocator_stats() {
            shim::reset_peak_memory(self.backend(), self.index())?;
        }
        Ok(())
    }

    /// Returns the allocator's cached blocks to the driver. No-op on CPU.
    pub fn empty_cache(self) -> Result<(), ShimError> {
        crate::init()?;
        if self.is_accelerator() && self.has_allocator_stats() {
            shim::empty_cache(self.backend())?;
        }
        Ok(())
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Cpu => f.write_str("cpu"),
            DeviceSpec::Cuda(i) => write!(f, "cuda:{i}"),
            DeviceSpec::Mps => f.write_str("mps"),
        }
    }
}

impl FromStr for DeviceSpec {
    type Err = UnknownDevice;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        match name.trim().to_ascii_lowercase().as_str() {
            "cpu" => Ok(DeviceSpec::Cpu),
            "mps" => Ok(DeviceSpec::Mps),
            "cuda" => Ok(DeviceSpec::Cuda(0)),
            other => other
                .strip_prefix("cuda:")
                .and_then(|index| index.parse().ok())
                .map(DeviceSpec::Cuda)
                .ok_or_else(|| UnknownDevice(name.to_owned())),
        }
    }
}

/// A device a matrix would run on, and why it cannot if it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceSlot {
    /// The device.
    pub device: DeviceSpec,
    /// `None` when usable; otherwise the reason shown for the ignored trials.
    pub unavailable: Option<String>,
}

/// Every device this process could run on: cpu, each cuda:N, mps. Devices
/// that are not usable are included with the reason, so that reports show them.
pub fn discover() -> Result<Vec<DeviceSlot>, ShimError> {
    crate::init()?;
    let mut slots = vec![DeviceSlot {
        device: DeviceSpec::Cpu,
        unavailable: None,
    }];
    let cuda = shim::backend_info(Backend::Cuda)?;
    if cuda.available && cuda.device_count > 0 {
        slots.extend((0..cuda.device_count).map(|i| DeviceSlot {
            device: DeviceSpec::Cuda(i),
            unavailable: None,
        }));
    } else {
        slots.push(DeviceSlot {
            device: DeviceSpec::Cuda(0),
            unavailable: Some(unavailable_reason(Backend::Cuda, cuda.built)),
        });
    }
    let mps = shim::backend_info(Backend::Mps)?;
    slots.push(DeviceSlot {
        device: DeviceSpec::Mps,
        unavailable: (!mps.available).then(|| unavailable_reason(Backend::Mps, mps.built)),
    });
    Ok(slots)
}

fn unavailable_reason(backend: Backend, built: bool) -> String {
    match (backend, built) {
        (_, false) => format!("{}: not built into this libtorch", backend.name()),
        (Backend::Cuda, true) => "cuda: built, but no usable GPU or driver".to_owned(),
        (Backend::Mps, true) => {
            "mps: built, but no usable Apple GPU (needs Apple silicon, macOS 12.3+)".to_owned()
        }
        (Backend::Cpu, true) => "cpu: unavailable".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_device_names() {
        for (text, device) in [
            ("cpu", DeviceSpec::Cpu),
            ("mps", DeviceSpec::Mps),
            ("cuda:3", DeviceSpec::Cuda(3)),
        ] {
            assert_eq!(text.parse::<DeviceSpec>(), Ok(device));
            assert_eq!(device.to_string(), text);
        }
        assert_eq!("CUDA".parse::<DeviceSpec>(), Ok(DeviceSpec::Cuda(0)));
    }

    #[test]
    fn rejects_unknown_device_names_with_the_accepted_forms() {
        let error = "cuda:x".parse::<DeviceSpec>().unwrap_err();
        assert_eq!(
            error.to_string(),
            "unknown device `cuda:x`: expected `cpu`, `cuda`, `cuda:N` or `mps`"
        );
        assert!("tpu".parse::<DeviceSpec>().is_err());
    }

    #[test]
    fn discovery_lists_cpu_first_and_every_backend() {
        let slots = discover().unwrap();
        assert_eq!(
            slots[0],
            DeviceSlot {
                device: DeviceSpec::Cpu,
                unavailable: None
            }
        );
        assert!(slots.iter().any(|s| s.device.backend() == Backend::Cuda));
        assert!(slots.iter().any(|s| s.device == DeviceSpec::Mps));
    }
}
