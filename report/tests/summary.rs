//! Snapshots (in `snapshots/report/`) of the Markdown summary and of a merged
//! report, from the real reports in `tests/fixtures/reports/`.

use std::path::{Path, PathBuf};

use devcheck_report::merge::{merge, Input};
use devcheck_report::report::{self, Report};
use devcheck_report::summary;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("report/ sits in the workspace")
        .to_owned()
}

fn fixture(name: &str) -> Input {
    let path = workspace().join("tests/fixtures/reports").join(name);
    Input {
        // The name a CI job would pass, so the snapshot is the same in any checkout.
        name: format!("reports/{name}"),
        report: report::load(&path).unwrap(),
    }
}

fn merged(names: &[&str]) -> Report {
    let inputs: Vec<Input> = names.iter().map(|n| fixture(n)).collect();
    let merged = merge(&inputs).unwrap();
    assert!(merged.warnings.is_empty(), "{:?}", merged.warnings);
    merged.report
}

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(workspace().join("snapshots/report"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

#[test]
fn summary_of_a_cpu_only_report() {
    let text = summary::markdown(&fixture("vm-cpu.json").report);
    settings().bind(|| insta::assert_snapshot!("summary-vm-cpu.md", text));
}

#[test]
fn summary_of_cpu_and_h100_merged() {
    let text = summary::markdown(&merged(&["vm-cpu-at-00ee538f.json", "h100-cuda.json"]));
    settings().bind(|| insta::assert_snapshot!("summary-vm-cpu+h100.md", text));
}

#[test]
fn summary_of_three_machines_with_failures() {
    let text = summary::markdown(&merged(&[
        "vm-cpu-at-00ee538f.json",
        "h100-cuda.json",
        "mac-mps.json",
    ]));
    settings().bind(|| insta::assert_snapshot!("summary-vm-cpu+h100+mac.md", text));
}

/// The merged report's layout: machines with their sources and environment, and
/// the trials of one case tagged with their machine. The other cases' trials and
/// every trial's metrics are figures of the inputs, kept verbatim, so they are
/// redacted to keep the snapshot readable; the library paths are per host.
#[test]
fn merged_report_layout() {
    let mut report = merged(&["vm-cpu-at-00ee538f.json", "h100-cuda.json"]);
    report.trials.retain(|t| t.case == "classifier");
    settings().bind(|| {
        insta::assert_json_snapshot!("merged-vm-cpu+h100.json", report, {
            ".trials[].metrics" => "[metrics]",
            ".trials[].duration_ms" => "[duration]",
            ".machines[].environment.libtorch_lib_dir" => "[libtorch lib dir]",
        })
    });
}
