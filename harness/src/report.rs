//! The matrix report as a run records it: devcheck-report's [`Report`], the one
//! report model that merge, join and the summary read too, started from this
//! process's environment, written atomically after every trial (so an
//! interrupted run leaves a valid, partial report) and shown as
//! devcheck-report's device × check table.

use devcheck_report::device_matrix::DeviceMatrix;
use devcheck_report::report::{self as recorded, Report};
use serde_json::{Map, Value};

use crate::environment::Environment;

/// An empty, incomplete report of a run in `environment` on `host`, testing
/// the code at `git_commit`.
pub fn start(environment: Environment, git_commit: Option<String>, host: String) -> Report {
    let torch_version = environment.libtorch_version.clone();
    let (os, arch) = (environment.os.clone(), environment.arch.clone());
    // Backends, versions and flags as doctor reports them; os and arch are typed.
    let mut rest = match serde_json::to_value(environment) {
        Ok(Value::Object(fields)) => fields,
        _ => Map::new(),
    };
    rest.retain(|name, _| name != "os" && name != "arch");
    Report::new(recorded::Environment {
        host,
        git_commit,
        torch_version: Some(torch_version),
        os: Some(os),
        arch: Some(arch),
        rest,
    })
}

/// The compact device × check table (devcheck-report's, as every report
/// is shown): ✓ passed, ✗ failed, ○ measured only, – not run.
pub fn table(report: &Report) -> String {
    DeviceMatrix::new(report).table()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::Check;
    use devcheck_report::report::{Outcome, Totals, Trial};

    fn record(case: &str, check: Check, device: &str, outcome: Outcome) -> Trial {
        Trial {
            name: format!("{case}::{check}::{device}"),
            case: case.into(),
            check: check.name().into(),
            device: device.into(),
            outcome,
            message: if outcome == Outcome::Ignored {
                "mps: not built into this libtorch".into()
            } else {
                String::new()
            },
            metrics: Value::Null,
            caveat: None,
            machine: None,
            dtype: Some("float32".into()),
            duration_ms: Some(1.0),
            rest: Map::new(),
        }
    }

    fn report() -> Report {
        let mut report = start(Environment::collect().unwrap(), None, "test".into());
        report.push(record("cnn", Check::Placement, "cpu", Outcome::Passed));
        report.push(record("cnn", Check::Tolerance, "cpu", Outcome::Failed));
        report.push(record("cnn", Check::Placement, "mps", Outcome::Ignored));
        report
    }

    #[test]
    fn table_marks_each_check_and_names_devices_not_run() {
        let table = table(&report());
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

    #[test]
    fn the_environment_keeps_every_field_doctor_reports() {
        let environment = Environment::collect().unwrap();
        let doctor = serde_json::to_value(&environment).unwrap();
        let written = serde_json::to_value(start(environment, None, "test".into())).unwrap();
        for (name, value) in doctor.as_object().unwrap() {
            assert_eq!(&written["environment"][name], value, "{name}");
        }
        assert_eq!(written["environment"]["host"], "test");
        assert_eq!(written["environment"]["git_commit"], Value::Null);
        assert_eq!(
            written["environment"]["torch_version"],
            doctor["libtorch_version"]
        );
    }
}
