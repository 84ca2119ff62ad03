//! Keeps the README's CI workflows honest: every ```yaml block parses as a
//! workflow with jobs, and every `cargo xtask …` line in a `run:` step parses
//! with xtask's own command line.

use std::path::Path;

use clap::Parser;
use saphyr::{LoadableYamlNode, Yaml};
use xtask::cli::{Cli, Task};

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../README.md");
    std::fs::read_to_string(path).expect("README.md at the workspace root")
}

/// The bodies of the README's ```yaml blocks.
fn yaml_blocks(markdown: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut current: Option<String> = None;
    for line in markdown.lines() {
        match &mut current {
            None if line.trim_end() == "```yaml" => current = Some(String::new()),
            Some(block) if line.trim_end() == "```" => {
                blocks.push(std::mem::take(block));
                current = None;
            }
            Some(block) => {
                block.push_str(line);
                block.push('\n');
            }
            None => {}
        }
    }
    assert!(current.is_none(), "an unclosed ```yaml block");
    blocks
}

/// Every `run:` script of every step of every job.
fn run_scripts(workflow: &Yaml) -> Vec<String> {
    let jobs = workflow["jobs"].as_mapping().expect("jobs is a mapping");
    let mut scripts = Vec::new();
    for job in jobs.values() {
        let steps = job["steps"].as_sequence().expect("every job has steps");
        for step in steps {
            if let Some(run) = step.as_mapping_get("run") {
                scripts.push(run.as_str().expect("run: is a string").to_owned());
            }
        }
    }
    scripts
}

/// The arguments after `cargo xtask` in each command of a script: continuation
/// lines joined, `${{ … }}` replaced by a plausible value, and redirections,
/// pipes and following commands cut off.
fn xtask_commands(script: &str) -> Vec<Vec<String>> {
    commands_of(script, "cargo xtask ")
}

/// The same for `prefix` (`cargo devcheck `).
fn commands_of(script: &str, prefix: &str) -> Vec<Vec<String>> {
    let script = script.replace("\\\n", " ");
    let mut commands = Vec::new();
    for line in script.lines() {
        let Some(at) = line.find(prefix) else {
            continue;
        };
        let mut command = substitute_expressions(&line[at + prefix.len()..]);
        if let Some(end) = command.find(['>', '|', ';', '&']) {
            command.truncate(end);
        }
        let words = command
            .split_whitespace()
            .map(|word| word.trim_matches('"').to_owned())
            .collect();
        commands.push(words);
    }
    commands
}

fn substitute_expressions(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${{") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("}}").expect("a closed ${{ }}") + start;
        let expression = rest[start + 3..end].trim();
        out.push_str(if expression.starts_with("matrix.") {
            "1"
        } else {
            "value"
        });
        rest = &rest[end + 2..];
    }
    out.push_str(rest);
    out
}

#[test]
fn readme_workflows_parse_and_their_xtask_commands_are_valid() {
    let blocks = yaml_blocks(&readme());
    assert_eq!(
        blocks.len(),
        3,
        "a user's workflow with cargo devcheck, the CI workflow and the nextest example"
    );
    let mut devcheck_verbs = Vec::new();
    let mut verbs = Vec::new();
    for block in &blocks {
        let documents = Yaml::load_from_str(block)
            .unwrap_or_else(|error| panic!("invalid YAML: {error}\n{block}"));
        assert_eq!(documents.len(), 1);
        let workflow = &documents[0];
        assert!(
            workflow.as_mapping_get("jobs").is_some(),
            "no jobs in:\n{block}"
        );
        for script in run_scripts(workflow) {
            for args in commands_of(&script, "cargo devcheck ") {
                let argv = std::iter::once("cargo devcheck".to_owned()).chain(args.iter().cloned());
                let cli = cargo_devcheck::cli::Cli::try_parse_from(argv).unwrap_or_else(|error| {
                    panic!(
                        "`cargo devcheck {}` does not parse:\n{error}",
                        args.join(" ")
                    )
                });
                devcheck_verbs.push(match cli.verb {
                    cargo_devcheck::cli::Verb::Matrix(_) => "matrix",
                    other => panic!("the user's workflow runs only matrix, not {other:?}"),
                });
            }
            for args in xtask_commands(&script) {
                let argv = std::iter::once("cargo xtask".to_owned()).chain(args.iter().cloned());
                let cli = Cli::try_parse_from(argv).unwrap_or_else(|error| {
                    panic!("`cargo xtask {}` does not parse:\n{error}", args.join(" "))
                });
                verbs.push(match cli.task {
                    Task::Matrix(matrix) => {
                        assert!(matrix.report.starts_with("reports"), "{matrix:?}");
                        "matrix"
                    }
                    Task::Merge(_) => "merge",
                    other => panic!("the README's CI runs only matrix and merge, not {other:?}"),
                });
            }
        }
    }
    assert_eq!(verbs, ["matrix", "matrix", "matrix", "merge", "merge"]);
    assert_eq!(devcheck_verbs, ["matrix"]);
}

#[test]
fn commands_are_cut_at_redirections_and_expressions_are_filled() {
    let script =
        "cargo xtask matrix --report r.json \\\n  --device cpu >> \"$GITHUB_STEP_SUMMARY\"\n\
                  echo done\n\
                  cargo xtask merge parts/*.json --out ${{ matrix.out }} > summary.md";
    assert_eq!(
        xtask_commands(script),
        [
            vec!["matrix", "--report", "r.json", "--device", "cpu"],
            vec!["merge", "parts/*.json", "--out", "1"],
        ]
    );
}

#[test]
fn a_bad_xtask_line_would_be_caught() {
    // The check above is only worth something if clap refuses what it should.
    let args = &xtask_commands("cargo xtask merge a.json --out m.json --summary html >> s.md")[0];
    let argv = std::iter::once("cargo xtask".to_owned()).chain(args.iter().cloned());
    let error = Cli::try_parse_from(argv).unwrap_err();
    assert_eq!(error.kind(), clap::error::ErrorKind::InvalidValue);
}
