//! The report as the run goes: started before the first trial, rewritten
//! atomically after every one (so it is valid JSON even after `kill -9`),
//! marked interrupted on SIGINT, SIGTERM or SIGHUP, and completed at the end.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use devcheck_report::exit;
use devcheck_report::report::{Interruption, Report, Trial as TrialRecord};

use crate::lock;

/// Collects records and rewrites the report file after each one.
pub(super) struct Sink {
    report: Mutex<Report>,
    path: Option<PathBuf>,
    progress: Option<indicatif::ProgressBar>,
    running: Mutex<Vec<String>>,
}

impl Sink {
    /// A sink for `report`, saved to `path` (none while listing), counting on
    /// `progress`.
    pub(super) fn new(
        report: Report,
        path: Option<PathBuf>,
        progress: Option<indicatif::ProgressBar>,
    ) -> Self {
        Sink {
            report: Mutex::new(report),
            path,
            progress,
            running: Mutex::new(Vec::new()),
        }
    }

    /// Marks the report complete, saves it, and prints the table and where
    /// the report is.
    pub(super) fn finish(&self) {
        if let Some(bar) = &self.progress {
            bar.finish_and_clear();
        }
        let mut report = lock(&self.report);
        report.complete = true;
        self.save(&report);
        eprintln!("\n{}", crate::report::table(&report));
        // Under `cargo devcheck`, this report is one part of the run's report,
        // which cargo devcheck names once.
        if let Some(path) = self
            .path
            .as_ref()
            .filter(|_| std::env::var_os("DEVCHECK_REPORT_PART").is_none())
        {
            eprintln!("report: {}", path.display());
        }
    }

    pub(super) fn start(&self, name: &str) {
        lock(&self.running).push(name.to_owned());
    }

    pub(super) fn record(&self, record: TrialRecord) {
        let mut report = lock(&self.report);
        lock(&self.running).retain(|n| *n != record.name);
        report.push(record);
        self.save(&report);
        if let Some(bar) = &self.progress {
            bar.inc(1);
        }
    }

    /// Marks the report interrupted and saves it: called on SIGINT/SIGTERM/SIGHUP.
    fn interrupt(&self) {
        let mut report = lock(&self.report);
        report.interrupted = Some(Interruption {
            by: "a termination signal (SIGINT, SIGTERM or SIGHUP)".to_owned(),
            in_flight: lock(&self.running).clone(),
        });
        self.save(&report);
        if let Some(bar) = &self.progress {
            bar.abandon();
        }
        if let Some(path) = &self.path {
            eprintln!(
                "\ndevcheck: interrupted; {} trials recorded in {} (marked incomplete)",
                report.trials.len(),
                path.display()
            );
        }
    }

    fn save(&self, report: &Report) {
        if let Some(path) = &self.path {
            if let Err(error) = report.write(path) {
                eprintln!(
                    "warning: could not write the report to {}: {error}",
                    path.display()
                );
            }
        }
    }
}

/// On SIGINT, SIGTERM or SIGHUP, marks the report interrupted and exits with
/// [`exit::INTERRUPTED`].
pub(super) fn exit_on_signals(sink: &Arc<Sink>) {
    if sink.path.is_none() {
        return;
    }
    let on_signal = Arc::clone(sink);
    let installed = ctrlc::try_set_handler(move || {
        on_signal.interrupt();
        exit_now(exit::INTERRUPTED);
    });
    if let Err(error) = installed {
        // Another handler (the embedding program's) stays in charge; the report
        // is still rewritten after every trial, so it stays valid JSON.
        eprintln!("warning: no interrupt handler for the report ({error})");
    }
}

/// Ends the process at once, without running libtorch's static destructors
/// while a trial's thread may still be inside libtorch.
fn exit_now(code: u8) -> ! {
    #[cfg(unix)]
    // SAFETY: `_exit` ends the process; nothing after it runs.
    unsafe {
        libc::_exit(i32::from(code))
    }
    #[cfg(not(unix))]
    std::process::exit(i32::from(code))
}
