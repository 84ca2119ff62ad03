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
    assert_eq!(trials.len(), 16 * 8, "sixteen cases × eight checks on cpu");

    let failed: BTreeSet<String> = trials
        .iter()
        .filter(|t| t["outcome"] == "failed")
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let mut expected: BTreeSet<String> = [
        "fault-placement::placement::cpu",
        "fault-readbacks::readbacks::cpu",
        "fault-untracked-sync::readbacks::cpu",
        "fault-tolerance::tolerance::cpu",
        "fault-memory::memory::cpu",
        "fault-layout::layout::cpu",
        "fault-repeatability::repeatability::cpu",
    ]
    .map(String::from)
    .into();
    for crash in [
        "fault-panic",
        "fault-error",
        "fault-unsupported",
        "fault-oom",
        "fault-hang",
    ] {
        for check in [
            "placement",
            "tolerance",
            "readbacks",
            "timing",
            "fallback",
            "memory",
            "layout",
            "repeatability",
        ] {
            expected.insert(format!("{crash}::{check}::cpu"));
        }
    }
    assert_eq!(failed, expected);
    assert_eq!(report["totals"]["failed"], expected.len());
    assert_eq!(report["totals"]["passed"], 128 - expected.len());
    let message = |name: &str| {
        trials
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["message"].as_str())
            .unwrap_or_default()
            .to_owned()
    };
    // Each way a case can die ends as its own one-line cause.
    assert!(
        message("fault-oom::placement::cpu").contains("DefaultCPUAllocator: can't allocate memory"),
        "{}",
        message("fault-oom::placement::cpu")
    );
    assert!(
        message("fault-unsupported::placement::cpu").contains("not implemented for 'Bool'"),
        "{}",
        message("fault-unsupported::placement::cpu")
    );
    assert_eq!(
        message("fault-hang::placement::cpu"),
        "timed out: still running after 3 s, the time limit (a hang?); raise it with \
         `--trial-timeout` or `Case::time_limit`"
    );
    assert_eq!(
        message("fault-hang::memory::cpu"),
        "not run: `fault-hang::placement::cpu` of this case hung, and its thread may still hold the case"
    );
    assert!(report["interrupted"].is_null());
    assert_eq!(report["cases"].as_array().unwrap().len(), 16);
    // A read through no wrapper is seen on the CPU too, at its line: where an
    // accelerator will wait.
    let faults = std::fs::read_to_string(workspace_root().join("harness/src/cases/faults.rs"))
        .expect("read the faults' source");
    let line_of = |text: &str| {
        1 + faults
            .lines()
            .position(|l| l.contains(text))
            .unwrap_or_else(|| panic!("faults.rs has no `{text}`"))
    };
    let unwrapped = line_of("self.last = loss.double_value(&[]);");
    assert!(
        message("fault-untracked-sync::readbacks::cpu").starts_with(&format!(
            "1 host sync per step, budget 0: first at harness/src/cases/faults.rs:{unwrapped}:"
        )),
        "{}",
        message("fault-untracked-sync::readbacks::cpu")
    );
    let per_sample = line_of("readbacks::scalar_f64(&per_sample.f_get(i)?)?;");
    assert!(
        message("fault-readbacks::readbacks::cpu").starts_with(&format!(
            "16 host syncs per step, budget 1: first at harness/src/cases/faults.rs:{per_sample}:"
        )),
        "{}",
        message("fault-readbacks::readbacks::cpu")
    );

    // The nondeterministic step is named as such, with what to do.
    let unrepeatable = message("fault-repeatability::repeatability::cpu");
    assert!(
        unrepeatable.starts_with("not bitwise repeatable on cpu: `")
            && unrepeatable.ends_with(
                "no op libtorch documents as nondeterministic ran: the step's own code differs \
                 (hash-map order, threads, the clock, another generator); \
                 `Case::deterministic()`: make that code repeatable"
            ),
        "{unrepeatable}"
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
            // Two runs of a nondeterministic step differ by a different amount each time.
            let measured = (matches!(
                t["check"].as_str(),
                Some("timing" | "memory" | "tolerance" | "layout")
            ) && t["outcome"] == "passed")
                || t["name"] == "fault-repeatability::repeatability::cpu";
            let message = if measured {
                serde_json::json!("[measured]")
            } else if t["check"] == "layout" {
                serde_json::json!(contiguous_run_masked(t["message"].as_str().unwrap()))
            } else {
                t["message"].clone()
            };
            serde_json::json!({
                "name": t["name"],
                "dtype": t["dtype"],
                "outcome": t["outcome"],
                "message": message,
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

/// A layout trial's message with the contiguous run's error, and the ratio
/// to it, masked: float32 rounding in the contiguous run differs between
/// CPUs (their kernels' vector widths), the planted fault's error does not.
fn contiguous_run_masked(message: &str) -> String {
    const RUN: &str = " the contiguous run's ";
    let Some(at) = message.find(RUN) else {
        return message.to_owned();
    };
    let ratio = message[..at].rfind(' ').map_or(0, |i| i + 1);
    let rest = &message[at + RUN.len()..];
    let error = rest.find(' ').unwrap_or(rest.len());
    format!(
        "{}[ratio]{RUN}[measured]{}",
        &message[..ratio],
        &rest[error..]
    )
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
fn a_device_asked_for_that_cannot_run_stops_the_run_with_exit_code_2() {
    for (args, env) in [
        (vec!["--device", "cuda:0"], None),
        (vec!["--device", "cpu", "--require-device", "mps"], None),
        (vec![], Some(("DEVCHECK_DEVICES", "cpu,cuda:0"))),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let report = dir.path().join("report.json");
        // An earlier run's complete report, which must not pass for this one's.
        std::fs::write(&report, r#"{"schema": 1, "complete": true, "trials": []}"#).unwrap();
        let mut command = command("devcheck", "devcheck-matrix");
        command.args(&args).arg("--report").arg(&report);
        if let Some((key, value)) = env {
            command.env(key, value);
        }
        let output = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?} {env:?}: {stderr}");
        assert!(stderr.contains("was asked for with"), "{stderr}");
        assert!(stderr.contains("devcheck: nothing was run"), "{stderr}");
        assert!(
            !report.exists(),
            "nothing ran, and no earlier report is left"
        );
    }
    // Not asked for, a device this machine lacks is only listed as not run.
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.json");
    let output = matrix(&[
        "--report",
        report.to_str().unwrap(),
        "classifier::placement::",
    ]);
    assert!(output.status.success());
    let report = read_report(&report);
    let not_run: Vec<&str> = report["devices_not_run"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device"].as_str().unwrap())
        .collect();
    assert!(not_run.contains(&"mps"), "{not_run:?}");
}

#[test]
fn bad_options_are_refused_before_anything_runs() {
    let output = matrix(&["--device", "tpu:0"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unknown device `tpu:0`"), "{stderr}");
}

#[test]
fn a_report_path_that_cannot_be_written_is_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "not a directory").unwrap();
    let report = file.join("report.json");
    let output = matrix(&["--report", report.to_str().unwrap(), "cnn::placement::cpu"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: cannot write the report to {}",
            report.display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was run"), "{stderr}");
    assert!(!stderr.contains("test result"), "{stderr}");
}

#[test]
fn a_filter_that_matches_nothing_names_the_cases() {
    let output = matrix(&["clasifier::", "--no-tests", "fail"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("error: no trial matches the filter `clasifier::`"),
        "{stderr}"
    );
    assert!(
        stderr.contains("cases: classifier, cnn, transformer, lstm"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `classifier`?"), "{stderr}");

    let output = matrix(&["fault-oom", "--no-tests", "fail"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`fault-oom` is a planted fault: add `--faults`"),
        "{stderr}"
    );

    // Without `--no-tests fail` (as under `cargo test FILTER`, which hands the
    // filter to every test binary) it is a warning, as libtest would say nothing.
    let output = matrix(&["clasifier::"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("warning: no trial matches"), "{stderr}");
}

#[test]
fn bad_limits_are_refused_before_anything_runs() {
    for (args, message) in [
        (
            ["--timing-ms", "0"],
            "`--timing-ms` takes a whole number of milliseconds greater than 0, got `0`",
        ),
        (
            ["--trial-timeout", "-5"],
            "`--trial-timeout` takes a number of seconds greater than 0, got `-5`",
        ),
        (
            ["--trial-timeout", "NaN"],
            "`--trial-timeout` takes a number of seconds greater than 0, got `NaN`",
        ),
        (
            ["--no-tests", "maybe"],
            "`--no-tests` takes `fail`, `warn` or `pass`, got `maybe`",
        ),
    ] {
        let output = matrix(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
    }
}

#[test]
fn a_report_dir_gets_one_report_per_process() {
    let dir = tempfile::tempdir().unwrap();
    for filter in ["cnn::placement::cpu", "lstm::placement::cpu"] {
        let output = matrix(&[
            "--device",
            "cpu",
            "--exact",
            filter,
            "--report-dir",
            dir.path().to_str().unwrap(),
        ]);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| {
            let report = read_report(&entry.unwrap().path());
            assert_eq!(report["complete"], true);
            assert_eq!(report["cases"].as_array().unwrap().len(), 4);
            assert_eq!(report["trials"].as_array().unwrap().len(), 1);
            report["trials"][0]["name"].as_str().unwrap().to_owned()
        })
        .collect();
    names.sort();
    assert_eq!(names, ["cnn::placement::cpu", "lstm::placement::cpu"]);

    // As after a nextest run: `cargo xtask merge` joins the fragments into one
    // machine's matrix (no libtorch needed for it).
    let mut fragments: Vec<std::path::PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    fragments.sort();
    let merged = dir.path().join("merged/report.json");
    let output = std::process::Command::new(devcheck_tests::binary("xtask", "xtask"))
        .arg("merge")
        .args(&fragments)
        .arg("--out")
        .arg(&merged)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let merged = read_report(&merged);
    assert_eq!(merged["machines"].as_array().unwrap().len(), 1);
    assert_eq!(merged["trials"].as_array().unwrap().len(), 2);
    assert_eq!(merged["totals"]["passed"], 2);
    assert_eq!(merged["complete"], true);
}

/// Starts every case's placement trial on the CPU, faults included, and waits
/// until the hanging fault's trial (the last) is in flight, with the fifteen
/// before it recorded. It hangs for its 3 s limit: time to send a signal.
#[cfg(unix)]
fn start_then_wait_for_the_hang(report: &std::path::Path) -> std::process::Child {
    let mut child = command("devcheck", "devcheck-matrix")
        .args([
            "--faults",
            "--device",
            "cpu",
            "::placement::cpu",
            "--report",
        ])
        .arg(report)
        .env_remove("DEVCHECK_REPORT")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let text = std::fs::read_to_string(report).unwrap_or_default();
        if text.contains("\"fault-oom::placement::cpu\"") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the first trials never finished"
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the matrix ended early: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    child
}

#[cfg(unix)]
fn signal(child: &std::process::Child, name: &str) {
    let status = std::process::Command::new("kill")
        .args([&format!("-{name}"), &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

#[cfg(unix)]
#[test]
fn an_interrupted_run_leaves_a_valid_report_marked_partial() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let mut child = start_then_wait_for_the_hang(&path);
    signal(&child, "INT");
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130));
    let report = read_report(&path);
    assert_eq!(report["complete"], false);
    assert_eq!(
        report["interrupted"]["in_flight"],
        serde_json::json!(["fault-hang::placement::cpu"])
    );
    let trials = report["trials"].as_array().unwrap();
    assert_eq!(trials.len(), 15, "every trial that ended before the signal");
    assert_eq!(trials[14]["name"], "fault-oom::placement::cpu");
    assert_eq!(
        report["totals"]["passed"].as_u64().unwrap() + report["totals"]["failed"].as_u64().unwrap(),
        15
    );

    // The partial report is one `cargo xtask merge` and its summary read as such.
    let output = std::process::Command::new(devcheck_tests::binary("xtask", "xtask"))
        .arg("merge")
        .arg(&path)
        .arg("--out")
        .arg(dir.path().join("merged.json"))
        .args(["--summary", "markdown"])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary = String::from_utf8(output.stdout).unwrap();
    assert!(
        summary
            .lines()
            .next()
            .unwrap()
            .ends_with("(interrupted during `fault-hang::placement::cpu`: trials are missing)"),
        "{summary}"
    );
}

#[cfg(unix)]
#[test]
fn a_killed_run_still_leaves_valid_json() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.json");
    let mut child = start_then_wait_for_the_hang(&path);
    signal(&child, "KILL");
    let _ = child.wait().unwrap();
    let report = read_report(&path);
    assert_eq!(report["complete"], false);
    assert!(report["interrupted"].is_null(), "no chance to say so");
    assert_eq!(report["trials"].as_array().unwrap().len(), 15);
    let leftovers = std::fs::read_dir(dir.path()).unwrap().count();
    assert_eq!(leftovers, 1, "only the report; no half-written temp file");
}
