//! Hostile and odd inputs: each becomes an entry in `errors` (or is linted
//! normally when it is valid Rust), everything else is still linted, and
//! nothing panics or overflows the stack.

use std::path::{Path, PathBuf};

use devcheck_lint::exit::{FAILURE, FINDINGS};
use devcheck_lint::{lint_paths, lint_sources, Config, Report};

/// A file with exactly one finding, linted next to each bad input.
const GOOD: &str = "use tch::Tensor;\nfn f(t: &Tensor) {\n    for _ in 0..3 {\n        let _ = t.double_value(&[]);\n    }\n}\n";

fn with_good_file(name: &str, contents: &[u8]) -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.rs"), GOOD).unwrap();
    std::fs::write(dir.path().join(name), contents).unwrap();
    let report = lint_paths(&[dir.path().to_owned()], &Config::default());
    (dir, report)
}

/// A temporary tree holding `files` (path, contents), directories made as
/// needed.
fn tree(files: &[(&str, &[u8])]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (path, contents) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, contents).unwrap();
    }
    dir
}

fn assert_good_file_linted(report: &Report) {
    let good: Vec<_> = report
        .findings
        .iter()
        .filter(|f| f.file.ends_with("good.rs"))
        .collect();
    assert_eq!(good.len(), 1, "{:?}", report.findings);
    assert_eq!(good[0].line, 4);
}

fn only_error(report: &Report) -> (PathBuf, Option<usize>, String) {
    assert_eq!(report.errors.len(), 1, "{:?}", report.errors);
    let error = &report.errors[0];
    (error.file.clone(), error.line, error.message.clone())
}

#[test]
fn a_parse_error_is_reported_with_its_line() {
    let (_dir, report) = with_good_file(
        "broken.rs",
        b"use tch::Tensor;\n\nfn f(t: &Tensor) {\n    for x in {\n}\n",
    );
    assert_good_file_linted(&report);
    let (file, line, message) = only_error(&report);
    assert!(file.ends_with("broken.rs"));
    assert!(line.is_some());
    assert!(message.starts_with("could not parse: "), "{message}");
    assert_eq!(report.exit_code(), FAILURE);
}

#[test]
fn invalid_utf8_is_reported_with_its_line() {
    let (_dir, report) = with_good_file("latin1.rs", b"fn a() {}\nfn b() {}\n// caf\xe9\n");
    assert_good_file_linted(&report);
    let (_, line, message) = only_error(&report);
    assert_eq!(line, Some(3));
    assert_eq!(message, "not valid UTF-8; the file was not linted");
    assert_eq!(report.exit_code(), FAILURE);
}

#[test]
fn a_missing_path_is_reported_and_the_rest_linted() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.rs"), GOOD).unwrap();
    let missing = dir.path().join("nope");
    let report = lint_paths(
        &[dir.path().to_owned(), missing.clone()],
        &Config::default(),
    );
    assert_good_file_linted(&report);
    assert_eq!(
        only_error(&report),
        (missing, None, "no such file or directory".to_owned())
    );
    assert_eq!(report.exit_code(), FAILURE);
}

#[test]
fn an_empty_file_is_valid_rust() {
    let (_dir, report) = with_good_file("empty.rs", b"");
    assert_good_file_linted(&report);
    assert!(report.errors.is_empty());
    assert_eq!(report.files_scanned, 2);
    assert_eq!(report.exit_code(), FINDINGS);
}

#[cfg(unix)]
#[test]
fn a_symlink_loop_and_a_dangling_link_are_reported() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("good.rs"), GOOD).unwrap();
    std::os::unix::fs::symlink(dir.path(), dir.path().join("loop")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("gone.rs"), dir.path().join("dangling.rs")).unwrap();
    let report = lint_paths(&[dir.path().to_owned()], &Config::default());
    assert_good_file_linted(&report);
    assert_eq!(report.errors.len(), 2, "{:?}", report.errors);
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.message.starts_with("symbolic link loop")),
        "{:?}",
        report.errors
    );
    assert!(
        report
            .errors
            .iter()
            .any(|e| e.file.ends_with("dangling.rs")),
        "{:?}",
        report.errors
    );
    assert_eq!(report.exit_code(), FAILURE);
}

#[cfg(unix)]
#[test]
fn a_fifo_named_on_the_command_line_is_refused_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe.rs");
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(status.success());
    let report = lint_paths(std::slice::from_ref(&fifo), &Config::default());
    assert_eq!(
        only_error(&report),
        (fifo, None, "not a regular file or directory".to_owned())
    );
}

#[test]
fn a_20_mb_generated_file_is_linted() {
    let mut text = String::from("use tch::Tensor;\n");
    let mut i = 0;
    while text.len() < 20 * 1024 * 1024 {
        text.push_str(&format!(
            "pub fn generated_{i}(t: &Tensor) -> Tensor {{ t.relu() * {i}.0 }}\n"
        ));
        i += 1;
    }
    text.push_str(GOOD.trim_start_matches("use tch::Tensor;\n"));
    let lines = text.lines().count();
    let report = lint_sources(&[(PathBuf::from("generated.rs"), text)], &Config::default());
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].line, lines - 2);
}

#[test]
fn files_over_the_size_limit_are_reported_not_parsed() {
    let mut config = Config::default();
    config.max_file_size = 10;
    let report = lint_sources(&[(PathBuf::from("big.rs"), GOOD.to_owned())], &config);
    let (_, line, message) = only_error(&report);
    assert_eq!(line, None);
    assert!(
        message.contains("larger than the limit of 10 bytes"),
        "{message}"
    );
    assert!(message.contains("max-file-size"), "{message}");
}

fn lint_one(text: String) -> Report {
    let good = (PathBuf::from("good.rs"), GOOD.to_owned());
    let report = lint_sources(
        &[good, (PathBuf::from("deep.rs"), text)],
        &Config::default(),
    );
    assert_good_file_linted(&report);
    report
}

#[test]
fn brackets_nested_fifty_thousand_deep_are_refused() {
    let depth = 50_000;
    let text = format!(
        "use tch::Tensor;\nfn f() {{\n    let x = {}1{};\n}}\n",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let report = lint_one(text);
    let (file, line, message) = only_error(&report);
    assert_eq!((file.as_path(), line), (Path::new("deep.rs"), Some(3)));
    assert!(
        message.starts_with("nesting is deeper than 1000 levels"),
        "{message}"
    );
}

#[test]
fn prefix_operators_fifty_thousand_deep_are_refused() {
    let text = format!(
        "use tch::Tensor;\nfn f() {{\n    let x = {}1;\n}}\n",
        "-".repeat(50_000)
    );
    let (_, line, _) = only_error(&lint_one(text));
    assert_eq!(line, Some(3));
}

#[test]
fn long_operator_and_method_chains_are_reported_as_too_deep() {
    for chain in [
        format!("let x = t{};", " + t".repeat(100_000)),
        format!("let x = t{};", ".relu()".repeat(100_000)),
        format!("let x = t{};", ".field".repeat(100_000)),
    ] {
        let text = format!("use tch::Tensor;\nfn f(t: &Tensor) {{\n    {chain}\n}}\n");
        let (_, line, message) = only_error(&lint_one(text));
        assert_eq!(line, Some(3));
        assert!(
            message.starts_with("expression nested more than 3000 levels deep"),
            "{message}"
        );
    }
}

#[test]
fn nesting_just_under_the_limit_is_linted() {
    let depth = 990;
    let text = format!(
        "use tch::Tensor;\nfn f(t: &Tensor) {{\n    for _ in 0..2 {{\n        let x = {}t.double_value(&[]){};\n    }}\n}}\n",
        "(".repeat(depth),
        ")".repeat(depth)
    );
    let report = lint_one(text);
    assert!(report.errors.is_empty(), "{:?}", report.errors);
    assert!(report
        .findings
        .iter()
        .any(|f| f.file == Path::new("deep.rs") && f.line == 4));
}

/// The corpus's CPU-only program: linted as a directory it is a whole
/// program that names no accelerator, so its reads wait for nothing; its
/// files handed over alone (a pre-commit hook's staged files) may take a
/// device from a file that was not, so their reads are kept.
#[test]
fn a_cpu_only_program_is_known_only_from_its_whole_directory() {
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/lint/cpu_program");
    let whole = lint_paths(std::slice::from_ref(&case), &Config::default());
    assert!(whole.findings.is_empty(), "{:?}", whole.findings);
    let files = [case.join("src/main.rs"), case.join("src/model.rs")];
    let alone = lint_paths(&files, &Config::default());
    let lines: Vec<(String, usize)> = alone
        .findings
        .iter()
        .map(|f| {
            (
                f.file.file_name().unwrap().to_string_lossy().into_owned(),
                f.line,
            )
        })
        .collect();
    assert_eq!(lines, [("model.rs".to_owned(), 44)]);
}

/// A file of a crate that none of its targets holds (an old copy beside
/// `src/`) is never compiled: a walked directory leaves it out, but a file
/// handed over by name is linted as asked.
#[test]
fn a_file_outside_every_target_is_left_out_of_a_walk_only() {
    let dir = tree(&[
        (
            "Cargo.toml",
            b"[package]\nname = \"detector\"\nversion = \"0.1.0\"\n",
        ),
        ("src/lib.rs", GOOD.as_bytes()),
        ("old/main2.rs", GOOD.as_bytes()),
    ]);
    let walked = lint_paths(&[dir.path().to_owned()], &Config::default());
    let files: Vec<&Path> = walked.findings.iter().map(|f| f.file.as_path()).collect();
    assert_eq!(files, [dir.path().join("src/lib.rs").as_path()]);
    assert_eq!(walked.files_scanned, 1);
    let named = lint_paths(&[dir.path().join("old/main2.rs")], &Config::default());
    assert_eq!(named.findings.len(), 1, "{:?}", named.findings);
}

/// A loose file beside the crates of a walked tree, outside all of them
/// (`snippets/notes.rs` next to `inference/Cargo.toml`), is never
/// compiled: not even its parse error is reported. A tree of loose files
/// only is linted as it is, parse errors included.
#[test]
fn a_loose_file_beside_crates_is_left_out_of_a_walk() {
    let dir = tree(&[
        (
            "inference/Cargo.toml",
            b"[package]\nname = \"inference\"\nversion = \"0.1.0\"\n",
        ),
        ("inference/src/lib.rs", GOOD.as_bytes()),
        (
            "snippets/notes.rs",
            b"use tch::Tensor;\nif ready {\n    run();\n",
        ),
    ]);
    let walked = lint_paths(&[dir.path().to_owned()], &Config::default());
    assert!(walked.errors.is_empty(), "{:?}", walked.errors);
    assert_eq!(walked.files_scanned, 1);
    assert_ne!(walked.exit_code(), FAILURE);
    let loose = lint_paths(&[dir.path().join("snippets")], &Config::default());
    let (file, _, message) = only_error(&loose);
    assert!(file.ends_with("snippets/notes.rs"));
    assert!(message.starts_with("could not parse: "), "{message}");
}

/// A file of a crate that no `mod` item declares is never compiled, so a
/// walk reports nothing of it, not even a parse error; handed over by
/// name, it is linted as asked.
#[test]
fn an_undeclared_file_reports_no_parse_error_in_a_walk() {
    let main = format!("{GOOD}fn main() {{}}\n");
    let dir = tree(&[
        (
            "Cargo.toml",
            b"[package]\nname = \"serving\"\nversion = \"0.1.0\"\n",
        ),
        ("src/main.rs", main.as_bytes()),
        (
            "src/example/main.rs",
            b"use tch::Tensor;\nmod example::{\n    mnist,\n};\n",
        ),
    ]);
    let walked = lint_paths(&[dir.path().to_owned()], &Config::default());
    assert!(walked.errors.is_empty(), "{:?}", walked.errors);
    assert_ne!(walked.exit_code(), FAILURE);
    let named = lint_paths(
        &[dir.path().join("src/example/main.rs")],
        &Config::default(),
    );
    let (_, _, message) = only_error(&named);
    assert!(message.starts_with("could not parse: "), "{message}");
}
