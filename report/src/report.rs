//! The matrix report (schema 1): what the harness writes after every trial,
//! and what merge, join and the summary read. Typed where devcheck writes or
//! looks; everything else kept verbatim in `rest`, so that a report of a newer
//! devcheck loses nothing in a merge.
//!
//! A merged report has the same shape, with `machines` instead of
//! `environment` and a `machine` on every trial, so it can be merged again.

use std::collections::BTreeSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::metrics::{CheckMetrics, ReadbacksMetrics, TimingMetrics, ToleranceMetrics};

/// The report layout this crate reads and writes.
pub const SCHEMA: u64 = 1;

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
    /// All checks, in the order the harness runs them and tables show them.
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
    pub const fn name(self) -> &'static str {
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

/// How many of [`CHECKS`] every report's table shows; the later ones (layout,
/// repeatability) show where a report has their trials.
pub const FIRST_CHECKS: usize = 6;

/// The names of the checks, in [`Check::ALL`]'s order, as a report's trials name them.
pub const CHECKS: [&str; 8] = {
    let mut names = [""; 8];
    let mut index = 0;
    while index < names.len() {
        names[index] = Check::ALL[index].name();
        index += 1;
    }
    names
};

/// How a trial ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The check passed.
    Passed,
    /// The check failed, or the trial could not finish.
    Failed,
    /// Not run (device unavailable, or ignored by the caller).
    Ignored,
}

/// What a passed trial does not prove, shown beside its ✓.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Caveat {
    /// Measured, with nothing to compare: tolerance on the CPU, which is the
    /// baseline itself; layout with every input kept as it was.
    MeasuredOnly,
    /// Measured, but the figures spread wider than their median (timing on a busy machine).
    Unstable,
}

impl Caveat {
    /// Every caveat, in the order legends list them.
    pub const ALL: [Caveat; 2] = [Caveat::MeasuredOnly, Caveat::Unstable];

    /// The table's mark for a passed trial with this caveat.
    pub fn mark(self) -> &'static str {
        match self {
            Caveat::MeasuredOnly => "○",
            Caveat::Unstable => "?",
        }
    }

    /// What the mark means, said under a table that shows it.
    pub fn legend(self) -> &'static str {
        match self {
            Caveat::MeasuredOnly => {
                "○ measured, nothing compared: tolerance on the CPU is the baseline itself \
                 (float32 against float64), run on an accelerator (cuda, mps) to compare one; \
                 layout with every input kept as it was (the trial's message says why)"
            }
            Caveat::Unstable => {
                "? measured, but unstable: the step times spread wider than their median (a busy \
                 machine, or a step whose time varies); rerun the timing trials alone \
                 (`--filter ::timing::`) before trusting the figure"
            }
        }
    }
}

/// How a run was cut short (the harness writes `{"by", "in_flight"}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interruption {
    /// What stopped it.
    pub by: String,
    /// Trials running at that moment; they have no record.
    #[serde(default)]
    pub in_flight: Vec<String>,
}

/// A whole report: one machine's run, a nextest fragment, or a merge of several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Layout version.
    pub schema: u64,
    /// False when the run was still going or was interrupted: trials may be missing.
    pub complete: bool,
    /// Set when the run was stopped by a signal before its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<Interruption>,
    /// Every case the run planned, before any filter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cases: Option<Vec<String>>,
    /// Devices a machine could not run, whatever its filter (nextest's one-trial
    /// processes record no ignored trials, so this is how they say so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub devices_not_run: Option<Vec<DeviceNotRun>>,
    /// Where a single run ran; absent in a merged report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<Environment>,
    /// The machines of a merged report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machines: Option<Vec<Machine>>,
    /// Totals over `trials`.
    pub totals: Totals,
    /// Every trial recorded.
    pub trials: Vec<Trial>,
    /// Fields this crate does not read, kept as they were.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// A device a machine could not run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceNotRun {
    /// The device (`cuda:0`, `mps`).
    pub device: String,
    /// Why it could not run there.
    pub reason: String,
}

/// Where a run ran: host, versions, backends, flags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    /// The machine's host name.
    pub host: String,
    /// The commit of the code under test, where known.
    #[serde(default)]
    pub git_commit: Option<String>,
    /// The torch (libtorch) version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torch_version: Option<String>,
    /// `linux`, `macos`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<String>,
    /// `x86_64`, `aarch64`, …
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arch: Option<String>,
    /// Backends, flags and the rest, kept as they were.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// One machine of a merged report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// The host name, suffixed `-2`, `-3` … when one host ran in different environments.
    pub id: String,
    /// The report files that came from it.
    pub sources: Vec<String>,
    /// Where it ran.
    pub environment: Environment,
    /// Fields this crate does not read, kept as they were.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

/// Totals of a report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Trials that passed.
    pub passed: usize,
    /// Trials that failed.
    pub failed: usize,
    /// Trials not run.
    pub ignored: usize,
}

impl Totals {
    /// Counts the outcomes of `trials`.
    pub fn of(trials: &[Trial]) -> Self {
        let mut totals = Self::default();
        for trial in trials {
            totals.count(trial.outcome);
        }
        totals
    }

    /// Counts one more trial that ended so.
    pub fn count(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Passed => self.passed += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Ignored => self.ignored += 1,
        }
    }
}

/// One trial: a case × check × device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// `<case>::<check>::<device>`.
    pub name: String,
    /// The case.
    pub case: String,
    /// The check (`placement`, `tolerance`, …).
    pub check: String,
    /// The device (`cpu`, `cuda:0`, `mps`).
    pub device: String,
    /// How it ended.
    pub outcome: Outcome,
    /// One line: the cause of a failure, the reason for ignoring, or what was measured.
    #[serde(default)]
    pub message: String,
    /// The check's figures.
    #[serde(default)]
    pub metrics: Value,
    /// What a pass does not say: nothing was compared, or the figures are unstable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<Caveat>,
    /// The machine it ran on, in a merged report.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The case's floating dtype (`float32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtype: Option<String>,
    /// Wall time of the trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<f64>,
    /// Anything newer, kept as it was.
    #[serde(flatten)]
    pub rest: Map<String, Value>,
}

impl Trial {
    /// The trial's figures as its check writes them; `None` for another check's
    /// trial, or one that ended before it measured anything.
    pub fn metrics_of<M: CheckMetrics>(&self) -> Option<M> {
        if self.check != M::CHECK.name() {
            return None;
        }
        serde_json::from_value(self.metrics.clone()).ok()
    }

    /// The worst difference to the reference over all steps (tolerance trials).
    pub fn worst_difference(&self) -> Option<f64> {
        self.metrics_of::<ToleranceMetrics>()?
            .drift_per_step
            .into_iter()
            .filter(|drift| !drift.is_nan())
            .reduce(f64::max)
    }

    /// The most host reads in one step (readbacks trials).
    pub fn max_readbacks_per_step(&self) -> Option<u64> {
        let most = self
            .metrics_of::<ReadbacksMetrics>()?
            .readbacks_per_step
            .into_iter()
            .max()?;
        Some(most as u64)
    }

    /// The honest (synchronized) median step time (timing trials).
    pub fn honest_median_ms(&self) -> Option<f64> {
        let median = self.metrics_of::<TimingMetrics>()?.honest.median_ms;
        (!median.is_nan()).then_some(median)
    }
}

impl Report {
    /// An empty, incomplete report of one run in `environment`, as the harness
    /// starts one before its first trial.
    pub fn new(environment: Environment) -> Self {
        Self {
            schema: SCHEMA,
            complete: false,
            interrupted: None,
            cases: Some(Vec::new()),
            devices_not_run: Some(Vec::new()),
            environment: Some(environment),
            machines: None,
            totals: Totals::default(),
            trials: Vec::new(),
            rest: Map::new(),
        }
    }

    /// Adds a trial and counts it in the totals.
    pub fn push(&mut self, trial: Trial) {
        self.totals.count(trial.outcome);
        self.trials.push(trial);
    }

    /// Writes the report to `path` as pretty JSON, atomically: a reader sees
    /// the old file or the new one, never half of one.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec_pretty(self)?;
        bytes.push(b'\n');
        crate::files::write_atomically(path, &bytes)
    }

    /// The cases this report is about: `cases` where the run recorded them, else
    /// those its trials name.
    pub fn case_set(&self) -> BTreeSet<String> {
        match &self.cases {
            Some(cases) => cases.iter().cloned().collect(),
            None => self.trials.iter().map(|t| t.case.clone()).collect(),
        }
    }

    /// The machines and their trials' machine ids: a merged report's own, or
    /// one named for the host of a single run.
    pub fn machine_list(&self) -> Vec<Machine> {
        if let Some(machines) = &self.machines {
            return machines.clone();
        }
        self.environment
            .iter()
            .map(|environment| Machine {
                id: environment.host.clone(),
                sources: Vec::new(),
                environment: environment.clone(),
                rest: Map::new(),
            })
            .collect()
    }

    /// The machine id a trial belongs to.
    pub fn machine_of<'a>(&'a self, trial: &'a Trial) -> &'a str {
        match (&trial.machine, &self.environment) {
            (Some(machine), _) => machine,
            (None, Some(environment)) => &environment.host,
            (None, None) => "unknown",
        }
    }
}

/// Why a report could not be read.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read report {}: {source}", path.display())]
    Read {
        /// The report.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// Not JSON, or not a report's JSON.
    #[error("{}:{line}:{column}: not a devcheck report: {message}", path.display())]
    Json {
        /// The report.
        path: PathBuf,
        /// Where the parser stopped.
        line: usize,
        /// Where the parser stopped.
        column: usize,
        /// What it expected.
        message: String,
    },
    /// A report of another layout.
    #[error("{}: report schema is {found}, this devcheck reads schema {SCHEMA}: {hint}", path.display())]
    Schema {
        /// The report.
        path: PathBuf,
        /// The `schema` value found, or `missing`.
        found: String,
        /// What to do.
        hint: &'static str,
    },
}

/// Reads and checks one report.
pub fn load(path: &Path) -> Result<Report, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(path, &text)
}

/// Parses one report's text; `path` names it in errors.
pub fn parse(path: &Path, text: &str) -> Result<Report, LoadError> {
    let json_error = |error: serde_json::Error| LoadError::Json {
        path: path.to_owned(),
        line: error.line(),
        column: error.column(),
        message: strip_position(&error.to_string()),
    };
    // The schema first, so a report of another layout is named as such rather
    // than as a missing field.
    #[derive(Deserialize)]
    struct Probe {
        schema: Option<Value>,
    }
    let probe: Probe = serde_json::from_str(text).map_err(json_error)?;
    match probe.schema {
        Some(Value::Number(n)) if n.as_u64() == Some(SCHEMA) => {}
        found => {
            let (found, hint) = match found {
                None => ("missing".to_owned(), "is this a devcheck matrix report?"),
                Some(value) => (
                    value.to_string(),
                    "merge it with the devcheck that wrote it",
                ),
            };
            return Err(LoadError::Schema {
                path: path.to_owned(),
                found,
                hint,
            });
        }
    }
    serde_json::from_str(text).map_err(json_error)
}

/// serde_json appends " at line L column C", which the error already says in front.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_owned(),
        None => message.to_owned(),
    }
}

/// Reports for unit tests: one machine's, as a matrix run writes them.
#[cfg(test)]
pub(crate) mod fixtures {
    use super::*;

    /// A Linux x86_64 machine with torch 2.11.0; `rest` holds anything else.
    pub fn linux(host: &str, commit: Option<&str>, rest: Map<String, Value>) -> Environment {
        Environment {
            host: host.into(),
            git_commit: commit.map(Into::into),
            torch_version: Some("2.11.0".into()),
            os: Some("linux".into()),
            arch: Some("x86_64".into()),
            rest,
        }
    }

    /// A complete report of `trials` from one machine.
    pub fn one_machine(environment: Environment, trials: Vec<Trial>) -> Report {
        Report {
            schema: SCHEMA,
            complete: true,
            interrupted: None,
            cases: None,
            devices_not_run: None,
            environment: Some(environment),
            machines: None,
            totals: Totals::of(&trials),
            trials,
            rest: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINIMAL: &str = r#"{
        "schema": 1, "complete": true,
        "environment": {"host": "box", "git_commit": null, "backends": {"cpu": {"built": true}}},
        "totals": {"passed": 1, "failed": 0, "ignored": 0},
        "trials": [{"name": "c::tolerance::cpu", "case": "c", "check": "tolerance",
                    "device": "cpu", "dtype": "float32", "outcome": "passed", "message": "ok",
                    "metrics": {"drift_per_step": [1e-7, 3e-7, 2e-7]}, "duration_ms": 1.5}],
        "future": {"kept": true}
    }"#;

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let report = parse(Path::new("r.json"), MINIMAL).unwrap();
        let back: Value = serde_json::to_value(&report).unwrap();
        assert_eq!(back["future"]["kept"], true);
        assert_eq!(back["environment"]["backends"]["cpu"]["built"], true);
        assert_eq!(back["trials"][0]["dtype"], "float32");
        assert_eq!(back["trials"][0]["duration_ms"], 1.5);
        assert!(back["trials"][0].get("machine").is_none());
    }

    #[test]
    fn worst_difference_is_the_largest_drift() {
        let report = parse(Path::new("r.json"), MINIMAL).unwrap();
        assert_eq!(report.trials[0].worst_difference(), Some(3e-7));
        assert_eq!(report.trials[0].max_readbacks_per_step(), None);
    }

    #[test]
    fn invalid_json_names_file_line_and_column() {
        let error = parse(Path::new("r.json"), "{\n  \"schema\": 1,\n  oops\n}").unwrap_err();
        assert_eq!(
            error.to_string(),
            "r.json:3:3: not a devcheck report: key must be a string"
        );
    }

    #[test]
    fn other_schema_is_named() {
        let error = parse(Path::new("r.json"), r#"{"schema": 2}"#).unwrap_err();
        assert_eq!(
            error.to_string(),
            "r.json: report schema is 2, this devcheck reads schema 1: \
             merge it with the devcheck that wrote it"
        );
        let error = parse(Path::new("r.json"), r#"{"complete": true}"#).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("r.json: report schema is missing"),
            "{error}"
        );
    }

    #[test]
    fn missing_field_is_named() {
        let error = parse(Path::new("r.json"), r#"{"schema": 1, "complete": true}"#).unwrap_err();
        assert!(
            error.to_string().contains("missing field `totals`"),
            "{error}"
        );
    }
}
