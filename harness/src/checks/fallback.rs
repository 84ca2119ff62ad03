//! Fallback: which operators ran on the CPU instead of the device. On MPS,
//! with `PYTORCH_ENABLE_MPS_FALLBACK=1` (the runner makes sure of it), an
//! operator MPS lacks goes through libtorch's `cpu_fallback`, which moves its
//! tensors to the CPU with `aten::_to_cpu`: the op observer sees that inside
//! the op and names the user's line. libtorch's warning (captured with
//! warn-always on, so it repeats) is a second witness.

use std::collections::{BTreeMap, BTreeSet};

use devcheck_report::metrics::FallbackMetrics;

use super::state::CaseState;
use super::Verdict;
use crate::case::Case;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::observer::findings::Analysis;
use crate::observer::{self, Expectation};
use crate::shim::WarningCapture;
use crate::trainer::Trainer;

/// The operator named by an MPS CPU-fallback warning, if `message` is one.
///
/// libtorch's text: "The operator 'aten::foo' is not currently supported on the
/// MPS backend and will fall back to run on the CPU. This may have performance
/// implications."
pub fn fallback_operator(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("The operator '")?;
    let (op, tail) = rest.split_once('\'')?;
    tail.contains("will fall back to run on the CPU")
        .then_some(op)
}

/// Runs two steps, observed and capturing warnings, and lists the operators that fell back.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let capture = WarningCapture::start()?;
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    let expect = Expectation {
        device,
        kind: case.kind(),
    };
    let mut observed: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for step in 0..2 {
        let batch = trainer.batch(step)?;
        let (result, trace) = observer::observe(expect, || trainer.step(&batch))?;
        result?;
        for (_, fallback) in Analysis::new(&trace, expect).fallbacks() {
            let site = fallback
                .call
                .site
                .map_or_else(|| "(no user frame)".to_owned(), |s| s.to_string());
            observed
                .entry(op_name(&fallback.op))
                .or_default()
                .insert(site);
        }
    }
    let messages: Vec<String> = capture.warnings().into_iter().map(|w| w.message).collect();
    drop(capture);
    Ok(verdict(
        device,
        &observed,
        &messages,
        &case.accepted_fallbacks,
    ))
}

/// `aten::_linalg_eigh.eigenvalues` and `aten::_linalg_eigh` name the same operator.
fn op_name(op: &str) -> String {
    op.split('.').next().unwrap_or(op).to_owned()
}

/// The verdict on what fell back: fails on any operator that fell back to the
/// CPU (seen by the observer, with its sites, or by libtorch's warning) and is
/// not in `accepted`.
pub fn verdict(
    device: DeviceSpec,
    observed: &BTreeMap<String, BTreeSet<String>>,
    warnings: &[String],
    accepted: &[String],
) -> Verdict {
    let warned: BTreeSet<String> = warnings
        .iter()
        .filter_map(|w| fallback_operator(w))
        .map(op_name)
        .collect();
    let fell_back: BTreeSet<&String> = observed.keys().chain(&warned).collect();
    let is_accepted = |op: &str| accepted.iter().any(|a| op_name(a) == op);
    let (allowed, refused): (Vec<&String>, Vec<&String>) =
        fell_back.iter().partition(|op| is_accepted(op));
    let metrics = FallbackMetrics {
        fell_back: fell_back.iter().map(|op| op.to_string()).collect(),
        sites: observed
            .iter()
            .map(|(op, sites)| (op.clone(), sites.iter().cloned().collect()))
            .collect(),
        accepted: accepted.to_vec(),
        only_warned: warned
            .iter()
            .filter(|op| !observed.contains_key(*op))
            .cloned()
            .collect(),
        only_observed: observed
            .keys()
            .filter(|op| !warned.contains(*op))
            .cloned()
            .collect(),
        warnings: warnings
            .iter()
            .map(|w| crate::cause::torch_message(w))
            .collect(),
        fallback_enabled: std::env::var("PYTORCH_ENABLE_MPS_FALLBACK").ok(),
    };
    let describe = |ops: &[&String]| {
        ops.iter()
            .map(|op| match observed.get(*op).and_then(|s| s.first()) {
                Some(site) => format!("{op} at {site}"),
                None => op.to_string(),
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !refused.is_empty() {
        return Verdict::fail(
            format!(
                "{} operator(s) fell back to the CPU on {device}: {} — accept them with \
                 `Case::accept_fallbacks` if that is intended",
                refused.len(),
                describe(&refused)
            ),
            metrics,
        );
    }
    let message = match (device, allowed.is_empty()) {
        (DeviceSpec::Mps, true) => "no operator fell back to the CPU".to_owned(),
        (DeviceSpec::Mps, false) => format!("only accepted fallbacks: {}", describe(&allowed)),
        _ => format!("{device} has no CPU fallback: every operator ran natively"),
    };
    Verdict::pass(message, metrics)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_operator_of_an_mps_fallback_warning() {
        let warning = "The operator 'aten::_linalg_eigh.eigenvalues' is not currently supported \
                       on the MPS backend and will fall back to run on the CPU. This may have \
                       performance implications.";
        assert_eq!(
            fallback_operator(warning),
            Some("aten::_linalg_eigh.eigenvalues")
        );
        assert_eq!(
            fallback_operator("torch.meshgrid: in an upcoming release…"),
            None
        );
        assert_eq!(
            fallback_operator("The operator 'aten::x' is deprecated"),
            None
        );
    }

    #[test]
    fn fails_on_an_unaccepted_fallback_with_its_site_and_passes_an_accepted_one() {
        let observed: BTreeMap<String, BTreeSet<String>> = [(
            "aten::_linalg_eigh".to_owned(),
            ["src/model.rs:40:17".to_owned()].into(),
        )]
        .into();
        let refused = verdict(DeviceSpec::Mps, &observed, &[], &[]);
        assert!(!refused.passed);
        assert!(
            refused
                .message
                .contains("aten::_linalg_eigh at src/model.rs:40:17"),
            "{}",
            refused.message
        );
        let accepted = verdict(
            DeviceSpec::Mps,
            &observed,
            &[],
            &["aten::_linalg_eigh.eigenvalues".to_owned()],
        );
        assert!(accepted.passed, "{}", accepted.message);
        let warning = "The operator 'aten::col2im' is not currently supported on the MPS backend \
                       and will fall back to run on the CPU. This may have performance implications."
            .to_owned();
        let warned_only = verdict(DeviceSpec::Mps, &BTreeMap::new(), &[warning], &[]);
        assert!(!warned_only.passed);
        assert_eq!(warned_only.metrics["only_warned"][0], "aten::col2im");
    }
}
