//! `cargo devcheck merge` end to end: the built binary on the report fixtures in
//! `tests/fixtures/reports/`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures/reports")
        .join(name)
}

fn devcheck_merge(reports: &[&Path], out: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cargo-devcheck"))
        .arg("merge")
        .args(reports)
        .arg("--out")
        .arg(out)
        .output()
        .expect("cargo-devcheck runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A fixture rewritten by `edit`, in `dir`.
fn edited(dir: &Path, fixture_name: &str, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut report = read_json(&fixture(fixture_name));
    edit(&mut report);
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&report).unwrap()).unwrap();
    path
}

#[test]
fn merges_reports_of_one_commit_into_one_matrix() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("nested/merged.json");
    let inputs = [
        fixture("vm-cpu-at-00ee538f.json"),
        fixture("h100-cuda.json"),
        fixture("mac-mps.json"),
    ];
    let output = devcheck_merge(
        &inputs.iter().map(PathBuf::as_path).collect::<Vec<_>>(),
        &out,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(output.stdout.is_empty(), "no --summary, nothing on stdout");

    let merged = read_json(&out);
    assert_eq!(merged["schema"], 1);
    assert_eq!(merged["complete"], true);
    let ids: Vec<&str> = merged["machines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["vm", "vm-2", "mac-mini"]);
    for key in ["passed", "failed", "ignored"] {
        let sum: u64 = inputs
            .iter()
            .map(|p| read_json(p)["totals"][key].as_u64().unwrap())
            .sum();
        assert_eq!(merged["totals"][key].as_u64().unwrap(), sum, "{key}");
    }
    assert_eq!(merged["trials"].as_array().unwrap().len(), 3 * 72);
    assert!(merged["trials"]
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t["machine"].is_string() && t["duration_ms"].is_number()));

    let table = stderr(&output);
    assert!(
        table.contains("transformer  mps           ✓          ✗"),
        "{table}"
    );
    assert!(
        table.contains("118 passed, 2 failed, 0 not run\n"),
        "{table}"
    );
    assert_eq!(
        std::fs::read_dir(out.parent().unwrap()).unwrap().count(),
        1,
        "no temp file left beside the output"
    );
}

#[test]
fn a_merged_report_merges_again() {
    let dir = tempfile::tempdir().unwrap();
    let once = dir.path().join("once.json");
    let output = devcheck_merge(
        &[
            &fixture("vm-cpu-at-00ee538f.json"),
            &fixture("h100-cuda.json"),
        ],
        &once,
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let twice = dir.path().join("twice.json");
    let output = devcheck_merge(&[&once, &fixture("mac-mps.json")], &twice);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged = read_json(&twice);
    assert_eq!(merged["machines"].as_array().unwrap().len(), 3);
    assert_eq!(merged["totals"]["passed"], 48 + 24 + 46);
}

#[test]
fn summary_goes_to_stdout_alone() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_cargo-devcheck"))
        .arg("merge")
        .arg(fixture("vm-cpu-at-00ee538f.json"))
        .arg(fixture("h100-cuda.json"))
        .arg("--out")
        .arg(dir.path().join("merged.json"))
        .args(["--summary", "markdown"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        stdout.starts_with("### devcheck: 72 passed, 0 failed, 24 not run\n"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("merged report:"),
        "the table stays on stderr"
    );
}

#[test]
fn different_commits_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("merged.json");
    let output = devcheck_merge(&[&fixture("vm-cpu.json"), &fixture("h100-cuda.json")], &out);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("vm-cpu.json and ")
            && message.contains(
                "h100-cuda.json are of different commits \
                 (634593a6f39c79dc1167b721018784e00d1ebe1e and 00ee538f)"
            ),
        "{message}"
    );
    assert!(!out.exists(), "nothing written on refusal");
}

#[test]
fn different_cases_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let without_lstm = edited(dir.path(), "h100-cuda.json", "no-lstm.json", |report| {
        let trials = report["trials"].as_array_mut().unwrap();
        trials.retain(|t| t["case"] != "lstm");
        report["cases"] = serde_json::json!(["classifier", "cnn", "transformer", "gru"]);
    });
    let output = devcheck_merge(
        &[&fixture("vm-cpu-at-00ee538f.json"), &without_lstm],
        &dir.path().join("merged.json"),
    );
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains(
            "no-lstm.json are reports of different cases \
             (only in "
        ) && message.contains("vm-cpu-at-00ee538f.json: lstm; only in ")
            && message.contains("no-lstm.json: gru)"),
        "{message}"
    );
}

#[test]
fn missing_commit_warns_and_merges() {
    let dir = tempfile::tempdir().unwrap();
    let no_commit = edited(dir.path(), "h100-cuda.json", "no-commit.json", |report| {
        report["environment"]["git_commit"] = Value::Null;
    });
    let output = devcheck_merge(
        &[&fixture("vm-cpu.json"), &no_commit],
        &dir.path().join("merged.json"),
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("no-commit.json records no git commit; merged without checking"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn invalid_json_names_the_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\n  \"schema\": 1,\n  \"complete\": yes\n}\n").unwrap();
    let output = devcheck_merge(&[&broken], &dir.path().join("merged.json"));
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        format!(
            "error: {}:3:15: not a devcheck report: expected value\n",
            broken.display()
        )
    );
}

#[test]
fn another_schema_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let future = edited(dir.path(), "vm-cpu.json", "future.json", |report| {
        report["schema"] = serde_json::json!(2);
    });
    let output = devcheck_merge(&[&future], &dir.path().join("merged.json"));
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("future.json: report schema is 2, this devcheck reads schema 1"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn missing_file_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.json");
    let output = devcheck_merge(
        &[&fixture("vm-cpu.json"), &missing],
        &dir.path().join("m.json"),
    );
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.starts_with(&format!(
            "error: cannot read report {}: ",
            missing.display()
        )),
        "{message}"
    );
}

#[test]
fn the_same_report_twice_is_a_duplicate_trial() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.json");
    std::fs::copy(fixture("vm-cpu.json"), &copy).unwrap();
    let output = devcheck_merge(
        &[&fixture("vm-cpu.json"), &copy],
        &dir.path().join("m.json"),
    );
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(
        message.contains("error: trial classifier::placement::cuda:0 is in ")
            && message.contains("vm-cpu.json and in ")
            && message.contains("copy.json, both from machine vm\n"),
        "{message}"
    );
}
