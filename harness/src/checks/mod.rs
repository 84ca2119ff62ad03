//! The eight checks, one module each, and what they share: the names of the
//! checks, what a check returns, and the per-case state they read (`state`).
//! The runner makes trials of them; no check knows the runner.

pub mod fallback;
pub mod layout;
pub mod memory;
pub mod placement;
pub mod readbacks;
pub mod repeatability;
pub mod state;
pub mod timing;
pub mod tolerance;

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

pub use devcheck_report::report::Caveat;

use crate::device::DeviceSpec;
use crate::error::TrialError;
use state::CaseState;

/// One of the eight device-correctness checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Check {
    /// Every tensor on the intended device and dtype.
    Placement,
    /// Numbers agree with a float64 CPU reference within tolerance.
    Tolerance,
    /// Host reads per step within budget, at known places.
    Readbacks,
    /// Honest (synchronized) against naive step time.
    Timing,
    /// Operators that fell back to the CPU.
    Fallback,
    /// Live memory stays flat across epochs.
    Memory,
    /// The same results with the inputs in other memory layouts.
    Layout,
    /// Bitwise the same results from the same state.
    Repeatability,
}

impl Check {
    /// All checks, in report order.
    pub const ALL: [Check; 8] = [
        Check::Placement,
        Check::Tolerance,
        Check::Readbacks,
        Check::Timing,
        Check::Fallback,
        Check::Memory,
        Check::Layout,
        Check::Repeatability,
    ];

    /// The name used in trial names and reports.
    pub fn name(self) -> &'static str {
        match self {
            Check::Placement => "placement",
            Check::Tolerance => "tolerance",
            Check::Readbacks => "readbacks",
            Check::Timing => "timing",
            Check::Fallback => "fallback",
            Check::Memory => "memory",
            Check::Layout => "layout",
            Check::Repeatability => "repeatability",
        }
    }
}

impl fmt::Display for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Check {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Check::ALL
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                format!(
                    "unknown check `{name}`: expected one of {}",
                    Check::ALL.map(Check::name).join(", ")
                )
            })
    }
}

/// What a check concluded.
#[derive(Debug, Clone, PartialEq)]
pub struct Verdict {
    /// Whether the check passed.
    pub passed: bool,
    /// One line: why it failed, or what it measured.
    pub message: String,
    /// Figures for the report.
    pub metrics: serde_json::Value,
    /// What a pass does not prove (nothing compared; unstable figures).
    pub caveat: Option<Caveat>,
}

impl Verdict {
    /// A passing verdict.
    pub fn pass(message: impl Into<String>, metrics: serde_json::Value) -> Self {
        Self {
            passed: true,
            message: message.into(),
            metrics,
            caveat: None,
        }
    }

    /// A passing verdict that measured without comparing anything.
    pub fn measured(message: impl Into<String>, metrics: serde_json::Value) -> Self {
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
    pub fn fail(message: impl Into<String>, metrics: serde_json::Value) -> Self {
        Self {
            passed: false,
            message: message.into(),
            metrics,
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
