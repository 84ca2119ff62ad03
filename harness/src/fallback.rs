//! Fallback: which operators ran on the CPU instead of the device. On MPS,
//! with `PYTORCH_ENABLE_MPS_FALLBACK=1` (the runner makes sure of it), an
//! operator MPS lacks runs on the CPU and libtorch warns once per process;
//! with warn-always on, every fallback is captured and named.

use std::collections::BTreeSet;

use serde_json::json;

use crate::case::Case;
use crate::check::Verdict;
use crate::device::DeviceSpec;
use crate::error::TrialError;
use crate::runner::CaseState;
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

/// Runs two steps capturing warnings, and lists the operators that fell back.
pub fn run(case: &Case, device: DeviceSpec, state: &CaseState) -> Result<Verdict, TrialError> {
    let capture = WarningCapture::start()?;
    let mut trainer = Trainer::new(case, device, case.kind(), &state.weights()?)?;
    trainer.run_step(0)?;
    trainer.run_step(1)?;
    let messages: Vec<String> = capture.warnings().into_iter().map(|w| w.message).collect();
    drop(capture);
    Ok(verdict(device, &messages, &case.accepted_fallbacks))
}

/// The verdict on the warnings a device's steps raised: fails on any operator
/// that fell back to the CPU and is not in `accepted`.
pub fn verdict(device: DeviceSpec, warnings: &[String], accepted: &[String]) -> Verdict {
    let fell_back: BTreeSet<String> = warnings
        .iter()
        .filter_map(|w| fallback_operator(w))
        .map(str::to_owned)
        .collect();
    let (allowed, refused): (Vec<&String>, Vec<&String>) = fell_back
        .iter()
        .partition(|op| accepted.iter().any(|a| a == *op));
    let metrics = json!({
        "fell_back": fell_back,
        "accepted": accepted,
        "warnings": warnings.iter().map(|w| crate::cause::torch_message(w)).collect::<Vec<_>>(),
        "fallback_enabled": std::env::var("PYTORCH_ENABLE_MPS_FALLBACK").ok(),
    });
    let list = |ops: &[&String]| {
        ops.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if !refused.is_empty() {
        return Verdict::fail(
            format!(
                "{} operator(s) fell back to the CPU on {device}: {} — accept them with \
                 `Case::accept_fallbacks` if that is intended",
                refused.len(),
                list(&refused)
            ),
            metrics,
        );
    }
    let message = match (device, allowed.is_empty()) {
        (DeviceSpec::Mps, true) => "no operator fell back to the CPU".to_owned(),
        (DeviceSpec::Mps, false) => format!("only accepted fallbacks: {}", list(&allowed)),
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
}
