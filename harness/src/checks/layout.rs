//! Layout: does the step compute the same thing when its inputs are laid out
//! differently in memory?
//!
//! Kernels that are right on contiguous tensors and wrong on strided,
//! transposed or channels-last ones are the commonest silent wrong result on
//! MPS, and the tolerance check cannot see them: it feeds every device the same
//! contiguous batches. Here the case's k steps run twice on the device from the
//! same weights, batches and random numbers: once as the tolerance check runs
//! them, once with every batch tensor (but those the case keeps) in another
//! layout holding the same values (4-D: channels-last; 2-D and 3-D: the last two
//! dimensions' strides swapped; 1-D: every other element of a buffer twice its
//! size) and every 4-D parameter (a convolution's weight) channels-last. Each
//! run's error against the float64 reference is compared by the tolerance
//! check's own bound: the relaid run may be no worse than a multiple of the
//! contiguous run's error, so layout-only rounding never fails and a kernel
//! that reads the wrong elements does.

use std::collections::{BTreeMap, BTreeSet};

use tch::{Kind, Tensor};

use super::state::shallow;
use super::state::CaseState;
use super::tolerance::{self, not_finite, rmse, ErrorBound, Trajectory};
use super::Verdict;
use crate::case::{kind_name, Batch, Case, Named};
use crate::compare::Tolerance;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::shim;
pub use devcheck_report::metrics::Layout;
use devcheck_report::metrics::{LayoutMetrics, LayoutTensor};

/// `tensor` in channels-last memory (a 4-D tensor; others are returned as they are).
pub fn channels_last(tensor: &Tensor) -> Result<Tensor, tch::TchError> {
    if tensor.dim() != 4 {
        return Ok(tensor.shallow_clone());
    }
    tensor
        .f_permute([0i64, 2, 3, 1])?
        .f_contiguous()?
        .f_permute([0i64, 3, 1, 2])
}

/// The same values as `tensor` in another memory layout, and which. The
/// result is never contiguous unless no other layout exists.
pub fn relayout(tensor: &Tensor) -> Result<(Tensor, Layout), tch::TchError> {
    let moved = |t: Tensor, layout| (!t.is_contiguous()).then_some((t, layout));
    let requires_grad = tensor.requires_grad();
    let source = tensor.f_detach()?;
    let mut found = None;
    if source.dim() == 4 {
        found = moved(channels_last(&source)?, Layout::ChannelsLast);
    }
    if found.is_none() && source.dim() >= 2 {
        let transposed = source
            .f_transpose(-1, -2)?
            .f_contiguous()?
            .f_transpose(-1, -2)?;
        found = moved(transposed, Layout::Transposed);
    }
    if found.is_none() && source.dim() >= 1 {
        let strided = Tensor::f_stack(&[source.shallow_clone(), source.f_zeros_like()?], -1)?
            .f_select(-1, 0)?;
        found = moved(strided, Layout::StridedSlice);
    }
    let (relaid, layout) = found.unwrap_or((source, Layout::Unchanged));
    Ok((
        if requires_grad {
            relaid.set_requires_grad(true)
        } else {
            relaid
        },
        layout,
    ))
}

/// What the second run lays out otherwise.
#[derive(Debug, Clone, Default)]
pub struct Relaid {
    /// The 4-D parameters (convolution weights), channels-last.
    pub parameters: bool,
    /// Batch tensors left as they are besides those the case keeps.
    pub keep: BTreeSet<String>,
    /// Only these batch tensors, where set (finding which one the step refuses).
    pub only: Option<String>,
}

impl Relaid {
    fn batch_tensor(&self, case: &Case, name: &str) -> bool {
        case.keeps_layout(name).is_none()
            && !self.keep.contains(name)
            && self.only.as_deref().is_none_or(|only| only == name)
    }
}

/// The batch with the tensors `relaid` names in another layout.
pub fn relayout_batch(
    case: &Case,
    batch: &Batch,
    relaid: &Relaid,
) -> Result<(Batch, Vec<(String, Layout)>), tch::TchError> {
    let mut layouts = Vec::with_capacity(batch.tensors.len());
    let mut tensors = Vec::with_capacity(batch.tensors.len());
    for (name, tensor) in &batch.tensors {
        let (relaid, layout) = if !relaid.batch_tensor(case, name) {
            (tensor.shallow_clone(), Layout::Unchanged)
        } else {
            relayout(tensor)?
        };
        layouts.push((name.clone(), layout));
        tensors.push((name.clone(), relaid));
    }
    Ok((Batch { tensors }, layouts))
}

/// Runs the case contiguous and relaid on `device` and judges the relaid run.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let weights = state.weights()?;
    let contiguous = state.device_run(device)?;
    let (relaid, plan, refused) = relaid_run(case, device, &weights)?;
    // What the second run's inputs looked like (the first batch's shapes decide).
    let (batch_layouts, channels_last_parameters) = {
        let mut trainer = crate::trainer::Trainer::new(case, device, case.kind(), &weights)?;
        let parameters = if plan.parameters {
            trainer.relayout_parameters()?
        } else {
            0
        };
        let (_, layouts) = relayout_batch(case, &trainer.batch(0)?, &plan)?;
        (layouts, parameters)
    };
    // Without a float64 reference (the case runs it in its own dtype), the
    // contiguous run is the reference itself and the bound is its floor.
    let reference: Trajectory = match state.reference() {
        Ok(reference) if case.reference_kind() != case.kind() => reference,
        _ => contiguous.iter().map(shallow).collect(),
    };
    let reference_name = if case.reference_kind() != case.kind() {
        format!("cpu {}", kind_name(case.reference_kind()))
    } else {
        format!("{device} {} (contiguous)", kind_name(case.kind()))
    };
    let precision = shim::precision_flags()?;
    let cuda = matches!(device, DeviceSpec::Cuda(_));
    let tf32 = cuda && precision.any_reduced();
    // Where TF32 may round only the relaid run: cuDNN picks TF32 kernels for
    // channels-last convolutions that it does not for contiguous ones (on an
    // H100, a convolution weight's gradient: 2.9e-4 RMSE against float64
    // channels-last with TF32, 5e-9 without or contiguous, in PyTorch itself).
    let tf32_relative = cuda
        && ((precision.cudnn_conv_tf32 && channels_last_parameters > 0)
            || precision.cuda_matmul_tf32
            || precision.float32_matmul_precision != "highest");
    let last = contiguous.len() - 1;
    let tensors = judge(
        &contiguous[last],
        &relaid[last],
        &reference[last],
        tf32,
        tf32_relative,
    )?;
    let described: Vec<String> = batch_layouts
        .iter()
        .filter(|(_, layout)| *layout != Layout::Unchanged)
        .map(|(name, layout)| format!("`{name}` {}", layout.describe()))
        .chain(
            (channels_last_parameters > 0)
                .then(|| format!("{channels_last_parameters} convolution weight(s) channels-last")),
        )
        .collect();
    let nothing_relaid = described.is_empty();
    let mut what = if nothing_relaid {
        "no input in another layout".to_owned()
    } else {
        described.join(", ")
    };
    if let Some((name, why)) = refused.iter().next() {
        let more = if refused.len() > 1 {
            format!(" (and {} more)", refused.len() - 1)
        } else {
            String::new()
        };
        what.push_str(&format!(
            "; `{name}` kept{more}: the step refuses it otherwise, {}",
            short(why)
        ));
    }
    let metrics = LayoutMetrics {
        batch: batch_layouts.iter().cloned().collect(),
        kept: case
            .kept_layouts
            .iter()
            .map(|(name, reason)| (name.clone(), reason.clone()))
            .collect(),
        channels_last_parameters,
        refused: refused.clone(),
        reference: reference_name.clone(),
        steps: case.tolerance_steps,
        tensors: tensors.clone(),
    };
    let failed: Vec<&LayoutTensor> = tensors.iter().filter(|t| !t.passed).collect();
    let worst = failed
        .iter()
        .copied()
        .find(|t| t.not_finite > 0)
        .or_else(|| {
            failed
                .iter()
                .copied()
                .max_by(|a, b| a.ratio.total_cmp(&b.ratio))
        });
    if let Some(worst) = worst {
        let figures = if worst.not_finite > 0 {
            format!(
                "{} NaN or infinite values the contiguous run does not have",
                worst.not_finite
            )
        } else {
            format!(
                "error {:.2e} against {reference_name}, {} the contiguous run's {:.2e} \
                 (allowed {}× + {:.0e})",
                worst.relaid_rmse,
                times(worst.ratio),
                worst.contiguous_rmse,
                worst.multiplier,
                worst.floor
            )
        };
        return Ok(Verdict::fail(
            format!(
                "{} of {} tensors differ on {device} with the inputs in other layouts ({what}); \
                 worst `{}`: {figures}; a kernel reads a non-contiguous input as contiguous: \
                 `.contiguous()` it first, or `Case::keep_layout` it",
                failed.len(),
                tensors.len(),
                worst.name
            ),
            metrics,
        ));
    }
    let admitted_by = |admitted: fn(&LayoutTensor) -> bool| {
        let names = tensors
            .iter()
            .filter(|t| admitted(t))
            .map(|t| t.name.as_str());
        Some(super::quoted_names(names)).filter(|list| !list.is_empty())
    };
    if let Some(tf32_only) = admitted_by(|t| t.tf32_admitted) {
        what.push_str(&format!(
            "; within TF32's rounding only: {tf32_only} (another layout took a TF32 kernel)"
        ));
    }
    if let Some(rounding_only) = admitted_by(|t| t.rounding_admitted) {
        what.push_str(&format!(
            "; within assert_close's defaults of the contiguous run only: {rounding_only} \
             (rounding, as a sum taken in another order)"
        ));
    }
    let worst = tensors
        .iter()
        .filter(|t| !t.tf32_admitted && !t.rounding_admitted)
        .max_by(|a, b| a.ratio.total_cmp(&b.ratio));
    if nothing_relaid {
        // Both runs were the same run: a bare pass would claim a comparison.
        return Ok(Verdict::measured(
            format!("nothing compared: {what}"),
            metrics,
        ));
    }
    Ok(Verdict::pass(
        format!(
            "{} tensors after {} steps agree with the inputs in other layouts ({what}){}",
            tensors.len(),
            case.tolerance_steps,
            worst.map_or(String::new(), |w| format!(
                "; worst `{}` at {:.2}× the contiguous run's error",
                w.name, w.ratio
            ))
        ),
        metrics,
    ))
}

/// The relaid run's RMSE floor where TF32 may round it alone, relative to the
/// tensor's RMS: a tenth (TF32 measured 1.8 % on a convolution weight's
/// gradient; reading the wrong elements costs about the whole tensor).
const TF32_RELATIVE: f64 = 0.1;

/// Root mean square of a tensor, in float64.
fn rms(tensor: &Tensor) -> Result<f64, tch::TchError> {
    if tensor.numel() == 0 || !crate::case::is_floating(tensor.kind()) {
        return Ok(0.0);
    }
    let value = tensor
        .f_to_kind(Kind::Double)?
        .f_square()?
        .f_mean(Kind::Double)?
        .f_sqrt()?
        .f_double_value(&[])?;
    Ok(if value.is_finite() { value } else { 0.0 })
}

/// The relaid run. A step may refuse an input in another layout with an
/// error (`view` of a non-contiguous tensor): that input is found by relaying
/// one at a time, kept as it was, and reported; the rest are compared.
fn relaid_run(
    case: &Case,
    device: DeviceSpec,
    weights: &Named,
) -> Result<(Trajectory, Relaid, BTreeMap<String, String>), TrialError> {
    let run = |relaid: &Relaid| -> Result<Trajectory, TrialError> {
        crate::cause::quietly(|| {
            tolerance::trajectory_in(case, device, case.kind(), weights, Some(relaid))
        })?
    };
    let attempt = |relaid: &Relaid| -> Result<Trajectory, TrialError> {
        match run(relaid) {
            // A returned libtorch error has no line: run again with a stack
            // for every op and name the last one's.
            Err(error @ TrialError::Torch(_)) => {
                let expect = crate::observer::Expectation {
                    device,
                    kind: case.kind(),
                };
                let at = crate::observer::observe_every_line(expect, || run(relaid))
                    .ok()
                    .and_then(|(_, trace)| crate::observer::last_call_site(&trace)?.located());
                Err(match at {
                    Some(site) => TrialError::At {
                        site,
                        error: Box::new(error),
                    },
                    None => error,
                })
            }
            other => other,
        }
    };
    let mut plan = Relaid {
        parameters: true,
        ..Relaid::default()
    };
    let first_error = match attempt(&plan) {
        Ok(run) => return Ok((run, plan, BTreeMap::new())),
        Err(error) => error,
    };
    let names: Vec<String> = {
        let trainer = crate::trainer::Trainer::new(case, device, case.kind(), weights)?;
        let batch = trainer.batch(0)?;
        batch
            .tensors
            .iter()
            .map(|(n, _)| n.clone())
            .filter(|n| case.keeps_layout(n).is_none())
            .collect()
    };
    let mut refused = BTreeMap::new();
    for name in &names {
        let alone = Relaid {
            parameters: false,
            keep: BTreeSet::new(),
            only: Some(name.clone()),
        };
        if let Err(error) = attempt(&alone) {
            refused.insert(name.clone(), error.to_string());
        }
    }
    plan.keep = refused.keys().cloned().collect();
    let run = match attempt(&plan) {
        Ok(run) => run,
        Err(_) => {
            plan.parameters = false;
            match attempt(&plan) {
                Ok(run) => {
                    refused.insert("4-D parameters".into(), first_error.to_string());
                    run
                }
                Err(error) => return Err(TrialError::Relaid(Box::new(error))),
            }
        }
    };
    Ok((run, plan, refused))
}

/// The start of an error, for a one-line message.
fn short(error: &str) -> String {
    let mut text: String = error.chars().take(120).collect();
    if text.len() < error.len() {
        text.push('…');
    }
    text
}

/// `2.1×`, `1.2e7×`.
fn times(ratio: f64) -> String {
    if ratio < 1000.0 {
        format!("{ratio:.1}×")
    } else {
        format!("{ratio:.1e}×")
    }
}

/// Each tensor of the relaid run against the contiguous run, both against the reference.
fn judge(
    contiguous: &Named,
    relaid: &Named,
    reference: &Named,
    tf32: bool,
    tf32_relative: bool,
) -> Result<Vec<LayoutTensor>, TrialError> {
    contiguous
        .iter()
        .map(|(name, plain)| {
            let find = |named: &Named, what: &str| {
                named
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, t)| t.shallow_clone())
                    .ok_or_else(|| TrialError::Case(format!("the {what} run has no `{name}`")))
            };
            let other = find(relaid, "relaid")?;
            let truth = find(reference, "reference")?;
            let contiguous_rmse = rmse(plain, &truth)?;
            let relaid_rmse = rmse(&other, &truth)?;
            let mut bound = ErrorBound::for_tensor(plain.kind(), plain.numel());
            let mut tf32_floor = 0.0;
            if tf32 && plain.kind() == Kind::Float {
                bound = bound.with_tf32();
                if tf32_relative {
                    // TF32 keeps 10 mantissa bits, so its rounding grows with
                    // the tensor (and with cancellation in a gradient's sum); a
                    // kernel that reads the wrong elements is off by the
                    // tensor's own size.
                    tf32_floor = TF32_RELATIVE * rms(&truth)?;
                }
            }
            let lost = (not_finite(&other)? - not_finite(plain)?).max(0);
            // A contiguous run that is not finite where the reference is: the
            // tolerance check's failure. Here the relaid run need only match it,
            // NaN for NaN, within assert_close's defaults for the dtype.
            let matches_contiguous = || -> Result<bool, TrialError> {
                let tolerance = Tolerance {
                    equal_nan: true,
                    ..crate::compare::tolerance_for_pair(other.kind(), plain.kind())
                };
                Ok(crate::compare::compare(&other, plain, tolerance)
                    .map_err(|error| TrialError::Compare {
                        name: name.to_string(),
                        error,
                    })?
                    .passed)
            };
            let within = bound.admits(relaid_rmse, contiguous_rmse);
            let tf32_admitted = !within
                && contiguous_rmse.is_finite()
                && relaid_rmse <= bound.multiplier * contiguous_rmse + tf32_floor;
            // Beyond the bound but within assert_close's defaults of the
            // contiguous run, the standard PyTorch's own tests hold a
            // non-contiguous input to (test_noncontiguous_samples): rounding,
            // as a large sum taken in another order (a summed loss of 7e4 is
            // 8e-3 off in float32 where the contiguous run was 2e-4 off).
            let rounding_admitted = !within
                && !tf32_admitted
                && lost == 0
                && contiguous_rmse.is_finite()
                && matches_contiguous()?;
            let passed = if contiguous_rmse.is_finite() {
                lost == 0 && (within || tf32_admitted || rounding_admitted)
            } else {
                matches_contiguous()?
            };
            let ratio = if contiguous_rmse > 0.0 {
                relaid_rmse / contiguous_rmse
            } else if relaid_rmse == 0.0 {
                1.0
            } else {
                f64::INFINITY
            };
            Ok(LayoutTensor {
                name: name.clone(),
                contiguous_rmse,
                relaid_rmse,
                ratio,
                multiplier: bound.multiplier,
                floor: bound.floor,
                not_finite: lost,
                tf32_admitted: tf32_admitted && lost == 0,
                rounding_admitted,
                passed,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Model, StepOutput};
    use crate::checks::timing::TimingBudget;
    use tch::nn::{self, Module, OptimizerConfig};
    use tch::{Device, TchError};

    #[test]
    fn a_large_sum_off_by_rounding_passes_and_a_wrong_one_fails() {
        crate::init().unwrap();
        let scalar = |value: f64, kind| Tensor::from(value).to_kind(kind);
        let named = |value: f64, kind| vec![("loss".to_owned(), scalar(value, kind))];
        let reference = named(70000.003, Kind::Double);
        let contiguous = named(70000.0, Kind::Float);
        // Three float32 ulps above: 6.8× the contiguous run's error, far beyond
        // the bound, and within assert_close's float32 defaults of it.
        let rounded = judge(
            &contiguous,
            &named(70000.0234375, Kind::Float),
            &reference,
            false,
            false,
        )
        .unwrap();
        assert!(
            rounded[0].passed && rounded[0].rounding_admitted,
            "{rounded:?}"
        );
        assert!(rounded[0].ratio > 3.0, "{rounded:?}");
        let wrong = judge(
            &contiguous,
            &named(70100.0, Kind::Float),
            &reference,
            false,
            false,
        )
        .unwrap();
        assert!(!wrong[0].passed && !wrong[0].rounding_admitted, "{wrong:?}");
    }

    /// A linear model whose step `view`s its features, as tch's examples do.
    struct Views {
        fc: nn::Linear,
        opt: nn::Optimizer,
    }

    impl Model for Views {
        fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
            let x = batch.get("x").f_view([-1, 6])?;
            let out = self.fc.forward(&x);
            let loss = out.f_square()?.f_mean(None)?;
            self.opt.backward_step(&loss);
            Ok(StepOutput {
                outputs: vec![("out".into(), out)],
                loss,
            })
        }
    }

    fn views() -> Case {
        Case::new(
            "views",
            |vs| {
                Ok(Box::new(Views {
                    fc: nn::linear(vs.root() / "fc", 6, 2, Default::default()),
                    opt: nn::Adam::default().build(vs, 1e-3)?,
                }) as Box<dyn Model>)
            },
            |_step| {
                Ok(Batch::new([
                    ("x", Tensor::randn([4, 2, 3], (Kind::Double, Device::Cpu))),
                    ("weights", Tensor::rand([4, 5], (Kind::Double, Device::Cpu))),
                ]))
            },
        )
    }

    #[test]
    fn an_input_the_step_refuses_is_kept_and_named_and_the_rest_compared() {
        let case = views();
        let state = CaseState::new(case.clone(), None, TimingBudget::default());
        let verdict = run(&case, DeviceSpec::Cpu, &state).unwrap();
        assert!(verdict.passed, "{}", verdict.message);
        let metrics: LayoutMetrics = serde_json::from_value(verdict.metrics).unwrap();
        assert_eq!(metrics.refused.len(), 1, "{:?}", metrics.refused);
        let why = &metrics.refused["x"];
        assert!(why.contains("(Tensor::view)"), "{why}");
        assert!(why.contains("harness/src/checks/layout.rs:"), "{why}");
        assert_eq!(metrics.batch["x"], Layout::Unchanged);
        assert_eq!(metrics.batch["weights"], Layout::Transposed);
        assert!(
            verdict.message.contains(
                "`x` kept: the step refuses it otherwise, at harness/src/checks/layout.rs:"
            ),
            "{}",
            verdict.message
        );

        // Kept by the case, it is neither relaid nor tried.
        let kept = views().keep_layout("x", "the step views it");
        let state = CaseState::new(kept.clone(), None, TimingBudget::default());
        let verdict = run(&kept, DeviceSpec::Cpu, &state).unwrap();
        let metrics: LayoutMetrics = serde_json::from_value(verdict.metrics).unwrap();
        assert!(metrics.refused.is_empty(), "{:?}", metrics.refused);
        assert_eq!(metrics.kept["x"], "the step views it");
        assert_eq!(metrics.batch["x"], Layout::Unchanged);
    }

    #[test]
    fn every_layout_holds_the_same_values_in_other_strides() {
        let cases: [(&[i64], Layout); 5] = [
            (&[2, 3, 4, 5], Layout::ChannelsLast),
            (&[4, 6], Layout::Transposed),
            (&[2, 4, 6], Layout::Transposed),
            (&[7], Layout::StridedSlice),
            // One column: transposing changes no stride that matters.
            (&[5, 1], Layout::StridedSlice),
        ];
        for (shape, expected) in cases {
            let t = Tensor::randn(shape, (Kind::Float, Device::Cpu));
            let (relaid, layout) = relayout(&t).unwrap();
            assert_eq!(layout, expected, "{shape:?}");
            assert!(!relaid.is_contiguous(), "{shape:?}");
            assert_eq!(relaid.size(), t.size());
            assert!(relaid.equal(&t), "{shape:?}");
        }
        let scalar = Tensor::from(3.0f64);
        assert_eq!(relayout(&scalar).unwrap().1, Layout::Unchanged);
        let labels = Tensor::from_slice(&[1i64, 0, 2]);
        let (relaid, layout) = relayout(&labels).unwrap();
        assert_eq!(layout, Layout::StridedSlice);
        assert_eq!(relaid.kind(), Kind::Int64);
        assert!(relaid.equal(&labels));
    }
}
