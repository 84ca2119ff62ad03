//! `devcheck-compare` against what `torch.testing.assert_close` said about the
//! same pairs (files written by PyTorch with safetensors; recorded by
//! `tests/fixtures/compare/record.py`), and against `matrix --dump` files.

use std::path::{Path, PathBuf};
use std::process::Output;

use devcheck_tests::{command, workspace_root};
use serde_json::Value;

fn fixtures() -> PathBuf {
    workspace_root().join("tests/fixtures/compare")
}

fn compare(args: &[&str]) -> Output {
    command("devcheck", "devcheck-compare")
        .args(args)
        .output()
        .expect("run devcheck-compare")
}

fn as_f64(value: &Value) -> f64 {
    match value {
        Value::String(s) => s.parse().expect("a number or nan/inf"),
        Value::Number(n) => n.as_f64().unwrap(),
        other => panic!("not a number: {other}"),
    }
}

fn same_number(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

#[test]
fn agrees_with_assert_close_on_files_written_by_pytorch() {
    let recorded: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("assert_close.json")).unwrap(),
    )
    .unwrap();
    let expected = fixtures().join("expected.safetensors");
    let actual = fixtures().join("actual.safetensors");
    let settings: [(&str, &[&str]); 3] = [
        ("default", &[]),
        ("equal_nan", &["--equal-nan"]),
        (
            "rtol_0.01_atol_0.001",
            &["--rtol", "0.01", "--atol", "0.001"],
        ),
    ];
    for (setting, flags) in settings {
        let mut args = vec![
            "--json",
            expected.to_str().unwrap(),
            actual.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let output = compare(&args);
        assert_eq!(
            output.status.code(),
            Some(1),
            "{setting}: some tensors fail in every setting\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let ours: Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
        let tensors = ours["tensors"].as_array().unwrap();
        let theirs = recorded[setting].as_object().unwrap();
        assert_eq!(
            tensors.len(),
            theirs.len() + 2,
            "{setting}: + the two unpaired"
        );
        for (name, want) in theirs {
            let got = tensors
                .iter()
                .find(|t| t["name"] == name.as_str())
                .unwrap_or_else(|| panic!("{setting}: no `{name}`"));
            let context = format!("{setting} / {name}: ours {got}, assert_close {want}");
            assert_eq!(got["passed"], want["passed"], "{context}");
            if want.get("error").is_some() {
                assert!(got["error"].is_string(), "{context}");
                continue;
            }
            assert_eq!(got["mismatched"], want["mismatched"], "{context}");
            assert_eq!(got["total"], want["total"], "{context}");
            if want["passed"] == false {
                for key in ["max_abs_diff", "max_rel_diff"] {
                    assert!(
                        same_number(as_f64(&got[key]), as_f64(&want[key])),
                        "{key}: {context}"
                    );
                }
                for key in ["max_abs_index", "max_rel_index"] {
                    assert_eq!(got[key], want[key], "{key}: {context}");
                }
            }
        }
        for (name, side) in [
            ("only_in_expected", "missing in the actual file"),
            ("only_in_actual", "missing in the expected file"),
        ] {
            let entry = tensors.iter().find(|t| t["name"] == name).unwrap();
            assert_eq!(entry["passed"], false);
            assert_eq!(entry["error"], side);
        }
    }
}

#[test]
fn identical_files_pass_and_the_table_names_both_files() {
    let expected = fixtures().join("expected.safetensors");
    let output = compare(&[expected.to_str().unwrap(), expected.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    // NaN never equals NaN without --equal-nan, as in assert_close.
    assert_eq!(output.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("float32_nan_same_place"), "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "expected: {}\nactual:   {}\n",
            expected.display(),
            expected.display()
        )),
        "{stdout}"
    );
    let output = compare(&[
        "--equal-nan",
        expected.to_str().unwrap(),
        expected.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.ends_with("all 16 tensors within tolerance\n"),
        "{stdout}"
    );
}

#[test]
fn bad_input_is_refused_with_exit_code_2() {
    let expected = fixtures().join("expected.safetensors");
    let expected = expected.to_str().unwrap();
    let not_safetensors = fixtures().join("assert_close.json");
    let cases: [(Vec<&str>, &str); 5] = [
        (
            vec![expected, "no/such/file.safetensors"],
            "no/such/file.safetensors: No such file",
        ),
        (
            vec![expected, not_safetensors.to_str().unwrap()],
            "assert_close.json: not a safetensors file",
        ),
        (
            vec!["--rtol", "0.1", expected, expected],
            "give both --rtol and --atol or neither",
        ),
        (
            vec!["--rtol", "-1", "--atol", "0", expected, expected],
            "--rtol must be a finite number ≥ 0, got -1",
        ),
        (
            vec!["--rtol", "NaN", "--atol", "0", expected, expected],
            "--rtol must be a finite number ≥ 0, got NaN",
        ),
    ];
    for (args, message) in cases {
        let output = compare(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{args:?}");
    }
}

fn dump(dir: &Path, filter: &str) -> Output {
    command("devcheck", "devcheck-matrix")
        .args(["--device", "cpu", "--exact", filter, "--dump"])
        .arg(dir)
        .env_remove("DEVCHECK_REPORT")
        .output()
        .expect("run devcheck-matrix")
}

#[test]
fn matrix_dumps_compare_clean_with_themselves_and_name_every_step() {
    let dir = tempfile::tempdir().unwrap();
    let output = dump(dir.path(), "classifier::tolerance::cpu");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let file = dir.path().join("classifier/cpu.safetensors");
    let loaded = devcheck::dump::read(&file).expect("a safetensors file");
    assert_eq!(loaded.metadata["devcheck.case"], "classifier");
    assert_eq!(loaded.metadata["devcheck.device"], "cpu");
    assert_eq!(loaded.metadata["devcheck.dtype"], "float32");
    assert_eq!(loaded.metadata["devcheck.steps"], "3");
    let names: Vec<&str> = loaded.tensors.iter().map(|(n, _)| n.as_str()).collect();
    for name in [
        "step0.loss",
        "step0.output.logits",
        "step0.grad.head.weight",
        "step2.param.head.bias",
    ] {
        assert!(names.contains(&name), "{name} not in {names:?}");
    }
    let output = compare(&["--json", file.to_str().unwrap(), file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0));
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["passed"], true);
    assert_eq!(result["tensors"].as_array().unwrap().len(), names.len());
}
