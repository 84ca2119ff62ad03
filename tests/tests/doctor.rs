//! `devcheck-matrix doctor` end to end: the JSON contract and the human table.

use devcheck_tests::command;

fn doctor(args: &[&str]) -> std::process::Output {
    command("devcheck", "devcheck-matrix")
        .arg("doctor")
        .args(args)
        .output()
        .expect("run devcheck-matrix doctor")
}

#[test]
fn json_reports_each_backend_versions_and_host() {
    let output = doctor(&["--json"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_slice(&output.stdout).expect("one JSON object");

    let cpu = &report["backends"]["cpu"];
    assert_eq!(cpu["built"], true);
    assert_eq!(cpu["available"], true);
    assert_eq!(cpu["device_count"], 1);
    for backend in ["cuda", "mps"] {
        let info = &report["backends"][backend];
        let built = info["built"].as_bool().unwrap();
        let available = info["available"].as_bool().unwrap();
        let count = info["device_count"].as_u64().unwrap();
        assert!(!available || built, "{backend}: available but not built");
        assert_eq!(
            available,
            count > 0,
            "{backend}: available={available} count={count}"
        );
    }
    // tch 0.24 pairs with libtorch 2.11 exactly.
    assert!(report["libtorch_version"]
        .as_str()
        .unwrap()
        .starts_with("2.11."));
    assert_eq!(report["tch_version"], "0.24");
    assert_eq!(report["arch"], std::env::consts::ARCH);
    assert_eq!(report["os"], std::env::consts::OS);
    let lib_dir = std::path::Path::new(report["libtorch_lib_dir"].as_str().unwrap());
    assert!(lib_dir.is_dir(), "{}", lib_dir.display());
    assert!(report["env"]
        .as_object()
        .unwrap()
        .contains_key("PYTORCH_ENABLE_MPS_FALLBACK"));
}

#[test]
fn json_records_behaviour_flags_that_are_set() {
    let output = command("devcheck", "devcheck-matrix")
        .arg("doctor")
        .arg("--json")
        .env("PYTORCH_MPS_HIGH_WATERMARK_RATIO", "0.7")
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["env"]["PYTORCH_MPS_HIGH_WATERMARK_RATIO"], "0.7");
}

#[test]
fn table_lists_backends_with_built_and_available() {
    let output = doctor(&[]);
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(
        text.contains("backend  built  available  devices"),
        "{text}"
    );
    let cpu_row = text.lines().find(|l| l.starts_with("cpu ")).unwrap();
    assert_eq!(
        cpu_row.split_whitespace().collect::<Vec<_>>(),
        ["cpu", "yes", "yes", "1"]
    );
    assert!(text.lines().any(|l| l.starts_with("cuda ")));
    assert!(text.lines().any(|l| l.starts_with("mps ")));
}

#[test]
fn unknown_argument_is_a_usage_error() {
    let output = doctor(&["--jsn"]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("unexpected argument '--jsn'"), "{stderr}");
}
