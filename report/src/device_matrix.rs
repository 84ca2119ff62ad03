//! The device × check matrix of a report, single or merged: what the terminal
//! table and the Markdown summary both show.
//!
//! Devices are labelled so that each cell holds one trial: a device that ran on
//! one machine keeps its name (its ignored trials on other machines drop out),
//! and a device whose trials ran on more than one machine (the CPU of a Mac and
//! of a Linux box) is split into `cpu@<machine>` rows.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;

use crate::report::{Caveat, Machine, Outcome, Report, Trial, CHECKS, FIRST_CHECKS};

/// The matrix of one report.
#[derive(Debug)]
pub struct DeviceMatrix<'a> {
    /// The table's columns: the first six checks, and later ones the report has trials of.
    pub checks: Vec<&'static str>,
    /// One row per case × device label, cases in run order.
    pub rows: Vec<Row<'a>>,
    /// Devices no machine ran, with the first reason given.
    pub not_run: Vec<NotRun>,
    /// Trials that failed, in report order, with their device label.
    pub failures: Vec<(String, &'a Trial)>,
    /// The machines, as the report names them.
    pub machines: Vec<Machine>,
    /// Cases the run planned that have no trial at all.
    pub cases_without_trials: Vec<String>,
    /// Trials that passed.
    pub passed: usize,
    /// Trials that failed.
    pub failed: usize,
    /// Case × check × device combinations no machine ran.
    pub not_run_count: usize,
}

/// Each of a table's checks with its trial, if it ran.
type Cells<'a> = Vec<(&'static str, Option<&'a Trial>)>;

/// One row: a case on one device label.
#[derive(Debug)]
pub struct Row<'a> {
    /// The case.
    pub case: String,
    /// `cpu`, `cuda:0`, or `cpu@mac` when several machines ran the CPU.
    pub device: String,
    /// Each of the table's checks with its trial; `None` where it did not run.
    pub cells: Cells<'a>,
}

impl Row<'_> {
    /// The trial of one check.
    pub fn trial(&self, check: &str) -> Option<&Trial> {
        self.cells.iter().find(|(c, _)| *c == check)?.1
    }
}

/// A device that ran nowhere.
#[derive(Debug, PartialEq, Eq)]
pub struct NotRun {
    /// The device.
    pub device: String,
    /// Why (the first ignored trial's message).
    pub reason: String,
}

impl<'a> DeviceMatrix<'a> {
    /// The matrix of `report`.
    pub fn new(report: &'a Report) -> Self {
        let ran = |t: &&Trial| t.outcome != Outcome::Ignored;
        // Which machines ran each case × check × device; a device any of whose
        // combinations ran on two machines is split by machine.
        let mut runners: HashMap<(&str, &str, &str), BTreeSet<&str>> = HashMap::new();
        for trial in report.trials.iter().filter(ran) {
            runners
                .entry((&trial.case, &trial.check, &trial.device))
                .or_default()
                .insert(report.machine_of(trial));
        }
        let split: BTreeSet<&str> = runners
            .iter()
            .filter(|(_, machines)| machines.len() > 1)
            .map(|((_, _, device), _)| *device)
            .collect();
        let label = |trial: &Trial| {
            if split.contains(trial.device.as_str()) {
                format!("{}@{}", trial.device, report.machine_of(trial))
            } else {
                trial.device.clone()
            }
        };

        let mut case_order: Vec<&str> = Vec::new();
        for trial in &report.trials {
            if !case_order.contains(&trial.case.as_str()) {
                case_order.push(&trial.case);
            }
        }
        // Rows of one case: devices in run order, a split device's machines in
        // the report's machine order.
        let machines = report.machine_list();
        let mut device_order: Vec<&str> = Vec::new();
        for trial in report.trials.iter().filter(ran) {
            if !device_order.contains(&trial.device.as_str()) {
                device_order.push(&trial.device);
            }
        }
        let label_rank = |trial: &Trial| {
            let device = device_order.iter().position(|d| *d == trial.device);
            let machine = machines
                .iter()
                .position(|m| m.id == report.machine_of(trial));
            (device, machine)
        };
        let mut labels: BTreeMap<(Option<usize>, Option<usize>), String> = BTreeMap::new();
        for trial in report.trials.iter().filter(ran) {
            labels
                .entry(label_rank(trial))
                .or_insert_with(|| label(trial));
        }
        let label_order: Vec<String> = labels.into_values().collect();

        // A check added since the first six shows a column only in a report
        // that has its trials, so a report written before it renders as it did.
        let checks: Vec<&'static str> = CHECKS
            .into_iter()
            .enumerate()
            .filter(|(i, check)| {
                *i < FIRST_CHECKS || report.trials.iter().any(|t| t.check == *check)
            })
            .map(|(_, check)| check)
            .collect();
        let mut cells: BTreeMap<(usize, usize), Cells> = BTreeMap::new();
        let mut failures = Vec::new();
        let (mut passed, mut failed) = (0, 0);
        for trial in report.trials.iter().filter(ran) {
            let device = label(trial);
            let label_index = label_order
                .iter()
                .position(|l| *l == device)
                .expect("every label was collected");
            let case_index = case_order
                .iter()
                .position(|c| *c == trial.case)
                .expect("every case was collected");
            let row = cells
                .entry((case_index, label_index))
                .or_insert_with(|| checks.iter().map(|c| (*c, None)).collect());
            if let Some(cell) = row.iter_mut().find(|(c, _)| *c == trial.check) {
                cell.1 = Some(trial);
            }
            match trial.outcome {
                Outcome::Failed => {
                    failed += 1;
                    failures.push((device, trial));
                }
                _ => passed += 1,
            }
        }
        let rows = cells
            .into_iter()
            .map(|((case, device), cells)| Row {
                case: case_order[case].to_owned(),
                device: label_order[device].clone(),
                cells,
            })
            .collect();

        let mut not_run: Vec<NotRun> = Vec::new();
        let mut not_run_keys = BTreeSet::new();
        let devices_that_ran: BTreeSet<&str> = runners.keys().map(|(_, _, d)| *d).collect();
        for trial in &report.trials {
            let key = (
                trial.case.as_str(),
                trial.check.as_str(),
                trial.device.as_str(),
            );
            if trial.outcome != Outcome::Ignored || runners.contains_key(&key) {
                continue;
            }
            not_run_keys.insert(key);
            if !devices_that_ran.contains(trial.device.as_str())
                && !not_run.iter().any(|n| n.device == trial.device)
            {
                not_run.push(NotRun {
                    device: trial.device.clone(),
                    reason: trial.message.clone(),
                });
            }
        }
        // Devices a machine recorded as not runnable, where its trials of them
        // were filtered out (nextest runs one trial per process).
        let mut not_run_count = not_run_keys.len();
        for entry in report.devices_not_run.iter().flatten() {
            if devices_that_ran.contains(entry.device.as_str())
                || not_run.iter().any(|n| n.device == entry.device)
            {
                continue;
            }
            not_run.push(NotRun {
                device: entry.device.clone(),
                reason: entry.reason.clone(),
            });
            not_run_count += report.cases.iter().flatten().count() * checks.len();
        }
        let cases_without_trials = report
            .cases
            .iter()
            .flatten()
            .filter(|case| !case_order.contains(&case.as_str()))
            .cloned()
            .collect();
        Self {
            checks,
            rows,
            not_run,
            failures,
            machines,
            cases_without_trials,
            passed,
            failed,
            not_run_count,
        }
    }

    /// The caveats the table shows a mark for, in legend order.
    pub fn caveats_shown(&self) -> Vec<Caveat> {
        Caveat::ALL
            .into_iter()
            .filter(|caveat| {
                self.rows
                    .iter()
                    .flat_map(|r| &r.cells)
                    .any(|(_, cell)| mark(*cell) == caveat.mark())
            })
            .collect()
    }

    /// The compact terminal table: ✓ passed, ✗ failed, ○ measured only, – not run.
    pub fn table(&self) -> String {
        let case_width = self
            .rows
            .iter()
            .map(|r| r.case.chars().count())
            .max()
            .unwrap_or(4)
            .max(4);
        let device_width = self
            .rows
            .iter()
            .map(|r| r.device.chars().count())
            .max()
            .unwrap_or(6)
            .max(6);
        let mut out = String::new();
        let _ = write!(out, "{:case_width$}  {:device_width$}", "case", "device");
        for check in &self.checks {
            let _ = write!(out, "  {check}");
        }
        out.push('\n');
        for row in &self.rows {
            let _ = write!(
                out,
                "{:case_width$}  {:device_width$}",
                row.case, row.device
            );
            for (check, cell) in &row.cells {
                let _ = write!(out, "  {:<width$}", mark(*cell), width = check.len());
            }
            out.truncate(out.trim_end().len());
            out.push('\n');
        }
        for caveat in self.caveats_shown() {
            let _ = writeln!(out, "{}", caveat.legend());
        }
        for NotRun { device, reason } in &self.not_run {
            let _ = writeln!(out, "{device} not run: {reason}");
        }
        if self.machines.len() > 1 {
            for machine in &self.machines {
                let _ = writeln!(
                    out,
                    "machine {}: {} ({})",
                    machine.id,
                    describe(machine),
                    machine.sources.join(", ")
                );
            }
        }
        let _ = writeln!(
            out,
            "{} passed, {} failed, {} not run",
            self.passed, self.failed, self.not_run_count
        );
        out
    }
}

/// ✓, ✗, a caveat's mark (○, ?) or –.
pub fn mark(cell: Option<&Trial>) -> &'static str {
    match cell.map(|t| (t.outcome, t.caveat)) {
        Some((Outcome::Passed, None)) => "✓",
        Some((Outcome::Passed, Some(caveat))) => caveat.mark(),
        Some((Outcome::Failed, _)) => "✗",
        _ => "–",
    }
}

/// `linux/x86_64, torch 2.11.0, commit 00ee538`.
pub fn describe(machine: &Machine) -> String {
    let environment = &machine.environment;
    let mut parts = Vec::new();
    match (&environment.os, &environment.arch) {
        (Some(os), Some(arch)) => parts.push(format!("{os}/{arch}")),
        (Some(one), None) | (None, Some(one)) => parts.push(one.clone()),
        (None, None) => {}
    }
    if let Some(torch) = &environment.torch_version {
        parts.push(format!("torch {torch}"));
    }
    parts.push(match &environment.git_commit {
        Some(commit) => format!("commit {}", commit.get(..7).unwrap_or(commit)),
        None => "commit unknown".to_owned(),
    });
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merge::{merge, Input};
    use crate::report::fixtures::{linux, one_machine};
    use serde_json::{json, Map};

    fn trial(case: &str, check: &str, device: &str, outcome: Outcome, message: &str) -> Trial {
        Trial {
            name: format!("{case}::{check}::{device}"),
            case: case.into(),
            check: check.into(),
            device: device.into(),
            outcome,
            message: message.into(),
            metrics: json!({}),
            caveat: None,
            machine: None,
            dtype: None,
            duration_ms: None,
            rest: Map::new(),
        }
    }

    fn single(host: &str, trials: Vec<Trial>) -> Report {
        one_machine(linux(host, Some("0123456789abcdef"), Map::new()), trials)
    }

    #[test]
    fn the_later_checks_show_only_where_a_report_has_them() {
        let with_layout = single(
            "box",
            vec![
                trial("cnn", "placement", "cpu", Outcome::Passed, ""),
                trial("cnn", "layout", "cpu", Outcome::Failed, "strides"),
            ],
        );
        let matrix = DeviceMatrix::new(&with_layout);
        assert_eq!(
            matrix.checks,
            [
                "placement",
                "tolerance",
                "readbacks",
                "timing",
                "fallback",
                "memory",
                "layout"
            ]
        );
        assert_eq!(
            matrix.table().lines().nth(1).unwrap(),
            "cnn   cpu     ✓          –          –          –       –         –       ✗"
        );
    }

    #[test]
    fn table_has_the_harness_look() {
        let report = single(
            "box",
            vec![
                trial("cnn", "placement", "cpu", Outcome::Passed, ""),
                trial("cnn", "tolerance", "cpu", Outcome::Failed, "drift"),
                trial(
                    "cnn",
                    "placement",
                    "mps",
                    Outcome::Ignored,
                    "mps: not built into this libtorch",
                ),
            ],
        );
        let table = DeviceMatrix::new(&report).table();
        assert_eq!(
            table,
            "case  device  placement  tolerance  readbacks  timing  fallback  memory\n\
             cnn   cpu     ✓          ✗          –          –       –         –\n\
             mps not run: mps: not built into this libtorch\n\
             1 passed, 1 failed, 1 not run\n"
        );
    }

    #[test]
    fn a_trial_that_compared_nothing_is_marked_and_explained() {
        let mut measured = trial("cnn", "tolerance", "cpu", Outcome::Passed, "baseline");
        measured.caveat = Some(Caveat::MeasuredOnly);
        let report = single(
            "box",
            vec![
                trial("cnn", "placement", "cpu", Outcome::Passed, ""),
                measured,
            ],
        );
        let table = DeviceMatrix::new(&report).table();
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[1],
            "cnn   cpu     ✓          ○          –          –       –         –"
        );
        assert_eq!(lines[2], Caveat::MeasuredOnly.legend());
        assert_eq!(lines[3], "2 passed, 0 failed, 0 not run");
        let summary = crate::summary::render(crate::summary::SummaryFormat::Markdown, &report);
        assert!(summary.contains("| cnn | cpu | ✓ | ○ |"), "{summary}");
        assert!(summary.contains(Caveat::MeasuredOnly.legend()), "{summary}");
    }

    #[test]
    fn a_device_run_on_one_machine_hides_its_ignored_trials_elsewhere() {
        let cpu_box = single(
            "cpu-box",
            vec![
                trial("cnn", "timing", "cpu", Outcome::Passed, ""),
                trial("cnn", "timing", "cuda:0", Outcome::Ignored, "cuda: no GPU"),
            ],
        );
        let gpu_box = single(
            "gpu-box",
            vec![trial("cnn", "timing", "cuda:0", Outcome::Passed, "")],
        );
        let merged = merge(&[
            Input {
                name: "a.json".into(),
                report: cpu_box,
            },
            Input {
                name: "b.json".into(),
                report: gpu_box,
            },
        ])
        .unwrap()
        .report;
        let matrix = DeviceMatrix::new(&merged);
        let devices: Vec<&str> = matrix.rows.iter().map(|r| r.device.as_str()).collect();
        assert_eq!(devices, ["cpu", "cuda:0"]);
        assert!(matrix.not_run.is_empty());
        assert_eq!(matrix.not_run_count, 0);
        assert_eq!(matrix.passed, 2);
    }

    #[test]
    fn a_device_run_on_two_machines_is_split_by_machine() {
        let linux = single(
            "linux",
            vec![trial("cnn", "timing", "cpu", Outcome::Passed, "")],
        );
        let mac = single(
            "mac",
            vec![
                trial("cnn", "timing", "cpu", Outcome::Failed, "slow"),
                trial("cnn", "timing", "mps", Outcome::Passed, ""),
            ],
        );
        let merged = merge(&[
            Input {
                name: "a.json".into(),
                report: linux,
            },
            Input {
                name: "b.json".into(),
                report: mac,
            },
        ])
        .unwrap()
        .report;
        let matrix = DeviceMatrix::new(&merged);
        let devices: Vec<&str> = matrix.rows.iter().map(|r| r.device.as_str()).collect();
        assert_eq!(devices, ["cpu@linux", "cpu@mac", "mps"]);
        assert_eq!(matrix.failures.len(), 1);
        assert_eq!(matrix.failures[0].0, "cpu@mac");
        assert!(matrix
            .table()
            .contains("machine mac: linux/x86_64, torch 2.11.0, commit 0123456 (b.json)\n"));
    }
}
