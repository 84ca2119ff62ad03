//! `.pre-commit-hooks.yaml` names a binary that `cargo install --path .` at the
//! repository root (what pre-commit runs for `language: rust`) really installs.

use std::path::{Path, PathBuf};
use std::process::Command;

use saphyr::{LoadableYamlNode, Yaml};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask sits in the workspace root")
        .to_path_buf()
}

#[test]
fn the_hook_is_a_rust_hook_whose_entry_the_root_package_builds() {
    let text = std::fs::read_to_string(root().join(".pre-commit-hooks.yaml")).unwrap();
    let docs = Yaml::load_from_str(&text).expect("valid YAML");
    let hooks = docs[0].as_sequence().expect("a list of hooks");
    assert_eq!(hooks.len(), 1);
    let hook = &hooks[0];
    assert_eq!(hook["id"].as_str(), Some("devcheck-lint"));
    assert_eq!(hook["language"].as_str(), Some("rust"));
    let types: Vec<&str> = hook["types"]
        .as_sequence()
        .unwrap()
        .iter()
        .filter_map(|t| t.as_str())
        .collect();
    assert_eq!(types, ["rust"]);
    let entry = hook["entry"].as_str().expect("an entry");

    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["metadata", "--no-deps", "--format-version", "1"])
        .current_dir(root())
        .output()
        .unwrap();
    assert!(output.status.success());
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let manifest = root().join("Cargo.toml");
    let package = metadata["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| Path::new(p["manifest_path"].as_str().unwrap()) == manifest)
        .expect("the root Cargo.toml is a package, as `cargo install --path .` needs");
    let bin = package["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == entry && t["kind"][0] == "bin")
        .unwrap_or_else(|| panic!("the root package has no binary `{entry}`"));
    assert!(
        bin["src_path"]
            .as_str()
            .unwrap()
            .ends_with("lints/src/main.rs"),
        "{bin}"
    );
    // The hook must build without libtorch: nothing in the root package's
    // dependencies reaches tch.
    let deps: Vec<&str> = package["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert!(deps.contains(&"devcheck-lint"), "{deps:?}");
    assert!(
        !deps.iter().any(|d| d.contains("tch") || *d == "devcheck"),
        "{deps:?}"
    );
}
