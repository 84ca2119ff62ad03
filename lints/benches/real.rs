//! The real-code benchmark: lints public repositories that use tch and
//! compares the findings with the verdicts in `lints/bench/verdicts/`, one
//! file per set (`dev.tsv` is what the lint was developed on, `holdout.tsv`
//! what it was not tuned on). Prints precision and recall per repository
//! and per set, at warning level and at note level, and lists every finding
//! that has no verdict.
//!
//! `cargo bench -p devcheck-lint --bench real -- DIR [--verdicts FILE ...]`
//!
//! DIR holds the repositories, each in a directory named after the
//! repository (`tch-rs` for `LaurentMazare/tch-rs`), directly or one level
//! down (`DIR/dev/tch-rs`). Fetch them at the commits the verdict files
//! name; in a git checkout the commit is checked. Exits 1 if a finding has
//! no verdict, 2 on bad usage or an unreadable verdict file.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use devcheck_lint::verdicts::{self, Counts, Verdict};
use devcheck_lint::{lint_paths, Config, Severity};

fn main() -> ExitCode {
    let mut dir: Option<PathBuf> = None;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--verdicts" => match args.next() {
                Some(file) => files.push(PathBuf::from(file)),
                None => return usage("--verdicts needs a file"),
            },
            // cargo bench passes `--bench` to harness-less benches.
            flag if flag.starts_with("--") => {}
            path if dir.is_none() => dir = Some(PathBuf::from(path)),
            extra => return usage(&format!("unexpected argument `{extra}`")),
        }
    }
    let Some(dir) = dir else {
        return usage("the directory holding the repositories is missing");
    };
    if files.is_empty() {
        files = default_verdict_files();
    }
    if files.is_empty() {
        eprintln!("no verdict files found in {}", verdict_dir().display());
        return ExitCode::from(2);
    }

    println!("devcheck-lint real-code benchmark over {}", dir.display());
    let mut unjudged_total = 0;
    let mut sets: Vec<(String, Counts, Counts)> = Vec::new();
    for file in &files {
        let set = file
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        let verdicts = match verdicts::load(file) {
            Ok(v) => v,
            Err(err) => {
                eprintln!("{err}");
                return ExitCode::from(2);
            }
        };
        let mut repositories: Vec<&str> = verdicts.iter().map(|v| v.repository.as_str()).collect();
        repositories.dedup();
        repositories.sort();
        repositories.dedup();
        println!();
        println!(
            "set `{set}` ({}): {} repositories",
            file.display(),
            repositories.len()
        );
        let mut warning = Counts::default();
        let mut note = Counts::default();
        for repository in repositories {
            let judged: Vec<&Verdict> = verdicts
                .iter()
                .filter(|v| v.repository == repository)
                .collect();
            let Some(root) = find_repository(&dir, judged[0].directory()) else {
                println!(
                    "  {repository}: not found under {} (fetch it at {}); left out",
                    dir.display(),
                    judged[0].commit
                );
                continue;
            };
            if let Some(head) = git_head(&root) {
                if head != judged[0].commit {
                    println!(
                        "  {repository}: checked out at {head}, judged at {}: line numbers may not match",
                        judged[0].commit
                    );
                }
            }
            let start = Instant::now();
            let report = lint_paths(std::slice::from_ref(&root), &Config::default());
            let elapsed = start.elapsed();
            let score = verdicts::score(&root, &report.findings, &judged);
            println!(
                "  {repository}@{}: {} files, {} warnings, {} notes, {} errors in {:.2} s",
                &judged[0].commit[..7],
                report.files_scanned,
                report.count(Severity::Warning) + report.count(Severity::Error),
                report.count(Severity::Note),
                report.errors.len(),
                elapsed.as_secs_f64()
            );
            println!("    warning level: {}", score.warning);
            println!("    note level:    {}", score.note);
            for finding in &score.unjudged {
                println!(
                    "    UNJUDGED {} {}:{}: {}",
                    finding.severity.as_str(),
                    finding.file,
                    finding.line,
                    finding.message
                );
            }
            unjudged_total += score.unjudged.len();
            warning.add(score.warning);
            note.add(score.note);
        }
        println!("  set `{set}` warning level: {warning}");
        println!("  set `{set}` note level:    {note}");
        sets.push((set, warning, note));
    }
    println!();
    for (set, warning, note) in &sets {
        println!("{set:>10}: warning level {warning}");
        println!("{:>10}  note level    {note}", "");
    }
    if unjudged_total > 0 {
        println!("{unjudged_total} findings have no verdict: judge them in the verdict files");
        return ExitCode::from(1);
    }
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("{problem}");
    eprintln!("usage: cargo bench -p devcheck-lint --bench real -- DIR [--verdicts FILE ...]");
    ExitCode::from(2)
}

fn verdict_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/verdicts")
}

fn default_verdict_files() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(verdict_dir())
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// `DIR/name` or `DIR/*/name`.
fn find_repository(dir: &Path, name: &str) -> Option<PathBuf> {
    let direct = dir.join(name);
    if direct.is_dir() {
        return Some(direct);
    }
    let mut nested: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join(name))
        .filter(|p| p.is_dir())
        .collect();
    nested.sort();
    nested.into_iter().next()
}

fn git_head(root: &Path) -> Option<String> {
    if !root.join(".git").exists() {
        return None;
    }
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}
