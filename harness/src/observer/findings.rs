//! What a trace says about a step: host syncs, misplaced arguments,
//! host-to-device copies and CPU fallbacks, each at the user's line.
//!
//! On an accelerator these are what happened. On the CPU nothing syncs, so the
//! same reads are reported as the places that will sync on an accelerator:
//! scalar reads and data-dependent shapes are the same ops on every device, and
//! copies to the host are recognised by the tch call that made them
//! (`f64::try_from`, `Vec::<T>::try_from`, printing, `to_device(Device::Cpu)`).

use std::collections::HashSet;

use serde::Serialize;

use super::sites::{self, CallSite, Site};
use super::{
    ArgDevice, Expectation, OpRecord, TensorArg, Trace, HISTC_SYNCS, MISPLACED_ARG, NON_BLOCKING,
    PINNED_SOURCE,
};

/// How a host sync waits for the device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SyncKind {
    /// A single value read on the host (`item`, `double_value`, `f64::try_from`).
    ScalarRead,
    /// Tensor data copied to the host (`Vec::<T>::try_from`, `to_device(Cpu)`, printing).
    HostCopy,
    /// An op whose output shape or result depends on the data (`nonzero`, `unique`, bool masks).
    DataDependent,
}

impl SyncKind {
    /// A few words for messages and snapshots.
    pub fn describe(self) -> &'static str {
        match self {
            SyncKind::ScalarRead => "scalar read",
            SyncKind::HostCopy => "copy to the host",
            SyncKind::DataDependent => "data-dependent shape",
        }
    }
}

/// One host sync: one top-level call of the step that makes the host wait.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSync {
    /// The top-level record it happened in.
    pub top: usize,
    /// The op that waits (`aten::_local_scalar_dense`, `aten::copy_`, …).
    pub op: String,
    /// What kind of wait.
    pub kind: SyncKind,
    /// It happened on the device (false: a CPU run, where it would happen on an accelerator).
    pub on_device: bool,
    /// Where in the user's code, and through which tch call.
    pub call: CallSite,
    /// It ran inside backward.
    pub in_backward: bool,
}

impl HostSync {
    /// What the user called, for messages: the tch call where known, else the op.
    pub fn what(&self) -> String {
        self.call.api.clone().unwrap_or_else(|| self.op.clone())
    }
}

/// Why an argument is misplaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Misplacement {
    /// On another device than the case's.
    Device,
    /// In another floating dtype than the case's.
    Dtype,
}

/// One placement problem seen while the step ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlacementFinding {
    /// An op got a tensor on another device or in another floating dtype.
    Misplaced {
        /// The op.
        op: String,
        /// The offending argument.
        arg: TensorArg,
        /// Device or dtype.
        why: Misplacement,
        /// Where.
        call: CallSite,
    },
    /// A tensor was copied from the host to the device inside the step.
    HostToDevice {
        /// The op that copied.
        op: String,
        /// The copied tensor's shape.
        sizes: Vec<i64>,
        /// It happened on the device (false: on the CPU, made from host data and moved).
        on_device: bool,
        /// Where.
        call: CallSite,
    },
    /// A batch handed over on the host (`Case::host_batches`) is moved to the
    /// device by the step: a copy every step.
    BatchUpload {
        /// The op that moved it.
        op: String,
        /// The batch tensor's shape.
        sizes: Vec<i64>,
        /// On an accelerator: whether the copy waits (not non-blocking, or on
        /// CUDA not from pinned memory). On the CPU nothing is copied: `None`.
        blocking: Option<bool>,
        /// Where.
        call: CallSite,
    },
    /// On the CPU: a tensor made from host data in the step meets the step's own
    /// tensors, which on an accelerator fails (or copies) as it stays on the CPU.
    HostTensor {
        /// The op that mixes them.
        op: String,
        /// The host-made tensor's shape.
        sizes: Vec<i64>,
        /// Where.
        call: CallSite,
    },
}

impl PlacementFinding {
    /// Where it happened.
    pub fn call(&self) -> &CallSite {
        match self {
            PlacementFinding::Misplaced { call, .. }
            | PlacementFinding::HostToDevice { call, .. }
            | PlacementFinding::BatchUpload { call, .. }
            | PlacementFinding::HostTensor { call, .. } => call,
        }
    }

    /// One line, without the site.
    pub fn describe(&self, expect: Expectation) -> String {
        let kind = |k: Option<tch::Kind>| k.map_or("another dtype", crate::case::kind_name);
        match self {
            PlacementFinding::Misplaced { op, arg, why, call } => {
                let what = call.api.as_deref().unwrap_or(op);
                let problem = match why {
                    Misplacement::Device => format!("on {}", arg.device),
                    Misplacement::Dtype => format!("in {}", kind(arg.kind)),
                };
                format!(
                    "`{what}` ({op}) got a {} {:?} tensor {problem}, expected {} {}",
                    kind(arg.kind),
                    arg.sizes,
                    expect.device,
                    crate::case::kind_name(expect.kind)
                )
            }
            PlacementFinding::HostToDevice {
                op,
                sizes,
                on_device,
                ..
            } => {
                if *on_device {
                    format!(
                        "a {sizes:?} tensor is copied from the host to {} inside the step ({op})",
                        expect.device
                    )
                } else {
                    format!(
                        "a {sizes:?} tensor made from host data in the step is moved with `{op}`: \
                         on an accelerator that is a host-to-device copy every step"
                    )
                }
            }
            PlacementFinding::BatchUpload {
                op,
                sizes,
                blocking,
                ..
            } => match blocking {
                Some(true) => format!(
                    "the batch's {sizes:?} tensor is copied to {} with a copy that waits ({op}): \
                     every step stalls on it; pin the loader's tensors (`Tensor::pin_memory`) \
                     and copy them with `to_device_(device, kind, true, false)`",
                    expect.device
                ),
                Some(false) => format!(
                    "the batch's {sizes:?} tensor is copied to {} without waiting ({op})",
                    expect.device
                ),
                None => format!(
                    "the batch's {sizes:?} tensor is moved to the device with `{op}`: on an \
                     accelerator a host-to-device copy every step, which waits unless the \
                     tensor is pinned and the copy non-blocking"
                ),
            },
            PlacementFinding::HostTensor { op, sizes, .. } => format!(
                "a {sizes:?} tensor made from host data in the step is used by {op} with the \
                 step's tensors: on an accelerator it stays on the CPU"
            ),
        }
    }
}

/// A CPU fallback: an op given accelerator tensors that libtorch ran on the CPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    /// The op that fell back.
    pub op: String,
    /// Where.
    pub call: CallSite,
}

const CONVERSIONS: &[&str] = &[
    "aten::to",
    "aten::_to_copy",
    "aten::copy_",
    "aten::_to_cpu",
    "aten::cpu",
    "aten::_copy_from",
    "aten::_copy_from_and_resize",
    "aten::item",
    "aten::_local_scalar_dense",
    // Host memory by design: pinning a loader's tensor, asking whether it is.
    "aten::pin_memory",
    "aten::_pin_memory",
    "aten::is_pinned",
];

const DATA_DEPENDENT: &[&str] = &[
    "aten::nonzero",
    "aten::argwhere",
    "aten::nonzero_numpy",
    "aten::masked_select",
    "aten::_unique",
    "aten::_unique2",
    "aten::unique_dim",
    "aten::unique_consecutive",
    "aten::unique_dim_consecutive",
    "aten::mode",
    "aten::bincount",
    "aten::equal",
    "aten::is_nonzero",
    "aten::_linalg_check_errors",
];

const SCALAR_READS: &[&str] = &[
    "f64::try_from",
    "f32::try_from",
    "f16::try_from",
    "bf16::try_from",
    "i64::try_from",
    "i32::try_from",
    "i16::try_from",
    "i8::try_from",
    "u8::try_from",
    "bool::try_from",
];

const BULK_READS: &[&str] = &[
    "Vec<T>::try_from",
    "Vec<Vec<T>>::try_from",
    "Vec<Vec<Vec<T>>>::try_from",
    "Tensor::try_into",
];

/// Calls that print a tensor, reading all of it (possibly through several ops).
const PRINTS: &[&str] = &["Tensor::print", "Tensor::fmt", "Tensor::to_string"];

/// tch calls that make a tensor from host data, on the CPU.
/// (tch calls are named without their fallible `f_` prefix.)
const FROM_HOST: &[&str] = &[
    "Tensor::from_slice",
    "Tensor::of_slice",
    "Tensor::from_slice2",
    "Tensor::from",
    "Tensor::try_from",
    "Tensor::of_data_size",
    "Tensor::from_data_size",
];

const MOVES: &[&str] = &["Tensor::to_device", "Tensor::to", "Tensor::to_device_"];

const CASTS: &[&str] = &["Tensor::to_kind", "Tensor::totype"];

/// A trace with the call sites of its stacks resolved.
pub struct Analysis<'t> {
    trace: &'t Trace,
    expect: Expectation,
    calls: Vec<Option<CallSite>>,
    /// Storages of the batch, when it was handed over on the host.
    host_batch: HashSet<usize>,
}

impl<'t> Analysis<'t> {
    /// Resolves every captured stack of `trace` (each address once, process-wide).
    pub fn new(trace: &'t Trace, expect: Expectation) -> Self {
        let calls = trace
            .records
            .iter()
            .map(|r| (!r.frames.is_empty()).then(|| sites::call_site(trace.frames_of(r))))
            .collect();
        Self::with_calls(trace, expect, calls)
    }

    /// An analysis with call sites given (tests, recorded traces).
    pub fn with_calls(trace: &'t Trace, expect: Expectation, calls: Vec<Option<CallSite>>) -> Self {
        Self {
            trace,
            expect,
            calls,
            host_batch: HashSet::new(),
        }
    }

    /// Marks the storages of a batch handed to the step on the host: moving
    /// them is a batch upload, not a copy of data made in the step.
    pub fn with_host_batch(mut self, storages: impl IntoIterator<Item = usize>) -> Self {
        self.host_batch = storages.into_iter().filter(|s| *s != 0).collect();
        // The batch converted on the host (`to_kind`, `to(Device::Cpu, kind)`)
        // or pinned (`pin_memory`) is the same data in a new storage: its move
        // is still the batch's. One step only: on the CPU a conversion after
        // the move looks the same.
        let handed_over = self.host_batch.clone();
        for record in &self.trace.records {
            // (pin_memory's device names the accelerator it pins for; its
            // output is host memory all the same.)
            let converts_on_host = record.parent.is_none()
                && record.output != 0
                && (&*record.name == "aten::pin_memory"
                    || (matches!(&*record.name, "aten::to" | "aten::_to_copy")
                        && record.target_device.is_none_or(|d| d.is_cpu())));
            if converts_on_host {
                let args = &self.trace.args[record.args.clone()];
                if args
                    .first()
                    .is_some_and(|a| a.device.is_cpu() && handed_over.contains(&a.storage))
                {
                    self.host_batch.insert(record.output);
                }
            }
        }
        self
    }

    /// Whether any host-to-device copy inside the record `top` waits for the device.
    fn copy_waits(&self, top: usize) -> bool {
        let cuda = matches!(self.expect.device, crate::device::DeviceSpec::Cuda(_));
        self.subtree(top).into_iter().any(|i| {
            let record = self.record(i);
            let args = self.args(i);
            &*record.name == "aten::copy_"
                && args.len() >= 2
                && !args[0].device.is_cpu()
                && args[1].device.is_cpu()
                && (!record.has(NON_BLOCKING) || (cuda && !record.has(PINNED_SOURCE)))
        })
    }

    fn record(&self, index: usize) -> &OpRecord {
        &self.trace.records[index]
    }

    fn args(&self, index: usize) -> &[TensorArg] {
        self.trace.args_of(self.record(index))
    }

    /// The call site of a record's top-level op; for autograd's threads, the
    /// `backward` call that ran them.
    fn call_of(&self, index: usize) -> CallSite {
        let top = self.trace.top_of(index);
        if self.record(top).thread != 0 {
            let backward = (0..index).rev().find(|&i| {
                let r = self.record(i);
                r.thread == 0 && &*r.name == "aten::_backward"
            });
            return backward
                .and_then(|b| self.calls[self.trace.top_of(b)].clone())
                .unwrap_or_default();
        }
        self.calls[top].clone().unwrap_or_default()
    }

    fn in_backward(&self, mut index: usize) -> bool {
        loop {
            let r = self.record(index);
            if r.thread != 0 || &*r.name == "aten::_backward" || r.has(super::BACKWARD_NODE) {
                return true;
            }
            match r.parent {
                Some(parent) => index = parent,
                None => return false,
            }
        }
    }

    fn on_accelerator(&self) -> bool {
        self.expect.device.is_accelerator()
    }

    /// Storages made from host data within the step (CPU runs), and storages
    /// the user moved to the CPU on purpose (`to_device(Device::Cpu)`).
    fn host_storages(&self) -> (HashSet<usize>, HashSet<usize>) {
        let (mut made, mut moved) = (HashSet::new(), HashSet::new());
        if self.on_accelerator() {
            return (made, moved);
        }
        // A batch handed over on the host is host data until the step moves it.
        made.extend(self.host_batch.iter().copied());
        for (index, record) in self.trace.records.iter().enumerate() {
            let Some(call) = &self.calls[index] else {
                continue;
            };
            if record.parent.is_none() && is_one_of(call.api.as_deref(), FROM_HOST) {
                for i in self.subtree(index) {
                    made.extend(self.args(i).iter().map(|a| a.storage));
                }
            }
            if self.is_literal_move_to_cpu(index) {
                moved.extend(self.args(index).iter().map(|a| a.storage));
            }
        }
        made.remove(&0);
        moved.remove(&0);
        (made, moved)
    }

    /// The record and everything nested in it (nesting never crosses threads).
    fn subtree(&self, index: usize) -> Vec<usize> {
        let root = self.record(index);
        let mut nested = vec![index];
        for (i, record) in self.trace.records.iter().enumerate().skip(index + 1) {
            if record.thread == root.thread {
                if record.depth <= root.depth {
                    break;
                }
                nested.push(i);
            }
        }
        nested
    }

    /// A `to_device(Device::Cpu)` written so in the user's source (on the CPU a
    /// move to the case's device looks the same; the source tells them apart).
    fn is_literal_move_to_cpu(&self, index: usize) -> bool {
        let record = self.record(index);
        if record.parent.is_some()
            || &*record.name != "aten::to"
            || record.target_device != Some(ArgDevice::Cpu)
        {
            return false;
        }
        let Some(call) = &self.calls[index] else {
            return false;
        };
        if !is_one_of(call.api.as_deref(), MOVES) {
            return false;
        }
        call.site
            .as_ref()
            .and_then(|site| sites::source_line(site).map(|line| (site.column, line)))
            .is_some_and(|(column, line)| names_the_cpu(&line, column))
    }

    /// Every host sync of the step, one per top-level call, in order.
    pub fn host_syncs(&self) -> Vec<HostSync> {
        let (host_made, moved_to_cpu) = self.host_storages();
        let host = |arg: Option<&TensorArg>| {
            arg.is_some_and(|a| host_made.contains(&a.storage) || moved_to_cpu.contains(&a.storage))
        };
        let mut syncs: Vec<HostSync> = Vec::new();
        let mut synced_tops = HashSet::new();
        for (index, record) in self.trace.records.iter().enumerate() {
            let args = self.args(index);
            let found = self.sync_op(record, args).or_else(|| {
                (!self.on_accelerator())
                    .then(|| self.cpu_read(index, record))
                    .flatten()
            });
            let Some((kind, subject)) = found else {
                continue;
            };
            if !self.on_accelerator() && host(subject.and_then(|p| args.get(p))) {
                continue;
            }
            let top = self.trace.top_of(index);
            if !synced_tops.insert(top) {
                continue;
            }
            let call = self.call_of(index);
            // One print reads through several ops, and without its inner frames
            // (inlined) a conversion shows as two: one sync per call.
            let grouped = is_one_of(call.api.as_deref(), PRINTS)
                || (call.inner_api.is_none()
                    && (is_one_of(call.api.as_deref(), SCALAR_READS)
                        || is_one_of(call.api.as_deref(), BULK_READS)));
            if grouped {
                if let Some(previous) = syncs.last() {
                    if previous.call == call
                        && self.only_same_call_between(previous.top, top, &call)
                    {
                        continue;
                    }
                }
            }
            // The tch call says what kind of read it is the same way on every device.
            let kind = kind_of_call(call.api.as_deref()).unwrap_or(kind);
            syncs.push(HostSync {
                top,
                op: record.name.to_string(),
                kind,
                on_device: self.on_accelerator(),
                call,
                in_backward: self.in_backward(index),
            });
        }
        syncs
    }

    /// Whether every top-level record with a stack between two records was made by `call`.
    fn only_same_call_between(&self, from: usize, to: usize, call: &CallSite) -> bool {
        (from + 1..to).all(|i| {
            let r = self.record(i);
            r.parent.is_some() || r.thread != 0 || self.calls[i].as_ref().is_none_or(|c| c == call)
        })
    }

    /// An op that waits for the device wherever it runs (the argument it reads,
    /// by index into the record's arguments, decides whether it waits here).
    fn sync_op(&self, record: &OpRecord, args: &[TensorArg]) -> Option<(SyncKind, Option<usize>)> {
        let name = &*record.name;
        let (kind, subject) = match name {
            "aten::_local_scalar_dense" => (SyncKind::ScalarRead, 0),
            "aten::repeat_interleave" if record.has(super::NO_OUTPUT_SIZE) => {
                (SyncKind::DataDependent, 0)
            }
            "aten::histc" if record.has(HISTC_SYNCS) => (SyncKind::DataDependent, 0),
            "aten::copy_"
                if args.len() >= 2 && args[0].device.is_cpu() && !args[1].device.is_cpu() =>
            {
                (SyncKind::HostCopy, 1)
            }
            "aten::_to_copy"
                if !args.is_empty()
                    && !args[0].device.is_cpu()
                    && record.target_device == Some(ArgDevice::Cpu) =>
            {
                (SyncKind::HostCopy, 0)
            }
            _ if DATA_DEPENDENT.contains(&name) => (SyncKind::DataDependent, 0),
            _ => return None,
        };
        let read = args.get(subject)?;
        if self.on_accelerator() && read.device.is_cpu() {
            return None; // host data: no wait
        }
        Some((kind, Some(subject)))
    }

    /// On the CPU: a copy to the host that tch makes (`f64::try_from`,
    /// `Vec::<T>::try_from`, printing) or that the user writes as `to_device(Device::Cpu)`.
    fn cpu_read(&self, index: usize, record: &OpRecord) -> Option<(SyncKind, Option<usize>)> {
        if record.parent.is_some() || record.thread != 0 || &*record.name != "aten::to" {
            return None;
        }
        let call = self.calls[index].as_ref()?;
        let api = call.api.as_deref();
        // A scalar read moves the tensor to the CPU, then converts its dtype; a
        // bulk read converts, then copies memory: the read is the first call.
        let inner = call.inner_api.as_deref();
        let reads = (is_one_of(api, SCALAR_READS)
            && match inner {
                Some(inner) => is_one_of(Some(inner), MOVES),
                None => record.target_device == Some(ArgDevice::Cpu),
            })
            || (is_one_of(api, BULK_READS)
                && inner.is_none_or(|inner| is_one_of(Some(inner), CASTS)))
            || is_one_of(api, PRINTS);
        if reads {
            let kind = if is_one_of(api, SCALAR_READS) {
                SyncKind::ScalarRead
            } else {
                SyncKind::HostCopy
            };
            return Some((kind, Some(0)));
        }
        if self.is_literal_move_to_cpu(index) {
            // Counted, but the tensor it gives is host data from now on.
            return Some((SyncKind::HostCopy, None));
        }
        None
    }

    /// Every placement problem seen in the step.
    pub fn placement(&self, fallbacks: &[usize]) -> Vec<PlacementFinding> {
        let (mut host_made, _) = self.host_storages();
        let mut findings = Vec::new();
        let mut copied_tops = HashSet::new();
        for (index, record) in self.trace.records.iter().enumerate() {
            let args = self.args(index);
            let top = self.trace.top_of(index);
            if fallbacks.contains(&top) {
                continue; // the fallback's own copies; reported as the fallback
            }
            // Physical host-to-device copies (accelerators).
            let copied = match &*record.name {
                "aten::copy_" if args.len() >= 2 => {
                    (!args[0].device.is_cpu() && args[1].device.is_cpu()).then(|| &args[1])
                }
                "aten::_to_copy" if !args.is_empty() => (args[0].device.is_cpu()
                    && record.target_device.is_some_and(|d| !d.is_cpu()))
                .then(|| &args[0]),
                _ => None,
            };
            if let Some(source) = copied {
                if copied_tops.insert(top) {
                    let call = self.call_of(index);
                    findings.push(if self.host_batch.contains(&source.storage) {
                        PlacementFinding::BatchUpload {
                            op: call
                                .api
                                .clone()
                                .unwrap_or_else(|| self.record(top).name.to_string()),
                            sizes: source.sizes.to_vec(),
                            blocking: Some(self.copy_waits(top)),
                            call,
                        }
                    } else {
                        PlacementFinding::HostToDevice {
                            op: self.record(top).name.to_string(),
                            sizes: source.sizes.to_vec(),
                            on_device: true,
                            call,
                        }
                    });
                }
                continue;
            }
            if !self.checked_level(index) || CONVERSIONS.contains(&&*record.name) {
                // A move of host-made data on the CPU: would be a copy on an accelerator.
                if !self.on_accelerator() && record.parent.is_none() && &*record.name == "aten::to"
                {
                    let call = self.calls[index].clone().unwrap_or_default();
                    // Host-made storages include a batch handed over on the host.
                    let moved = args.first().filter(|a| host_made.contains(&a.storage));
                    if let Some(arg) = moved {
                        if is_one_of(call.api.as_deref(), MOVES)
                            && !self.is_literal_move_to_cpu(index)
                        {
                            // On an accelerator the copy is on the device from here on.
                            host_made.remove(&arg.storage);
                            let op = call.api.clone().unwrap_or_else(|| record.name.to_string());
                            let sizes = arg.sizes.to_vec();
                            findings.push(if self.host_batch.contains(&arg.storage) {
                                PlacementFinding::BatchUpload {
                                    op,
                                    sizes,
                                    blocking: None,
                                    call,
                                }
                            } else {
                                PlacementFinding::HostToDevice {
                                    op,
                                    sizes,
                                    on_device: false,
                                    call,
                                }
                            });
                        }
                    }
                }
                continue;
            }
            // The loader's work on its batch before the move (`narrow`, `i`,
            // views and conversions of a batch handed over on the host) is
            // host work by design, not a tensor left behind.
            let on_host_batch = !self.host_batch.is_empty()
                && args.iter().any(|a| self.host_batch.contains(&a.storage))
                && args.iter().all(|a| {
                    a.is_cpu_scalar() || (a.device.is_cpu() && self.host_batch.contains(&a.storage))
                });
            if record.has(MISPLACED_ARG) && !on_host_batch {
                for arg in args {
                    if let Some(why) = self.misplacement(arg) {
                        findings.push(PlacementFinding::Misplaced {
                            op: record.name.to_string(),
                            arg: arg.clone(),
                            why,
                            call: self.call_of(index),
                        });
                    }
                }
            }
            if !self.on_accelerator() && record.parent.is_none() {
                let host_arg = args
                    .iter()
                    .find(|a| a.dim > 0 && host_made.contains(&a.storage));
                let step_arg = args
                    .iter()
                    .any(|a| !a.is_cpu_scalar() && !host_made.contains(&a.storage));
                if let (Some(host_arg), true) = (host_arg, step_arg) {
                    findings.push(PlacementFinding::HostTensor {
                        op: record.name.to_string(),
                        sizes: host_arg.sizes.to_vec(),
                        call: self.call_of(index),
                    });
                }
            }
        }
        findings
    }

    /// Ops the user (or autograd, or an optimizer) called directly, not ops nested in other ops.
    fn checked_level(&self, index: usize) -> bool {
        let record = self.record(index);
        match record.parent {
            None => true,
            Some(parent) => {
                let parent = self.record(parent);
                &*parent.name == "aten::_backward" || parent.has(super::BACKWARD_NODE)
            }
        }
    }

    fn misplacement(&self, arg: &TensorArg) -> Option<Misplacement> {
        if arg.is_cpu_scalar() {
            return None;
        }
        if arg.device != ArgDevice::from(self.expect.device) {
            return Some(Misplacement::Device);
        }
        (arg.is_floating() && arg.kind != Some(self.expect.kind)).then_some(Misplacement::Dtype)
    }

    /// Ops that fell back to the CPU: given accelerator tensors, they moved them
    /// with `aten::_to_cpu` (libtorch's `cpu_fallback`, which MPS uses for ops it
    /// lacks). Returns the top-level record of each, with its op.
    pub fn fallbacks(&self) -> Vec<(usize, Fallback)> {
        let mut found = Vec::new();
        for (index, record) in self.trace.records.iter().enumerate() {
            if &*record.name != "aten::_to_cpu" {
                continue;
            }
            let Some(parent) = record.parent else {
                continue;
            };
            if self.args(parent).iter().any(|a| !a.device.is_cpu()) {
                found.push((
                    self.trace.top_of(index),
                    Fallback {
                        op: self.record(parent).name.to_string(),
                        call: self.call_of(index),
                    },
                ));
            }
        }
        found
    }
}

/// The kind of read a tch call makes, whatever op carries it on this device.
fn kind_of_call(api: Option<&str>) -> Option<SyncKind> {
    const SCALAR_VALUES: &[&str] = &["Tensor::double_value", "Tensor::int64_value"];
    if is_one_of(api, SCALAR_READS) || is_one_of(api, SCALAR_VALUES) {
        Some(SyncKind::ScalarRead)
    } else if is_one_of(api, BULK_READS) || is_one_of(api, PRINTS) || is_one_of(api, MOVES) {
        Some(SyncKind::HostCopy)
    } else {
        None
    }
}

fn is_one_of(api: Option<&str>, names: &[&str]) -> bool {
    api.is_some_and(|api| names.contains(&api))
}

/// Whether the call at `column` of `line` passes the CPU device (`to_device(Device::Cpu)`).
pub fn names_the_cpu(line: &str, column: u32) -> bool {
    let start = usize::try_from(column.saturating_sub(1)).unwrap_or(0);
    let Some(rest) = line.get(start..) else {
        return false;
    };
    // The call's argument list: from the first `(` to its matching `)`.
    let Some(open) = rest.find('(') else {
        return false;
    };
    let mut depth = 0;
    for (i, c) in rest[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    let arguments = &rest[open + 1..open + i];
                    return arguments
                        .split(|c: char| !c.is_alphanumeric() && c != '_')
                        .any(|word| word == "Cpu");
                }
            }
            _ => {}
        }
    }
    false
}

/// Groups findings by site for reports: `(site, what, count)`.
pub fn by_site<'a, T>(
    items: impl IntoIterator<Item = &'a T>,
    key: impl Fn(&T) -> (Option<Site>, String),
) -> Vec<(Option<Site>, String, usize)>
where
    T: 'a,
{
    let mut grouped: Vec<(Option<Site>, String, usize)> = Vec::new();
    for item in items {
        let (site, what) = key(item);
        match grouped
            .iter_mut()
            .find(|(s, w, _)| *s == site && *w == what)
        {
            Some(entry) => entry.2 += 1,
            None => grouped.push((site, what, 1)),
        }
    }
    grouped
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::DeviceSpec;
    use tch::Kind;

    fn arg(device: ArgDevice, kind: Kind, sizes: &[i64], storage: usize) -> TensorArg {
        TensorArg {
            device,
            kind: Some(kind),
            position: 0,
            dim: sizes.len(),
            sizes: sizes.into(),
            storage,
        }
    }

    fn site(line: u32) -> CallSite {
        CallSite {
            site: Some(Site {
                file: "src/train.rs".into(),
                line,
                column: 5,
                function: "Net::step".into(),
            }),
            ..CallSite::default()
        }
    }

    fn expect(device: DeviceSpec) -> Expectation {
        Expectation {
            device,
            kind: Kind::Float,
        }
    }

    /// An op that fell back on MPS, as `cpu_fallback` runs it (PyTorch 2.11,
    /// aten/src/ATen/native/CPUFallback.cpp): the arguments go to the CPU through
    /// `aten::_to_cpu` (each `t.cpu()`: to → _to_copy → copy_), the CPU kernel
    /// runs by redispatch (no RecordFunction event), and the result comes back
    /// with `.to(device)`.
    fn fallback_trace(op: &str) -> Trace {
        let mps = |storage| arg(ArgDevice::Mps, Kind::Float, &[4, 4], storage);
        let cpu = |storage| arg(ArgDevice::Cpu, Kind::Float, &[4, 4], storage);
        let mut trace = Trace::default();
        trace.push("aten::mul", None, 0, vec![mps(1), mps(2)]);
        let top = trace.push(op, None, 0, vec![mps(3)]);
        let to_cpu = trace.push("aten::_to_cpu", Some(top), 0, vec![mps(3)]);
        let to = trace.push("aten::to", Some(to_cpu), 0, vec![mps(3)]);
        let copy = trace.push("aten::_to_copy", Some(to), 0, vec![mps(3)]);
        trace.records[copy].target_device = Some(ArgDevice::Cpu);
        trace.push("aten::empty_strided", Some(copy), 0, vec![]);
        trace.push("aten::copy_", Some(copy), 0, vec![cpu(4), mps(3)]);
        let back = trace.push("aten::to", Some(top), 0, vec![cpu(5)]);
        let back_copy = trace.push("aten::_to_copy", Some(back), 0, vec![cpu(5)]);
        trace.records[back_copy].target_device = Some(ArgDevice::Mps);
        trace.push("aten::copy_", Some(back_copy), 0, vec![mps(6), cpu(5)]);
        trace
    }

    fn calls_for(trace: &Trace, sites: &[(usize, CallSite)]) -> Vec<Option<CallSite>> {
        let mut calls = vec![None; trace.records.len()];
        for (index, call) in sites {
            calls[*index] = Some(call.clone());
        }
        calls
    }

    #[test]
    fn recognises_an_mps_fallback_from_its_op_sequence() {
        let trace = fallback_trace("aten::_linalg_eigh");
        let calls = calls_for(&trace, &[(1, site(20))]);
        let analysis = Analysis::with_calls(&trace, expect(DeviceSpec::Mps), calls);
        let fallbacks = analysis.fallbacks();
        assert_eq!(fallbacks.len(), 1);
        assert_eq!(fallbacks[0].0, 1);
        assert_eq!(fallbacks[0].1.op, "aten::_linalg_eigh");
        assert_eq!(fallbacks[0].1.call, site(20));
        // The fallback's copies are part of it, not separate host-to-device copies.
        let tops: Vec<usize> = fallbacks.iter().map(|f| f.0).collect();
        assert!(analysis.placement(&tops).is_empty());
        // It waits for the device (the copy to the CPU), once.
        let syncs = analysis.host_syncs();
        assert_eq!(syncs.len(), 1);
        assert_eq!(syncs[0].kind, SyncKind::HostCopy);
        assert_eq!(syncs[0].top, 1);
    }

    #[test]
    fn a_cpu_run_of_to_cpu_is_no_fallback() {
        let mut trace = Trace::default();
        let cpu = arg(ArgDevice::Cpu, Kind::Float, &[2], 1);
        let top = trace.push("aten::_to_cpu", None, 0, vec![cpu.clone()]);
        trace.push("aten::to", Some(top), 0, vec![cpu]);
        let analysis = Analysis::with_calls(
            &trace,
            expect(DeviceSpec::Cpu),
            vec![None; trace.records.len()],
        );
        assert!(analysis.fallbacks().is_empty());
    }

    #[test]
    fn one_sync_per_top_level_call_and_none_for_host_data_on_a_device() {
        let cuda = |storage| arg(ArgDevice::Cuda(0), Kind::Float, &[], storage);
        let mut trace = Trace::default();
        let item = trace.push("aten::item", None, 0, vec![cuda(1)]);
        trace.push("aten::_local_scalar_dense", Some(item), 0, vec![cuda(1)]);
        let host_item = trace.push(
            "aten::item",
            None,
            0,
            vec![arg(ArgDevice::Cpu, Kind::Float, &[], 2)],
        );
        trace.push(
            "aten::_local_scalar_dense",
            Some(host_item),
            0,
            vec![arg(ArgDevice::Cpu, Kind::Float, &[], 2)],
        );
        let select = trace.push("aten::masked_select", None, 0, vec![cuda(3), cuda(4)]);
        trace.push("aten::nonzero", Some(select), 0, vec![cuda(4)]);
        let calls = calls_for(
            &trace,
            &[(item, site(1)), (host_item, site(2)), (select, site(3))],
        );
        let syncs = Analysis::with_calls(&trace, expect(DeviceSpec::Cuda(0)), calls).host_syncs();
        let found: Vec<(usize, SyncKind)> = syncs.iter().map(|s| (s.top, s.kind)).collect();
        assert_eq!(
            found,
            [
                (item, SyncKind::ScalarRead),
                (select, SyncKind::DataDependent)
            ]
        );
        assert!(syncs.iter().all(|s| s.on_device));
    }

    #[test]
    fn tch_reads_on_the_cpu_count_once_each() {
        let cpu = |storage| arg(ArgDevice::Cpu, Kind::Float, &[], storage);
        let read = |api: &str, line| CallSite {
            api: Some(api.to_owned()),
            ..site(line)
        };
        let mut trace = Trace::default();
        // f64::try_from: to_device(Cpu), then to_kind; only the first reads.
        let to_device = trace.push("aten::to", None, 0, vec![cpu(1)]);
        trace.records[to_device].target_device = Some(ArgDevice::Cpu);
        let to_kind = trace.push("aten::to", None, 0, vec![cpu(1)]);
        // Vec::<f32>::try_from: to_kind, then a plain memcpy.
        let bulk = trace.push("aten::to", None, 0, vec![cpu(2)]);
        // A plain to_kind of the user's is no read.
        let plain = trace.push("aten::to", None, 0, vec![cpu(3)]);
        let calls = calls_for(
            &trace,
            &[
                (to_device, read("f64::try_from", 7)),
                (to_kind, read("f64::try_from", 7)),
                (bulk, read("Vec<T>::try_from", 8)),
                (plain, read("Tensor::to_kind", 9)),
            ],
        );
        let syncs = Analysis::with_calls(&trace, expect(DeviceSpec::Cpu), calls).host_syncs();
        let found: Vec<(u32, SyncKind, bool)> = syncs
            .iter()
            .map(|s| (s.call.site.as_ref().unwrap().line, s.kind, s.on_device))
            .collect();
        assert_eq!(
            found,
            [
                (7, SyncKind::ScalarRead, false),
                (8, SyncKind::HostCopy, false)
            ]
        );
    }

    #[test]
    fn misplaced_arguments_and_host_copies_on_a_device() {
        let cuda = |sizes: &[i64], kind| arg(ArgDevice::Cuda(0), kind, sizes, 9);
        let mut trace = Trace::default();
        let add = trace.push(
            "aten::add",
            None,
            0,
            vec![cuda(&[4], Kind::Float), cuda(&[4], Kind::Double)],
        );
        trace.records[add].flags |= MISPLACED_ARG;
        let scalar = trace.push(
            "aten::mul",
            None,
            0,
            vec![
                cuda(&[4], Kind::Float),
                arg(ArgDevice::Cpu, Kind::Double, &[], 3),
            ],
        );
        let to = trace.push(
            "aten::to",
            None,
            0,
            vec![arg(ArgDevice::Cpu, Kind::Float, &[3], 4)],
        );
        let copy = trace.push(
            "aten::_to_copy",
            Some(to),
            0,
            vec![arg(ArgDevice::Cpu, Kind::Float, &[3], 4)],
        );
        trace.records[copy].target_device = Some(ArgDevice::Cuda(0));
        trace.push(
            "aten::copy_",
            Some(copy),
            0,
            vec![
                cuda(&[3], Kind::Float),
                arg(ArgDevice::Cpu, Kind::Float, &[3], 4),
            ],
        );
        let calls = calls_for(&trace, &[(add, site(3)), (scalar, site(4)), (to, site(5))]);
        let findings =
            Analysis::with_calls(&trace, expect(DeviceSpec::Cuda(0)), calls).placement(&[]);
        assert_eq!(findings.len(), 2, "{findings:?}");
        assert!(matches!(
            &findings[0],
            PlacementFinding::Misplaced { why: Misplacement::Dtype, arg, .. } if arg.kind == Some(Kind::Double)
        ));
        assert!(matches!(
            &findings[1],
            PlacementFinding::HostToDevice { sizes, on_device: true, .. } if sizes == &[3i64]
        ));
        assert_eq!(findings[1].call(), &site(5));
    }

    #[test]
    fn a_host_batch_pinned_then_copied_without_waiting_is_a_batch_upload_that_does_not_wait() {
        let cpu = |storage| arg(ArgDevice::Cpu, Kind::Float, &[16, 8], storage);
        let cuda = |storage| arg(ArgDevice::Cuda(0), Kind::Float, &[16, 8], storage);
        let mut trace = Trace::default();
        // xs.pin_memory(device): a new (pinned) host storage of the batch's data.
        let pin = trace.push("aten::pin_memory", None, 0, vec![cpu(1)]);
        trace.records[pin].output = 2;
        trace.records[pin].target_device = Some(ArgDevice::Cuda(0));
        trace.records[pin].flags |= MISPLACED_ARG;
        trace.push("aten::_pin_memory", Some(pin), 0, vec![cpu(1)]);
        // .to_device_(device, kind, true, false): a non-blocking copy from it.
        let to = trace.push("aten::to", None, 0, vec![cpu(2)]);
        let copy = trace.push("aten::_to_copy", Some(to), 0, vec![cpu(2)]);
        trace.records[copy].target_device = Some(ArgDevice::Cuda(0));
        let copied = trace.push("aten::copy_", Some(copy), 0, vec![cuda(3), cpu(2)]);
        trace.records[copied].flags |= NON_BLOCKING | PINNED_SOURCE;
        let calls = calls_for(&trace, &[(pin, site(7)), (to, site(7))]);
        let findings = Analysis::with_calls(&trace, expect(DeviceSpec::Cuda(0)), calls)
            .with_host_batch([1])
            .placement(&[]);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            matches!(
                &findings[0],
                PlacementFinding::BatchUpload { blocking: Some(false), sizes, .. } if sizes == &[16i64, 8]
            ),
            "{findings:?}"
        );
    }

    #[test]
    fn the_loader_s_views_of_a_host_batch_are_host_work_on_a_device() {
        let cpu = |sizes: &[i64], storage| arg(ArgDevice::Cpu, Kind::Float, sizes, storage);
        let cuda = |storage| arg(ArgDevice::Cuda(0), Kind::Float, &[64, 128], storage);
        let mut trace = Trace::default();
        // batch.narrow(1, 0, 128): a view of the batch, on the host.
        let narrow = trace.push("aten::narrow", None, 0, vec![cpu(&[64, 129], 1)]);
        trace.records[narrow].flags |= MISPLACED_ARG;
        // Used with the step's tensors without a move: still a misplacement.
        let add = trace.push("aten::add", None, 0, vec![cuda(5), cpu(&[64, 128], 1)]);
        trace.records[add].flags |= MISPLACED_ARG;
        let calls = calls_for(&trace, &[(narrow, site(148)), (add, site(150))]);
        let findings = Analysis::with_calls(&trace, expect(DeviceSpec::Cuda(0)), calls)
            .with_host_batch([1])
            .placement(&[]);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].call(), &site(150));
    }

    #[test]
    fn backward_on_other_threads_is_attributed_to_the_backward_call() {
        let cuda = |storage| arg(ArgDevice::Cuda(0), Kind::Float, &[], storage);
        let mut trace = Trace::default();
        let backward = trace.push("aten::_backward", None, 0, vec![cuda(1)]);
        let node = trace.push("MulBackward0", None, 1, vec![cuda(2)]);
        trace.records[node].flags |= super::super::BACKWARD_NODE;
        trace.push("aten::_local_scalar_dense", Some(node), 1, vec![cuda(2)]);
        let calls = calls_for(&trace, &[(backward, site(30))]);
        let syncs = Analysis::with_calls(&trace, expect(DeviceSpec::Cuda(0)), calls).host_syncs();
        assert_eq!(syncs.len(), 1);
        assert_eq!(syncs[0].call, site(30));
        assert!(syncs[0].in_backward);
    }

    #[test]
    fn finds_the_cpu_in_a_call_s_arguments() {
        let line = "        let host = logits.to_device(Device::Cpu).sum(Kind::Float);";
        let column = line.find("to_device").unwrap() as u32 + 1;
        assert!(names_the_cpu(line, column));
        let line = "        let x = w.to_device(self.device);";
        let column = line.find("to_device").unwrap() as u32 + 1;
        assert!(!names_the_cpu(line, column));
        let line = "x.to_device(tch::Device::Cpu)";
        assert!(names_the_cpu(line, 3));
    }
}
