//! `devcheck-compare`: two safetensors files (from `matrix --dump` on two
//! machines, or written by PyTorch) compared tensor by tensor with
//! `torch.testing.assert_close`'s rules. What `cargo xtask compare` runs.
//!
//! Exit status: 0 all within tolerance, 1 a tensor beyond tolerance or present
//! in one file only, 2 bad input.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

use devcheck::compare_files::{compare_paths, to_json, to_text, tolerance_from_args};

/// Compare two safetensors files tensor by tensor with torch.testing.assert_close's
/// rules (default rtol/atol by dtype, NaN never equal unless --equal-nan).
#[derive(Parser)]
#[command(name = "devcheck-compare", version)]
struct Args {
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

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    let tolerance = match tolerance_from_args(args.rtol, args.atol) {
        Ok(tolerance) => tolerance,
        Err(message) => {
            eprintln!("error: {message}");
            return ExitCode::from(2);
        }
    };
    if let Err(error) = devcheck::init() {
        eprintln!("error: libtorch is not usable: {error}");
        return ExitCode::from(2);
    }
    let (result, expected, actual) =
        match compare_paths(&args.expected, &args.actual, tolerance, args.equal_nan) {
            Ok(found) => found,
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
        };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&to_json(&result, &args.expected, &args.actual))
                .expect("JSON values serialize")
        );
    } else {
        print!(
            "{}",
            to_text(
                &result,
                (&args.expected, &expected),
                (&args.actual, &actual)
            )
        );
    }
    if result.passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
