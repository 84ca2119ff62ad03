//! Hostile inputs, end to end through the binary: each directory holds one
//! good file with a known finding next to the hostile input. The hostile
//! input gets an entry in `errors` naming it (with its line where known),
//! the good file's finding is still reported, and the exit code is 2. Valid
//! but odd inputs (an empty file, a 20 MB file, a directory without Rust
//! files) are linted normally.
//!
//! `inputs.rs` checks the same library paths in more detail; this file
//! checks what a pre-commit hook sees: the JSON, the counts and the code.

use std::path::{Path, PathBuf};
use std::process::Command;

use devcheck_lint::exit::{FAILURE, FINDINGS, SUCCESS};
use serde_json::Value;

/// One finding: `double_value` at line 4, inside the loop at line 3.
const GOOD: &str = "use tch::Tensor;\nfn f(t: &Tensor) {\n    for _ in 0..3 {\n        let _ = t.double_value(&[]);\n    }\n}\n";

struct Run {
    code: Option<i32>,
    json: Value,
}

impl Run {
    fn errors(&self) -> &[Value] {
        self.json["errors"].as_array().expect("errors is an array")
    }

    /// The single error entry, which must name a file ending in `name`.
    fn only_error_for(&self, name: &str) -> &Value {
        let errors = self.errors();
        assert_eq!(errors.len(), 1, "{errors:#?}");
        let file = errors[0]["file"].as_str().expect("error names a file");
        assert!(file.ends_with(name), "{file} should end with {name}");
        &errors[0]
    }

    fn count(&self, key: &str) -> u64 {
        self.json[key].as_u64().expect("a count")
    }

    fn assert_good_file_linted(&self) {
        let good: Vec<&Value> = self.json["findings"]
            .as_array()
            .expect("findings is an array")
            .iter()
            .filter(|f| f["file"].as_str().is_some_and(|p| p.ends_with("good.rs")))
            .collect();
        assert_eq!(good.len(), 1, "{:#?}", self.json["findings"]);
        assert_eq!(good[0]["rule"], "host-sync");
        assert_eq!(good[0]["line"], 4);
    }
}

fn lint(paths: &[&Path]) -> Run {
    let output = Command::new(env!("CARGO_BIN_EXE_devcheck-lint"))
        .arg("--format")
        .arg("json")
        .args(paths)
        .output()
        .expect("the binary runs");
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    let json = serde_json::from_str(&stdout).unwrap_or_else(|err| {
        panic!(
            "not JSON ({err}): {stdout}\nstderr: {}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    Run {
        code: output.status.code(),
        json,
    }
}

/// A fresh directory holding `good.rs`.
fn dir_with_good_file() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.rs"), GOOD).unwrap();
    dir
}

/// Lints a directory holding `good.rs` and `name` with `contents`.
fn lint_next_to_good_file(name: &str, contents: &[u8]) -> Run {
    let dir = dir_with_good_file();
    std::fs::write(dir.path().join(name), contents).unwrap();
    lint(&[dir.path()])
}

#[test]
fn an_unparsable_file_is_an_error_with_its_line() {
    let run = lint_next_to_good_file(
        "broken.rs",
        b"use tch::Tensor;\nfn f(t: &Tensor) {\n    let x = ;\n}\n",
    );
    run.assert_good_file_linted();
    let error = run.only_error_for("broken.rs");
    assert_eq!(error["line"], 3);
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("could not parse: "), "{message}");
    assert_eq!(
        (run.count("files_scanned"), run.count("files_parsed")),
        (2, 1)
    );
    assert_eq!(run.code, Some(FAILURE.into()));
}

#[test]
fn invalid_utf8_is_an_error_with_its_line() {
    let run = lint_next_to_good_file("latin1.rs", b"use tch::Tensor;\n\n// caf\xe9\n");
    run.assert_good_file_linted();
    let error = run.only_error_for("latin1.rs");
    assert_eq!(error["line"], 3);
    assert_eq!(error["message"], "not valid UTF-8; the file was not linted");
    // The file could not be decoded, so it was never scanned.
    assert_eq!(
        (run.count("files_scanned"), run.count("files_parsed")),
        (1, 1)
    );
    assert_eq!(run.code, Some(FAILURE.into()));
}

#[test]
fn nesting_fifty_thousand_deep_is_refused_not_a_crash() {
    const DEPTH: usize = 50_000;
    let in_a_loop = |body: String| {
        format!("use tch::Tensor;\nfn f(t: &Tensor) {{\n    for _ in 0..2 {{\n        {body}\n    }}\n}}\n")
    };
    let cases = [
        (
            "parentheses",
            in_a_loop(format!(
                "let x = {}t.double_value(&[]){};",
                "(".repeat(DEPTH),
                ")".repeat(DEPTH)
            )),
        ),
        (
            "blocks",
            in_a_loop(format!(
                "{}t.double_value(&[]);{}",
                "{".repeat(DEPTH),
                "}".repeat(DEPTH)
            )),
        ),
        (
            "closures",
            in_a_loop(format!(
                "let g = {}t.double_value(&[]);",
                "move || ".repeat(DEPTH)
            )),
        ),
        (
            "generic arguments",
            in_a_loop(format!(
                "let x: {}u8{} = t.double_value(&[]);",
                "Vec<".repeat(DEPTH),
                ">".repeat(DEPTH)
            )),
        ),
        (
            "closure return types",
            in_a_loop(format!(
                "let g: {}u8{} = t.double_value(&[]);",
                "Box<dyn Fn() -> ".repeat(DEPTH),
                ">".repeat(DEPTH)
            )),
        ),
        (
            "returned closures",
            in_a_loop(format!(
                "let g = {}t.double_value(&[]);",
                "return || ".repeat(DEPTH)
            )),
        ),
        (
            "closures returning negations",
            in_a_loop(format!(
                "let g = {}t.double_value(&[]);",
                "|x| -".repeat(DEPTH)
            )),
        ),
        (
            "closure blocks",
            in_a_loop(format!(
                "let g = {}t.double_value(&[]){};",
                "|| { ".repeat(DEPTH),
                " }".repeat(DEPTH)
            )),
        ),
    ];
    for (shape, text) in cases {
        let run = lint_next_to_good_file("deep.rs", text.as_bytes());
        run.assert_good_file_linted();
        let error = run.only_error_for("deep.rs");
        assert_eq!(error["line"], 4, "{shape}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(
            message.starts_with("nesting is deeper than 1000 levels")
                || message.starts_with("expression nested more than 3000 levels deep"),
            "{shape}: {message}"
        );
        assert_eq!(run.code, Some(FAILURE.into()), "{shape}");
    }
}

#[test]
fn a_20_mb_generated_file_is_linted_with_its_findings() {
    let dir = dir_with_good_file();
    let mut text = String::from("use tch::Tensor;\n");
    let mut expected_lines = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while text.len() < 20 * 1024 * 1024 {
        // One function in a thousand reads back in its loop.
        let read = if i % 1000 == 0 {
            expected_lines.push(line + 3);
            "let _ = t.double_value(&[]);"
        } else {
            "let _ = t.relu();"
        };
        text.push_str(&format!(
            "pub fn generated_{i}(t: &Tensor) {{\n    for _ in 0..{i} {{\n        {read}\n    }}\n}}\n"
        ));
        line += 5;
        i += 1;
    }
    std::fs::write(dir.path().join("generated.rs"), &text).unwrap();
    // Finishing at all is the bound: a hang would stop the test suite.
    let run = lint(&[dir.path()]);
    assert!(run.errors().is_empty(), "{:#?}", run.errors());
    run.assert_good_file_linted();
    let generated: Vec<u64> = run.json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["file"].as_str().unwrap().ends_with("generated.rs"))
        .map(|f| f["line"].as_u64().unwrap())
        .collect();
    assert_eq!(generated, expected_lines);
    assert_eq!(
        (run.count("files_scanned"), run.count("files_parsed")),
        (2, 2)
    );
    assert_eq!(run.code, Some(FINDINGS.into()));
}

#[cfg(unix)]
#[test]
fn a_symlink_loop_is_an_error_and_not_followed() {
    let dir = dir_with_good_file();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink("..", dir.path().join("sub/parent")).unwrap();
    let run = lint(&[dir.path()]);
    run.assert_good_file_linted();
    let error = run.only_error_for("sub/parent");
    assert!(error["line"].is_null());
    let message = error["message"].as_str().unwrap();
    assert!(message.starts_with("symbolic link loop"), "{message}");
    assert_eq!(run.count("files_scanned"), 1);
    assert_eq!(run.code, Some(FAILURE.into()));
}

#[cfg(unix)]
#[test]
fn a_dangling_symlink_is_an_error() {
    let dir = dir_with_good_file();
    std::os::unix::fs::symlink("gone.rs", dir.path().join("dangling.rs")).unwrap();
    let run = lint(&[dir.path()]);
    run.assert_good_file_linted();
    let error = run.only_error_for("dangling.rs");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("No such file or directory"), "{message}");
    assert_eq!(run.code, Some(FAILURE.into()));
}

/// Only `.rs` files are read, so links that lead nowhere under other names
/// (a script, a data directory, a chain of links that loops, a `Cargo.toml`)
/// are no input at all: the one finding, no error, exit 1.
#[cfg(unix)]
#[test]
fn a_dangling_symlink_to_a_non_rust_file_is_not_an_input() {
    let dir = dir_with_good_file();
    let link = |target: &str, name: &str| {
        std::os::unix::fs::symlink(target, dir.path().join(name)).unwrap();
    };
    link("missing", "train.py");
    link("/nonexistent/checkpoints", "checkpoints");
    link("ping", "pong");
    link("pong", "ping");
    link("good.rs/inside", "through_a_file");
    std::fs::create_dir(dir.path().join("crate")).unwrap();
    std::os::unix::fs::symlink("../gone.toml", dir.path().join("crate/Cargo.toml")).unwrap();
    let run = lint(&[dir.path()]);
    run.assert_good_file_linted();
    assert!(run.errors().is_empty(), "{:#?}", run.errors());
    assert_eq!(run.count("files_scanned"), 1);
    assert_eq!(run.code, Some(FINDINGS.into()));
}

/// Only `.rs` files (and the `Cargo.toml` files above them) are ever
/// opened: what else sits in a source tree (a FIFO or a socket named like a
/// script, a file nobody may read, a link to one) is not looked into, so it
/// can neither block the walk nor turn into an error. Opening the FIFO for
/// reading would block until a writer came, so the run has a deadline.
#[cfg(target_os = "linux")]
#[test]
fn files_other_than_rust_sources_are_never_opened() {
    use std::os::unix::fs::PermissionsExt;

    let dir = dir_with_good_file();
    let mkfifo = |name: &str| {
        let status = Command::new("mkfifo")
            .arg(dir.path().join(name))
            .status()
            .expect("mkfifo runs");
        assert!(status.success(), "mkfifo {name}");
    };
    mkfifo("x.py");
    std::fs::create_dir(dir.path().join("crate")).unwrap();
    std::fs::write(dir.path().join("crate/lib.rs"), "pub fn f() {}\n").unwrap();
    mkfifo("crate/Cargo.toml");
    std::os::unix::fs::symlink("x.py", dir.path().join("pipe.sh")).unwrap();
    let _socket = std::os::unix::net::UnixListener::bind(dir.path().join("sock.py")).unwrap();
    std::os::unix::fs::symlink("/proc/self/mem", dir.path().join("weights.bin")).unwrap();
    let secret = dir.path().join("secret.py");
    std::fs::write(&secret, "print('hidden')\n").unwrap();
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o000)).unwrap();

    let mut child = Command::new(env!("CARGO_BIN_EXE_devcheck-lint"))
        .arg("--format")
        .arg("json")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("waitable").is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().ok();
            panic!(
                "the lint blocked for a minute: it opened a FIFO it should not have looked into"
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().expect("finished");
    let json: Value = serde_json::from_slice(&output.stdout).expect("JSON output");
    let run = Run {
        code: output.status.code(),
        json,
    };
    run.assert_good_file_linted();
    assert!(run.errors().is_empty(), "{:#?}", run.errors());
    assert_eq!(run.count("files_scanned"), 2);
    assert_eq!(run.code, Some(FINDINGS.into()));
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
}

/// `chmod 000` stops only unprivileged users: root (as in CI containers)
/// reads the file anyway. `/proc/self/mem` fails to read for everyone (the
/// process's own address 0 is unmapped, so `read` returns EIO), so a link
/// to it is the unreadable file that works whoever runs the tests.
#[cfg(target_os = "linux")]
#[test]
fn an_unreadable_file_is_an_error() {
    use std::os::unix::fs::PermissionsExt;

    let dir = dir_with_good_file();
    std::os::unix::fs::symlink("/proc/self/mem", dir.path().join("mem.rs")).unwrap();
    let locked = dir.path().join("locked.rs");
    std::fs::write(&locked, "fn locked() {}\n").unwrap();
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    let privileged = std::fs::read(&locked).is_ok();

    let run = lint(&[dir.path()]);
    run.assert_good_file_linted();
    let mut expected: Vec<(&str, &str)> = vec![("mem.rs", "cannot read: Input/output error")];
    if !privileged {
        expected.push(("locked.rs", "cannot read: Permission denied"));
    }
    let errors = run.errors();
    assert_eq!(errors.len(), expected.len(), "{errors:#?}");
    for (name, start) in expected {
        let error = errors
            .iter()
            .find(|e| e["file"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("no error for {name}: {errors:#?}"));
        let message = error["message"].as_str().unwrap();
        assert!(message.starts_with(start), "{message}");
    }
    // good.rs, and locked.rs where it could be read.
    assert_eq!(run.count("files_scanned"), 1 + u64::from(privileged));
    assert_eq!(run.code, Some(FAILURE.into()));
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[test]
fn a_missing_path_on_the_command_line_is_an_error() {
    let dir = dir_with_good_file();
    let missing: PathBuf = dir.path().join("missing");
    let run = lint(&[dir.path(), &missing]);
    run.assert_good_file_linted();
    let error = run.only_error_for("missing");
    assert_eq!(error["message"], "no such file or directory");
    assert!(error["line"].is_null());
    assert_eq!(run.count("files_scanned"), 1);
    assert_eq!(run.code, Some(FAILURE.into()));
}

#[test]
fn an_empty_file_is_valid_rust() {
    let run = lint_next_to_good_file("empty.rs", b"");
    run.assert_good_file_linted();
    assert!(run.errors().is_empty(), "{:#?}", run.errors());
    // Scanned, but nothing in it for the prefilter to send to the parser.
    assert_eq!(
        (run.count("files_scanned"), run.count("files_parsed")),
        (2, 1)
    );
    assert_eq!(run.code, Some(FINDINGS.into()));
}

#[test]
fn a_directory_without_rust_files_is_not_an_error() {
    let good = dir_with_good_file();
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("notes.txt"), "no Rust here").unwrap();
    let run = lint(&[good.path(), other.path()]);
    run.assert_good_file_linted();
    assert!(run.errors().is_empty(), "{:#?}", run.errors());
    assert_eq!(run.code, Some(FINDINGS.into()));

    let run = lint(&[other.path()]);
    assert!(run.errors().is_empty(), "{:#?}", run.errors());
    assert_eq!(run.count("files_scanned"), 0);
    assert_eq!(run.code, Some(SUCCESS.into()));
}
