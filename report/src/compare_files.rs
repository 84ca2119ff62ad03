//! Two dumps compared tensor by tensor with [`assert_close`](crate::assert_close)'s
//! rules, and the two ways the result is printed: a table for people and one
//! JSON document for programs.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::{json, Value};
use thiserror::Error;

use crate::assert_close::{compare, CompareError, Comparison, Tolerance};
use crate::dtype::DType;
use crate::dump::{self, keys, Dump, DumpError};
use crate::python;

/// Why a tensor name has no verdict.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum PairError {
    /// Only the expected file has the tensor.
    #[error("missing in the actual file")]
    MissingInActual,
    /// Only the actual file has the tensor.
    #[error("missing in the expected file")]
    MissingInExpected,
    /// Both have it, but they cannot be compared (shapes differ, say).
    #[error(transparent)]
    Compare(#[from] CompareError),
}

/// One tensor name's verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorResult {
    /// The tensor's name.
    pub name: String,
    /// Its dtype in the expected file, or the actual file's when only there.
    pub dtype: DType,
    /// Its shape in the expected file, or the actual file's when only there.
    pub shape: Vec<usize>,
    /// Whether it is within tolerance.
    pub passed: bool,
    /// The comparison's figures, when the two could be compared.
    pub comparison: Option<Comparison>,
    /// Why the two could not be compared.
    pub error: Option<PairError>,
}

impl TensorResult {
    /// `{"atol","dtype","mismatched","max_abs_diff","max_abs_index","max_rel_diff",
    /// "max_rel_index","name","passed","rtol","shape","total"}`, keys sorted;
    /// `dtype` is the dtype compared in (both promoted, as assert_close does); a
    /// pair that could not be compared has `{"dtype","error","name","passed","shape"}`.
    pub fn to_json(&self) -> Value {
        let mut fields: BTreeMap<String, Value> = match &self.comparison {
            Some(comparison) => match serde_json::to_value(comparison) {
                Ok(Value::Object(map)) => map.into_iter().collect(),
                _ => unreachable!("a Comparison serializes as an object"),
            },
            None => BTreeMap::from([
                ("dtype".to_owned(), json!(self.dtype)),
                ("shape".to_owned(), json!(self.shape)),
            ]),
        };
        fields.insert("name".to_owned(), json!(self.name));
        fields.insert("passed".to_owned(), json!(self.passed));
        if let Some(error) = &self.error {
            fields.insert("error".to_owned(), json!(error.to_string()));
        }
        Value::Object(fields.into_iter().collect())
    }
}

/// Both files' verdicts.
#[derive(Debug, Clone, PartialEq)]
pub struct FileComparison {
    /// Whether every tensor passed and both files hold the same names.
    pub passed: bool,
    /// One entry per tensor name in either file, in natural order.
    pub tensors: Vec<TensorResult>,
}

/// Compares every tensor of `actual` with the tensor of the same name in
/// `expected`; `tolerance` replaces assert_close's per-dtype defaults.
pub fn compare_dumps(
    expected: &Dump,
    actual: &Dump,
    tolerance: Option<Tolerance>,
    equal_nan: bool,
) -> FileComparison {
    let mut names: Vec<&str> = expected
        .tensors
        .iter()
        .chain(&actual.tensors)
        .map(|(name, _)| name.as_str())
        .collect();
    names.sort_by(|a, b| dump::natural_order(a, b));
    names.dedup();
    let tensors: Vec<TensorResult> = names
        .into_iter()
        .map(|name| {
            let (e, a) = (expected.tensor(name), actual.tensor(name));
            let shown = e.or(a).expect("named by one of the files");
            let mut result = TensorResult {
                name: name.to_owned(),
                dtype: shown.dtype(),
                shape: shown.shape().to_vec(),
                passed: false,
                comparison: None,
                error: None,
            };
            match (e, a) {
                (Some(e), Some(a)) => {
                    let tolerance = tolerance
                        .unwrap_or_else(|| Tolerance::for_pair(a.dtype(), e.dtype()))
                        .with_equal_nan(equal_nan);
                    match compare(a, e, tolerance) {
                        Ok(comparison) => {
                            result.passed = comparison.passed;
                            result.comparison = Some(comparison);
                        }
                        Err(error) => result.error = Some(error.into()),
                    }
                }
                (Some(_), None) => result.error = Some(PairError::MissingInActual),
                (None, Some(_)) => result.error = Some(PairError::MissingInExpected),
                (None, None) => unreachable!("every name comes from a file"),
            }
            result
        })
        .collect();
    FileComparison {
        passed: tensors.iter().all(|t| t.passed),
        tensors,
    }
}

/// Reads both files and compares them; returns the dumps too, whose metadata
/// [`to_text`] names.
pub fn compare_paths(
    expected: &Path,
    actual: &Path,
    tolerance: Option<Tolerance>,
    equal_nan: bool,
) -> Result<(FileComparison, Dump, Dump), DumpError> {
    let expected_dump = dump::read(expected)?;
    let actual_dump = dump::read(actual)?;
    let result = compare_dumps(&expected_dump, &actual_dump, tolerance, equal_nan);
    Ok((result, expected_dump, actual_dump))
}

/// The JSON document `--json` prints: `{"actual","expected","passed","tensors"}`.
pub fn to_json(result: &FileComparison, expected: &Path, actual: &Path) -> Value {
    // Inserted in sorted order, so that the order is the same with or without
    // serde_json's `preserve_order`.
    let mut document = serde_json::Map::new();
    document.insert("actual".to_owned(), json!(actual.display().to_string()));
    document.insert("expected".to_owned(), json!(expected.display().to_string()));
    document.insert("passed".to_owned(), json!(result.passed));
    document.insert(
        "tensors".to_owned(),
        Value::Array(result.tensors.iter().map(TensorResult::to_json).collect()),
    );
    Value::Object(document)
}

/// `x at (i, j)`, or just `x` for a 0-dim tensor.
fn at(value: f64, index: &[usize]) -> String {
    if index.is_empty() {
        python::float_repr(value)
    } else {
        format!(
            "{} at {}",
            python::float_repr(value),
            python::tuple_repr(index)
        )
    }
}

/// ` (case net, device cpu, …)` from a dump's metadata, or nothing.
fn origin(dump: &Dump) -> String {
    let parts: Vec<String> = [
        ("case", keys::CASE),
        ("device", keys::DEVICE),
        ("dtype", keys::DTYPE),
        ("torch", keys::TORCH),
        ("host", keys::HOST),
    ]
    .iter()
    .filter_map(|(label, key)| dump.metadata.get(*key).map(|v| format!("{label} {v}")))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// The human table: both files, one line per tensor, then the verdict.
pub fn to_text(
    result: &FileComparison,
    expected: (&Path, &Dump),
    actual: (&Path, &Dump),
) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "expected: {}{}",
        expected.0.display(),
        origin(expected.1)
    );
    let _ = writeln!(out, "actual:   {}{}", actual.0.display(), origin(actual.1));
    let width = result
        .tensors
        .iter()
        .map(|t| t.name.len())
        .max()
        .unwrap_or(6)
        .max(6);
    let _ = writeln!(
        out,
        "{:width$}  {:8}  {:14}  {:6}  {:>20}  greatest differences (mismatched elements)",
        "tensor", "dtype", "shape", "result", "mismatched",
    );
    for t in &result.tensors {
        let shape = format!("{:?}", t.shape);
        let verdict = if t.passed { "ok" } else { "FAILED" };
        let (counts, detail) = match (&t.comparison, &t.error) {
            (_, Some(error)) => (String::from("–"), error.to_string()),
            (Some(c), None) if c.mismatched > 0 => (
                format!(
                    "{} / {} ({:.1}%)",
                    c.mismatched,
                    c.total,
                    c.mismatched as f64 * 100.0 / c.total as f64
                ),
                format!(
                    "abs {} (atol {}), rel {} (rtol {})",
                    at(c.max_abs_diff, &c.max_abs_index),
                    python::float_repr(c.atol),
                    at(c.max_rel_diff, &c.max_rel_index),
                    python::float_repr(c.rtol)
                ),
            ),
            (Some(c), None) => (format!("0 / {}", c.total), String::new()),
            (None, None) => (String::from("–"), String::new()),
        };
        let line = format!(
            "{:width$}  {:8}  {:14}  {:6}  {:>20}  {}",
            t.name,
            t.dtype.name(),
            shape,
            verdict,
            counts,
            detail
        );
        let _ = writeln!(out, "{}", line.trim_end());
    }
    let failed = result.tensors.iter().filter(|t| !t.passed).count();
    if failed == 0 {
        let _ = writeln!(out, "all {} tensors within tolerance", result.tensors.len());
    } else {
        let _ = writeln!(
            out,
            "{failed} of {} tensors beyond tolerance or not comparable",
            result.tensors.len()
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tensor::{HostTensor, Values};

    fn dump(tensors: &[(&str, Vec<usize>, Vec<f32>)], case: Option<&str>) -> Dump {
        Dump {
            metadata: case
                .map(|c| BTreeMap::from([(keys::CASE.to_owned(), c.to_owned())]))
                .unwrap_or_default(),
            tensors: tensors
                .iter()
                .map(|(name, shape, values)| {
                    let tensor = HostTensor::new(shape.clone(), Values::Float32(values.clone()));
                    (name.to_string(), tensor.unwrap())
                })
                .collect(),
        }
    }

    #[test]
    fn pairs_by_name_and_names_what_is_missing_or_differs() {
        let expected = dump(
            &[
                ("step10.loss", vec![], vec![0.5]),
                ("step2.loss", vec![], vec![0.25]),
                ("w", vec![2], vec![1.0, 2.0]),
                ("only_expected", vec![1], vec![0.0]),
            ],
            None,
        );
        let actual = dump(
            &[
                ("step10.loss", vec![], vec![0.5]),
                ("step2.loss", vec![], vec![0.3]),
                ("w", vec![1, 2], vec![1.0, 2.0]),
                ("only_actual", vec![1], vec![0.0]),
            ],
            None,
        );
        let result = compare_dumps(&expected, &actual, None, false);
        assert!(!result.passed);
        let verdicts: Vec<(&str, bool, Option<String>)> = result
            .tensors
            .iter()
            .map(|t| {
                (
                    t.name.as_str(),
                    t.passed,
                    t.error.as_ref().map(|e| e.to_string()),
                )
            })
            .collect();
        assert_eq!(
            verdicts,
            [
                (
                    "only_actual",
                    false,
                    Some("missing in the expected file".to_owned())
                ),
                (
                    "only_expected",
                    false,
                    Some("missing in the actual file".to_owned())
                ),
                ("step2.loss", false, None),
                ("step10.loss", true, None),
                (
                    "w",
                    false,
                    Some(
                        "shape [1, 2] vs expected [2]: compare tensors of the same shape"
                            .to_owned()
                    )
                ),
            ]
        );
        // The shown shape is the expected file's.
        assert_eq!(result.tensors[4].shape, [2]);
    }

    #[test]
    fn a_given_tolerance_replaces_the_defaults() {
        let expected = dump(&[("x", vec![1], vec![1.0])], None);
        let actual = dump(&[("x", vec![1], vec![1.01])], None);
        assert!(!compare_dumps(&expected, &actual, None, false).passed);
        let loose = Tolerance {
            rtol: 0.1,
            atol: 0.0,
            equal_nan: false,
        };
        let result = compare_dumps(&expected, &actual, Some(loose), false);
        assert!(result.passed);
        assert_eq!(result.tensors[0].comparison.as_ref().unwrap().rtol, 0.1);
    }

    #[test]
    fn equal_nan_applies_to_every_pair() {
        let nan = dump(&[("x", vec![2], vec![f32::NAN, 1.0])], None);
        assert!(!compare_dumps(&nan, &nan, None, false).passed);
        assert!(compare_dumps(&nan, &nan, None, true).passed);
    }

    #[test]
    fn json_keys_are_sorted_and_errors_carry_no_figures() {
        let expected = dump(
            &[("x", vec![1], vec![1.0]), ("y", vec![1], vec![1.0])],
            Some("net"),
        );
        let actual = dump(&[("x", vec![1], vec![2.0])], Some("net"));
        let result = compare_dumps(&expected, &actual, None, false);
        let json = to_json(
            &result,
            Path::new("e.safetensors"),
            Path::new("a.safetensors"),
        );
        let keys = |value: &Value| {
            value
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(keys(&json), ["actual", "expected", "passed", "tensors"]);
        assert_eq!(
            keys(&json["tensors"][0]),
            [
                "atol",
                "dtype",
                "max_abs_diff",
                "max_abs_index",
                "max_rel_diff",
                "max_rel_index",
                "mismatched",
                "name",
                "passed",
                "rtol",
                "shape",
                "total"
            ]
        );
        assert_eq!(json["tensors"][0]["dtype"], "float32");
        assert_eq!(
            keys(&json["tensors"][1]),
            ["dtype", "error", "name", "passed", "shape"]
        );
        assert_eq!(json["tensors"][1]["error"], "missing in the actual file");
    }

    #[test]
    fn the_table_names_the_files_origin() {
        let expected = dump(&[("x", vec![1], vec![1.0])], Some("net"));
        let mut actual = dump(&[("x", vec![1], vec![1.0])], None);
        actual
            .metadata
            .insert(keys::HOST.to_owned(), "mac".to_owned());
        actual
            .metadata
            .insert(keys::DEVICE.to_owned(), "mps".to_owned());
        let result = compare_dumps(&expected, &actual, None, false);
        let text = to_text(
            &result,
            (Path::new("cpu.safetensors"), &expected),
            (Path::new("mps.safetensors"), &actual),
        );
        assert!(
            text.starts_with(
                "expected: cpu.safetensors (case net)\nactual:   mps.safetensors (device mps, host mac)\n"
            ),
            "{text}"
        );
        assert!(text.ends_with("all 1 tensors within tolerance\n"), "{text}");
    }
}
