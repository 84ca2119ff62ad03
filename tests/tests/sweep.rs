//! `devcheck-matrix sweep` on the CPU: the batch doubles until the memory ceiling, the
//! epoch sweep shows a leak for what it is, and both write JSON and SVG.

use std::path::Path;
use std::process::Output;

use devcheck_tests::command;
use serde_json::Value;

fn sweep(args: &[&str], out: &Path) -> Output {
    command("devcheck", "devcheck-matrix")
        .arg("sweep")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("run devcheck-matrix sweep")
}

fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("written")).expect("valid JSON")
}

#[test]
fn the_batch_doubles_until_the_ceiling_would_be_passed() {
    let dir = tempfile::tempdir().unwrap();
    // The classifier holds 36 MiB of tensors per step at its own batch of 32 (its
    // inputs are 32 × 128 × 768 float64 before conversion): 72 and 144 MiB fit
    // under 200 MiB, 288 would not.
    let output = sweep(
        &[
            "--case",
            "classifier",
            "--device",
            "cpu",
            "--max-memory-mb",
            "200",
            "--timing-ms",
            "30",
        ],
        dir.path(),
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result = read_json(&dir.path().join("classifier-cpu-batch.json"));
    let points = result["sweep"]["points"].as_array().unwrap();
    let sizes: Vec<i64> = points
        .iter()
        .map(|p| p["batch_size"].as_i64().unwrap())
        .collect();
    assert_eq!(sizes, [32, 64, 128]);
    let peaks: Vec<u64> = points
        .iter()
        .map(|p| p["peak_bytes"].as_u64().unwrap())
        .collect();
    assert!(
        peaks.windows(2).all(|w| w[1] > w[0] * 19 / 10),
        "peak memory doubles with the batch: {peaks:?}"
    );
    for point in points {
        assert!(point["samples_per_s"].as_f64().unwrap() > 0.0);
        assert!(point["steps"].as_u64().unwrap() >= 3);
    }
    assert!(
        result["sweep"]["stopped"]
            .as_str()
            .unwrap()
            .starts_with("the next size would need about"),
        "{result}"
    );
    assert_eq!(stdout.lines().count(), 2 + 3 + 1, "{stdout}");
    let svg = std::fs::read_to_string(dir.path().join("classifier-cpu-batch.svg")).unwrap();
    assert!(svg.starts_with("<svg"));
    assert_eq!(
        svg.matches("<circle").count(),
        6,
        "three sizes in two panels"
    );
}

#[test]
fn memory_over_epochs_shows_a_leak_and_a_flat_case() {
    let dir = tempfile::tempdir().unwrap();
    for (case, leaks) in [("fault-memory", true), ("classifier", false)] {
        let output = sweep(
            &["--case", case, "--device", "cpu", "--epochs", "6"],
            dir.path(),
        );
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let result = read_json(&dir.path().join(format!("{case}-cpu-epochs.json")));
        let live: Vec<u64> = result["sweep"]["live_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(live.len(), 6);
        let growth = result["sweep"]["growth"].as_f64().unwrap();
        if leaks {
            assert!(live.windows(2).all(|w| w[1] > w[0]), "{live:?}");
            assert!(growth > 1.0, "{growth}");
        } else {
            assert_eq!(growth, 0.0, "{live:?}");
        }
        let svg =
            std::fs::read_to_string(dir.path().join(format!("{case}-cpu-epochs.svg"))).unwrap();
        assert!(svg.contains("live at epoch end") && svg.contains("peak within epoch"));
    }
}

#[test]
fn an_unknown_case_or_device_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let output = sweep(&["--case", "resnet"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: no case named `resnet`; cases: classifier, cnn, transformer, lstm"),
        "{stderr}"
    );
    let output = sweep(&["--case", "cnn", "--device", "cuda:7"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.starts_with("error: cuda:7"), "{stderr}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
