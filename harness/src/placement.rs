//! Placement: after a step, every parameter, gradient, optimizer state tensor,
//! input, output and the loss is on the case's device, and every floating one
//! in the case's dtype.

use serde_json::json;

use crate::case::{is_floating, Case};
use crate::check::Verdict;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::runner::CaseState;
use crate::trainer::Trainer;

/// Runs two steps on `device` (so lazily created optimizer state exists) and
/// inspects every tensor of the second.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    trainer.run_step(0)?;
    let (batch, output) = trainer.run_step(1)?;
    let tensors = trainer.tensors(&batch, &output);
    let expected_device = device.to_tch();
    let mut offenders = Vec::new();
    for (name, role, tensor) in &tensors {
        let kind = tensor.kind();
        let wrong_device = tensor.device() != expected_device;
        let wrong_kind = is_floating(kind) && kind != case.kind();
        if wrong_device || wrong_kind {
            let found = DeviceSpec::from_tch(tensor.device())
                .map_or_else(|| format!("{:?}", tensor.device()), |d| d.to_string());
            let expected_kind = if is_floating(kind) { case.kind() } else { kind };
            offenders.push(format!(
                "{} `{name}` is on {found} as {}, expected {device} as {}",
                role.noun(),
                kind_name(kind),
                kind_name(expected_kind)
            ));
        }
    }
    let shapes: serde_json::Map<String, serde_json::Value> = tensors
        .iter()
        .filter(|(name, ..)| !name.starts_with("param.") && !name.starts_with("grad."))
        .filter(|(name, ..)| !name.starts_with("state."))
        .map(|(name, _, t)| (name.clone(), json!(t.size())))
        .collect();
    let batch_size = batch
        .tensors
        .first()
        .and_then(|(_, t)| t.size().first().copied());
    let metrics = json!({
        "tensors_checked": tensors.len(),
        "batch_size": batch_size,
        "shapes": shapes,
        "offenders": offenders,
    });
    Ok(match offenders.first() {
        Some(first) if offenders.len() == 1 => Verdict::fail(first.clone(), metrics),
        Some(first) => Verdict::fail(
            format!("{first} (and {} more)", offenders.len() - 1),
            metrics,
        ),
        None => Verdict::pass(
            format!(
                "all {} tensors on {device} as {}",
                tensors.len(),
                kind_name(case.kind())
            ),
            metrics,
        ),
    })
}

/// PyTorch's name for a dtype (`float32`, `int64`).
pub fn kind_name(kind: tch::Kind) -> &'static str {
    use tch::Kind::*;
    match kind {
        Uint8 => "uint8",
        Int8 => "int8",
        Int16 => "int16",
        Int => "int32",
        Int64 => "int64",
        Half => "float16",
        Float => "float32",
        Double => "float64",
        ComplexHalf => "complex32",
        ComplexFloat => "complex64",
        ComplexDouble => "complex128",
        Bool => "bool",
        BFloat16 => "bfloat16",
        _ => "other",
    }
}
