//! The `devcheck-lint` binary: exit codes, formats, colour, configuration,
//! `--explain` and `--list-rules`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use devcheck_lint::exit::{FAILURE, FINDINGS, SUCCESS};
use devcheck_lint::rules;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_owned()
}

fn corpus(name: &str) -> PathBuf {
    workspace().join("tests/corpus/lint").join(name)
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_devcheck-lint"))
        .args(args)
        .env_remove("NO_COLOR")
        .output()
        .expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

const HOT_READ: &str = "use tch::Tensor;\nfn f(t: &Tensor) {\n    for _ in 0..3 {\n        let _ = t.double_value(&[]);\n    }\n}\n";

#[test]
fn clean_code_exits_0() {
    let output = run(&[corpus("cpu_only.rs").to_str().unwrap()]);
    assert_eq!(
        output.status.code(),
        Some(SUCCESS.into()),
        "{}",
        stdout(&output)
    );
    assert!(stdout(&output)
        .ends_with("devcheck-lint: 0 errors, 0 warnings, 0 notes in 1 file (1 parsed)\n"));
}

/// Findings go to stdout and nothing else is written: a crate whose
/// channel carries device data (the crate pass weighs every value sent)
/// leaves stderr empty.
#[test]
fn a_run_with_findings_writes_nothing_to_stderr() {
    let output = run(&[corpus("channel_device_results.rs").to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(FINDINGS.into()));
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn warnings_exit_1_and_json_has_the_documented_shape() {
    let output = run(&[
        "--format",
        "json",
        corpus("train_mnist.rs").to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(FINDINGS.into()));
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("valid JSON");
    let mut keys: Vec<&str> = json
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        ["errors", "files_parsed", "files_scanned", "findings"]
    );
    assert!(stdout(&output).starts_with("{\n  \"findings\": ["));
    let first = &json["findings"][0];
    let mut keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "column",
            "end_column",
            "end_line",
            "file",
            "line",
            "message",
            "notes",
            "rule",
            "severity"
        ]
    );
    assert_eq!(first["rule"], "host-sync");
    assert_eq!(first["severity"], "warning");
    assert_eq!(first["line"], 32);
    // `running += loss.double_value(&[]);` indented by 12: the method name starts at column 29.
    assert_eq!(first["column"], 29);
    assert_eq!(first["end_column"], 46);
    assert_eq!(json["files_scanned"], 1);
    assert_eq!(json["errors"], serde_json::json!([]));
}

#[test]
fn notes_alone_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("periodic.rs");
    std::fs::write(
        &file,
        "use tch::Tensor;\nfn f(t: &Tensor) {\n    for step in 0..10 {\n        if step % 5 == 0 {\n            println!(\"{}\", t);\n        }\n    }\n}\n",
    )
    .unwrap();
    let output = run(&[file.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(SUCCESS.into()));
    assert!(
        stdout(&output).contains("note[host-sync]"),
        "{}",
        stdout(&output)
    );
}

#[test]
fn unreadable_inputs_exit_2_after_reporting_everything_else() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.rs"), HOT_READ).unwrap();
    std::fs::write(dir.path().join("broken.rs"), "use tch::Tensor;\nfn f( {\n").unwrap();
    std::fs::write(dir.path().join("latin1.rs"), b"// caf\xe9\nfn f() {}\n").unwrap();
    let missing = dir.path().join("missing.rs");
    let output = run(&[
        "--format",
        "json",
        dir.path().to_str().unwrap(),
        missing.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(FAILURE.into()));
    let json: serde_json::Value = serde_json::from_str(&stdout(&output)).unwrap();
    assert_eq!(
        json["findings"].as_array().unwrap().len(),
        1,
        "the good file is still linted"
    );
    let errors: Vec<(String, serde_json::Value)> = json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                Path::new(e["file"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                e["line"].clone(),
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            ("broken.rs".to_owned(), serde_json::json!(2)),
            ("latin1.rs".to_owned(), serde_json::json!(1)),
            ("missing.rs".to_owned(), serde_json::Value::Null),
        ]
    );
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(
        run(&["--format", "xml"]).status.code(),
        Some(FAILURE.into())
    );
    let unknown = run(&["--explain", "host-synk"]);
    assert_eq!(unknown.status.code(), Some(FAILURE.into()));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown rule `host-synk`"));
}

#[test]
fn explain_prints_the_rule_docs() {
    let explained = run(&["--explain", "data-dependent-shape"]);
    assert_eq!(explained.status.code(), Some(SUCCESS.into()));
    let text = stdout(&explained);
    assert!(text.starts_with("data-dependent-shape: "));
    for heading in [
        "### What it does",
        "### Why is this bad",
        "### Example",
        "### Use instead",
    ] {
        assert!(text.contains(heading), "{text}");
    }
}

/// The registry is the one list of rules (its own unit test pins the ids);
/// this checks that the binary prints all of it, in order, line by line.
#[test]
fn list_rules_prints_every_registered_rule_in_order() {
    let output = run(&["--list-rules"]);
    assert_eq!(output.status.code(), Some(SUCCESS.into()));
    let listed = stdout(&output);
    let lines: Vec<&str> = listed.lines().collect();
    let ids: Vec<&str> = lines
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let registry: Vec<&str> = rules::all().map(|rule| rule.id.as_str()).collect();
    assert_eq!(ids, registry, "{listed}");
    for (line, rule) in lines.iter().zip(rules::all()) {
        // The level as devcheck.toml spells it: `allow`, `note`, `warn`, `deny`.
        let level = format!("{:?}", rule.default_level).to_lowercase();
        assert_eq!(
            line.split_whitespace().nth(1),
            Some(level.as_str()),
            "{line}"
        );
        assert!(line.ends_with(rule.summary), "{line}");
    }
}

#[test]
fn colour_only_when_asked_or_on_a_terminal() {
    let file = corpus("decoding.rs");
    let piped = stdout(&run(&[file.to_str().unwrap()]));
    assert!(!piped.contains('\x1b'), "not a terminal: no colour");
    assert!(
        piped.contains("warning[host-sync]: `int64_value` reads a tensor element back to the host")
    );
    assert!(piped.contains("  = help: "));
    let forced = stdout(&run(&["--color", "always", file.to_str().unwrap()]));
    assert!(forced.contains('\x1b'));
}

#[test]
fn devcheck_toml_is_found_above_the_path_and_sets_levels() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("lib.rs"), HOT_READ).unwrap();
    std::fs::write(
        dir.path().join("devcheck.toml"),
        "[lint.levels]\nhost-sync = \"deny\"\n",
    )
    .unwrap();
    let denied = run(&[src.to_str().unwrap()]);
    assert_eq!(denied.status.code(), Some(FINDINGS.into()));
    assert!(
        stdout(&denied).contains("error[host-sync]"),
        "{}",
        stdout(&denied)
    );

    std::fs::write(
        dir.path().join("devcheck.toml"),
        "[lint.levels]\nhost-sync = \"allow\"\n",
    )
    .unwrap();
    let allowed = run(&[src.to_str().unwrap()]);
    assert_eq!(allowed.status.code(), Some(SUCCESS.into()));
    assert!(!stdout(&allowed).contains("host-sync]"));

    std::fs::write(
        dir.path().join("devcheck.toml"),
        "[lint.levels]\nhost-sync = \"loud\"\n",
    )
    .unwrap();
    let broken = run(&[src.to_str().unwrap()]);
    assert_eq!(broken.status.code(), Some(FAILURE.into()));
    assert!(String::from_utf8_lossy(&broken.stderr)
        .contains("devcheck.toml is not a valid devcheck configuration"));

    let explicit = dir.path().join("other.toml");
    std::fs::write(&explicit, "[lint.levels]\nhost-sync = \"note\"\n").unwrap();
    let noted = run(&[
        "--config",
        explicit.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    assert_eq!(noted.status.code(), Some(SUCCESS.into()));
    assert!(stdout(&noted).contains("note[host-sync]"));
}
