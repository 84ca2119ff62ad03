//! The device matrix end to end, on the CPU: the planted faults fail exactly
//! the checks they name, every other trial passes, the report is complete, and
//! its stable parts match the reviewed snapshot.

use std::collections::BTreeSet;
use std::process::Output;

use devcheck_tests::{command, workspace_root};

fn matrix(args: &[&str]) -> Output {
    command("devcheck", "devcheck-matrix")
        .args(args)
        .env_remove("DEVCHECK_REPORT")
        .output()
        .expect("run devcheck-matrix")
}

fn read_report(path: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written"))
        .expect("valid JSON")
}

#[test]
fn planted_faults_fail_exactly_their_checks_and_the_report_is_complete() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let snapshots = workspace_root().join("snapshots/matrix");
    let output = matrix(&[
        "--faults",
        "--device",
        "cpu",
        "--timing-ms",
        "200",
        "--report",
        report_path.to_str().unwrap(),
        "--snapshots",
        snapshots.to_str().unwrap(),
    ]);
    assert_eq!(
        output.status.code(),
        Some(101),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = read_report(&report_path);
    assert_eq!(report["complete"], true);
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 11 * 6, "eleven cases × six checks on cpu");

    let failed: BTreeSet<String> = trials
        .iter()
        .filter(|t| t["outcome"] == "failed")
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: BTreeSet<String> = [
        "fault-placement::placement::cpu",
        "fault-readbacks::readbacks::cpu",
        "fault-tolerance::tolerance::cpu",
        "fault-memory::memory::cpu",
    ]
    .map(String::from)
    .into();
    for crash in ["fault-panic", "fault-error"] {
        for check in [
            "placement",
            "tolerance",
            "readbacks",
            "timing",
            "fallback",
            "memory",
        ] {
            expected.insert(format!("{crash}::{check}::cpu"));
        }
    }
    assert_eq!(failed, expected);
    assert_eq!(report["totals"]["failed"], expected.len());
    assert_eq!(report["totals"]["passed"], 66 - expected.len());
    // An untracked read is visible only to CUDA's sync-debug mode: on the CPU the
    // tracked wrappers are the only evidence, and this fault has none.
    let untracked = trials
        .iter()
        .find(|t| t["name"] == "fault-untracked-sync::readbacks::cpu")
        .unwrap();
    assert_eq!(untracked["outcome"], "passed");
    assert_eq!(
        untracked["metrics"]["sync_debug"],
        "not available on this device"
    );

    for trial in trials {
        let message = trial["message"].as_str().unwrap();
        assert!(
            !message.contains('\n') && message.len() < 400,
            "not one line: {message}"
        );
        assert!(!message.contains("frame #"), "C++ frames in: {message}");
    }

    let stable: Vec<serde_json::Value> = trials
        .iter()
        .map(|t| {
            let measured = matches!(t["check"].as_str(), Some("timing" | "memory" | "tolerance"))
                && t["outcome"] == "passed";
            serde_json::json!({
                "name": t["name"],
                "dtype": t["dtype"],
                "outcome": t["outcome"],
                "message": if measured { serde_json::json!("[measured]") } else { t["message"].clone() },
            })
        })
        .collect();
    insta::with_settings!({snapshot_path => "../../snapshots/matrix", prepend_module_to_snapshot => false}, {
        insta::assert_json_snapshot!("report_cpu_faults", serde_json::json!({
            "schema": report["schema"],
            "complete": report["complete"],
            "totals": report["totals"],
            "environment_keys": report["environment"].as_object().unwrap().keys().collect::<Vec<_>>(),
            "trials": stable,
        }));
    });
}

#[test]
fn unavailable_devices_are_listed_as_ignored_for_nextest() {
    let output = matrix(&["--list", "--format", "terse"]);
    assert!(output.status.success());
    let listed = String::from_utf8(output.stdout).unwrap();
    assert!(
        listed.lines().any(|l| l == "cnn::tolerance::cpu: test"),
        "{listed}"
    );
    assert!(
        listed.lines().any(|l| l == "cnn::tolerance::mps: test"),
        "{listed}"
    );
    assert!(
        !listed.contains("fault-"),
        "faults are listed only with --faults"
    );

    let ignored = matrix(&["--list", "--format", "terse", "--ignored"]);
    let ignored = String::from_utf8(ignored.stdout).unwrap();
    assert!(
        ignored.lines().any(|l| l == "lstm::memory::mps: test"),
        "{ignored}"
    );
    assert!(
        !ignored.lines().any(|l| l.ends_with("::cpu: test")),
        "{ignored}"
    );
}

#[test]
fn ignored_trials_carry_their_reason_into_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let output = matrix(&[
        "cnn::placement::",
        "--report",
        report_path.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = read_report(&report_path);
    let mps = report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["device"] == "mps")
        .unwrap();
    assert_eq!(mps["outcome"], "ignored");
    assert_eq!(mps["message"], "mps: not built into this libtorch");
    let cpu = report["trials"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["device"] == "cpu")
        .unwrap();
    assert_eq!(cpu["outcome"], "passed");
    assert_eq!(cpu["metrics"]["batch_size"], 64);
    assert_eq!(
        cpu["metrics"]["shapes"]["input.images"],
        serde_json::json!([64, 3, 32, 32])
    );
}

#[test]
fn the_batch_multiplier_repeats_every_batch() {
    let dir = tempfile::tempdir().unwrap();
    let report_path = dir.path().join("report.json");
    let output = matrix(&[
        "--device",
        "cpu",
        "--batch-multiplier",
        "3",
        "cnn::placement::cpu",
        "--report",
        report_path.to_str().unwrap(),
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report = read_report(&report_path);
    let trial = &report["trials"][0];
    assert_eq!(trial["metrics"]["batch_size"], 64 * 3);
    assert_eq!(
        trial["metrics"]["shapes"]["input.labels"],
        serde_json::json!([192])
    );
}

#[test]
fn a_relative_snapshot_dir_is_taken_from_the_working_directory() {
    let output = command("devcheck", "devcheck-matrix")
        .args([
            "--device",
            "cpu",
            "--snapshots",
            "snapshots/matrix",
            "classifier::readbacks::cpu",
        ])
        .env("CI", "true")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn bad_options_are_refused_before_anything_runs() {
    let output = matrix(&["--device", "tpu:0"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown device `tpu:0`"), "{stderr}");
}
