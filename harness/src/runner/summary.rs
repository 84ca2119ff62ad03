//! `--summary FORMAT`: the matrix's own output goes to stderr and the summary
//! of its report to stdout, for `>> "$GITHUB_STEP_SUMMARY"`.

use std::process::ExitCode;

use devcheck_report::exit;
use devcheck_report::summary::SummaryFormat;

use crate::case::Case;

use super::settings::Options;

/// Runs the matrix with stdout moved to stderr, then prints its report's
/// summary (a report of its own without `--report`).
pub(super) fn run_summarized(
    cases: Vec<Case>,
    mut options: Options,
    format: SummaryFormat,
) -> ExitCode {
    let scratch;
    let report = match &options.report {
        Some(path) => path.clone(),
        None => {
            scratch = match tempfile::Builder::new().suffix(".json").tempfile() {
                Ok(file) => file.into_temp_path(),
                Err(error) => {
                    eprintln!("error: cannot make a report file for the summary: {error}");
                    return ExitCode::from(exit::USAGE);
                }
            };
            let _ = std::fs::remove_file(&scratch);
            options.report = Some(scratch.to_path_buf());
            scratch.to_path_buf()
        }
    };
    let code = {
        let _stdout = StdoutToStderr::new();
        super::run_matrix(cases, options)
    };
    match devcheck_report::report::load(&report) {
        Ok(loaded) => print!("{}", devcheck_report::summary::render(format, &loaded)),
        Err(error) => {
            eprintln!("error: no summary: {error}");
            print!("{}", devcheck_report::summary::no_report(format, &report));
        }
    }
    code
}

/// While alive, what is written to stdout goes to stderr (file descriptor 1
/// points at 2), so that stdout carries only the summary.
struct StdoutToStderr {
    #[cfg(unix)]
    saved: Option<std::os::fd::OwnedFd>,
}

impl StdoutToStderr {
    fn new() -> Self {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        {
            use std::os::fd::{AsFd, AsRawFd};
            let saved = std::io::stdout().as_fd().try_clone_to_owned().ok();
            // SAFETY: dup2 on two open descriptors of this process.
            if saved.is_some() && unsafe { libc::dup2(std::io::stderr().as_raw_fd(), 1) } < 0 {
                return Self { saved: None };
            }
            Self { saved }
        }
        #[cfg(not(unix))]
        Self {}
    }
}

impl Drop for StdoutToStderr {
    fn drop(&mut self) {
        use std::io::Write as _;
        let _ = std::io::stdout().flush();
        #[cfg(unix)]
        if let Some(saved) = self.saved.take() {
            use std::os::fd::AsRawFd;
            // SAFETY: as in `new`.
            unsafe { libc::dup2(saved.as_raw_fd(), 1) };
        }
    }
}
