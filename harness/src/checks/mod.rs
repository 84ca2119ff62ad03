//! The eight checks, one module each, and what they share: what a check returns,
//! and the per-case state they read (`state`). The checks' names
//! ([`Check`]) and figures (`devcheck_report::metrics`) are devcheck-report's,
//! as reports hold them. The runner makes trials of them; no check knows the runner.

pub mod fallback;
pub mod layout;
pub mod memory;
pub mod placement;
pub mod readbacks;
pub mod repeatability;
pub mod state;
pub mod timing;
pub mod tolerance;

use devcheck_report::metrics::CheckMetrics;
pub use devcheck_report::report::{Caveat, Check};

use crate::device::DeviceSpec;
use crate::error::TrialError;
use state::CaseState;

/// What a check concluded.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the check passed.
    pub passed: bool,
    /// One line: why it failed, or what it measured.
    pub message: String,
    /// Figures for the report: the check's `devcheck_report::metrics` struct, as JSON.
    pub metrics: serde_json::Value,
    /// What a pass does not prove (nothing compared; unstable figures).
    pub caveat: Option<Caveat>,
}

impl Verdict {
    /// A passing verdict.
    pub fn pass(message: impl Into<String>, metrics: impl CheckMetrics) -> Self {
        Self {
            passed: true,
            message: message.into(),
            metrics: metrics.to_value(),
            caveat: None,
        }
    }

    /// A passing verdict that measured without comparing anything.
    pub fn measured(message: impl Into<String>, metrics: impl CheckMetrics) -> Self {
        Self::pass(message, metrics).with_caveat(Caveat::MeasuredOnly)
    }

    /// The same verdict with a caveat.
    pub fn with_caveat(self, caveat: Caveat) -> Self {
        Self {
            caveat: Some(caveat),
            ..self
        }
    }

    /// A failing verdict.
    pub fn fail(message: impl Into<String>, metrics: impl CheckMetrics) -> Self {
        Self {
            passed: false,
            message: message.into(),
            metrics: metrics.to_value(),
            caveat: None,
        }
    }
}

/// Runs one check of the state's case on `device`.
pub fn run(check: Check, state: &CaseState, device: DeviceSpec) -> Result<Verdict, TrialError> {
    let case = state.case();
    match check {
        Check::Placement => placement::run(case, device, state),
        Check::Tolerance => tolerance::run(case, device, state),
        Check::Readbacks => readbacks::run(case, device, state),
        Check::Timing => timing::run(case, device, state),
        Check::Fallback => fallback::run(case, device, state),
        Check::Memory => memory::run(case, device, state),
        Check::Layout => layout::run(case, device, state),
        Check::Repeatability => repeatability::run(case, device, state),
    }
}

/// Tensor names as a message lists them: `` `loss`, `grad.fc.weight` ``.
pub(crate) fn quoted_names<'a>(names: impl IntoIterator<Item = &'a str>) -> String {
    names
        .into_iter()
        .map(|name| format!("`{name}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
