//! Two safetensors files compared tensor by tensor with the matrix's rules
//! (`torch.testing.assert_close`, see [`crate::compare`]): what
//! `devcheck-compare` (and `cargo xtask compare`) prints.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::json;

use crate::compare::{compare, python_float, python_tuple, Comparison, Tolerance};
use crate::dump::{self, Dump, DumpError};

/// One tensor's verdict.
#[derive(Debug, Clone)]
pub struct TensorResult {
    /// The tensor's name.
    pub name: String,
    /// Its dtype in the expected file (`float32`), or the actual file's when only there.
    pub dtype: String,
    /// Its shape in the expected file (or the actual file's when only there).
    pub shape: Vec<i64>,
    /// Whether it is within tolerance.
    pub passed: bool,
    /// The comparison's figures, when the two could be compared.
    pub comparison: Option<Comparison>,
    /// Why the two could not be compared (missing on one side, shapes differ).
    pub error: Option<String>,
}

impl TensorResult {
    /// `{"name","dtype","shape","passed","mismatched","total","max_abs_diff",
    /// "max_abs_index","max_rel_diff","max_rel_index","rtol","atol"}`; `dtype` is
    /// the dtype compared in (both promoted, as assert_close does); a pair that
    /// could not be compared has `error` instead of the figures.
    pub fn to_json(&self) -> serde_json::Value {
        let mut value = match &self.comparison {
            Some(c) => serde_json::to_value(c).unwrap_or_default(),
            None => json!({"dtype": self.dtype, "shape": self.shape}),
        };
        if let Some(object) = value.as_object_mut() {
            object.insert("name".to_owned(), json!(self.name));
            object.insert("passed".to_owned(), json!(self.passed));
            if let Some(error) = &self.error {
                object.insert("error".to_owned(), json!(error));
            }
        }
        value
    }
}

/// Both files' verdicts.
#[derive(Debug, Clone)]
pub struct FileComparison {
    /// Whether every tensor passed and both files hold the same names.
    pub passed: bool,
    /// One entry per tensor name in either file.
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
        .chain(actual.tensors.iter())
        .map(|(n, _)| n.as_str())
        .collect();
    names.sort_by(|a, b| dump::natural_order(a, b));
    names.dedup();
    let find = |dump: &'_ Dump, name: &str| {
        dump.tensors
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t.shallow_clone())
    };
    let tensors: Vec<TensorResult> = names
        .into_iter()
        .map(|name| {
            let (e, a) = (find(expected, name), find(actual, name));
            let shown = e
                .as_ref()
                .or(a.as_ref())
                .expect("named by one of the files");
            let mut result = TensorResult {
                name: name.to_owned(),
                dtype: crate::case::kind_name(shown.kind()).to_owned(),
                shape: shown.size(),
                passed: false,
                comparison: None,
                error: None,
            };
            match (e, a) {
                (Some(e), Some(a)) => {
                    let tolerance = tolerance
                        .unwrap_or_else(|| Tolerance::for_pair(a.kind(), e.kind()))
                        .with_equal_nan(equal_nan);
                    match compare(&a, &e, tolerance) {
                        Ok(comparison) => {
                            result.passed = comparison.passed;
                            result.comparison = Some(comparison);
                        }
                        Err(error) => result.error = Some(error.to_string()),
                    }
                }
                (Some(_), None) => result.error = Some("missing in the actual file".to_owned()),
                (None, Some(_)) => result.error = Some("missing in the expected file".to_owned()),
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

/// Reads both files and compares them.
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

/// The JSON document `--json` prints.
pub fn to_json(result: &FileComparison, expected: &Path, actual: &Path) -> serde_json::Value {
    json!({
        "expected": expected.display().to_string(),
        "actual": actual.display().to_string(),
        "passed": result.passed,
        "tensors": result.tensors.iter().map(TensorResult::to_json).collect::<Vec<_>>(),
    })
}

/// `x at (i, j)`, or just `x` for a 0-dim tensor.
fn at(value: f64, index: &[i64]) -> String {
    if index.is_empty() {
        python_float(value)
    } else {
        format!("{} at {}", python_float(value), python_tuple(index))
    }
}

fn origin(dump: &Dump) -> String {
    let m = &dump.metadata;
    let parts: Vec<String> = [
        ("case", "devcheck.case"),
        ("device", "devcheck.device"),
        ("dtype", "devcheck.dtype"),
        ("torch", "devcheck.torch"),
        ("host", "devcheck.host"),
    ]
    .iter()
    .filter_map(|(label, key)| m.get(*key).map(|v| format!("{label} {v}")))
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(", "))
    }
}

/// The human table: one line per tensor, then the verdict.
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
            (_, Some(error)) => (String::from("–"), error.clone()),
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
                    python_float(c.atol),
                    at(c.max_rel_diff, &c.max_rel_index),
                    python_float(c.rtol)
                ),
            ),
            (Some(c), None) => (format!("0 / {}", c.total), String::new()),
            (None, None) => (String::from("–"), String::new()),
        };
        let line = format!(
            "{:width$}  {:8}  {:14}  {:6}  {:>20}  {}",
            t.name, t.dtype, shape, verdict, counts, detail
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

/// Checks a tolerance given on the command line, as assert_close would: both
/// or neither, each finite and ≥ 0.
pub fn tolerance_from_args(
    rtol: Option<f64>,
    atol: Option<f64>,
) -> Result<Option<Tolerance>, String> {
    match (rtol, atol) {
        (None, None) => Ok(None),
        (Some(rtol), Some(atol)) => {
            for (name, value) in [("--rtol", rtol), ("--atol", atol)] {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(format!("{name} must be a finite number ≥ 0, got {value}"));
                }
            }
            Ok(Some(Tolerance {
                rtol,
                atol,
                equal_nan: false,
            }))
        }
        _ => Err(
            "give both --rtol and --atol or neither (as torch.testing.assert_close requires)"
                .to_owned(),
        ),
    }
}
