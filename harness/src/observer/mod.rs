//! The op observer: every operator a training step runs, as libtorch's
//! dispatcher sees it (RecordFunction), on every device, the CPU included.
//!
//! [`observe`] runs a closure with a thread-local RecordFunction callback
//! installed by the shim (`shim/observer.cpp`) and returns the [`Trace`]: each
//! op's name, nesting, thread and tensor arguments, and for the ops that may
//! matter the native stack, from which [`sites`] names the user's line.
//! [`findings`] reads host syncs, misplaced arguments, host-to-device copies and
//! CPU fallbacks from a trace; the checks turn those into verdicts.
//!
//! The callback follows the step into autograd's worker threads (libtorch
//! carries thread-local callbacks with the graph task), is removed when the
//! closure returns or unwinds, and never throws into libtorch. A trial that
//! hangs keeps its callback on its own abandoned thread, where it slows nothing
//! else.

pub mod cost;
pub mod findings;
pub mod sites;

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ops::Range;
use std::sync::Arc;

use smallvec::SmallVec;

use crate::device::DeviceSpec;
use crate::shim::ShimError;

#[repr(C)]
struct RawConfig {
    device_type: c_int,
    device_index: c_int,
    scalar_type: c_int,
    max_records: usize,
    max_frames: usize,
    stack_every_op: c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RawRecord {
    name: u32,
    parent: i32,
    depth: i32,
    thread: u32,
    flags: u32,
    target_device_type: i32,
    args_begin: u32,
    args_end: u32,
    frames_begin: u32,
    frames_end: u32,
    output_storage: *const c_void,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct RawArg {
    device_type: i16,
    device_index: i16,
    scalar_type: i16,
    position: u16,
    dim: i32,
    sizes_begin: u32,
    storage: *const c_void,
}

#[repr(C)]
struct RawView {
    records: *const RawRecord,
    record_count: usize,
    args: *const RawArg,
    arg_count: usize,
    sizes: *const i64,
    size_count: usize,
    frames: *const *const c_void,
    frame_count: usize,
    name_count: usize,
    truncated: c_int,
    error: *const c_char,
}

extern "C" {
    fn dc_observer_begin(config: *const RawConfig, out: *mut *mut c_void) -> *mut c_char;
    fn dc_observer_end(observer: *mut c_void) -> *mut c_char;
    fn dc_observer_view(observer: *mut c_void, out: *mut RawView);
    fn dc_observer_name(observer: *mut c_void, i: usize) -> *const c_char;
    fn dc_observer_free(observer: *mut c_void);
}

/// Record flag: an autograd node (`MulBackward0`), not an operator.
pub const BACKWARD_NODE: u32 = 1;
/// Record flag: a tensor argument on another device, or in another floating dtype.
pub const MISPLACED_ARG: u32 = 2;
/// Record flag: `repeat_interleave` without `output_size`, which reads the repeats on the host.
pub const NO_OUTPUT_SIZE: u32 = 4;
/// Record flag: `histc` with min == max, which reads the range on the host.
pub const HISTC_SYNCS: u32 = 8;
/// Record flag: a `copy_` asked to be non-blocking.
pub const NON_BLOCKING: u32 = 16;
/// Record flag: a `copy_` from pinned host memory to a device.
pub const PINNED_SOURCE: u32 = 32;

/// Where a tensor argument lives, as the observer saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgDevice {
    /// The host.
    Cpu,
    /// CUDA device N.
    Cuda(usize),
    /// The Apple GPU.
    Mps,
    /// A device devcheck does not run on (meta, xla, …).
    Other,
}

impl ArgDevice {
    fn from_raw(device_type: i32, index: i32) -> Self {
        match device_type {
            0 => ArgDevice::Cpu,
            1 => ArgDevice::Cuda(usize::try_from(index).unwrap_or(0)),
            2 => ArgDevice::Mps,
            _ => ArgDevice::Other,
        }
    }

    /// Whether this is the host.
    pub fn is_cpu(self) -> bool {
        self == ArgDevice::Cpu
    }

    /// The devcheck device, where it is one.
    pub fn spec(self) -> Option<DeviceSpec> {
        match self {
            ArgDevice::Cpu => Some(DeviceSpec::Cpu),
            ArgDevice::Cuda(i) => Some(DeviceSpec::Cuda(i)),
            ArgDevice::Mps => Some(DeviceSpec::Mps),
            ArgDevice::Other => None,
        }
    }
}

impl std::fmt::Display for ArgDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.spec() {
            Some(spec) => write!(f, "{spec}"),
            None => f.write_str("another device"),
        }
    }
}

impl From<DeviceSpec> for ArgDevice {
    fn from(device: DeviceSpec) -> Self {
        match device {
            DeviceSpec::Cpu => ArgDevice::Cpu,
            DeviceSpec::Cuda(i) => ArgDevice::Cuda(i),
            DeviceSpec::Mps => ArgDevice::Mps,
        }
    }
}

/// One tensor argument of an op.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorArg {
    /// Its device.
    pub device: ArgDevice,
    /// Its dtype.
    pub kind: Option<tch::Kind>,
    /// The argument's position in the op's schema (a list's tensors share it).
    pub position: u16,
    /// Its number of dimensions.
    pub dim: usize,
    /// Its shape (empty where the observer kept none: ops nested in others).
    pub sizes: SmallVec<[i64; 4]>,
    /// Identity of its storage (the data pointer), to follow a tensor within a step.
    pub storage: usize,
}

impl TensorArg {
    /// A 0-dim tensor on the CPU: libtorch lets these meet tensors of any device.
    pub fn is_cpu_scalar(&self) -> bool {
        self.dim == 0 && self.device.is_cpu()
    }

    /// Whether its dtype is floating point.
    pub fn is_floating(&self) -> bool {
        self.kind.is_some_and(crate::case::is_floating)
    }
}

/// One op of a trace, in the order ops started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpRecord {
    /// The op (`aten::mul`) or autograd node (`MulBackward0`).
    pub name: Arc<str>,
    /// The enclosing op on the same thread.
    pub parent: Option<usize>,
    /// Nesting depth on its thread.
    pub depth: u32,
    /// 0: the thread that ran the step; others are autograd's (or the step's own).
    pub thread: u32,
    /// `BACKWARD_NODE`, `MISPLACED_ARG`, … bits.
    pub flags: u32,
    /// A device argument (`to`, `_to_copy`), if the op has one.
    pub target_device: Option<ArgDevice>,
    /// Its tensor arguments, in `Trace::args`.
    pub args: Range<usize>,
    /// Its native stack (return addresses), in `Trace::frames`; empty where none was captured.
    pub frames: Range<usize>,
    /// The storage of a conversion's result (`to`, `_to_copy`); 0 for other ops.
    pub output: usize,
}

impl OpRecord {
    /// Whether a flag is set.
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}

/// What a step was meant to be: the device and floating dtype misplacement is judged against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expectation {
    /// The case's device.
    pub device: DeviceSpec,
    /// The case's floating dtype.
    pub kind: tch::Kind,
}

/// Every op a closure ran, with arguments and, where it matters, stacks.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// The ops, in the order they started.
    pub records: Vec<OpRecord>,
    /// Tensor arguments of all records.
    pub args: Vec<TensorArg>,
    /// Return addresses of all captured stacks, innermost first.
    pub frames: Vec<usize>,
}

impl Trace {
    /// The tensor arguments of a record.
    pub fn args_of(&self, record: &OpRecord) -> &[TensorArg] {
        &self.args[record.args.clone()]
    }

    /// The captured stack of a record (empty if none).
    pub fn frames_of(&self, record: &OpRecord) -> &[usize] {
        &self.frames[record.frames.clone()]
    }

    /// How many threads ran the recorded ops (the step's, and autograd's).
    pub fn threads(&self) -> usize {
        let mut threads: Vec<u32> = self.records.iter().map(|r| r.thread).collect();
        threads.sort_unstable();
        threads.dedup();
        threads.len()
    }

    /// The top-level op a record runs inside (itself at the top).
    pub fn top_of(&self, mut index: usize) -> usize {
        while let Some(parent) = self.records[index].parent {
            index = parent;
        }
        index
    }

    /// Appends a record, as the callback would have.
    #[cfg(test)] // for the findings' tests, which build traces by hand
    pub fn push(
        &mut self,
        name: &str,
        parent: Option<usize>,
        thread: u32,
        args: Vec<TensorArg>,
    ) -> usize {
        let depth = parent.map_or(0, |p| self.records[p].depth + 1);
        let begin = self.args.len();
        self.args.extend(args);
        self.records.push(OpRecord {
            name: name.into(),
            parent,
            depth,
            thread,
            flags: 0,
            target_device: None,
            args: begin..self.args.len(),
            frames: 0..0,
            output: 0,
        });
        self.records.len() - 1
    }
}

/// A failure inside the observer or its callback.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ObserverError {
    /// Installing or removing the callback failed.
    #[error(transparent)]
    Shim(#[from] ShimError),
    /// The callback caught an exception while the step ran (the step itself went on).
    #[error("{0}")]
    Callback(String),
}

/// The installed callback; removed on drop, whatever happens to the closure.
struct Installed {
    raw: *mut c_void,
    ended: bool,
}

impl Installed {
    fn begin(expect: Expectation, stack_every_op: bool) -> Result<Self, ShimError> {
        crate::init()?;
        let config = RawConfig {
            device_type: expect.device.backend() as c_int,
            device_index: expect.device.index() as c_int,
            scalar_type: scalar_type_code(expect.kind),
            max_records: 0,
            max_frames: 0,
            stack_every_op: c_int::from(stack_every_op),
        };
        let mut raw = std::ptr::null_mut();
        // SAFETY: config and raw are valid for the call.
        crate::shim::check(|| "install the op observer".into(), unsafe {
            dc_observer_begin(&config, &mut raw)
        })?;
        Ok(Self { raw, ended: false })
    }

    fn end(&mut self) -> Result<(), ShimError> {
        if self.ended {
            return Ok(());
        }
        self.ended = true;
        // SAFETY: raw is a live observer from dc_observer_begin, ended once.
        crate::shim::check(|| "remove the op observer".into(), unsafe {
            dc_observer_end(self.raw)
        })
    }

    /// Copies the recording out (after `end`).
    fn read(&self) -> Result<Trace, ObserverError> {
        let mut view = RawView {
            records: std::ptr::null(),
            record_count: 0,
            args: std::ptr::null(),
            arg_count: 0,
            sizes: std::ptr::null(),
            size_count: 0,
            frames: std::ptr::null(),
            frame_count: 0,
            name_count: 0,
            truncated: 0,
            error: std::ptr::null(),
        };
        // SAFETY: raw is live; the view's slices stay valid until dc_observer_free.
        unsafe { dc_observer_view(self.raw, &mut view) };
        if !view.error.is_null() {
            // SAFETY: a NUL-terminated string owned by the observer.
            let message = unsafe { CStr::from_ptr(view.error) }
                .to_string_lossy()
                .into_owned();
            return Err(ObserverError::Callback(message));
        }
        // SAFETY (all four): the shim's vectors hold `count` elements each.
        let records: &[RawRecord] = unsafe { raw_slice(view.records, view.record_count) };
        let raw_args: &[RawArg] = unsafe { raw_slice(view.args, view.arg_count) };
        let sizes: &[i64] = unsafe { raw_slice(view.sizes, view.size_count) };
        let frames: &[*const c_void] = unsafe { raw_slice(view.frames, view.frame_count) };
        let names: Vec<Arc<str>> = (0..view.name_count)
            .map(|i| {
                // SAFETY: i < name_count; the string is owned by the observer.
                unsafe { CStr::from_ptr(dc_observer_name(self.raw, i)) }
                    .to_string_lossy()
                    .into()
            })
            .collect();
        let args = raw_args
            .iter()
            .map(|a| {
                let dim = usize::try_from(a.dim).unwrap_or(0);
                let begin = a.sizes_begin as usize;
                TensorArg {
                    device: ArgDevice::from_raw(a.device_type.into(), a.device_index.into()),
                    kind: kind_of(a.scalar_type),
                    position: a.position,
                    dim,
                    sizes: sizes
                        .get(begin..begin + dim)
                        .map(SmallVec::from_slice)
                        .unwrap_or_default(),
                    storage: a.storage as usize,
                }
            })
            .collect();
        let records = records
            .iter()
            .map(|r| OpRecord {
                name: names
                    .get(r.name as usize)
                    .cloned()
                    .unwrap_or_else(|| "".into()),
                parent: usize::try_from(r.parent).ok(),
                depth: u32::try_from(r.depth).unwrap_or(0),
                thread: r.thread,
                flags: r.flags,
                target_device: (r.target_device_type >= 0)
                    .then(|| ArgDevice::from_raw(r.target_device_type, 0)),
                args: r.args_begin as usize..r.args_end as usize,
                frames: r.frames_begin as usize..r.frames_end as usize,
                output: r.output_storage as usize,
            })
            .collect();
        Ok(Trace {
            records,
            args,
            frames: frames.iter().map(|f| *f as usize).collect(),
        })
    }
}

/// A slice over `len` elements at `ptr` (empty for a null pointer).
///
/// # Safety
/// `ptr` must point at `len` initialized `T`s that outlive the slice.
unsafe fn raw_slice<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if ptr.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

impl Drop for Installed {
    fn drop(&mut self) {
        // SAFETY: raw came from dc_observer_begin; free removes the callback if
        // `end` was not reached (a panic in the closure) and releases it once.
        unsafe { dc_observer_free(self.raw) }
    }
}

/// Runs `body` with every op it runs recorded, and returns the trace beside its value.
///
/// The callback is removed when `body` returns or unwinds.
pub fn observe<T>(
    expect: Expectation,
    body: impl FnOnce() -> T,
) -> Result<(T, Trace), ObserverError> {
    observe_with(expect, false, body)
}

/// [`observe`] with a stack for every top-level op (slower): for finding the
/// line where a step broke ([`last_call_site`]).
pub fn observe_every_line<T>(
    expect: Expectation,
    body: impl FnOnce() -> T,
) -> Result<(T, Trace), ObserverError> {
    observe_with(expect, true, body)
}

fn observe_with<T>(
    expect: Expectation,
    stack_every_op: bool,
    body: impl FnOnce() -> T,
) -> Result<(T, Trace), ObserverError> {
    let mut installed = Installed::begin(expect, stack_every_op)?;
    let value = body();
    installed.end()?;
    let trace = installed.read()?;
    Ok((value, trace))
}

/// Where a step that returned an error broke: the user's line of the last op
/// the step's own thread started (libtorch records an op before running it,
/// so the op that threw is the last one), with the tch call made there.
pub fn last_call_site(trace: &Trace) -> Option<sites::CallSite> {
    trace
        .records
        .iter()
        .rev()
        .filter(|r| r.thread == 0 && r.parent.is_none() && !r.frames.is_empty())
        .map(|r| sites::call_site(trace.frames_of(r)))
        .find(|call| call.site.is_some())
}

/// c10's `ScalarType` code of a dtype (tch keeps its own private).
fn scalar_type_code(kind: tch::Kind) -> c_int {
    use tch::Kind::*;
    match kind {
        Uint8 => 0,
        Int8 => 1,
        Int16 => 2,
        Int => 3,
        Int64 => 4,
        Half => 5,
        Float => 6,
        Double => 7,
        ComplexHalf => 8,
        ComplexFloat => 9,
        ComplexDouble => 10,
        Bool => 11,
        BFloat16 => 15,
        _ => -1,
    }
}

/// tch's dtype for a c10 `ScalarType` code.
fn kind_of(code: i16) -> Option<tch::Kind> {
    use tch::Kind::*;
    Some(match code {
        0 => Uint8,
        1 => Int8,
        2 => Int16,
        3 => Int,
        4 => Int64,
        5 => Half,
        6 => Float,
        7 => Double,
        8 => ComplexHalf,
        9 => ComplexFloat,
        10 => ComplexDouble,
        11 => Bool,
        15 => BFloat16,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tch::{Device, Kind, Tensor};

    fn cpu_float() -> Expectation {
        Expectation {
            device: DeviceSpec::Cpu,
            kind: Kind::Float,
        }
    }

    #[test]
    fn records_ops_with_nesting_and_arguments() {
        let a = Tensor::ones([2, 3], (Kind::Float, Device::Cpu));
        let ((), trace) = observe(cpu_float(), || {
            let _ = (&a * 2.0).sum(Kind::Float).double_value(&[]);
        })
        .unwrap();
        let names: Vec<&str> = trace.records.iter().map(|r| &*r.name).collect();
        assert!(names.contains(&"aten::mul"), "{names:?}");
        let item = trace
            .records
            .iter()
            .position(|r| &*r.name == "aten::_local_scalar_dense")
            .expect("the scalar read is recorded");
        let parent = trace.records[item].parent.expect("nested in aten::item");
        assert_eq!(&*trace.records[parent].name, "aten::item");
        let mul = trace
            .records
            .iter()
            .find(|r| &*r.name == "aten::mul")
            .unwrap();
        assert_eq!(trace.args_of(mul)[0].sizes.as_slice(), [2, 3]);
        assert_eq!(trace.args_of(mul)[0].device, ArgDevice::Cpu);
        assert_eq!(trace.args_of(mul)[0].kind, Some(Kind::Float));
        // A top-level read gets a stack; a plain multiplication does not.
        assert!(!trace
            .frames_of(&trace.records[trace.top_of(item)])
            .is_empty());
        assert!(trace.frames_of(mul).is_empty());
    }

    #[test]
    fn nothing_is_recorded_after_the_closure() {
        let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
        let ((), trace) = observe(cpu_float(), || {}).unwrap();
        let _ = &a + &a;
        assert!(trace.records.is_empty());
    }

    #[test]
    fn a_panicking_closure_leaves_no_callback_behind() {
        let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
        let caught = std::panic::catch_unwind(|| {
            observe(cpu_float(), || panic!("the step gave up")).map(|_| ())
        });
        assert!(caught.is_err());
        // A new observation sees only its own op.
        let ((), trace) = observe(cpu_float(), || {
            let _ = &a + &a;
        })
        .unwrap();
        assert_eq!(trace.records.len(), 1, "{:?}", trace.records);
        assert_eq!(&*trace.records[0].name, "aten::add");
    }

    #[test]
    fn misplaced_dtypes_are_flagged_except_cpu_scalars() {
        let a = Tensor::ones([2], (Kind::Float, Device::Cpu));
        let b = Tensor::ones([2], (Kind::Double, Device::Cpu));
        let ((), trace) = observe(cpu_float(), || {
            let _ = &a + &b;
            let _ = &a * 3.0;
        })
        .unwrap();
        let add = trace
            .records
            .iter()
            .find(|r| &*r.name == "aten::add")
            .unwrap();
        assert!(add.has(MISPLACED_ARG));
        let mul = trace
            .records
            .iter()
            .find(|r| &*r.name == "aten::mul")
            .unwrap();
        assert!(!mul.has(MISPLACED_ARG), "a wrapped number is a CPU scalar");
    }
}
