//! devcheck-lint finds host syncs inside the hot loops of training code
//! written with tch (PyTorch's Rust bindings): scalar reads such as
//! `double_value`, copies to the host, printing tensors, ops that return host
//! values or data-dependent shapes, and tch helpers that read back
//! internally. Each of these makes the host wait for the device queue to
//! drain; once per epoch that is harmless, once per step it serialises the
//! GPU. The lint works on syntax alone (syn), so it never links tch or
//! libtorch: a cheap byte-level prefilter picks the files that can matter,
//! they are parsed in parallel, and a crate-level pass follows calls into
//! crate-local functions that sync, so the report lands on the call in the
//! loop.
//!
//! The library finds ([`lint_paths`], [`lint_sources`], configured by
//! [`Config`]) and [`render`] prints; [`rules`] is the registry behind
//! `--list-rules` and `--explain`, and [`exit`] names the exit codes. The
//! binary, [`cli::main`], is thin glue over them.

mod analysis;
pub mod cli;
mod compiled_out;
pub mod config;
mod engine;
pub mod exit;
mod findings;
mod prefilter;
pub mod render;
pub mod rules;
mod suppress;
#[doc(hidden)] // The real-code benchmark's scoring, for `benches/real.rs` only.
pub mod verdicts;
#[doc(hidden)] // For `benches/registry.rs` to time a bare parse of the files `lint_paths` reads.
pub mod walk;
mod workspace;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use serde::Serialize;

pub use config::{Config, ConfigError, Level};
#[doc(hidden)] // For `benches/registry.rs` to parse on the stack the lint's workers have.
pub use engine::WORKER_STACK_SIZE;
pub use engine::{lint_paths, lint_sources};
pub use rules::{RuleId, RuleInfo};

/// How loudly a finding is reported; `error` and `warning` fail the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Informational: a sync that runs rarely (once per epoch, every N steps).
    Note,
    /// A sync in a hot loop.
    Warning,
    /// A sync in a hot loop for a rule the configuration denies.
    Error,
}

impl Severity {
    /// The word used in human and JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Note => "note",
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One diagnostic: a place in a file where the host waits for the device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable rule id, e.g. `host-sync`.
    pub rule: RuleId,
    /// Severity after the configuration and the loop context are applied.
    pub severity: Severity,
    /// The file, as given on the command line or joined onto a walked directory.
    pub file: PathBuf,
    /// 1-based line of the first character.
    pub line: usize,
    /// 1-based column of the first character, counted in characters.
    pub column: usize,
    /// 1-based line of the last character.
    pub end_line: usize,
    /// 1-based column just past the last character, counted in characters.
    pub end_column: usize,
    /// What happens and where it runs.
    pub message: String,
    /// Context: why the severity is what it is, the call chain, and so on.
    pub notes: Vec<String>,
    /// The rule's standing advice; printed by the human renderer only.
    #[serde(skip)]
    pub help: &'static str,
}

/// A file that could not be read, decoded, parsed or fully analysed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileError {
    /// The file (or path given) that failed.
    pub file: PathBuf,
    /// 1-based line of the problem, where known.
    pub line: Option<usize>,
    /// What went wrong and, where it helps, what to do about it.
    pub message: String,
}

/// Everything one lint run found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Diagnostics, sorted by file, line and column.
    pub findings: Vec<Finding>,
    /// Inputs that could not be linted (fully), sorted by file.
    pub errors: Vec<FileError>,
    /// Files looked at: every `.rs` file found plus every file named directly.
    pub files_scanned: usize,
    /// Files that syn parsed successfully (the prefilter skips the rest).
    pub files_parsed: usize,
    /// Source text of the files that have findings or errors, for rendering.
    #[serde(skip)]
    pub sources: HashMap<PathBuf, Arc<str>>,
}

impl Report {
    /// The process exit code the CLI uses: [`exit::FAILURE`] if any input
    /// failed, [`exit::FINDINGS`] if any warning or error was found,
    /// [`exit::SUCCESS`] otherwise.
    pub fn exit_code(&self) -> u8 {
        if !self.errors.is_empty() {
            exit::FAILURE
        } else if self
            .findings
            .iter()
            .any(|f| f.severity >= Severity::Warning)
        {
            exit::FINDINGS
        } else {
            exit::SUCCESS
        }
    }

    /// How many findings have the given severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.findings
            .iter()
            .filter(|f| f.severity == severity)
            .count()
    }
}
