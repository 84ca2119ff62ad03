//! Safe wrappers over the C++ shim (`shim/devcheck_shim.cpp`).
//!
//! Every shim call returns either nothing or an owned error string; the
//! wrappers turn that into [`ShimError`], so no libtorch exception or abort
//! ever reaches the caller.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void, CStr};
use std::path::PathBuf;

#[repr(C)]
#[derive(Default)]
struct RawBackend {
    built: c_int,
    available: c_int,
    device_count: c_int,
}

#[repr(C)]
#[derive(Default)]
struct RawMemory {
    allocated_current: i64,
    allocated_peak: i64,
    reserved_current: i64,
    reserved_peak: i64,
}

#[repr(C)]
#[derive(Default)]
struct RawPrecision {
    cuda_matmul_tf32: c_int,
    cudnn_conv_tf32: c_int,
    cudnn_rnn_tf32: c_int,
    matmul_precision: c_int,
}

extern "C" {
    fn dc_free_error(error: *mut c_char);
    fn dc_ensure_cuda_loaded(was_linked: *mut c_int, loaded_now: *mut c_int) -> *mut c_char;
    fn dc_libtorch_lib_dir(buf: *mut c_char, len: usize) -> *mut c_char;
    fn dc_compiled_torch_version() -> *const c_char;
    fn dc_backend_info(device_type: c_int, out: *mut RawBackend) -> *mut c_char;
    fn dc_synchronize(device_type: c_int, device_index: c_int) -> *mut c_char;
    fn dc_memory_stats(device_type: c_int, device_index: c_int, out: *mut RawMemory)
        -> *mut c_char;
    fn dc_reset_peak_memory(device_type: c_int, device_index: c_int) -> *mut c_char;
    fn dc_empty_cache(device_type: c_int) -> *mut c_char;
    fn dc_precision_flags(out: *mut RawPrecision) -> *mut c_char;
    fn dc_event_new(device_type: c_int, device_index: c_int, out: *mut *mut c_void) -> *mut c_char;
    fn dc_event_record(event: *mut c_void) -> *mut c_char;
    fn dc_event_elapsed_ms(start: *mut c_void, end: *mut c_void, out: *mut f64) -> *mut c_char;
    fn dc_event_free(event: *mut c_void);
    fn dc_set_sync_debug_mode(device_type: c_int, mode: c_int, previous: *mut c_int)
        -> *mut c_char;
    fn dc_warnings_begin(
        on_warning: Option<unsafe extern "C" fn(*mut c_void)>,
        context: *mut c_void,
        out: *mut *mut c_void,
    ) -> *mut c_char;
    fn dc_warnings_count(capture: *mut c_void) -> usize;
    fn dc_warnings_get(
        capture: *mut c_void,
        i: usize,
        message: *mut *const c_char,
        file: *mut *const c_char,
        line: *mut u32,
    );
    fn dc_warnings_end(capture: *mut c_void);
    fn dc_host_random_begin(device_type: c_int, out: *mut *mut c_void) -> *mut c_char;
    fn dc_host_random_end(state: *mut c_void);
    fn dc_reference_random_begin(draw_dtype: c_int, out: *mut *mut c_void) -> *mut c_char;
    fn dc_tensor_memory_begin(out: *mut *mut c_void) -> *mut c_char;
    fn dc_tensor_memory_read(
        tracker: *mut c_void,
        device_type: c_int,
        current: *mut i64,
        peak: *mut i64,
    );
    fn dc_tensor_memory_reset_peak(tracker: *mut c_void);
    fn dc_tensor_memory_end(tracker: *mut c_void);
}

/// A libtorch call made through the shim failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{operation}: {message}")]
pub struct ShimError {
    /// What devcheck was doing, e.g. "synchronize cuda:0".
    pub operation: String,
    /// libtorch's message, without its C++ backtrace.
    pub message: String,
}

/// Turns a shim call's returned error string into a `Result`, releasing it.
pub(crate) fn check(
    operation: impl FnOnce() -> String,
    error: *mut c_char,
) -> Result<(), ShimError> {
    if error.is_null() {
        return Ok(());
    }
    // SAFETY: a non-null return is a NUL-terminated string malloc'd by the shim,
    // released here exactly once.
    let message = unsafe { CStr::from_ptr(error) }
        .to_string_lossy()
        .into_owned();
    unsafe { dc_free_error(error) };
    Err(ShimError {
        operation: operation(),
        message,
    })
}

/// The device families the shim knows, numbered as the shim numbers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The host CPU.
    Cpu = 0,
    /// NVIDIA CUDA.
    Cuda = 1,
    /// Apple Metal Performance Shaders.
    Mps = 2,
}

impl Backend {
    /// All backends, in report order.
    pub const ALL: [Backend; 3] = [Backend::Cpu, Backend::Cuda, Backend::Mps];

    /// The lower-case name used in trial names and reports.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Cpu => "cpu",
            Backend::Cuda => "cuda",
            Backend::Mps => "mps",
        }
    }
}

/// Whether a backend is compiled in, usable now, and how many devices it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct BackendInfo {
    /// Compiled into the loaded libtorch.
    pub built: bool,
    /// Usable in this process now.
    pub available: bool,
    /// Number of devices; 0 when not available.
    pub device_count: usize,
}

/// How `libtorch_cuda` came to be in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CudaLibrary {
    /// The binary was linked against it.
    Linked,
    /// The linker dropped it (`--as-needed`); devcheck loaded it at start-up.
    LoadedAtRuntime,
    /// This libtorch has no CUDA library.
    Absent,
}

/// Loads `libtorch_cuda` if the linker dropped it. Must precede other libtorch calls,
/// because libtorch caches the absence of CUDA hooks on first use.
pub(crate) fn ensure_cuda_loaded() -> Result<CudaLibrary, ShimError> {
    let (mut was_linked, mut loaded_now) = (0, 0);
    // SAFETY: both pointers are valid for writes.
    check(|| "load libtorch_cuda".into(), unsafe {
        dc_ensure_cuda_loaded(&mut was_linked, &mut loaded_now)
    })?;
    Ok(match (was_linked, loaded_now) {
        (1, _) => CudaLibrary::Linked,
        (_, 1) => CudaLibrary::LoadedAtRuntime,
        _ => CudaLibrary::Absent,
    })
}

/// Directory of the `libtorch_cpu` library this process actually loaded.
pub fn libtorch_lib_dir() -> Result<PathBuf, ShimError> {
    let mut buf = vec![0u8; 4096];
    // SAFETY: buf is writable for its length; the shim NUL-terminates on success.
    check(|| "locate libtorch".into(), unsafe {
        dc_libtorch_lib_dir(buf.as_mut_ptr().cast(), buf.len())
    })?;
    let text = CStr::from_bytes_until_nul(&buf).map_err(|e| ShimError {
        operation: "locate libtorch".into(),
        message: e.to_string(),
    })?;
    Ok(PathBuf::from(text.to_string_lossy().into_owned()))
}

/// The libtorch version whose headers the shim was compiled against.
pub fn compiled_torch_version() -> String {
    // SAFETY: returns a pointer to a static NUL-terminated string.
    unsafe { CStr::from_ptr(dc_compiled_torch_version()) }
        .to_string_lossy()
        .into_owned()
}

/// Built/available/count of one backend, as libtorch's hooks report it.
pub fn backend_info(backend: Backend) -> Result<BackendInfo, ShimError> {
    let mut raw = RawBackend::default();
    // SAFETY: raw is valid for writes.
    check(|| format!("query {}", backend.name()), unsafe {
        dc_backend_info(backend as c_int, &mut raw)
    })?;
    Ok(BackendInfo {
        built: raw.built != 0,
        available: raw.available != 0,
        device_count: usize::try_from(raw.device_count).unwrap_or(0),
    })
}

/// Blocks until every queued operation on the device has finished. No-op on CPU.
pub fn synchronize(backend: Backend, index: usize) -> Result<(), ShimError> {
    // SAFETY: plain values in, error string out.
    check(
        || format!("synchronize {}:{index}", backend.name()),
        unsafe { dc_synchronize(backend as c_int, index as c_int) },
    )
}

/// Device allocator figures in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct DeviceMemory {
    /// Bytes held by live tensors.
    pub allocated_current: u64,
    /// High-water mark of `allocated_current` since the last reset, where kept.
    pub allocated_peak: Option<u64>,
    /// Bytes the caching allocator holds from the driver.
    pub reserved_current: u64,
    /// High-water mark of `reserved_current`, where kept.
    pub reserved_peak: Option<u64>,
}

/// Current and peak allocator figures for an accelerator.
pub fn memory_stats(backend: Backend, index: usize) -> Result<DeviceMemory, ShimError> {
    let mut raw = RawMemory::default();
    // SAFETY: raw is valid for writes.
    check(
        || format!("memory statistics of {}:{index}", backend.name()),
        unsafe { dc_memory_stats(backend as c_int, index as c_int, &mut raw) },
    )?;
    let known = |v: i64| u64::try_from(v).ok();
    Ok(DeviceMemory {
        allocated_current: known(raw.allocated_current).unwrap_or(0),
        allocated_peak: known(raw.allocated_peak),
        reserved_current: known(raw.reserved_current).unwrap_or(0),
        reserved_peak: known(raw.reserved_peak),
    })
}

/// Resets the allocator's peak figures (where it keeps them).
pub fn reset_peak_memory(backend: Backend, index: usize) -> Result<(), ShimError> {
    // SAFETY: plain values in, error string out.
    check(
        || format!("reset peak memory of {}:{index}", backend.name()),
        unsafe { dc_reset_peak_memory(backend as c_int, index as c_int) },
    )
}

/// Returns cached, unused blocks to the driver.
pub fn empty_cache(backend: Backend) -> Result<(), ShimError> {
    // SAFETY: plain values in, error string out.
    check(|| format!("empty the {} cache", backend.name()), unsafe {
        dc_empty_cache(backend as c_int)
    })
}

/// Reduced-precision float32 modes that change numerics on CUDA.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PrecisionFlags {
    /// TF32 allowed for float32 matmuls (cuBLAS).
    pub cuda_matmul_tf32: bool,
    /// TF32 allowed for float32 convolutions (cuDNN).
    pub cudnn_conv_tf32: bool,
    /// TF32 allowed for float32 recurrent layers (cuDNN).
    pub cudnn_rnn_tf32: bool,
    /// `torch.get_float32_matmul_precision()`: highest, high or medium.
    pub float32_matmul_precision: String,
}

impl PrecisionFlags {
    /// Whether any reduced-precision float32 mode is on.
    pub fn any_reduced(&self) -> bool {
        self.cuda_matmul_tf32
            || self.cudnn_conv_tf32
            || self.cudnn_rnn_tf32
            || self.float32_matmul_precision != "highest"
    }
}

/// The process's float32 precision settings.
pub fn precision_flags() -> Result<PrecisionFlags, ShimError> {
    let mut raw = RawPrecision::default();
    // SAFETY: raw is valid for writes.
    check(|| "read precision flags".into(), unsafe {
        dc_precision_flags(&mut raw)
    })?;
    Ok(PrecisionFlags {
        cuda_matmul_tf32: raw.cuda_matmul_tf32 != 0,
        cudnn_conv_tf32: raw.cudnn_conv_tf32 != 0,
        cudnn_rnn_tf32: raw.cudnn_rnn_tf32 != 0,
        float32_matmul_precision: match raw.matmul_precision {
            0 => "highest",
            1 => "high",
            _ => "medium",
        }
        .to_owned(),
    })
}

/// A device event recorded on the device's current stream, for device-side timing.
pub struct DeviceEvent {
    raw: *mut c_void,
}

impl DeviceEvent {
    /// A new timing-enabled event on an accelerator.
    pub fn new(backend: Backend, index: usize) -> Result<Self, ShimError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: raw is valid for writes.
        check(
            || format!("create an event on {}:{index}", backend.name()),
            unsafe { dc_event_new(backend as c_int, index as c_int, &mut raw) },
        )?;
        Ok(Self { raw })
    }

    /// Records the event on the device's current stream.
    pub fn record(&mut self) -> Result<(), ShimError> {
        // SAFETY: self.raw is a live event from dc_event_new.
        check(|| "record an event".into(), unsafe {
            dc_event_record(self.raw)
        })
    }

    /// Waits for `end` and returns the device time between the two events in ms.
    pub fn elapsed_ms(&self, end: &DeviceEvent) -> Result<f64, ShimError> {
        let mut ms = 0.0;
        // SAFETY: both events are live; ms is valid for writes.
        check(|| "read event time".into(), unsafe {
            dc_event_elapsed_ms(self.raw, end.raw, &mut ms)
        })?;
        Ok(ms)
    }
}

impl Drop for DeviceEvent {
    fn drop(&mut self) {
        // SAFETY: self.raw came from dc_event_new and is freed once.
        unsafe { dc_event_free(self.raw) }
    }
}

/// CUDA's sync-debug mode: what libtorch does when an operation synchronizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncDebugMode {
    /// Synchronizing operations run silently.
    Off = 0,
    /// They emit a warning.
    Warn = 1,
    /// They raise an error.
    Error = 2,
}

/// Sets CUDA's sync-debug mode and returns the previous one.
pub fn set_sync_debug_mode(mode: SyncDebugMode) -> Result<SyncDebugMode, ShimError> {
    let mut previous = 0;
    // SAFETY: previous is valid for writes.
    check(|| "set CUDA sync-debug mode".into(), unsafe {
        dc_set_sync_debug_mode(Backend::Cuda as c_int, mode as c_int, &mut previous)
    })?;
    Ok(match previous {
        1 => SyncDebugMode::Warn,
        2 => SyncDebugMode::Error,
        _ => SyncDebugMode::Off,
    })
}

/// One warning libtorch raised (`TORCH_WARN`), with where it came from.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TorchWarning {
    /// The warning text.
    pub message: String,
    /// libtorch source file that raised it.
    pub file: String,
    /// Line in that file.
    pub line: u32,
    /// The user's line that made the call (`path:line:column`, relative to the
    /// repository), found as the op observer finds its sites.
    pub caller: Option<String>,
}

/// Captures libtorch warnings on the current thread, with warn-always on so
/// that once-per-process warnings (such as MPS's CPU fallback) repeat.
pub struct WarningCapture {
    raw: *mut c_void,
    stacks: Box<RefCell<Vec<Vec<usize>>>>,
}

unsafe extern "C" fn on_warning(context: *mut c_void) {
    // SAFETY: context is the RefCell boxed by the live WarningCapture that registered it.
    let stacks = unsafe { &*(context as *const RefCell<Vec<Vec<usize>>>) };
    // Never unwind into C++.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        if let Ok(mut list) = stacks.try_borrow_mut() {
            // Raw return addresses now; named later, as the op observer names its sites.
            let mut stack = Vec::new();
            backtrace::trace(|frame| {
                stack.push(frame.ip() as usize);
                stack.len() < 96
            });
            list.push(stack);
        }
    }));
}

impl WarningCapture {
    /// Starts capturing; the previous handler returns when this is dropped.
    pub fn start() -> Result<Self, ShimError> {
        let stacks = Box::new(RefCell::new(Vec::new()));
        let mut raw = std::ptr::null_mut();
        let context = (&*stacks as *const RefCell<Vec<Vec<usize>>>)
            .cast_mut()
            .cast();
        // SAFETY: raw is valid for writes; the context outlives the capture (both
        // are dropped together, the capture first).
        check(|| "capture libtorch warnings".into(), unsafe {
            dc_warnings_begin(Some(on_warning), context, &mut raw)
        })?;
        Ok(Self { raw, stacks })
    }

    /// Warnings captured so far.
    pub fn warnings(&self) -> Vec<TorchWarning> {
        // SAFETY: self.raw is a live capture; returned strings are borrowed
        // until dc_warnings_end and copied here.
        let count = unsafe { dc_warnings_count(self.raw) };
        let stacks = self.stacks.borrow();
        (0..count)
            .map(|i| {
                let (mut message, mut file, mut line) = (std::ptr::null(), std::ptr::null(), 0);
                let (message, file) = unsafe {
                    dc_warnings_get(self.raw, i, &mut message, &mut file, &mut line);
                    (
                        CStr::from_ptr(message).to_string_lossy().into_owned(),
                        CStr::from_ptr(file).to_string_lossy().into_owned(),
                    )
                };
                let caller = stacks
                    .get(i)
                    .and_then(|stack| crate::observer::sites::call_site(stack).site)
                    .map(|site| site.to_string());
                TorchWarning {
                    message,
                    file,
                    line,
                    caller,
                }
            })
            .collect()
    }
}

impl Drop for WarningCapture {
    fn drop(&mut self) {
        // SAFETY: self.raw came from dc_warnings_begin and is ended once.
        unsafe { dc_warnings_end(self.raw) }
    }
}

/// While it lives, an accelerator's random kernels (bernoulli, dropout, uniform,
/// normal, random) draw on the CPU from the CPU's default generator, so that a
/// step draws the same numbers on every device (the tolerance check's runs).
pub struct HostRandom {
    raw: *mut c_void,
}

impl HostRandom {
    /// Replaces the random kernels of `backend` (CUDA or MPS) until dropped.
    pub fn start(backend: Backend) -> Result<Self, ShimError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: raw is valid for writes.
        check(
            || format!("draw {}'s random numbers on the CPU", backend.name()),
            unsafe { dc_host_random_begin(backend as c_int, &mut raw) },
        )?;
        Ok(Self { raw })
    }
}

impl Drop for HostRandom {
    fn drop(&mut self) {
        // SAFETY: self.raw came from dc_host_random_begin and is ended once;
        // libtorch restores the kernels it replaced.
        unsafe { dc_host_random_end(self.raw) }
    }
}

/// While it lives, the CPU's `normal_` and `uniform_` fill a float64 tensor
/// with the numbers they would draw in the case's dtype, widened: the float64
/// reference of a step that adds noise draws the float32 runs' noise (the CPU
/// draws other numbers for a float64 tensor from the same generator state).
pub struct ReferenceRandom {
    raw: *mut c_void,
}

impl ReferenceRandom {
    /// Replaces the CPU's `normal_` and `uniform_` until dropped; `draw` is the
    /// case's floating dtype.
    pub fn start(draw: tch::Kind) -> Result<Self, ShimError> {
        // c10::ScalarType's codes, which every libtorch release keeps.
        let code: c_int = match draw {
            tch::Kind::Half => 5,
            tch::Kind::Float => 6,
            tch::Kind::Double => 7,
            tch::Kind::BFloat16 => 15,
            other => {
                return Err(ShimError {
                    operation: "draw the reference's random numbers".into(),
                    message: format!("{other:?} is not a floating dtype"),
                })
            }
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: raw is valid for writes.
        check(
            || format!("draw the reference's random numbers in {draw:?}"),
            unsafe { dc_reference_random_begin(code, &mut raw) },
        )?;
        Ok(Self { raw })
    }
}

impl Drop for ReferenceRandom {
    fn drop(&mut self) {
        // SAFETY: self.raw came from dc_reference_random_begin and is ended once
        // (the same library object as a HostRandom's); libtorch restores the
        // CPU's kernels.
        unsafe { dc_host_random_end(self.raw) }
    }
}

/// Tensor memory allocated on this thread while the tracker lives, through
/// libtorch's own memory-reporting hook: exact live bytes, CPU included.
pub struct TensorMemory {
    raw: *mut c_void,
}

/// Live and peak tensor bytes of one backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct TensorBytes {
    /// Bytes of tensors allocated since tracking began that are still alive.
    pub current: u64,
    /// The most `current` has been since tracking began or the last reset.
    pub peak: u64,
}

impl TensorMemory {
    /// Starts tracking on this thread.
    pub fn start() -> Result<Self, ShimError> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: raw is valid for writes.
        check(|| "track tensor memory".into(), unsafe {
            dc_tensor_memory_begin(&mut raw)
        })?;
        Ok(Self { raw })
    }

    /// Current and peak bytes on one backend.
    pub fn read(&self, backend: Backend) -> TensorBytes {
        let (mut current, mut peak) = (0i64, 0i64);
        // SAFETY: self.raw is a live tracker; out-pointers are valid.
        unsafe { dc_tensor_memory_read(self.raw, backend as c_int, &mut current, &mut peak) };
        TensorBytes {
            current: u64::try_from(current).unwrap_or(0),
            peak: u64::try_from(peak).unwrap_or(0),
        }
    }

    /// Makes the peak equal to the current figure.
    pub fn reset_peak(&self) {
        // SAFETY: self.raw is a live tracker.
        unsafe { dc_tensor_memory_reset_peak(self.raw) }
    }
}

impl Drop for TensorMemory {
    fn drop(&mut self) {
        // SAFETY: self.raw came from dc_tensor_memory_begin and is ended once.
        unsafe { dc_tensor_memory_end(self.raw) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_repeated_libtorch_warnings_with_their_caller() {
        crate::init().unwrap();
        let a = tch::Tensor::from_slice(&[1.0f32, 2.0]);
        let capture = WarningCapture::start().unwrap();
        // meshgrid without `indexing` warns once per process unless warn-always is on.
        let call_line = line!() + 2;
        for _ in 0..2 {
            let _ = tch::Tensor::meshgrid(&[&a, &a]);
        }
        let warnings = capture.warnings();
        drop(capture);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(
            warnings[0].message.contains("meshgrid"),
            "{}",
            warnings[0].message
        );
        let caller = warnings[0].caller.as_deref().unwrap_or("");
        assert!(
            caller.ends_with(&format!("src/shim.rs:{call_line}:21")),
            "caller: {caller}"
        );
    }

    #[test]
    fn tracks_live_and_peak_cpu_tensor_bytes() {
        crate::init().unwrap();
        let memory = TensorMemory::start().unwrap();
        let kept = tch::Tensor::zeros([1024, 256], (tch::Kind::Float, tch::Device::Cpu));
        {
            let _temporary = tch::Tensor::zeros([1024, 512], (tch::Kind::Float, tch::Device::Cpu));
        }
        let bytes = memory.read(Backend::Cpu);
        assert_eq!(bytes.current, 1024 * 256 * 4);
        assert_eq!(bytes.peak, 1024 * 256 * 4 + 1024 * 512 * 4);
        memory.reset_peak();
        assert_eq!(memory.read(Backend::Cpu).peak, 1024 * 256 * 4);
        drop(kept);
        assert_eq!(memory.read(Backend::Cpu).current, 0);
    }
}
