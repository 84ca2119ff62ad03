//! Placement: every op the step runs gets its tensors on the case's device and
//! in its floating dtype (0-dim CPU scalars excepted, as libtorch allows them),
//! nothing is copied from the host to the device inside the step, and after a
//! step every parameter, gradient, optimizer state tensor, input, output and
//! the loss is on the case's device, every floating one in the case's dtype.
//! The first is seen by the op observer (so tch's own optimizers are judged by
//! the ops they run), with the user's line; the last by inspecting the named
//! tensors.

use std::collections::BTreeMap;

use devcheck_report::metrics::PlacementMetrics;

use super::state::CaseState;
use super::Verdict;
use crate::case::{is_floating, kind_name, Case};
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::observer::findings::{by_site, Analysis, PlacementFinding};
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
    let analysis =
        Analysis::new(&trace, expect).with_host_batch(trainer.host_batch_storages(&batch));
    let fallen_back: Vec<usize> = analysis.fallbacks().into_iter().map(|f| f.0).collect();
    let findings = analysis.placement(&fallen_back);
    // A batch upload that does not wait is what a data loader should do: seen, not failed.
    let (uploads, findings): (Vec<_>, Vec<_>) = findings.into_iter().partition(|f| {
        matches!(
            f,
            PlacementFinding::BatchUpload { blocking, .. } if *blocking != Some(true)
        )
    });
    let located = |findings: &[PlacementFinding]| -> Vec<String> {
        by_site(findings, |f| (f.call().site.clone(), f.describe(expect)))
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
            .collect()
    };
    let observed = located(&findings);
    let batch_uploads = located(&uploads);

    let tensors = trainer.tensors(&batch, &output);
    let expected_device = device.to_tch();
    let mut offenders = Vec::new();
    for (name, role, tensor) in &tensors {
        let kind = tensor.kind();
        // A batch handed over on the host stays there; the step's copy is judged above.
        let host_input = case.host_batches && matches!(role, crate::trainer::Role::Input);
        let wrong_device = tensor.device() != expected_device && !host_input;
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
    let shapes: BTreeMap<String, Vec<i64>> = tensors
        .iter()
        .filter(|(name, ..)| !name.starts_with("param.") && !name.starts_with("grad."))
        .filter(|(name, ..)| !name.starts_with("state."))
        .map(|(name, _, t)| (name.clone(), t.size()))
        .collect();
    let batch_size = batch
        .tensors
        .first()
        .and_then(|(_, t)| t.size().first().copied());
    let problems: Vec<String> = observed.iter().chain(&offenders).cloned().collect();
    let metrics = PlacementMetrics {
        tensors_checked: tensors.len(),
        ops_observed: trace.records.len(),
        threads_observed: trace.threads(),
        batch_size,
        shapes,
        offenders,
        observed,
        batch_uploads,
    };
    Ok(match problems.first() {
        Some(first) if problems.len() == 1 => Verdict::fail(first.clone(), metrics),
        Some(first) => Verdict::fail(
            format!("{first} (and {} more)", problems.len() - 1),
            metrics,
        ),
        None => Verdict::pass(
            format!(
                "every op of the step and all {} tensors after it on {device} as {}{}",
                tensors.len(),
                kind_name(case.kind()),
                metrics
                    .batch_uploads
                    .first()
                    .map_or_else(String::new, |first| format!("; {first}"))
            ),
            metrics,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::{Batch, Model, StepOutput};
    use crate::checks::timing::TimingBudget;
    use tch::nn::{self, Module};
    use tch::{Device, Kind, TchError, Tensor};

    /// What a step does with the loader's batch.
    #[derive(Clone, Copy, PartialEq)]
    enum Upload {
        Moves,
        /// Converts it on the host first (as min-gpt's bytes `to_kind(Int64)`).
        ConvertsThenMoves,
        Forgets,
    }

    /// A step that moves the loader's batch itself, as tch's examples do.
    struct MovesItsBatch {
        fc: nn::Linear,
        device: Device,
        upload: Upload,
    }

    impl Model for MovesItsBatch {
        fn step(&mut self, batch: &Batch) -> Result<StepOutput, TchError> {
            let x = match self.upload {
                Upload::Moves => batch.get("x").to_device(self.device),
                Upload::ConvertsThenMoves => batch
                    .get("x")
                    .to_kind(Kind::Double)
                    .to_device(self.device)
                    .to_kind(Kind::Float),
                Upload::Forgets => batch.get("x").shallow_clone(),
            };
            let out = self.fc.forward(&x);
            let loss = out.f_mean(None)?;
            Ok(StepOutput {
                outputs: vec![("out".into(), out)],
                loss,
            })
        }
    }

    fn case(upload: Upload) -> Case {
        Case::new(
            "uploads",
            move |vs| {
                Ok(Box::new(MovesItsBatch {
                    fc: nn::linear(vs.root() / "fc", 4, 2, Default::default()),
                    device: vs.device(),
                    upload,
                }) as Box<dyn Model>)
            },
            |_step| {
                Ok(Batch::new([(
                    "x",
                    Tensor::randn([8, 4], (Kind::Double, Device::Cpu)),
                )]))
            },
        )
        .host_batches()
    }

    #[test]
    fn a_batch_handed_over_on_the_host_is_seen_where_the_step_moves_it() {
        let source = include_str!("placement.rs");
        let line_of = |text: &str| 1 + source.lines().position(|l| l.trim() == text).unwrap();
        for (upload, line) in [
            (
                Upload::Moves,
                line_of("Upload::Moves => batch.get(\"x\").to_device(self.device),"),
            ),
            // Converted on the host, it is still the batch's data when moved.
            (
                Upload::ConvertsThenMoves,
                line_of(".to_device(self.device)"),
            ),
        ] {
            let case = case(upload);
            let state = CaseState::new(case.clone(), None, TimingBudget::default());
            let verdict = run(&case, DeviceSpec::Cpu, &state).unwrap();
            assert!(verdict.passed, "{}", verdict.message);
            let uploads = verdict.metrics["batch_uploads"].as_array().unwrap();
            assert_eq!(uploads.len(), 1, "{}", verdict.metrics);
            let upload = uploads[0].as_str().unwrap();
            assert!(
                upload.starts_with(&format!("harness/src/checks/placement.rs:{line}:")),
                "{upload}"
            );
            assert!(
                // tch's to_device may be inlined into its `to` frame.
                upload
                    .contains("the batch's [8, 4] tensor is moved to the device with `Tensor::to"),
                "{upload}"
            );
            assert!(verdict.message.contains(upload), "{}", verdict.message);
        }

        // Forgetting the move is what an accelerator refuses.
        let forgets = case(Upload::Forgets);
        let state = CaseState::new(forgets.clone(), None, TimingBudget::default());
        let verdict = run(&forgets, DeviceSpec::Cpu, &state).unwrap();
        assert!(!verdict.passed);
        assert!(
            verdict
                .message
                .contains("on an accelerator it stays on the CPU"),
            "{}",
            verdict.message
        );
    }
}
