//! `--summary markdown`: a report as compact GitHub Markdown for a pull-request
//! comment or `$GITHUB_STEP_SUMMARY`.

use std::fmt::Write as _;

use std::path::Path;

use crate::device_matrix::{describe, mark, DeviceMatrix};
use crate::report::Report;

/// Failures listed openly up to this many; more go inside `<details>`.
const OPEN_FAILURES: usize = 5;
/// Longest failure message shown, in characters.
const MESSAGE_CHARS: usize = 300;

/// The shapes a summary comes in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SummaryFormat {
    /// GitHub-flavoured Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`.
    Markdown,
}

impl std::str::FromStr for SummaryFormat {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "markdown" => Ok(SummaryFormat::Markdown),
            other => Err(format!(
                "unknown summary format `{other}`: expected `markdown`"
            )),
        }
    }
}

/// The report in the format asked for.
pub fn render(format: SummaryFormat, report: &Report) -> String {
    match format {
        SummaryFormat::Markdown => markdown(report),
    }
}

/// What stands in for the summary when the run left no report to read (the
/// build failed, or the matrix stopped before its first trial).
pub fn no_report(format: SummaryFormat, shown: &Path) -> String {
    match format {
        SummaryFormat::Markdown => format!(
            "### devcheck: no report\n\nThe matrix wrote no report at `{}`; see the job's log.\n",
            code(&shown.display().to_string())
        ),
    }
}

/// The report as Markdown: totals, the matrix with the headline figures, the
/// failures with their causes, devices not run, and the machines.
pub fn markdown(report: &Report) -> String {
    let matrix = DeviceMatrix::new(report);
    let mut out = String::new();
    let _ = write!(
        out,
        "### devcheck: {} passed, {} failed, {} not run",
        matrix.passed, matrix.failed, matrix.not_run_count
    );
    if let Some(interruption) = &report.interrupted {
        match interruption.in_flight.as_slice() {
            [] => out.push_str(" (interrupted: trials are missing)"),
            running => {
                let names: Vec<String> = running.iter().map(|n| format!("`{n}`")).collect();
                let _ = write!(
                    out,
                    " (interrupted during {}: trials are missing)",
                    names.join(", ")
                );
            }
        }
    } else if !report.complete {
        out.push_str(" (incomplete: trials may be missing)");
    }
    out.push_str("\n\n");

    if !matrix.rows.is_empty() {
        out.push_str("| case | device |");
        for check in &matrix.checks {
            let _ = write!(out, " {check} |");
        }
        out.push_str(" worst Δ | readbacks/step | step (ms) |\n| --- | --- |");
        out.push_str(&" :-: |".repeat(matrix.checks.len()));
        out.push_str(" ---: | ---: | ---: |\n");
        for row in &matrix.rows {
            let _ = write!(out, "| {} | {} |", escape(&row.case), escape(&row.device));
            for (_, cell) in &row.cells {
                let _ = write!(out, " {} |", mark(*cell));
            }
            let worst = row.trial("tolerance").and_then(|t| t.worst_difference());
            let readbacks = row
                .trial("readbacks")
                .and_then(|t| t.max_readbacks_per_step());
            let step = row.trial("timing").and_then(|t| t.honest_median_ms());
            let _ = writeln!(
                out,
                " {} | {} | {} |",
                worst.map_or("–".to_owned(), scientific),
                readbacks.map_or("–".to_owned(), |n| n.to_string()),
                step.map_or("–".to_owned(), milliseconds),
            );
        }
        out.push('\n');
        for caveat in matrix.caveats_shown() {
            let _ = writeln!(out, "{}\n", caveat.legend());
        }
    }

    if !matrix.failures.is_empty() {
        let several_machines = matrix.machines.len() > 1;
        let mut list = String::new();
        for (_, trial) in &matrix.failures {
            let _ = write!(list, "- `{}`", code(&trial.name));
            if several_machines {
                let _ = write!(list, " on `{}`", code(report.machine_of(trial)));
            }
            let _ = writeln!(list, ": {}", escape(&clip(&trial.message)));
        }
        if matrix.failures.len() > OPEN_FAILURES {
            let _ = write!(
                out,
                "<details><summary>{} failed trials</summary>\n\n{list}\n</details>\n\n",
                matrix.failures.len()
            );
        } else {
            let _ = write!(out, "**Failed:**\n\n{list}\n");
        }
    }

    if !matrix.not_run.is_empty() {
        let devices: Vec<String> = matrix
            .not_run
            .iter()
            .map(|n| format!("`{}` ({})", code(&n.device), escape(&clip(&n.reason))))
            .collect();
        let _ = writeln!(out, "**Not run:** {}\n", devices.join("; "));
    }
    if !matrix.cases_without_trials.is_empty() {
        let cases: Vec<String> = matrix
            .cases_without_trials
            .iter()
            .map(|c| format!("`{}`", code(c)))
            .collect();
        let _ = writeln!(out, "**Cases never reached:** {}\n", cases.join(", "));
    }
    let machines: Vec<String> = matrix
        .machines
        .iter()
        .map(|m| {
            let host = if m.id == m.environment.host {
                String::new()
            } else {
                format!(" (host `{}`)", code(&m.environment.host))
            };
            format!("`{}`{host}: {}", code(&m.id), escape(&describe(m)))
        })
        .collect();
    match machines.as_slice() {
        [] => {}
        [machine] => {
            let _ = writeln!(out, "**Machine:** {machine}");
        }
        several => {
            out.push_str("**Machines:**\n\n");
            for machine in several {
                let _ = writeln!(out, "- {machine}");
            }
        }
    }
    out
}

/// `1.8e-7`; `0` for an exact match.
fn scientific(value: f64) -> String {
    if value == 0.0 {
        "0".to_owned()
    } else {
        format!("{value:.1e}")
    }
}

/// About three significant digits: `0.155`, `2.31`, `12.3`, `184`.
fn milliseconds(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 100.0 {
        format!("{value:.0}")
    } else if magnitude >= 10.0 {
        format!("{value:.1}")
    } else if magnitude >= 1.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.3}")
    }
}

/// Text safe in a table cell or a list item: one line, no table breaks, no
/// inline code or HTML started by accident.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '|' => out.push_str("\\|"),
            '`' => out.push_str("\\`"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\r' => {}
            '\n' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Text inside backticks: one line, no backtick to end it early.
fn code(text: &str) -> String {
    text.replace(['`', '\n', '\r'], "'").replace('|', "\\|")
}

fn clip(message: &str) -> String {
    match message.char_indices().nth(MESSAGE_CHARS) {
        Some((at, _)) => format!("{}…", message[..at].trim_end()),
        None => message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::fixtures::{linux, one_machine};
    use crate::report::{Outcome, Trial};
    use serde_json::{json, Map};

    fn trial(check: &str, outcome: Outcome, message: &str, metrics: serde_json::Value) -> Trial {
        Trial {
            name: format!("net::{check}::cpu"),
            case: "net".into(),
            check: check.into(),
            device: "cpu".into(),
            outcome,
            message: message.into(),
            metrics,
            caveat: None,
            machine: None,
            dtype: None,
            duration_ms: None,
            rest: Map::new(),
        }
    }

    fn report(trials: Vec<Trial>) -> Report {
        one_machine(linux("ci", None, Map::new()), trials)
    }

    #[test]
    fn figures_come_from_the_metrics() {
        let summary = markdown(&report(vec![
            trial(
                "tolerance",
                Outcome::Passed,
                "",
                json!({"drift_per_step": [1.2e-7, 1.76e-7]}),
            ),
            trial(
                "readbacks",
                Outcome::Passed,
                "",
                json!({"readbacks_per_step": [1, 3, 2]}),
            ),
            trial(
                "timing",
                Outcome::Passed,
                "",
                json!({"honest": {"median_ms": 12.345}}),
            ),
        ]));
        assert!(
            summary.contains("| net | cpu | – | ✓ | ✓ | ✓ | – | – | 1.8e-7 | 3 | 12.3 |\n"),
            "{summary}"
        );
        assert!(summary.starts_with("### devcheck: 3 passed, 0 failed, 0 not run\n"));
        assert!(
            summary.ends_with("**Machine:** `ci`: linux/x86_64, torch 2.11.0, commit unknown\n")
        );
    }

    #[test]
    fn absent_figures_show_a_dash() {
        let summary = markdown(&report(vec![trial(
            "tolerance",
            Outcome::Failed,
            "boom",
            json!({}),
        )]));
        assert!(
            summary.contains("| net | cpu | – | ✗ | – | – | – | – | – | – | – |\n"),
            "{summary}"
        );
    }

    #[test]
    fn failure_messages_are_escaped_and_clipped() {
        let long = format!("a|b `c` <d>\nnext {}", "x".repeat(400));
        let summary = markdown(&report(vec![trial(
            "memory",
            Outcome::Failed,
            &long,
            json!({}),
        )]));
        let line = summary
            .lines()
            .find(|l| l.starts_with("- `net::memory::cpu`"))
            .unwrap();
        assert!(
            line.starts_with("- `net::memory::cpu`: a\\|b \\`c\\` &lt;d&gt; next xxx"),
            "{line}"
        );
        assert!(line.ends_with("x…"), "{line}");
        // 300 characters of the message were kept: 17 before the run of x's.
        let kept_xs = line.split("next ").nth(1).unwrap().trim_end_matches('…');
        assert_eq!(kept_xs.len(), 300 - 17);
    }

    #[test]
    fn many_failures_fold_into_details() {
        let trials = crate::report::CHECKS
            .iter()
            .map(|c| trial(c, Outcome::Failed, "bad", json!({})))
            .collect();
        let summary = markdown(&report(trials));
        assert!(
            summary.contains(
                "<details><summary>8 failed trials</summary>\n\n- `net::placement::cpu`: bad\n"
            ),
            "{summary}"
        );
        assert!(!summary.contains("**Failed:**"));
    }

    #[test]
    fn an_interrupted_run_says_so() {
        let mut report = report(vec![trial("timing", Outcome::Passed, "", json!({}))]);
        report.complete = false;
        assert!(markdown(&report).starts_with(
            "### devcheck: 1 passed, 0 failed, 0 not run (incomplete: trials may be missing)\n"
        ));
        report.interrupted = Some(crate::report::Interruption {
            by: "a termination signal (SIGINT, SIGTERM or SIGHUP)".into(),
            in_flight: vec!["net::memory::cpu".into()],
        });
        report.cases = Some(vec!["net".into(), "lstm".into()]);
        let summary = markdown(&report);
        assert!(
            summary.starts_with(
                "### devcheck: 1 passed, 0 failed, 0 not run (interrupted during `net::memory::cpu`: trials are missing)\n"
            ),
            "{summary}"
        );
        assert!(
            summary.contains("**Cases never reached:** `lstm`\n"),
            "{summary}"
        );
    }

    #[test]
    fn a_missing_report_still_gives_a_summary() {
        assert_eq!(
            no_report(SummaryFormat::Markdown, Path::new("reports/cpu.json")),
            "### devcheck: no report\n\nThe matrix wrote no report at `reports/cpu.json`; see the job's log.\n"
        );
    }

    #[test]
    fn step_times_keep_about_three_digits() {
        assert_eq!(milliseconds(0.1548275), "0.155");
        assert_eq!(milliseconds(2.3149), "2.31");
        assert_eq!(milliseconds(184.4), "184");
        assert_eq!(scientific(1.755317082796637e-07), "1.8e-7");
        assert_eq!(scientific(0.0), "0");
    }

    #[test]
    fn devices_not_run_survive_a_merge_of_nextest_fragments() {
        // nextest runs one trial per process: the fragments hold no ignored
        // trials, only the devices their machine could not run.
        let fragment = |check: &str| {
            let mut part = report(vec![trial(check, Outcome::Passed, "", json!({}))]);
            part.cases = Some(vec!["net".into()]);
            part.devices_not_run = Some(vec![crate::report::DeviceNotRun {
                device: "cuda:0".into(),
                reason: "cuda: built, but no usable GPU or driver".into(),
            }]);
            part
        };
        let inputs = [
            crate::merge::Input {
                name: "a.json".into(),
                report: fragment("placement"),
            },
            crate::merge::Input {
                name: "b.json".into(),
                report: fragment("memory"),
            },
        ];
        let merged = crate::merge::merge(&inputs).unwrap().report;
        let summary = markdown(&merged);
        assert!(
            summary.contains("**Not run:** `cuda:0` (cuda: built, but no usable GPU or driver)"),
            "{summary}"
        );
        assert!(
            summary.starts_with("### devcheck: 2 passed, 0 failed, 6 not run"),
            "{summary}"
        );
    }
}
