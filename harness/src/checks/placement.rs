//! Placement: every op the step runs gets its tensors on the case's device and
//! in its floating dtype (0-dim CPU scalars excepted, as libtorch allows them),
//! nothing is copied from the host to the device inside the step, and after a
//! step every parameter, gradient, optimizer state tensor, input, output and
//! the loss is on the case's device, every floating one in the case's dtype.
//! The first is seen by the op observer (so tch's own optimizers are judged by
//! the ops they run), with the user's line; the last by inspecting the named
//! tensors.

use serde_json::json;

use super::state::CaseState;
use super::Verdict;
use crate::case::{is_floating, kind_name, Case};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::observer::findings::{by_site, Analysis};
use crate::observer::{self, Expectation};
use crate::trainer::Trainer;

/// Runs two steps on `device` (so lazily created optimizer state exists),
/// observing the second, and inspects every tensor it leaves.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    trainer.run_step(0)?;
    let batch = trainer.batch(1)?;
    let expect = Expectation {
        device,
        kind: case.kind(),
    };
    let (output, trace) = observer::observe(expect, || trainer.step(&batch))?;
    let output = output?;
    let analysis = Analysis::new(&trace, expect);
    let fallen_back: Vec<usize> = analysis.fallbacks().into_iter().map(|f| f.0).collect();
    let findings = analysis.placement(&fallen_back);
    let observed: Vec<String> = by_site(&findings, |f| (f.call().site.clone(), f.describe(expect)))
        .into_iter()
        .map(|(site, what, count)| {
            let at = site.map_or_else(|| "(no user frame)".to_owned(), |s| s.to_string());
            let times = if count > 1 {
                format!(" (×{count})")
            } else {
                String::new()
            };
            format!("{at}: {what}{times}")
        })
        .collect();

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
        "ops_observed": trace.records.len(),
        "threads_observed": trace.threads(),
        "batch_size": batch_size,
        "shapes": shapes,
        "offenders": offenders,
        "observed": observed,
    });
    let problems: Vec<&String> = observed.iter().chain(&offenders).collect();
    Ok(match problems.first() {
        Some(first) if problems.len() == 1 => Verdict::fail((*first).clone(), metrics),
        Some(first) => Verdict::fail(
            format!("{first} (and {} more)", problems.len() - 1),
            metrics,
        ),
        None => Verdict::pass(
            format!(
                "every op of the step and all {} tensors after it on {device} as {}",
                tensors.len(),
                kind_name(case.kind())
            ),
            metrics,
        ),
    })
}
