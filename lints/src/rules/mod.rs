//! The rule registry: one module per rule, each declaring its id, default
//! level and documentation in one place. `--explain`, `--list-rules` and the
//! SARIF `rules[]` array all read [`RULES`], so a rule exists once.

use std::fmt;

use serde::{Serialize, Serializer};

use crate::analysis::facts::Fix;
use crate::analysis::values::Val;
use crate::config::Level;

pub mod custom_pattern;
pub mod data_dependent_shape;
pub mod host_sync;
pub mod host_value_op;
pub mod syncing_helper;

/// Declares a rule the way clippy declares a lint: the doc comment is the
/// rule's documentation, and it is also kept as a string for `--explain`.
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        pub $name:ident,
        id: $id:expr,
        level: $level:ident,
        summary: $summary:literal,
        help: $help:literal $(,)?
    ) => {
        $(#[doc = $doc])*
        pub static $name: $crate::rules::RuleInfo = $crate::rules::RuleInfo {
            id: $id,
            default_level: $crate::config::Level::$level,
            summary: $summary,
            help: $help,
            doc: concat!($($doc, "\n"),*),
        };
    };
}
pub(crate) use declare_rule;

/// Stable identifier of a rule, written in kebab case in all output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RuleId {
    /// Scalar reads, bulk copies to the host and printing of device tensors.
    HostSync,
    /// Ops that return a host value: `equal`, `allclose`, `is_nonzero`.
    HostValueOp,
    /// Ops whose output shape depends on the data: `nonzero`, `masked_select`, ...
    DataDependentShape,
    /// tch helpers that read back internally: `clip_grad_norm`, ...
    SyncingHelper,
    /// Calls matching a regex from `devcheck.toml`.
    CustomPattern,
}

impl RuleId {
    /// The kebab-case id used on the command line, in config and in output.
    pub fn as_str(self) -> &'static str {
        self.info().id.as_str_const()
    }

    /// Looks a rule up by its kebab-case id.
    pub fn parse(id: &str) -> Option<RuleId> {
        RULES.iter().map(|r| r.id).find(|r| r.as_str() == id)
    }

    /// The rule's registry entry.
    pub fn info(self) -> &'static RuleInfo {
        match self {
            RuleId::HostSync => &host_sync::HOST_SYNC,
            RuleId::HostValueOp => &host_value_op::HOST_VALUE_OP,
            RuleId::DataDependentShape => &data_dependent_shape::DATA_DEPENDENT_SHAPE,
            RuleId::SyncingHelper => &syncing_helper::SYNCING_HELPER,
            RuleId::CustomPattern => &custom_pattern::CUSTOM_PATTERN,
        }
    }

    const fn as_str_const(self) -> &'static str {
        match self {
            RuleId::HostSync => "host-sync",
            RuleId::HostValueOp => "host-value-op",
            RuleId::DataDependentShape => "data-dependent-shape",
            RuleId::SyncingHelper => "syncing-helper",
            RuleId::CustomPattern => "custom-pattern",
        }
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RuleId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A rule's registry entry.
#[derive(Debug)]
pub struct RuleInfo {
    /// The rule's id.
    pub id: RuleId,
    /// Level used when `devcheck.toml` does not set one.
    pub default_level: Level,
    /// One line for `--list-rules`.
    pub summary: &'static str,
    /// The standing advice printed under each finding.
    pub help: &'static str,
    /// Markdown in clippy's shape: What it does / Why is this bad / Example / Use instead.
    pub doc: &'static str,
}

impl RuleInfo {
    /// The documentation as `--explain` prints it: one level of doc-comment
    /// indentation removed, code fences made plain.
    pub fn explain(&self) -> String {
        let mut out = format!("{}: {}\n\n", self.id, self.summary);
        for line in self.doc.lines() {
            let line = line.strip_prefix(' ').unwrap_or(line);
            let line = if line.starts_with("```") { "```" } else { line };
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// Every rule, in the order `--list-rules` prints them.
pub static RULES: [&RuleInfo; 5] = [
    &host_sync::HOST_SYNC,
    &host_value_op::HOST_VALUE_OP,
    &data_dependent_shape::DATA_DEPENDENT_SHAPE,
    &syncing_helper::SYNCING_HELPER,
    &custom_pattern::CUSTOM_PATTERN,
];

/// How sure a rule must be that the receiver (or argument) is a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// The method name only exists on tch types (`double_value`): anything
    /// not known to be something else counts.
    Name,
    /// The name is tch's but common enough elsewhere (`nonzero`, `equal`):
    /// an unknown receiver counts only in files that use tch.
    TchFile,
    /// The name is generic (`to_string`, `print`): only a value known to be a
    /// tensor counts.
    Tensor,
}

/// A method call as the rules see it.
pub(crate) struct MethodCall<'a> {
    /// The method's name.
    pub name: &'a str,
    /// What is known about each argument.
    pub args: &'a [Val],
    /// Whether the single type in the turbofish (`iter::<f64>`) is a scalar.
    pub scalar_turbofish: bool,
    /// Whether the first argument is an index list with a variable in it
    /// (`&[i, j]`): one element per read.
    pub element_index: bool,
}

/// A rule's verdict on one call: report it if the subject passes `need`.
#[derive(Clone, Debug)]
pub(crate) struct Hit {
    /// Which rule fires.
    pub rule: RuleId,
    /// Short name of the operation, used in call chains (`f32::try_from`).
    pub op: String,
    /// The finding's message, without the loop context.
    pub message: String,
    /// An extra note specific to this operation.
    pub note: Option<String>,
    /// How sure the walker must be that the subject is a tensor.
    pub need: Need,
    /// Which advice fits.
    pub fix: Fix,
}

impl Hit {
    pub(crate) fn new(rule: RuleId, op: impl Into<String>, need: Need, message: String) -> Hit {
        Hit {
            rule,
            op: op.into(),
            message,
            note: None,
            need,
            fix: Fix::Rule,
        }
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> Hit {
        self.note = Some(note.into());
        self
    }

    pub(crate) fn with_fix(mut self, fix: Fix) -> Hit {
        self.fix = fix;
        self
    }
}

/// The advice printed under a finding, by what its reads have in common.
pub(crate) fn help(rule: RuleId, fixes: &[Fix]) -> &'static str {
    if rule != RuleId::HostSync {
        return rule.info().help;
    }
    if fixes.iter().all(|f| *f == Fix::Format) {
        "format lazily: log every N steps (`if step % N == 0`), printing a value accumulated on the device rather than each step's tensor"
    } else if fixes.iter().all(|f| *f == Fix::Element) {
        "copy the tensor to the host once before the loop (`Vec::<T>::try_from`) and index the vector"
    } else if fixes.iter().all(|f| *f == Fix::Bulk) {
        "copy less often: keep what the next step needs on the device, and copy results to the host in one batch after the loop"
    } else {
        rule.info().help
    }
}

/// Strips tch's fallible prefix: `f_double_value` behaves like `double_value`.
pub(crate) fn infallible_name(name: &str) -> &str {
    name.strip_prefix("f_").unwrap_or(name)
}

/// tch's moves whose first argument is where the data goes: `to_device(d)`
/// and `to_device_(d, kind, non_blocking, copy)`, which also converts the
/// kind but moves all the same (and their `f_` variants).
pub(crate) fn is_device_move(name: &str) -> bool {
    matches!(infallible_name(name), "to_device" | "to_device_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        let ids: Vec<&str> = RULES.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "host-sync",
                "host-value-op",
                "data-dependent-shape",
                "syncing-helper",
                "custom-pattern"
            ]
        );
        for rule in RULES {
            assert_eq!(RuleId::parse(rule.id.as_str()), Some(rule.id));
            assert_eq!(rule.id.info().id, rule.id);
        }
        assert_eq!(RuleId::parse("host_sync"), None);
    }

    #[test]
    fn every_rule_is_documented_in_clippys_shape() {
        for rule in RULES {
            for heading in [
                "### What it does",
                "### Why is this bad",
                "### Example",
                "### Use instead",
            ] {
                assert!(rule.doc.contains(heading), "{} lacks {heading}", rule.id);
            }
            let explained = rule.explain();
            assert!(explained.starts_with(&format!("{}: ", rule.id)));
            assert!(!explained.contains("```rust"), "fences are made plain");
        }
    }
}
