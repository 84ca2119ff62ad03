//! `--format sarif`: the exact log for one corpus file, kept as a snapshot
//! in `snapshots/lint/`.

use std::path::{Path, PathBuf};

use devcheck_lint::{lint_paths, render, Config};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("lints/ sits in the workspace")
        .to_owned()
}

#[test]
fn sarif_snapshot() {
    let root = workspace();
    let file = root.join("tests/corpus/lint/rl_rollout.rs");
    let report = lint_paths(&[file], &Config::default());
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    // The source root is a parameter, so the snapshot does not depend on
    // where the checkout lives; only the base URI names it.
    let text = render::sarif(&report, &root, &root)
        .replace(&format!("file://{}/", root.display()), "file:///[root]/");
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(root.join("snapshots/lint"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| insta::assert_snapshot!("rl_rollout.sarif", text));
}
