//! The matrix report: environment plus one record per trial, written as JSON
//! atomically after every trial (so an interrupted run leaves a valid, partial
//! report), and the compact device × check table for the terminal.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checks::Check;
use crate::environment::Environment;

/// Version of the report's JSON layout.
pub const SCHEMA: u32 = 1;

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

/// One trial: a case × check × device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// `<case>::<check>::<device>`.
    pub name: String,
    /// The case.
    pub case: String,
    /// The check.
    pub check: Check,
    /// The device (`cpu`, `cuda:0`, `mps`).
    pub device: String,
    /// The case's floating dtype (`float32`).
    pub dtype: String,
    /// How it ended.
    pub outcome: Outcome,
    /// One line: the cause of a failure, the reason for ignoring, or what was measured.
    pub message: String,
    /// The check's figures.
    pub metrics: serde_json::Value,
    /// Wall time of the trial.
    pub duration_ms: f64,
    /// What a pass does not prove (nothing compared; unstable figures).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caveat: Option<crate::checks::Caveat>,
}

/// Where and on what the matrix ran.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEnvironment {
    /// Backends, versions, host, flags, as doctor reports them.
    #[serde(flatten)]
    pub libtorch: Environment,
    /// The torch (libtorch) version, as practitioners name it.
    pub torch_version: String,
    /// The commit of the code under test, where known.
    pub git_commit: Option<String>,
    /// The machine's host name.
    pub host: String,
}

/// Totals of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    /// Trials that passed.
    pub passed: usize,
    /// Trials that failed.
    pub failed: usize,
    /// Trials not run.
    pub ignored: usize,
}

/// A device this machine has (or names) but cannot run, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceNotRun {
    /// The device (`cuda:0`, `mps`).
    pub device: String,
    /// Why it cannot run here.
    pub reason: String,
}

/// How a run was cut short.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interruption {
    /// What stopped it (`a termination signal (SIGINT, SIGTERM or SIGHUP)`).
    pub by: String,
    /// Trials running at that moment: they have no record.
    pub in_flight: Vec<String>,
}

/// The whole report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Layout version.
    pub schema: u32,
    /// False while the run is still going or was interrupted: trials may be missing.
    pub complete: bool,
    /// Set when the run was interrupted: the report holds the trials that ended before.
    #[serde(default)]
    pub interrupted: Option<Interruption>,
    /// Every case the run planned (before filters), so that reports of
    /// partitions and machines can be checked to be of the same cases.
    #[serde(default)]
    pub cases: Vec<String>,
    /// Devices this machine could not run, whatever the filter.
    #[serde(default)]
    pub devices_not_run: Vec<DeviceNotRun>,
    /// Where it ran.
    pub environment: RunEnvironment,
    /// Totals over `trials`.
    pub totals: Totals,
    /// Every trial recorded so far, in run order.
    pub trials: Vec<TrialRecord>,
}

impl Report {
    /// An empty, incomplete report.
    pub fn new(environment: RunEnvironment) -> Self {
        Self {
            schema: SCHEMA,
            complete: false,
            interrupted: None,
            cases: Vec::new(),
            devices_not_run: Vec::new(),
            environment,
            totals: Totals::default(),
            trials: Vec::new(),
        }
    }

    /// Adds a trial and updates the totals.
    pub fn push(&mut self, record: TrialRecord) {
        match record.outcome {
            Outcome::Passed => self.totals.passed += 1,
            Outcome::Failed => self.totals.failed += 1,
            Outcome::Ignored => self.totals.ignored += 1,
        }
        self.trials.push(record);
    }

    /// Writes the report to `path` atomically: a reader sees the old file or the new one.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let mut text = serde_json::to_vec_pretty(self)?;
        text.push(b'\n');
        crate::files::write_atomically(path, &text)
    }

    /// The compact device × check table (devcheck-report's, as every report
    /// is shown): ✓ passed, ✗ failed, ○ measured only, – not run.
    pub fn table(&self) -> String {
        let shown = serde_json::to_value(self)
            .and_then(serde_json::from_value::<devcheck_report::report::Report>);
        match shown {
            Ok(report) => devcheck_report::device_matrix::DeviceMatrix::new(&report).table(),
            Err(error) => format!("(no table: {error})\n"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(case: &str, check: Check, device: &str, outcome: Outcome) -> TrialRecord {
        TrialRecord {
            name: format!("{case}::{check}::{device}"),
            case: case.into(),
            check,
            device: device.into(),
            dtype: "float32".into(),
            outcome,
            message: if outcome == Outcome::Ignored {
                "mps: not built into this libtorch".into()
            } else {
                String::new()
            },
            metrics: serde_json::Value::Null,
            duration_ms: 1.0,
            caveat: None,
        }
    }

    fn report() -> Report {
        let env = Environment::collect().unwrap();
        let mut report = Report::new(RunEnvironment {
            torch_version: env.libtorch_version.clone(),
            libtorch: env,
            git_commit: None,
            host: "test".into(),
        });
        report.push(record("cnn", Check::Placement, "cpu", Outcome::Passed));
        report.push(record("cnn", Check::Tolerance, "cpu", Outcome::Failed));
        report.push(record("cnn", Check::Placement, "mps", Outcome::Ignored));
        report
    }

    #[test]
    fn table_marks_each_check_and_names_devices_not_run() {
        let table = report().table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "case  device  placement  tolerance  readbacks  timing  fallback  memory"
        );
        assert_eq!(
            lines[1],
            "cnn   cpu     ✓          ✗          –          –       –         –"
        );
        assert_eq!(lines[2], "mps not run: mps: not built into this libtorch");
        assert_eq!(lines[3], "1 passed, 1 failed, 1 not run");
    }

    #[test]
    fn writes_valid_json_atomically_and_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/report.json");
        let report = report();
        report.write(&path).unwrap();
        let back: Report = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(
            back.totals,
            Totals {
                passed: 1,
                failed: 1,
                ignored: 1
            }
        );
        assert!(!back.complete);
        let raw: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert!(raw["environment"]["backends"]["cpu"]["available"]
            .as_bool()
            .unwrap());
        assert_eq!(raw["trials"][1]["outcome"], "failed");
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1,
            "no temp files left"
        );
    }
}
