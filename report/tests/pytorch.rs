//! devcheck-report against what PyTorch 2.11 itself said about the same
//! tensors: `torch.testing.assert_close`'s verdicts, figures and messages,
//! `torch.isclose` element by element, `torch.promote_types`, and the values of
//! the 1-byte floats. The files were written by PyTorch (recorded by
//! `tests/fixtures/compare/record.py` and `report/tests/fixtures/assert_close/record.py`).

use std::path::{Path, PathBuf};

use devcheck_report::cli::{run_compare, CompareArgs, EXIT_FAILED};
use devcheck_report::dump::{self, Dump};
use devcheck_report::{compare, isclose, DType, Tolerance, Values};
use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("report/ is in the workspace")
        .to_owned()
}

fn recorded(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
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

/// The settings both record.py scripts use, as the command line gives them.
fn setting(name: &str) -> (Option<f64>, Option<f64>, bool) {
    match name {
        "default" => (None, None, false),
        "equal_nan" => (None, None, true),
        other => {
            let figures = other
                .strip_prefix("rtol_")
                .and_then(|rest| rest.split_once("_atol_"))
                .unwrap_or_else(|| panic!("unknown setting {other}"));
            (
                Some(figures.0.parse().unwrap()),
                Some(figures.1.parse().unwrap()),
                false,
            )
        }
    }
}

/// The same check as `tests/tests/compare.rs` makes of `devcheck-compare`.
#[test]
fn agrees_with_assert_close_on_files_written_by_pytorch() {
    let fixtures = workspace().join("tests/fixtures/compare");
    let recorded = recorded(&fixtures.join("assert_close.json"));
    for name in ["default", "equal_nan", "rtol_0.01_atol_0.001"] {
        let (rtol, atol, equal_nan) = setting(name);
        let output = run_compare(&CompareArgs {
            expected: fixtures.join("expected.safetensors"),
            actual: fixtures.join("actual.safetensors"),
            json: true,
            rtol,
            atol,
            equal_nan,
        })
        .unwrap();
        assert_eq!(
            output.exit_code, EXIT_FAILED,
            "{name}: some tensors fail in every setting"
        );
        let ours: Value = serde_json::from_str(&output.stdout).expect("JSON on stdout");
        let tensors = ours["tensors"].as_array().unwrap();
        let theirs = recorded[name].as_object().unwrap();
        assert_eq!(
            tensors.len(),
            theirs.len() + 2,
            "{name}: + the two unpaired"
        );
        for (tensor, want) in theirs {
            let got = tensors
                .iter()
                .find(|t| t["name"] == tensor.as_str())
                .unwrap_or_else(|| panic!("{name}: no `{tensor}`"));
            let context = format!("{name} / {tensor}: ours {got}, assert_close {want}");
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
        for (tensor, side) in [
            ("only_in_expected", "missing in the actual file"),
            ("only_in_actual", "missing in the expected file"),
        ] {
            let entry = tensors.iter().find(|t| t["name"] == tensor).unwrap();
            assert_eq!(entry["passed"], false);
            assert_eq!(entry["error"], side);
        }
    }
}

struct Edges {
    recorded: Value,
    expected: Dump,
    actual: Dump,
    matches: Dump,
}

fn edges() -> Edges {
    let fixtures = workspace().join("report/tests/fixtures/assert_close");
    Edges {
        recorded: recorded(&fixtures.join("assert_close.json")),
        expected: dump::read(&fixtures.join("expected.safetensors")).unwrap(),
        actual: dump::read(&fixtures.join("actual.safetensors")).unwrap(),
        matches: dump::read(&fixtures.join("matches.safetensors")).unwrap(),
    }
}

/// isclose's verdicts, unpacked from their bits.
fn unpack(bits: &Values, len: usize) -> Vec<bool> {
    let Values::UInt8(bytes) = bits else {
        panic!("bits are uint8")
    };
    (0..len).map(|i| bytes[i / 8] >> (i % 8) & 1 == 1).collect()
}

/// assert_close's message without its header line (and, for 0-dim tensors,
/// without "Expected … but got …"): what `Comparison::describe` reproduces.
fn statistics(message: &str) -> &str {
    let body = message.split_once("\n\n").expect("a header line").1;
    if message.starts_with("Scalars") {
        body.split_once('\n').expect("an expected-but-got line").1
    } else {
        body
    }
}

#[test]
fn isclose_and_assert_close_agree_element_for_element_on_the_edges() {
    let edges = edges();
    let mut checked = (0, 0);
    for (name, pairs) in edges.recorded.as_object().unwrap() {
        if !pairs.is_object() || name == "promote_types" || name == "float8" {
            continue;
        }
        let (rtol, atol, equal_nan) = setting(name);
        for (pair, want) in pairs.as_object().unwrap() {
            let context = format!("{name} / {pair}");
            let expected = edges.expected.tensor(pair).unwrap();
            let actual = edges.actual.tensor(pair).unwrap();
            let tolerance = match (rtol, atol) {
                (Some(rtol), Some(atol)) => Tolerance {
                    rtol,
                    atol,
                    equal_nan,
                },
                _ => {
                    Tolerance::for_pair(actual.dtype(), expected.dtype()).with_equal_nan(equal_nan)
                }
            };
            assert_eq!(
                tolerance.rtol,
                want["rtol"].as_f64().unwrap(),
                "{context}: rtol"
            );
            assert_eq!(
                tolerance.atol,
                want["atol"].as_f64().unwrap(),
                "{context}: atol"
            );

            let ours = isclose(actual, expected, tolerance).unwrap();
            let bits = edges.matches.tensor(&format!("{name}/{pair}")).unwrap();
            let theirs = unpack(bits.values(), ours.len());
            if let Some(i) = (0..ours.len()).find(|&i| ours[i] != theirs[i]) {
                panic!(
                    "{context}: element {i} is {} here but {} in torch.isclose ({} elements differ)",
                    ours[i],
                    theirs[i],
                    (0..ours.len()).filter(|&i| ours[i] != theirs[i]).count()
                );
            }

            let result = compare(actual, expected, tolerance).unwrap();
            assert_eq!(result.dtype.name(), want["dtype"], "{context}: dtype");
            assert_eq!(result.passed, want["passed"], "{context}: passed");
            assert_eq!(
                result.mismatched, want["mismatched"],
                "{context}: mismatched"
            );
            assert_eq!(result.total, want["total"], "{context}: total");
            if !result.passed {
                assert!(
                    same_number(result.max_abs_diff, as_f64(&want["max_abs_diff"])),
                    "{context}"
                );
                assert!(
                    same_number(result.max_rel_diff, as_f64(&want["max_rel_diff"])),
                    "{context}"
                );
                assert_eq!(
                    serde_json::json!(result.max_abs_index),
                    want["max_abs_index"],
                    "{context}"
                );
                assert_eq!(
                    serde_json::json!(result.max_rel_index),
                    want["max_rel_index"],
                    "{context}"
                );
                let message = want["message"].as_str().unwrap();
                assert_eq!(result.describe(), statistics(message), "{context}: message");
            }
            checked.0 += 1;
            checked.1 += ours.len();
        }
    }
    // 43 pairs under 5 settings, so that a fixture that lost its pairs fails here.
    assert_eq!(checked.0, 215, "pairs compared");
    assert!(checked.1 > 40_000, "{} elements compared", checked.1);
}

#[test]
fn promotion_agrees_with_torch_promote_types() {
    let edges = edges();
    for (pair, want) in edges.recorded["promote_types"].as_object().unwrap() {
        let (a, b) = pair.split_once(',').unwrap();
        let (a, b): (DType, DType) = (a.parse().unwrap(), b.parse().unwrap());
        match want.as_str() {
            Some(name) => assert_eq!(a.promote(b).map(|d| d.name()), Ok(name), "{pair}"),
            None => assert!(a.promote(b).is_err(), "{pair}: torch refuses it"),
        }
    }
}

#[test]
fn float8_values_agree_with_torch() {
    let edges = edges();
    for (name, values) in edges.recorded["float8"].as_object().unwrap() {
        let DType::Float8(format) = name.parse::<DType>().unwrap() else {
            panic!("{name} is not a 1-byte float")
        };
        for (bits, want) in values.as_array().unwrap().iter().enumerate() {
            let want: f64 = as_f64(want);
            let got = f64::from(format.value(bits as u8));
            assert!(
                (got.is_nan() && want.is_nan())
                    || (got == want && got.is_sign_negative() == want.is_sign_negative()),
                "{name} {bits:#04x}: {got} here, {want} in torch"
            );
        }
    }
}
