//! Tolerance: does the device train the same trajectory as the CPU, within
//! what the case's dtype can hold?
//!
//! The same initial weights and batches run on the CPU in float64 (the
//! reference), on the CPU in the case's dtype (the baseline) and on the device
//! in the case's dtype (the candidate). After k optimizer steps, outputs, loss,
//! gradients and parameters are compared as torch._dynamo's accuracy check does
//! (`same(…, fp64_ref=…)`): a candidate passes when its error against the
//! reference is no more than a stated multiple of the baseline's own error
//! against it (RMSE; 2×, 3× for half types and small tensors, plus a floor of a
//! tenth of the dtype's atol). Rounding alone — a few Adam steps in float32 —
//! never fails; a kernel that computes something else does. On the CPU the
//! candidate is the baseline: its error against float64 is reported, not failed.
//! Every comparison also keeps `torch.testing.assert_close`'s exact figures,
//! against the reference and (on an accelerator) against the CPU in the same
//! dtype. A value that is NaN or infinite where the reference is finite fails
//! on every device.

use devcheck_report::metrics::{TensorDrift, ToleranceMetrics};
use tch::{Kind, Tensor};

use super::state::CaseState;
use super::Verdict;
use crate::case::{kind_name, Case, Named};
use crate::compare::{compare, tuple_repr, Comparison, Tolerance};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::shim;
use crate::trainer::{Role, Trainer};

/// The compared tensors after each of k steps, moved to the CPU.
pub type Trajectory = Vec<Named>;

/// Runs `steps` steps and keeps outputs, loss, gradients and parameters after each.
pub fn trajectory(
    case: &Case,
    device: DeviceSpec,
    kind: Kind,
    weights: &Named,
) -> Result<Trajectory, TrialError> {
    trajectory_in(case, device, kind, weights, None)
}

/// [`trajectory`], with the batches and convolution weights in other memory
/// layouts (holding the same values) as `relaid` says (the layout check's run).
pub fn trajectory_in(
    case: &Case,
    device: DeviceSpec,
    kind: Kind,
    weights: &Named,
    relaid: Option<&super::layout::Relaid>,
) -> Result<Trajectory, TrialError> {
    let mut trainer = Trainer::new(case, device, kind, weights)?;
    if relaid.is_some_and(|r| r.parameters) {
        trainer.relayout_parameters()?;
    }
    // Dropout and other draws: the same numbers as the CPU run's.
    let _same_random = device
        .is_accelerator()
        .then(|| shim::HostRandom::start(device.backend()))
        .transpose()?;
    // In the step, the reference draws the numbers the case's own dtype draws,
    // widened (batches are made in float64 for every run, outside it).
    let reference_draws = kind != case.kind() && !device.is_accelerator();
    let mut steps = Vec::with_capacity(case.tolerance_steps);
    for step in 0..case.tolerance_steps {
        let mut batch = trainer.batch(step as u64)?;
        if let Some(relaid) = relaid {
            batch = super::layout::relayout_batch(case, &batch, relaid)?.0;
        }
        let draws = reference_draws
            .then(|| shim::ReferenceRandom::start(case.kind()))
            .transpose()?;
        let output = trainer.step(&batch)?;
        drop(draws);
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

/// How far the candidate may be from the reference, relative to the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorBound {
    /// The candidate's error may be this many times the baseline's.
    pub multiplier: f64,
    /// Plus this much (RMSE), so that a baseline that is exact does not demand exactness.
    pub floor: f64,
}

impl ErrorBound {
    /// torch._dynamo's choice: 2×, or 3× for half types and tensors under 1000
    /// elements (where noise dominates the metric); the floor is a tenth of the
    /// dtype's `assert_close` atol.
    pub fn for_tensor(kind: Kind, numel: usize) -> Self {
        let half = matches!(kind, Kind::Half | Kind::BFloat16);
        Self {
            multiplier: if half || numel < 1000 { 3.0 } else { 2.0 },
            floor: crate::compare::tolerance_for(kind).atol / 10.0,
        }
    }

    /// The same bound with TF32's floor ([`TF32_FLOOR`]), for a float32 run
    /// that had TF32 on where its baseline could not.
    pub fn with_tf32(self) -> Self {
        Self {
            floor: self.floor.max(TF32_FLOOR),
            ..self
        }
    }

    /// Whether a candidate error is within the bound of a baseline error.
    pub fn admits(&self, candidate: f64, baseline: f64) -> bool {
        candidate <= self.multiplier * baseline + self.floor
    }
}

/// Root-mean-square difference in float64, ignoring places where both are the
/// same non-finite value.
pub(crate) fn rmse(actual: &Tensor, expected: &Tensor) -> Result<f64, tch::TchError> {
    if actual.numel() == 0 {
        return Ok(0.0);
    }
    let (a, e) = (
        actual.f_to_kind(Kind::Double)?,
        expected.f_to_kind(Kind::Double)?,
    );
    let same = a.f_eq_tensor(&e)?;
    let difference = a
        .f_sub(&e)?
        .f_where_scalarother(&same.f_logical_not()?, 0.0)?;
    difference
        .f_square()?
        .f_mean(Kind::Double)?
        .f_sqrt()?
        .f_double_value(&[])
}

/// Elements that are NaN or infinite.
pub(crate) fn not_finite(tensor: &Tensor) -> Result<i64, tch::TchError> {
    if tensor.numel() == 0 || !crate::case::is_floating(tensor.kind()) {
        return Ok(0);
    }
    tensor
        .f_isfinite()?
        .f_logical_not()?
        .f_sum(Kind::Int64)?
        .f_int64_value(&[])
}

/// One tensor judged.
struct Judged {
    name: String,
    candidate_error: f64,
    baseline_error: f64,
    bound: ErrorBound,
    /// NaN or infinite elements in the candidate.
    lost: i64,
    /// NaN or infinite elements in the reference.
    reference_lost: i64,
    /// assert_close against the reference.
    vs_reference: Comparison,
    /// assert_close against the CPU in the same dtype (accelerators).
    vs_cpu: Option<Comparison>,
    /// A case override (assert_close with the case's tolerance) that admitted it.
    override_admitted: bool,
    /// Beyond the bound, but within it with TF32's floor ([`TF32_FLOOR`]).
    tf32_admitted: bool,
    /// Beyond the bound, but within assert_close's defaults of the CPU run in
    /// the same dtype.
    rounding_admitted: bool,
    passed: bool,
}

impl Judged {
    fn ratio(&self) -> f64 {
        if self.baseline_error > 0.0 {
            self.candidate_error / self.baseline_error
        } else if self.candidate_error == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    }
}

fn find<'a>(named: &'a Named, name: &str, what: &str) -> Result<&'a Tensor, TrialError> {
    named
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, t)| t)
        .ok_or_else(|| TrialError::Case(format!("the {what} has no tensor `{name}`")))
}

fn assert_close(
    a: &Tensor,
    e: &Tensor,
    tolerance: Tolerance,
    name: &str,
) -> Result<Comparison, TrialError> {
    compare(a, e, tolerance).map_err(|error| TrialError::Compare {
        name: name.to_owned(),
        error,
    })
}

#[cfg(test)]
mod random_tests {
    use crate::shim::{Backend, HostRandom};

    #[test]
    fn replacing_a_device_s_random_kernels_registers_and_restores() {
        crate::init().unwrap();
        // No GPU is needed to register kernels for its dispatch key.
        let replaced = HostRandom::start(Backend::Cuda).unwrap();
        drop(replaced);
        let again = HostRandom::start(Backend::Cuda).unwrap();
        drop(again);
        assert!(HostRandom::start(Backend::Cpu).is_err());
    }

    #[test]
    fn the_float64_reference_draws_the_case_dtype_s_numbers() {
        use crate::shim::ReferenceRandom;
        use tch::{Device, Kind, Tensor};
        crate::init().unwrap();
        let draw = |kind: Kind| {
            let (normal, uniform) = crate::trainer::seeded(7, || {
                (
                    Tensor::randn([64], (kind, Device::Cpu)),
                    Tensor::rand([64], (kind, Device::Cpu)),
                )
            });
            (normal.to_kind(Kind::Double), uniform.to_kind(Kind::Double))
        };
        let (normal, uniform) = draw(Kind::Float);
        // The CPU draws other numbers for a float64 tensor from the same state.
        let (wide_normal, wide_uniform) = draw(Kind::Double);
        assert!(f64::try_from((&wide_normal - &normal).abs().max()).unwrap() > 0.1);
        assert!(f64::try_from((&wide_uniform - &uniform).abs().max()).unwrap() > 0.1);
        let narrow = ReferenceRandom::start(Kind::Float).unwrap();
        let (reference_normal, reference_uniform) = draw(Kind::Double);
        // In float32, the reference's own draws go to the CPU's kernels as before.
        let (float_normal, _) = draw(Kind::Float);
        drop(narrow);
        assert!(reference_normal.equal(&normal));
        assert!(reference_uniform.equal(&uniform));
        assert!(float_normal.equal(&normal));
        // Restored: float64 draws are the CPU's own again.
        assert!(draw(Kind::Double).0.equal(&wide_normal));
        assert!(ReferenceRandom::start(Kind::Int64).is_err());
    }
}

/// With TF32 on (libtorch's default for cuDNN convolutions and RNNs), float32
/// convolutions and recurrent layers on CUDA keep 10 mantissa bits, which the
/// CPU float32 baseline never does. torch._dynamo's benchmarks judge training
/// on CUDA with TF32 as set with a tolerance of 1e-2, whose accuracy check
/// turns into an RMSE floor of a tenth of it: a float32 tensor beyond the
/// bound still passes within that floor.
pub const TF32_FLOOR: f64 = 1e-3;

/// Judges every tensor of the last step.
fn judge(
    case: &Case,
    candidate: &Named,
    baseline: &Named,
    reference: &Named,
    on_accelerator: bool,
    reference_is_case_dtype: bool,
    tf32: bool,
) -> Result<Vec<Judged>, TrialError> {
    candidate
        .iter()
        .map(|(name, cand)| {
            let reference_tensor = find(reference, name, "reference")?;
            let base = find(baseline, name, "CPU run in the case's dtype")?;
            let defaults = crate::compare::tolerance_for_pair(cand.kind(), reference_tensor.kind());
            let override_tolerance = case.tolerance_override(name);
            let vs_reference = assert_close(
                cand,
                reference_tensor,
                override_tolerance.unwrap_or(defaults),
                name,
            )?;
            let vs_cpu = on_accelerator
                .then(|| {
                    assert_close(
                        cand,
                        base,
                        override_tolerance.unwrap_or(crate::compare::tolerance_for_pair(
                            cand.kind(),
                            base.kind(),
                        )),
                        name,
                    )
                })
                .transpose()?;
            let candidate_error = rmse(cand, reference_tensor)?;
            let baseline_error = rmse(base, reference_tensor)?;
            // NaN or infinity is never a trajectory, unless the case says NaN matches NaN.
            let equal_nan = override_tolerance.is_some_and(|t| t.equal_nan);
            let (lost, reference_lost) = if equal_nan {
                (0, 0)
            } else {
                (not_finite(cand)?, not_finite(reference_tensor)?)
            };
            let bound = ErrorBound::for_tensor(cand.kind(), cand.numel());
            let criterion = if !on_accelerator {
                true // the candidate is the baseline
            } else if reference_is_case_dtype {
                // No float64 truth: the CPU in the same dtype is all there is.
                vs_cpu.as_ref().is_some_and(|c| c.passed)
            } else {
                bound.admits(candidate_error, baseline_error)
            };
            let override_admitted =
                !criterion && override_tolerance.is_some() && vs_reference.passed;
            let tf32_admitted = !criterion
                && !override_admitted
                && tf32
                && cand.kind() == Kind::Float
                && bound.with_tf32().admits(candidate_error, baseline_error);
            // Beyond the bound but within assert_close's defaults of the CPU in
            // the same dtype, PyTorch's own standard between devices: rounding
            // in another order (a large summed loss on another device).
            let rounding_admitted = !criterion
                && !override_admitted
                && !tf32_admitted
                && vs_cpu.as_ref().is_some_and(|c| c.passed);
            Ok(Judged {
                name: name.clone(),
                candidate_error,
                baseline_error,
                bound,
                lost,
                reference_lost,
                vs_reference,
                vs_cpu,
                override_admitted,
                tf32_admitted,
                rounding_admitted,
                passed: lost == 0
                    && reference_lost == 0
                    && (criterion || override_admitted || tf32_admitted || rounding_admitted),
            })
        })
        .collect()
}

fn comparison_text(c: &Comparison) -> String {
    format!(
        "{} / {} mismatched, greatest absolute difference {:.3e} at {} (atol {:e}), greatest relative difference {:.3e} at {} (rtol {:e})",
        c.mismatched,
        c.total,
        c.max_abs_diff,
        tuple_repr(&c.max_abs_index),
        c.atol,
        c.max_rel_diff,
        tuple_repr(&c.max_rel_index),
        c.rtol
    )
}

/// Greatest absolute difference over all elements, in float64; NaN if any side is NaN.
pub(crate) fn max_abs_difference(actual: &Tensor, expected: &Tensor) -> Result<f64, tch::TchError> {
    if actual.numel() == 0 {
        return Ok(0.0);
    }
    let difference = actual
        .f_to_kind(Kind::Double)?
        .f_sub(&expected.f_to_kind(Kind::Double)?)?
        .f_abs()?;
    if difference.f_isnan()?.f_any()?.f_double_value(&[])? != 0.0 {
        return Ok(f64::NAN);
    }
    difference.f_max()?.f_double_value(&[])
}

/// The greatest absolute difference of any tensor (NaN wins).
fn worst_difference(actual: &Named, expected: &Named) -> Result<f64, TrialError> {
    let mut worst: f64 = 0.0;
    for (name, a) in actual {
        let d = max_abs_difference(a, find(expected, name, "reference")?)?;
        if !worst.is_nan() && (d.is_nan() || d > worst) {
            worst = d;
        }
    }
    Ok(worst)
}

/// Judges the device run against the reference, relative to the CPU baseline.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let reference_kind = case.reference_kind();
    // The candidate first: a step that fails on its own is the step's failure,
    // not the reference's.
    let candidate = state.device_run(device)?;
    let reference = state.reference().map_err(|error| TrialError::Reference {
        reference: kind_name(reference_kind),
        dtype: kind_name(case.kind()),
        device,
        error: Box::new(error),
    })?;
    let dumped = match state.dump_dir() {
        Some(dir) => Some(crate::dump::write_trajectory(
            dir,
            case.name(),
            device,
            kind_name(case.kind()),
            &candidate,
        )?),
        None => None,
    };
    let on_accelerator = device.is_accelerator();
    let baseline = if on_accelerator {
        state.cpu_same_dtype()?
    } else {
        candidate
            .iter()
            .map(|step| {
                step.iter()
                    .map(|(n, t)| (n.clone(), t.shallow_clone()))
                    .collect()
            })
            .collect()
    };
    let reference_is_case_dtype = reference_kind == case.kind();
    let precision = shim::precision_flags()?;
    let tf32 = matches!(device, DeviceSpec::Cuda(_)) && precision.any_reduced();
    let last = candidate.len() - 1;
    let judged = judge(
        case,
        &candidate[last],
        &baseline[last],
        &reference[last],
        on_accelerator,
        reference_is_case_dtype,
        tf32,
    )?;
    let drift: Vec<f64> = candidate
        .iter()
        .zip(reference.iter())
        .map(|(a, e)| worst_difference(a, e))
        .collect::<Result<_, _>>()?;
    // A reference tensor below the reference dtype: the step cast it down itself.
    let downcast: Vec<String> = reference[last]
        .iter()
        .filter(|(_, t)| {
            crate::case::is_floating(t.kind())
                && t.kind() != reference_kind
                && !reference_is_case_dtype
        })
        .map(|(n, t)| format!("{n} ({})", kind_name(t.kind())))
        .collect();

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
    let reference_name = format!("cpu {}", kind_name(reference_kind));
    let baseline_name = format!("cpu {}", kind_name(case.kind()));
    let tensors: Vec<TensorDrift> = judged
        .iter()
        .map(|j| TensorDrift {
            name: j.name.clone(),
            candidate_rmse: j.candidate_error,
            baseline_rmse: j.baseline_error,
            ratio: j.ratio(),
            multiplier: j.bound.multiplier,
            floor: j.bound.floor,
            not_finite: j.lost,
            reference_not_finite: j.reference_lost,
            passed: j.passed,
            override_admitted: j.override_admitted,
            tf32_admitted: j.tf32_admitted,
            vs_reference: j.vs_reference.clone(),
            vs_cpu_same_dtype: j.vs_cpu.clone(),
        })
        .collect();
    let worst_ratio = judged.iter().max_by(|a, b| a.ratio().total_cmp(&b.ratio()));
    let criterion = if !on_accelerator {
        "cpu: the candidate is the baseline; its error against the reference is reported"
    } else if reference_is_case_dtype {
        "no float64 reference: assert_close against the CPU in the same dtype"
    } else {
        "rmse(candidate, reference) <= multiplier × rmse(baseline, reference) + floor"
    };
    let metrics = ToleranceMetrics {
        criterion: criterion.to_owned(),
        reference: reference_name.clone(),
        baseline: baseline_name.clone(),
        candidate: format!("{device} {}", kind_name(case.kind())),
        steps: case.tolerance_steps,
        tensors,
        worst_ratio: worst_ratio.map(Judged::ratio),
        worst_abs_diff: drift.last().copied(),
        drift_per_step: drift,
        reference_downcast: downcast.clone(),
        reduced_precision: reduced.clone(),
        override_reason: case.tolerance_reason.clone(),
        dump: dumped,
    };
    let note = if downcast.is_empty() {
        String::new()
    } else {
        format!(
            "; the reference computed {} in lower precision (the step casts it)",
            downcast.join(", ")
        )
    };

    let failed: Vec<&Judged> = judged.iter().filter(|j| !j.passed).collect();
    // The loss first: a reader knows it, and NaN spreads from it to everything.
    let not_finite = |j: &&&Judged| j.lost > 0 || j.reference_lost > 0;
    let lost = failed
        .iter()
        .filter(not_finite)
        .find(|j| j.name == "loss")
        .or_else(|| failed.iter().find(not_finite));
    if let Some(lost) = lost {
        let affected = failed
            .iter()
            .filter(|j| j.lost > 0 || j.reference_lost > 0)
            .count();
        let what = match (lost.lost > 0, lost.reference_lost > 0) {
            (true, false) => format!(
                "has {} NaN or infinite values on {device} where the {reference_name} reference is finite",
                lost.lost
            ),
            (true, true) => format!(
                "has {} NaN or infinite values on {device}, and the {reference_name} reference {} \
                 (the step itself overflows)",
                lost.lost, lost.reference_lost
            ),
            _ => format!(
                "is finite on {device} but the {reference_name} reference has {} NaN or infinite \
                 values: the reference cannot judge it",
                lost.reference_lost
            ),
        };
        return Ok(Verdict::fail(
            format!(
                "`{}` {what} after {} steps ({affected} of {} tensors affected); {}{note}",
                lost.name,
                case.tolerance_steps,
                judged.len(),
                comparison_text(&lost.vs_reference)
            ),
            metrics,
        ));
    }
    if let Some(worst) = failed.iter().max_by(|a, b| a.ratio().total_cmp(&b.ratio())) {
        let against = match (&worst.vs_cpu, reference_is_case_dtype) {
            (Some(cpu), true) => format!("against {baseline_name}: {}", comparison_text(cpu)),
            _ => format!(
                "its error against {reference_name} is {:.1}× that of {baseline_name} (rmse {:.3e} vs {:.3e}, allowed {}× + {:.0e}); \
                 against {reference_name}: {}",
                worst.ratio(),
                worst.candidate_error,
                worst.baseline_error,
                worst.bound.multiplier,
                worst.bound.floor,
                comparison_text(&worst.vs_reference)
            ),
        };
        let mut message = format!(
            "{} of {} tensors beyond tolerance on {device} after {} steps; worst `{}`: {against}{note}",
            failed.len(),
            judged.len(),
            case.tolerance_steps,
            worst.name,
        );
        if let Some(reduced) = reduced {
            message.push_str(&format!("; {reduced}"));
        }
        return Ok(Verdict::fail(message, metrics));
    }
    let close = judged.iter().filter(|j| j.vs_reference.passed).count();
    let by_tf32 = judged.iter().filter(|j| j.tf32_admitted).count();
    let mut note = if by_tf32 > 0 {
        format!(
            "{note}; {by_tf32} beyond the bound but within it with TF32's floor of {TF32_FLOOR:e} (TF32 on, as libtorch sets it)"
        )
    } else {
        note
    };
    let by_rounding = super::quoted_names(
        judged
            .iter()
            .filter(|j| j.rounding_admitted)
            .map(|j| j.name.as_str()),
    );
    if !by_rounding.is_empty() {
        note.push_str(&format!(
            "; beyond the bound but within assert_close's defaults of {baseline_name}: \
             {by_rounding} (rounding, as a large sum taken in another order)"
        ));
    }
    let message = if on_accelerator && reference_is_case_dtype {
        // No float64 truth: the CPU in the case's dtype is the reference, and a
        // ratio of errors against it would read as infinite.
        format!(
            "{n} tensors within assert_close's {} defaults of {baseline_name} after {} steps \
             (the reference is the case's own dtype: `Case::reference_dtype`){note}",
            kind_name(case.kind()),
            case.tolerance_steps,
            n = judged.len(),
        )
    } else if on_accelerator {
        let worst = worst_ratio.expect("a step has tensors");
        let versus_cpu = judged
            .iter()
            .filter(|j| j.vs_cpu.as_ref().is_some_and(|c| c.passed))
            .count();
        format!(
            "{} tensors within tolerance after {} steps: worst `{}` at {:.2}× the {baseline_name} run's error against \
             {reference_name}; assert_close: {close}/{n} against {reference_name}, {versus_cpu}/{n} against {baseline_name}{note}",
            judged.len(),
            case.tolerance_steps,
            worst.name,
            worst.ratio(),
            n = judged.len(),
        )
    } else {
        let worst = judged
            .iter()
            .max_by(|a, b| a.baseline_error.total_cmp(&b.baseline_error))
            .expect("a step has tensors");
        format!(
            "{baseline_name}'s error against {reference_name} after {} steps: worst `{}` rmse {:.2e}; \
             assert_close: {close}/{} within {}'s defaults{note}; measured only: the CPU is the \
             baseline an accelerator is compared against",
            case.tolerance_steps,
            worst.name,
            worst.baseline_error,
            judged.len(),
            kind_name(case.kind())
        )
    };
    if on_accelerator {
        Ok(Verdict::pass(message, metrics))
    } else {
        Ok(Verdict::measured(message, metrics))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_dynamo_s() {
        let big = ErrorBound::for_tensor(Kind::Float, 4096);
        assert_eq!(big.multiplier, 2.0);
        assert!((big.floor - 1e-6).abs() < 1e-18, "{}", big.floor);
        assert!(big.admits(2e-5, 1e-5));
        assert!(!big.admits(2.2e-5, 1e-5));
        assert_eq!(ErrorBound::for_tensor(Kind::Float, 10).multiplier, 3.0);
        assert_eq!(ErrorBound::for_tensor(Kind::BFloat16, 4096).multiplier, 3.0);
        // An exact baseline still admits the floor.
        assert!(big.admits(1e-6, 0.0));
        assert!(!big.admits(1e-5, 0.0));
        // TF32 (H100, mnist-conv's worst gradient: rmse 6.96e-4 against a
        // float32 baseline of 1e-7) passes; ten times TF32's rounding does not.
        let tf32 = big.with_tf32();
        assert_eq!(tf32.multiplier, 2.0);
        assert!(tf32.admits(6.96e-4, 1e-7));
        assert!(!tf32.admits(1.1e-3, 1e-7));
        assert!(!big.admits(6.96e-4, 1e-7));
    }

    #[test]
    fn rmse_ignores_matching_infinities_and_counts_non_finite_values() {
        let reference = Tensor::from_slice(&[1.0f64, f64::INFINITY, 3.0]);
        let same_inf = Tensor::from_slice(&[1.0f32, f32::INFINITY, 3.5]);
        assert!((rmse(&same_inf, &reference).unwrap() - (0.25f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(not_finite(&same_inf).unwrap(), 1);
        let overflowed = Tensor::from_slice(&[f32::INFINITY, f32::NAN, 3.0]);
        assert_eq!(not_finite(&overflowed).unwrap(), 2);
        assert_eq!(not_finite(&Tensor::from_slice(&[1i64, 2])).unwrap(), 0);
    }
}
