//! The `compare` command's behaviour, apart from parsing its arguments: what it
//! prints and the exit status it ends with, so that a command line is one call.
//!
//! Exit status: 0 all within tolerance, 1 a tensor beyond tolerance or present
//! in one file only, 2 bad input (the error, printed as `error: {error}` on
//! stderr with nothing on stdout).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use thiserror::Error;

use crate::assert_close::Tolerance;
use crate::compare_files::{compare_paths, to_json, to_text};
use crate::dump::DumpError;

/// Every tensor is within tolerance and both files hold the same names.
pub const EXIT_PASSED: u8 = crate::exit::SUCCESS;
/// A tensor is beyond tolerance, not comparable, or in one file only.
pub const EXIT_FAILED: u8 = crate::exit::FAILURE;
/// The arguments or the files are unusable.
pub const EXIT_BAD_INPUT: u8 = crate::exit::USAGE;

/// The `compare` command's arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareArgs {
    /// The reference file (for example the CPU run's dump).
    pub expected: PathBuf,
    /// The file checked against it (for example the MPS run's dump).
    pub actual: PathBuf,
    /// Print one JSON document instead of the table.
    pub json: bool,
    /// Relative tolerance for every tensor (needs `atol` too).
    pub rtol: Option<f64>,
    /// Absolute tolerance for every tensor (needs `rtol` too).
    pub atol: Option<f64>,
    /// Count NaN in the same place on both sides as equal.
    pub equal_nan: bool,
}

/// What the command prints on stdout and the status it exits with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareOutput {
    /// The table or the JSON document, ending in a newline.
    pub stdout: String,
    /// [`EXIT_PASSED`] or [`EXIT_FAILED`].
    pub exit_code: u8,
}

/// A tolerance given on the command line that assert_close would refuse.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ToleranceArgsError {
    /// Only one of the two.
    #[error("give both --rtol and --atol or neither (as torch.testing.assert_close requires)")]
    OnlyOne,
    /// Negative, NaN or infinite.
    #[error("{flag} must be a finite number ≥ 0, got {value}")]
    Invalid {
        /// `--rtol` or `--atol`.
        flag: &'static str,
        /// The value given.
        value: f64,
    },
}

/// Why the command could not compare (exit status [`EXIT_BAD_INPUT`]).
#[derive(Debug, Error)]
pub enum CompareCommandError {
    /// The tolerance flags.
    #[error(transparent)]
    Tolerance(#[from] ToleranceArgsError),
    /// A file that cannot be read as a dump.
    #[error(transparent)]
    Dump(#[from] DumpError),
}

impl CompareCommandError {
    /// The exit status for this error: always [`EXIT_BAD_INPUT`].
    pub fn exit_code(&self) -> u8 {
        EXIT_BAD_INPUT
    }
}

/// Checks a tolerance given on the command line, as assert_close would: both
/// or neither, each finite and ≥ 0.
pub fn tolerance_from_args(
    rtol: Option<f64>,
    atol: Option<f64>,
) -> Result<Option<Tolerance>, ToleranceArgsError> {
    match (rtol, atol) {
        (None, None) => Ok(None),
        (Some(rtol), Some(atol)) => {
            for (flag, value) in [("--rtol", rtol), ("--atol", atol)] {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(ToleranceArgsError::Invalid { flag, value });
                }
            }
            Ok(Some(Tolerance {
                rtol,
                atol,
                equal_nan: false,
            }))
        }
        _ => Err(ToleranceArgsError::OnlyOne),
    }
}

/// Runs `compare`: checks the tolerance, reads both files, compares them and
/// renders the table (or, with `json`, the pretty-printed JSON document).
pub fn run_compare(args: &CompareArgs) -> Result<CompareOutput, CompareCommandError> {
    let tolerance = tolerance_from_args(args.rtol, args.atol)?;
    let (result, expected, actual) =
        compare_paths(&args.expected, &args.actual, tolerance, args.equal_nan)?;
    let stdout = if args.json {
        let document = to_json(&result, &args.expected, &args.actual);
        let mut text = serde_json::to_string_pretty(&document).expect("JSON values serialize");
        text.push('\n');
        text
    } else {
        to_text(
            &result,
            (&args.expected, &expected),
            (&args.actual, &actual),
        )
    };
    Ok(CompareOutput {
        stdout,
        exit_code: if result.passed {
            EXIT_PASSED
        } else {
            EXIT_FAILED
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_tolerances_or_neither() {
        assert_eq!(tolerance_from_args(None, None), Ok(None));
        let tolerance = tolerance_from_args(Some(0.01), Some(0.0)).unwrap().unwrap();
        assert_eq!(
            (tolerance.rtol, tolerance.atol, tolerance.equal_nan),
            (0.01, 0.0, false)
        );
        for (rtol, atol) in [(Some(0.1), None), (None, Some(0.1))] {
            let error = tolerance_from_args(rtol, atol).unwrap_err();
            assert_eq!(error, ToleranceArgsError::OnlyOne);
            assert_eq!(
                error.to_string(),
                "give both --rtol and --atol or neither (as torch.testing.assert_close requires)"
            );
        }
    }

    #[test]
    fn negative_nan_and_infinite_tolerances_are_refused() {
        let message = |rtol, atol| {
            tolerance_from_args(Some(rtol), Some(atol))
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            message(-1.0, 0.0),
            "--rtol must be a finite number ≥ 0, got -1"
        );
        assert_eq!(
            message(f64::NAN, 0.0),
            "--rtol must be a finite number ≥ 0, got NaN"
        );
        assert_eq!(
            message(0.0, f64::INFINITY),
            "--atol must be a finite number ≥ 0, got inf"
        );
        assert_eq!(
            message(0.0, -0.5),
            "--atol must be a finite number ≥ 0, got -0.5"
        );
    }
}

/// Compare two safetensors files (a matrix `--dump`, or written by PyTorch)
/// tensor by tensor with torch.testing.assert_close's rules (default rtol/atol
/// by dtype, NaN never equal unless --equal-nan). Needs no libtorch.
///
/// Exit status: 0 all within tolerance, 1 a tensor beyond tolerance or in one
/// file only, 2 bad input.
#[derive(Debug, clap::Parser)]
struct CommandLine {
    /// The reference file (for example the CPU run's dump).
    expected: PathBuf,
    /// The file checked against it (for example the MPS run's dump).
    actual: PathBuf,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Relative tolerance for every tensor (needs --atol too).
    #[arg(long, allow_negative_numbers = true)]
    rtol: Option<f64>,
    /// Absolute tolerance for every tensor (needs --rtol too).
    #[arg(long, allow_negative_numbers = true)]
    atol: Option<f64>,
    /// Count NaN in the same place on both sides as equal.
    #[arg(long)]
    equal_nan: bool,
}

/// Runs the `compare` command line `args` (the program's name first), printing
/// and exiting as documented on [`EXIT_PASSED`], [`EXIT_FAILED`] and
/// [`EXIT_BAD_INPUT`]: what `cargo devcheck compare` and a devcheck test
/// binary's `compare` verb do.
pub fn main<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let parsed = match <CommandLine as clap::Parser>::try_parse_from(args) {
        Ok(parsed) => parsed,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() {
                EXIT_BAD_INPUT
            } else {
                EXIT_PASSED
            });
        }
    };
    let args = CompareArgs {
        expected: parsed.expected,
        actual: parsed.actual,
        json: parsed.json,
        rtol: parsed.rtol,
        atol: parsed.atol,
        equal_nan: parsed.equal_nan,
    };
    match run_compare(&args) {
        Ok(output) => {
            print!("{}", output.stdout);
            ExitCode::from(output.exit_code)
        }
        Err(error) => {
            eprintln!("error: {error}");
            ExitCode::from(error.exit_code())
        }
    }
}
