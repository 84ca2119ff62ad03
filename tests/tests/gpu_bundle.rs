//! `cargo xtask gpu-bundle` end to end: the folder stays under 60 MiB, and its
//! `run.sh` runs the matrix here on the CPU with the libtorch it is pointed at.

use std::path::PathBuf;
use std::process::Command;

use devcheck_tests::{binary, workspace_root};

fn libtorch_lib() -> PathBuf {
    let root =
        std::env::var_os("LIBTORCH").expect("run under `cargo xtask test`, which sets LIBTORCH");
    PathBuf::from(root).join("lib")
}

#[test]
fn the_bundle_is_small_and_runs_here_on_the_cpu() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("bundle");
    let xtask = binary("xtask", "xtask");
    let built = Command::new(xtask)
        .args(["gpu-bundle", "--out"])
        .arg(&out)
        .current_dir(workspace_root())
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );

    let size: u64 = walk(&out).iter().map(|f| f.metadata().unwrap().len()).sum();
    assert!(size <= 60 * 1024 * 1024, "bundle is {size} bytes");
    for file in [
        "run.sh",
        "cargo-devcheck",
        "TARGETS",
        "bin/devcheck-devcheck-matrix",
        "snapshots/devcheck-devcheck-matrix/readbacks__cnn.snap",
    ] {
        assert!(out.join(file).is_file(), "missing {file}");
    }

    let report = dir.path().join("report.json");
    let run = Command::new(out.join("run.sh"))
        .args(["--device", "cpu", "--report"])
        .arg(&report)
        .arg("classifier::readbacks::cpu")
        .env("DEVCHECK_LIBTORCH_LIB", libtorch_lib())
        .env_remove("LD_LIBRARY_PATH")
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
    assert_eq!(report["trials"][0]["name"], "classifier::readbacks::cpu");
    assert_eq!(report["trials"][0]["outcome"], "passed");
    assert_eq!(
        report["environment"]["env"]["PYTORCH_ENABLE_MPS_FALLBACK"],
        "1"
    );
    let commit = std::fs::read_to_string(out.join("COMMIT")).unwrap();
    assert_eq!(report["environment"]["git_commit"], commit.trim());

    // The other verbs are the same binary's, with the same libtorch.
    let fixture = workspace_root().join("tests/fixtures/compare/expected.safetensors");
    let compare = Command::new(out.join("run.sh"))
        .arg("compare")
        .args([&fixture, &fixture])
        .arg("--equal-nan")
        .env("DEVCHECK_LIBTORCH_LIB", libtorch_lib())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert_eq!(
        compare.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&compare.stderr)
    );
    assert!(String::from_utf8_lossy(&compare.stdout).ends_with("all 16 tensors within tolerance\n"));
    let sweep = Command::new(out.join("run.sh"))
        .args(["sweep", "--list"])
        .env("DEVCHECK_LIBTORCH_LIB", libtorch_lib())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(sweep.status.success());
    assert!(String::from_utf8_lossy(&sweep.stdout)
        .lines()
        .any(|l| l == "transformer"));

    let cost = Command::new(out.join("run.sh"))
        .args(["observer-cost", "--device", "cpu", "--ms", "20"])
        .env("DEVCHECK_LIBTORCH_LIB", libtorch_lib())
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        cost.status.success(),
        "{}",
        String::from_utf8_lossy(&cost.stderr)
    );
    let table = String::from_utf8_lossy(&cost.stdout);
    assert!(table.starts_with("case "), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("transformer    cpu")),
        "{table}"
    );

    let lost = Command::new(out.join("run.sh"))
        .env("DEVCHECK_LIBTORCH_LIB", dir.path().join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(lost.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&lost.stderr);
    assert!(stderr.contains("set DEVCHECK_LIBTORCH_LIB"), "{stderr}");
}

fn walk(dir: &std::path::Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
