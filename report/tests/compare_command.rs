//! The `compare` command as a command line runs it ([`run_compare`]): the
//! table and the JSON document (snapshots, byte for byte what
//! `devcheck-compare` prints), exit statuses, and the errors for bad input.

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use devcheck_report::cli::{
    run_compare, CompareArgs, CompareCommandError, ToleranceArgsError, EXIT_BAD_INPUT, EXIT_FAILED,
    EXIT_PASSED,
};
use devcheck_report::dump::{keys, DumpError};
use safetensors::tensor::{Dtype, View};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("report/ is in the workspace")
        .to_owned()
}

/// The files PyTorch wrote for `tests/tests/compare.rs`, named relative to
/// this crate (tests run in `report/`), so that snapshots name them the same
/// on every machine.
fn pytorch_file(name: &str) -> PathBuf {
    Path::new("../tests/fixtures/compare").join(name)
}

fn args(expected: PathBuf, actual: PathBuf) -> CompareArgs {
    CompareArgs {
        expected,
        actual,
        json: false,
        rtol: None,
        atol: None,
        equal_nan: false,
    }
}

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(workspace().join("snapshots/report"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

#[test]
fn table_of_files_written_by_pytorch() {
    let output = run_compare(&args(
        pytorch_file("expected.safetensors"),
        pytorch_file("actual.safetensors"),
    ))
    .unwrap();
    assert_eq!(output.exit_code, EXIT_FAILED);
    assert!(output
        .stdout
        .ends_with("13 of 17 tensors beyond tolerance or not comparable\n"));
    settings().bind(|| insta::assert_snapshot!("compare-pytorch-files.table", output.stdout));
}

#[test]
fn json_of_files_written_by_pytorch_with_a_tolerance() {
    let output = run_compare(&CompareArgs {
        json: true,
        rtol: Some(0.01),
        atol: Some(0.001),
        ..args(
            pytorch_file("expected.safetensors"),
            pytorch_file("actual.safetensors"),
        )
    })
    .unwrap();
    assert_eq!(output.exit_code, EXIT_FAILED);
    assert!(output.stdout.ends_with("}\n"), "one document and a newline");
    settings().bind(|| insta::assert_snapshot!("compare-pytorch-files.json", output.stdout));
}

/// A tensor as safetensors serializes it.
struct Raw {
    dtype: Dtype,
    shape: Vec<usize>,
    data: Vec<u8>,
}

impl View for &Raw {
    fn dtype(&self) -> Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(&self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

/// A trajectory dump as `matrix --dump` writes one: float32 tensors per step
/// and the case, device, dtype, torch, host and commit in its metadata.
fn write_dump(path: &Path, device: &str, host: &str, tensors: &[(&str, Vec<usize>, Vec<f32>)]) {
    let raw: Vec<(&str, Raw)> = tensors
        .iter()
        .map(|(name, shape, values)| {
            let data = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            let shape = shape.clone();
            (
                *name,
                Raw {
                    dtype: Dtype::F32,
                    shape,
                    data,
                },
            )
        })
        .collect();
    let metadata = HashMap::from([
        (keys::CASE.to_owned(), "net".to_owned()),
        (keys::DEVICE.to_owned(), device.to_owned()),
        (keys::DTYPE.to_owned(), "float32".to_owned()),
        (keys::STEPS.to_owned(), "11".to_owned()),
        (keys::TORCH.to_owned(), "2.11.0".to_owned()),
        (keys::HOST.to_owned(), host.to_owned()),
        (keys::COMMIT.to_owned(), "0123abc".to_owned()),
    ]);
    let bytes =
        safetensors::tensor::serialize(raw.iter().map(|(n, t)| (*n, t)), &Some(metadata)).unwrap();
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn table_of_two_trajectory_dumps_names_their_origin() {
    let dir = tempfile::tempdir().unwrap();
    let (cpu, mps) = (
        dir.path().join("cpu.safetensors"),
        dir.path().join("mps.safetensors"),
    );
    let weight: Vec<f32> = (0..12).map(|i| i as f32 / 7.0).collect();
    let mut drifted = weight.clone();
    drifted[7] += 2e-4;
    write_dump(
        &cpu,
        "cpu",
        "vm",
        &[
            ("step10.loss", vec![], vec![0.25]),
            ("step2.loss", vec![], vec![std::f32::consts::LN_2]),
            ("step2.param.fc.weight", vec![3, 4], weight.clone()),
            ("step2.grad.fc.bias", vec![3], vec![0.0, 1.0, -1.0]),
        ],
    );
    write_dump(
        &mps,
        "mps",
        "mac",
        &[
            ("step10.loss", vec![], vec![0.25]),
            ("step2.loss", vec![], vec![0.6932]),
            ("step2.param.fc.weight", vec![3, 4], drifted),
            ("step2.grad.fc.bias", vec![1, 3], vec![0.0, 1.0, -1.0]),
            ("step2.output.logits", vec![2], vec![0.5, 0.5]),
        ],
    );
    let output = run_compare(&args(cpu, mps)).unwrap();
    assert_eq!(output.exit_code, EXIT_FAILED);
    let text = output
        .stdout
        .replace(&dir.path().display().to_string(), "[dir]");
    settings().bind(|| insta::assert_snapshot!("compare-trajectory-dumps.table", text));
}

#[test]
fn identical_files_pass_only_with_equal_nan_when_they_hold_nan() {
    let file = pytorch_file("expected.safetensors");
    let strict = run_compare(&args(file.clone(), file.clone())).unwrap();
    // NaN never equals NaN without --equal-nan, as in assert_close.
    assert_eq!(strict.exit_code, EXIT_FAILED);
    assert!(strict.stdout.starts_with(&format!(
        "expected: {}\nactual:   {}\n",
        file.display(),
        file.display()
    )));
    let lenient = run_compare(&CompareArgs {
        equal_nan: true,
        ..args(file.clone(), file)
    })
    .unwrap();
    assert_eq!(lenient.exit_code, EXIT_PASSED);
    assert!(
        lenient
            .stdout
            .ends_with("all 16 tensors within tolerance\n"),
        "{}",
        lenient.stdout
    );
}

fn error(arguments: CompareArgs) -> CompareCommandError {
    let error = run_compare(&arguments).unwrap_err();
    assert_eq!(error.exit_code(), EXIT_BAD_INPUT);
    error
}

#[test]
fn a_missing_file_is_named() {
    let missing = Path::new("no/such/file.safetensors").to_owned();
    let error = error(args(pytorch_file("expected.safetensors"), missing));
    assert!(
        matches!(&error, CompareCommandError::Dump(DumpError::Io { path, source })
            if path.ends_with("no/such/file.safetensors") && source.kind() == std::io::ErrorKind::NotFound),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "no/such/file.safetensors: No such file or directory (os error 2)"
    );
}

#[test]
fn a_file_that_is_not_safetensors_is_named() {
    let not_safetensors = pytorch_file("assert_close.json");
    let error = error(args(pytorch_file("expected.safetensors"), not_safetensors));
    assert!(
        matches!(error, CompareCommandError::Dump(DumpError::Format { .. })),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "../tests/fixtures/compare/assert_close.json: not a safetensors file (HeaderTooLarge)"
    );
}

#[test]
fn one_tolerance_without_the_other_is_refused_before_any_file_is_read() {
    let missing = || Path::new("no/such/file.safetensors").to_owned();
    for (rtol, atol) in [(Some(0.1), None), (None, Some(0.1))] {
        let error = error(CompareArgs {
            rtol,
            atol,
            ..args(missing(), missing())
        });
        assert!(
            matches!(
                error,
                CompareCommandError::Tolerance(ToleranceArgsError::OnlyOne)
            ),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "give both --rtol and --atol or neither (as torch.testing.assert_close requires)"
        );
    }
}

#[test]
fn negative_or_nan_tolerances_are_refused() {
    let file = || pytorch_file("expected.safetensors");
    for (rtol, atol, message) in [
        (-1.0, 0.0, "--rtol must be a finite number ≥ 0, got -1"),
        (f64::NAN, 0.0, "--rtol must be a finite number ≥ 0, got NaN"),
        (0.0, -1e-3, "--atol must be a finite number ≥ 0, got -0.001"),
    ] {
        let error = error(CompareArgs {
            rtol: Some(rtol),
            atol: Some(atol),
            ..args(file(), file())
        });
        assert!(
            matches!(
                error,
                CompareCommandError::Tolerance(ToleranceArgsError::Invalid { .. })
            ),
            "{error:?}"
        );
        assert_eq!(error.to_string(), message);
    }
}
