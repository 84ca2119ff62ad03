//! Tolerance: the same initial weights and batches on the CPU in float64 (the
//! reference) and on the device in the case's dtype; outputs, loss, gradients
//! and parameters compared after k optimizer steps with assert_close's rules.

use serde_json::json;

use crate::case::{Case, Named};
use crate::check::Verdict;
use crate::compare::{compare, python_tuple, Comparison};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::placement::kind_name;
use crate::runner::CaseState;
use crate::shim;
use crate::trainer::{Role, Trainer};

/// The compared tensors after each of k steps, moved to the CPU.
pub type Trajectory = Vec<Named>;

/// Runs `steps` steps and keeps outputs, loss, gradients and parameters after each.
pub fn trajectory(
    case: &Case,
    device: DeviceSpec,
    kind: tch::Kind,
    weights: &Named,
) -> Result<Trajectory, TrialError> {
    let mut trainer = Trainer::new(case, device, kind, weights)?;
    let mut steps = Vec::with_capacity(case.tolerance_steps);
    for step in 0..case.tolerance_steps {
        let (batch, output) = trainer.run_step(step as u64)?;
        let compared = trainer
            .tensors(&batch, &output)
            .into_iter()
            .filter(|(_, role, _)| !matches!(role, Role::Input | Role::State))
            // A copy: on the CPU `to_device` returns the live tensor itself, which the
            // next optimizer step would change under the snapshot.
            .map(|(name, _, t)| Ok((name, t.f_to_device(tch::Device::Cpu)?.f_detach_copy()?)))
            .collect::<Result<Named, tch::TchError>>()?;
        steps.push(compared);
    }
    Ok(steps)
}

struct Compared {
    name: String,
    comparison: Comparison,
    /// Greatest |actual − expected| over all elements (assert_close's own
    /// figures cover mismatched elements only, so they read 0 when it passes).
    max_abs_diff: f64,
}

/// Greatest absolute difference over all elements, in float64; NaN if any side is NaN.
fn max_abs_difference(actual: &tch::Tensor, expected: &tch::Tensor) -> Result<f64, tch::TchError> {
    if actual.numel() == 0 {
        return Ok(0.0);
    }
    let difference = actual
        .f_to_kind(tch::Kind::Double)?
        .f_sub(&expected.f_to_kind(tch::Kind::Double)?)?
        .f_abs()?;
    if difference.f_isnan()?.f_any()?.f_double_value(&[])? != 0.0 {
        return Ok(f64::NAN);
    }
    difference.f_max()?.f_double_value(&[])
}

fn compare_step(
    case: &Case,
    actual: &Named,
    expected: &Named,
) -> Result<Vec<Compared>, TrialError> {
    actual
        .iter()
        .map(|(name, a)| {
            let e = expected
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, t)| t)
                .ok_or_else(|| TrialError::Case(format!("the reference has no tensor `{name}`")))?;
            let tolerance = case.tolerance_for(name, a.kind(), e.kind());
            let comparison = compare(a, e, tolerance)
                .map_err(|error| TrialError::Case(format!("comparing `{name}`: {error}")))?;
            let max_abs_diff = max_abs_difference(a, e)?;
            Ok(Compared {
                name: name.clone(),
                comparison,
                max_abs_diff,
            })
        })
        .collect()
}

fn worst(compared: &[Compared]) -> f64 {
    compared
        .iter()
        .map(|c| c.max_abs_diff)
        .fold(0.0, |a, b| if b.is_nan() || b > a { b } else { a })
}

/// Compares the device run against the float64 CPU reference (and, on an
/// accelerator, against the CPU in the same dtype, which is reported only).
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let reference = state.reference()?;
    let weights = state.weights()?;
    let candidate = trajectory(case, device, case.kind(), &weights)?;
    let dumped = match state.dump_dir() {
        Some(dir) => Some(
            crate::dump::write_trajectory(
                dir,
                case.name(),
                device,
                kind_name(case.kind()),
                &candidate,
            )
            .map_err(|e| TrialError::Case(format!("cannot write the dump: {e}")))?,
        ),
        None => None,
    };
    let last = candidate.len() - 1;
    let final_step = compare_step(case, &candidate[last], &reference[last])?;
    let drift: Vec<f64> = candidate
        .iter()
        .zip(reference.iter())
        .map(|(a, e)| compare_step(case, a, e).map(|c| worst(&c)))
        .collect::<Result<_, _>>()?;
    let same_dtype_cpu = if device.is_accelerator() {
        let cpu = state.cpu_same_dtype()?;
        Some(worst(&compare_step(case, &candidate[last], &cpu[last])?))
    } else {
        None
    };
    let precision = shim::precision_flags()?;
    let reduced = match device {
        DeviceSpec::Cuda(_) if precision.any_reduced() => Some(format!(
            "reduced float32 precision was on (cuBLAS matmul TF32 {}, cuDNN conv TF32 {}, cuDNN RNN TF32 {}, matmul precision {})",
            if precision.cuda_matmul_tf32 { "on" } else { "off" },
            if precision.cudnn_conv_tf32 { "on" } else { "off" },
            if precision.cudnn_rnn_tf32 { "on" } else { "off" },
            precision.float32_matmul_precision
        )),
        _ => None,
    };
    let failed: Vec<&Compared> = final_step.iter().filter(|c| !c.comparison.passed).collect();
    let tensors: Vec<serde_json::Value> = final_step
        .iter()
        .map(|c| json!({"name": c.name, "comparison": c.comparison, "max_abs_diff_all": c.max_abs_diff}))
        .collect();
    let metrics = json!({
        "reference": "cpu float64",
        "candidate": format!("{device} {}", kind_name(case.kind())),
        "steps": case.tolerance_steps,
        "tensors": tensors,
        "worst_abs_diff": worst(&final_step),
        "drift_per_step": drift,
        "worst_abs_diff_vs_cpu_same_dtype": same_dtype_cpu,
        "reduced_precision": reduced,
        "override_reason": case.tolerance_reason,
        "dump": dumped,
    });
    let drift_text = format!(
        "worst difference per step {}",
        drift
            .iter()
            .map(|d| format!("{d:.2e}"))
            .collect::<Vec<_>>()
            .join(" → ")
    );
    let Some(first) = failed.iter().max_by(|a, b| {
        let key = |c: &Compared| c.comparison.mismatched as f64 / c.comparison.total.max(1) as f64;
        key(a).total_cmp(&key(b))
    }) else {
        return Ok(Verdict::pass(
            format!(
                "{} tensors within tolerance of cpu float64 after {} steps; {drift_text}",
                final_step.len(),
                case.tolerance_steps
            ),
            metrics,
        ));
    };
    let c = &first.comparison;
    let mut message = format!(
        "{} of {} tensors beyond tolerance of cpu float64 after {} steps; worst `{}`: {} / {} mismatched, \
         greatest absolute difference {:.3e} at {} (atol {:e}), greatest relative difference {:.3e} at {} (rtol {:e}); {drift_text}",
        failed.len(),
        final_step.len(),
        case.tolerance_steps,
        first.name,
        c.mismatched,
        c.total,
        c.max_abs_diff,
        python_tuple(&c.max_abs_index),
        c.atol,
        c.max_rel_diff,
        python_tuple(&c.max_rel_index),
        c.rtol
    );
    if let Some(reduced) = reduced {
        message.push_str(&format!("; {reduced}"));
    }
    Ok(Verdict::fail(message, metrics))
}
