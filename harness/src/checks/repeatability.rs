//! Repeatability: does the step give bitwise the same result twice?
//!
//! The case's k steps run twice on the device from the same weights, batches
//! and random numbers, the second under the op observer. Every compared
//! tensor of every step is checked bit for bit. A difference is reported with
//! the largest one and the ops the observer saw that libtorch documents as
//! nondeterministic on that device (atomics-based scatter and index
//! accumulation, some pooling and interpolation backward kernels, …); it fails
//! only a case that declares `Case::deterministic()`, whose message says which
//! op to replace or which libtorch setting makes it repeatable.

use devcheck_report::metrics::{Difference, RepeatabilityMetrics};
use tch::Tensor;

use super::state::CaseState;
use super::tolerance;
use super::Verdict;
use crate::case::{Case, Named};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::observer::{self, Expectation};

/// Ops whose accelerator kernels libtorch documents as nondeterministic (the
/// list of `torch.use_deterministic_algorithms`), forward and backward names.
const NONDETERMINISTIC: &[&str] = &[
    "aten::index_add_",
    "aten::index_add",
    "aten::index_copy_",
    "aten::index_put_",
    "aten::_index_put_impl_",
    "aten::put_",
    "aten::scatter_add_",
    "aten::scatter_add",
    "aten::scatter_reduce",
    "aten::scatter_reduce_",
    "aten::embedding_dense_backward",
    "aten::_embedding_bag_backward",
    "aten::_embedding_bag_dense_backward",
    "aten::_ctc_loss_backward",
    "aten::nll_loss2d_forward",
    "aten::avg_pool3d_backward",
    "aten::_adaptive_avg_pool2d_backward",
    "aten::_adaptive_avg_pool3d_backward",
    "aten::adaptive_max_pool2d_backward",
    "aten::adaptive_max_pool3d_backward",
    "aten::max_pool3d_with_indices_backward",
    "aten::fractional_max_pool2d_backward",
    "aten::fractional_max_pool3d_backward",
    "aten::max_unpool2d",
    "aten::max_unpool3d",
    "aten::upsample_linear1d_backward",
    "aten::upsample_bilinear2d_backward",
    "aten::upsample_bicubic2d_backward",
    "aten::upsample_trilinear3d_backward",
    "aten::reflection_pad1d_backward",
    "aten::reflection_pad2d_backward",
    "aten::reflection_pad3d_backward",
    "aten::replication_pad1d_backward",
    "aten::replication_pad2d_backward",
    "aten::replication_pad3d_backward",
    "aten::grid_sampler_2d_backward",
    "aten::grid_sampler_3d_backward",
    "aten::histc",
    "aten::bincount",
    "aten::kthvalue",
    "aten::median",
    "aten::cumsum",
    "aten::cudnn_convolution",
    "aten::_cudnn_rnn_backward",
];

/// Bitwise equal, NaN in the same places counting as equal.
fn identical(a: &Tensor, b: &Tensor) -> Result<bool, tch::TchError> {
    if a.size() != b.size() || a.kind() != b.kind() {
        return Ok(false);
    }
    if a.f_equal(b)? {
        return Ok(true);
    }
    if !crate::case::is_floating(a.kind()) {
        return Ok(false);
    }
    let same = a
        .f_eq_tensor(b)?
        .f_logical_or(&a.f_isnan()?.f_logical_and(&b.f_isnan()?)?)?;
    Ok(same.f_all()?.f_int64_value(&[])? != 0)
}

/// Runs the case twice on `device` and compares the runs bit for bit.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let weights = state.weights()?;
    let first = state.device_run(device)?;
    let expect = Expectation {
        device,
        kind: case.kind(),
    };
    let (second, trace) = observer::observe(expect, || {
        tolerance::trajectory(case, device, case.kind(), &weights)
    })?;
    let second = second?;
    let mut ops: Vec<String> = if device.is_accelerator() {
        trace
            .records
            .iter()
            .filter(|r| NONDETERMINISTIC.contains(&&*r.name))
            .map(|r| r.name.to_string())
            .collect()
    } else {
        Vec::new() // libtorch's CPU kernels of these ops are deterministic
    };
    ops.sort();
    ops.dedup();

    let mut largest: Option<Difference> = None;
    let mut differing = Vec::new();
    for (step, (a, b)) in first.iter().zip(&second).enumerate() {
        for (name, left) in a {
            let right = find(b, name)?;
            if identical(left, &right)? {
                continue;
            }
            if step + 1 == first.len() {
                differing.push(name.clone());
            }
            let difference = tolerance::max_abs_difference(left, &right)?;
            let larger = largest.as_ref().is_none_or(|l| {
                difference.is_nan() && !l.max_abs_diff.is_nan() || difference > l.max_abs_diff
            });
            if larger {
                largest = Some(Difference {
                    name: name.clone(),
                    step: step + 1,
                    max_abs_diff: difference,
                });
            }
        }
    }
    let tensors = first.last().map_or(0, Vec::len);
    let metrics = RepeatabilityMetrics {
        identical: largest.is_none(),
        tensors,
        steps: first.len(),
        differing: differing.clone(),
        largest: largest.clone(),
        nondeterministic_ops: ops.clone(),
        required: case.deterministic,
    };
    let Some(largest) = largest else {
        return Ok(Verdict::pass(
            format!(
                "bitwise identical over two runs of {} steps on {device} ({tensors} tensors each step)",
                first.len()
            ),
            metrics,
        ));
    };
    let seen = if ops.is_empty() {
        "no op libtorch documents as nondeterministic ran: the step's own code differs \
         (hash-map order, threads, the clock, another generator)"
            .to_owned()
    } else {
        let shown: Vec<&str> = ops.iter().take(3).map(String::as_str).collect();
        let more = ops.len().saturating_sub(3);
        format!(
            "nondeterministic here per libtorch: {}{}",
            shown.join(", "),
            if more > 0 {
                format!(" (+{more} more)")
            } else {
                String::new()
            }
        )
    };
    let what = format!(
        "not bitwise repeatable on {device}: `{}` differs by up to {:.2e} after step {} of two \
         runs from the same state ({} of {tensors} tensors at the end); {seen}",
        largest.name,
        largest.max_abs_diff,
        largest.step,
        differing.len()
    );
    if !case.deterministic {
        return Ok(Verdict::pass(
            format!("{what}; reported (`Case::deterministic()` would fail it)"),
            metrics,
        ));
    }
    let fix = if ops.is_empty() {
        "make that code repeatable"
    } else {
        "replace those ops, or turn on deterministic algorithms \
         (`at::globalContext().setDeterministicAlgorithms(true, false)`; on CUDA also \
         `CUBLAS_WORKSPACE_CONFIG=:4096:8`)"
    };
    Ok(Verdict::fail(
        format!("{what}; `Case::deterministic()`: {fix}"),
        metrics,
    ))
}

fn find(named: &Named, name: &str) -> Result<Tensor, TrialError> {
    named
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t.shallow_clone())
        .ok_or_else(|| TrialError::Case(format!("the second run has no `{name}`")))
}
