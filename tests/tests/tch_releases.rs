//! The user crate of `user_crate.rs` on the oldest and the newest tch releases
//! devcheck serves (0.13 with libtorch 2.0, 0.26 with libtorch 2.13), as a user
//! on that release meets devcheck: `cargo devcheck matrix` with nothing set by
//! hand (no `LIBTORCH`), which reads the workspace's tch, provisions the
//! libtorch its torch-sys builds with (cached per release), builds the crate
//! and names the same host reads at the same lines as on tch 0.24.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use devcheck_tests::{target_dir, user_crate_copy, user_crate_line, workspace_root};

/// The fixture as a repository of its own on tch `release`: its sources, its
/// manifest with that tch (and devcheck by absolute path), and the lockfile
/// kept for that release, in `target/tch-releases/<release>/<name>` (one name
/// per test: tests run in parallel). Each release builds in its own target
/// directory beside it, kept between runs.
fn user_crate_on(release: &str, name: &str) -> PathBuf {
    let root = target_dir().join("tch-releases").join(release);
    let repo = root.join(name);
    user_crate_copy(&repo, |manifest| {
        let manifest = manifest.replace("tch = \"=0.24.0\"", &format!("tch = \"={release}\""));
        assert!(manifest.contains(&format!("tch = \"={release}\"")));
        manifest
    });
    let lock = workspace_root().join(format!("tests/fixtures/tch-releases/{release}.lock"));
    std::fs::copy(&lock, repo.join("Cargo.lock"))
        .unwrap_or_else(|e| panic!("{}: {e}", lock.display()));
    repo
}

/// `cargo devcheck ARGS` in `repo`, with no libtorch in the environment: what
/// `cargo xtask test` set for tch 0.24 must not leak into another release.
fn cargo_devcheck(repo: &Path, args: &[&str]) -> Output {
    let mut command = Command::new(devcheck_tests::binary("cargo-devcheck", "cargo-devcheck"));
    command
        .current_dir(repo)
        .arg("devcheck")
        .args(args)
        .env("CARGO_TARGET_DIR", repo.parent().unwrap().join("target"))
        .env_remove("DEVCHECK_REPORT")
        .env_remove("DEVCHECK_SOURCE_ROOT");
    for var in [
        "LIBTORCH",
        "LIBTORCH_USE_PYTORCH",
        "LIBTORCH_CXX11_ABI",
        "LIBTORCH_INCLUDE",
        "LIBTORCH_LIB",
        "LD_LIBRARY_PATH",
        "DYLD_LIBRARY_PATH",
    ] {
        command.env_remove(var);
    }
    command.output().expect("run cargo-devcheck")
}

/// The matrix on the CPU, and what it must say on every tch release.
fn readbacks_are_named_at_their_lines(release: &str, libtorch_series: &str) {
    let repo = user_crate_on(release, "user-crate");
    let report = repo.parent().unwrap().join("report.json");
    let _ = std::fs::remove_file(&report);
    let output = cargo_devcheck(
        &repo,
        &[
            "matrix",
            "--test",
            "devices",
            "--device",
            "cpu",
            "--report",
            report.to_str().unwrap(),
            "--",
            "--timing-ms",
            "100",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    // The readbacks and placement checks fail, as on tch 0.24: the exit says so.
    assert_ne!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("devcheck: libtorch {libtorch_series}.")),
        "the matching libtorch is named: {stderr}"
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).unwrap_or_else(|e| {
            panic!("no report ({e}): {stderr}");
        }))
        .unwrap();
    let tch_series = release.rsplit_once('.').unwrap().0;
    let environment = &report["environment"];
    assert_eq!(environment["tch_version"], tch_series, "{environment}");
    assert!(
        environment["libtorch_version"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{libtorch_series}.")),
        "{environment}"
    );
    let trial = |name: &str| {
        report["trials"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("no {name}: {report}"))
            .clone()
    };
    for check in ["tolerance", "timing", "fallback", "memory"] {
        let trial = trial(&format!("classifier::{check}::cpu"));
        assert_eq!(trial["outcome"], "passed", "{trial}");
    }
    let readbacks = trial("classifier::readbacks::cpu");
    assert_eq!(readbacks["outcome"], "failed");
    assert_eq!(
        readbacks["metrics"]["readbacks_per_step"],
        serde_json::json!([17, 17, 17])
    );
    let logged = user_crate_line("self.last_loss = f64::try_from(&loss)?;");
    let per_sample = user_crate_line("predicted.int64_value(&[i]) == labels.int64_value(&[i])");
    let sites: Vec<&str> = readbacks["metrics"]["sites"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(
        sites,
        [
            format!("src/lib.rs:{logged}:26 f64::try_from (scalar read) ×1 per step"),
            format!(
                "src/lib.rs:{per_sample}:26, src/lib.rs:{per_sample}:54 Tensor::int64_value (scalar read) ×16 per step"
            ),
        ],
        "tch {release}"
    );
    let weights = user_crate_line("let weights = Tensor::from_slice(&CLASS_WEIGHTS)");
    let placement = trial("classifier::placement::cpu");
    assert!(
        placement["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("src/lib.rs:{weights}:")),
        "{placement}"
    );
}

#[test]
fn the_oldest_tch_release_0_13_with_libtorch_2_0() {
    readbacks_are_named_at_their_lines("0.13.0", "2.0");
}

#[test]
fn the_newest_tch_release_0_26_with_libtorch_2_13() {
    readbacks_are_named_at_their_lines("0.26.0", "2.13");
}

#[test]
fn a_libtorch_of_another_release_is_refused_before_the_build() {
    let repo = user_crate_on("0.13.0", "refused");
    // libtorch 2.11 (what `cargo xtask test` provides for tch 0.24) is not 0.13's.
    let libtorch = std::env::var_os("LIBTORCH").expect("cargo xtask test sets LIBTORCH");
    let output = Command::new(devcheck_tests::binary("cargo-devcheck", "cargo-devcheck"))
        .current_dir(&repo)
        .args(["devcheck", "setup"])
        .env("LIBTORCH", &libtorch)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is libtorch 2.11.")
            && stderr.contains("but this workspace's tch 0.13.0 needs libtorch 2.0.0")
            && stderr.contains("unset LIBTORCH to let devcheck provision it"),
        "{stderr}"
    );
}
