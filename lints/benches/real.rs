//! The real-code benchmark: lints public repositories that use tch and
//! compares the findings with the verdicts in `lints/bench/verdicts/`, one
//! file per set. `sets.toml` there says which sets are development sets
//! (the lint is tuned on them) and which are held out (only measured); the
//! two kinds are always summed and printed apart. Prints precision and
//! recall per repository and per set, at warning level and at note level,
//! a table per kind of set at warning level, and lists every finding that
//! has no verdict.
//!
//! `cargo bench -p devcheck-lint --bench real -- DIR [--verdicts FILE ...] [--sets KIND] [--detail]`
//!
//! DIR holds the repositories, each in a directory named after the
//! repository (`tch-rs` for `LaurentMazare/tch-rs`), directly or one level
//! down (`DIR/dev/tch-rs`). Fetch them at the commits the verdict files
//! name; in a git checkout the commit is checked. `--sets development` (or
//! `held-out`) runs only the sets of that kind. `--detail` lists, for
//! development sets only, every false warning and every miss with its
//! verdict's reason: a held-out set's mistakes are never printed, so that
//! nobody tunes on them by accident. Exits 1 if a finding has no
//! verdict, 2 on bad usage, an unreadable verdict file or a set that
//! `sets.toml` does not list.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use devcheck_lint::verdicts::{self, Counts, SetKind, SetKinds, Verdict};
use devcheck_lint::{exit, lint_paths, Config, Severity};

fn main() -> ExitCode {
    let mut dir: Option<PathBuf> = None;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut only: Option<SetKind> = None;
    let mut detail = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--verdicts" => match args.next() {
                Some(file) => files.push(PathBuf::from(file)),
                None => return usage("--verdicts needs a file"),
            },
            "--detail" => detail = true,
            "--sets" => match args.next().map(|kind| kind.parse::<SetKind>()) {
                Some(Ok(kind)) => only = Some(kind),
                Some(Err(problem)) => return usage(&format!("--sets: {problem}")),
                None => return usage("--sets needs `development` or `held-out`"),
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
        return ExitCode::from(exit::FAILURE);
    }

    let list = verdict_dir().join("sets.toml");
    let kinds = match SetKinds::load(&list) {
        Ok(kinds) => kinds,
        Err(err) => {
            eprintln!("{err}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    // Every set's kind is known before anything is linted.
    let mut chosen: Vec<(&PathBuf, SetKind)> = Vec::new();
    for file in &files {
        match kinds.of_file(file, &list) {
            Ok(kind) if only.is_none_or(|only| only == kind) => chosen.push((file, kind)),
            Ok(_) => {}
            Err(err) => {
                eprintln!("{err}");
                return ExitCode::from(exit::FAILURE);
            }
        }
    }

    println!("devcheck-lint real-code benchmark over {}", dir.display());
    let mut unjudged_total = 0;
    let mut sets: Vec<SetScore> = Vec::new();
    for (file, kind) in chosen {
        let set = verdicts::set_name(file);
        let verdicts = match verdicts::load(file) {
            Ok(v) => v,
            Err(err) => {
                eprintln!("{err}");
                return ExitCode::from(exit::FAILURE);
            }
        };
        let mut repositories: Vec<&str> = verdicts.iter().map(|v| v.repository.as_str()).collect();
        repositories.dedup();
        repositories.sort();
        repositories.dedup();
        println!();
        println!(
            "set `{set}` ({kind}, {}): {} repositories",
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
            let Some(root) = find_repository(&dir, &set, judged[0].directory(), &judged[0].commit)
            else {
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
            // Held-out sets are measured, never read: their mistakes stay unprinted.
            if detail && kind == SetKind::Development {
                for mistake in &score.mistakes {
                    println!(
                        "    {} {}:{}: {}{}",
                        if mistake.false_warning {
                            "FALSE-WARNING"
                        } else {
                            "MISS"
                        },
                        mistake.file,
                        mistake.line,
                        mistake.reason,
                        mistake
                            .message
                            .as_deref()
                            .map(|m| format!(" [lint: {m}]"))
                            .unwrap_or_default()
                    );
                }
            }
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
        sets.push(SetScore {
            name: set,
            kind,
            warning,
            note,
        });
    }
    for kind in SetKind::ALL {
        let of_kind: Vec<&SetScore> = sets.iter().filter(|s| s.kind == kind).collect();
        if !of_kind.is_empty() {
            println!();
            print_kind(kind, &of_kind);
        } else if kind == SetKind::HeldOut && only.is_none() {
            // Said, not left out: a figure on unseen code needs a set nobody
            // has read yet.
            println!();
            println!(
                "held-out sets: none listed in sets.toml; every set has been read, so a held-out figure needs fresh repositories"
            );
        }
    }
    if unjudged_total > 0 {
        println!("{unjudged_total} findings have no verdict: judge them in the verdict files");
        return ExitCode::from(exit::FINDINGS);
    }
    ExitCode::SUCCESS
}

/// One set's counts.
struct SetScore {
    name: String,
    kind: SetKind,
    warning: Counts,
    note: Counts,
}

/// The table of one kind of set at warning level, each set and all of them
/// together, then the note level of all of them together.
fn print_kind(kind: SetKind, sets: &[&SetScore]) {
    let names: Vec<&str> = sets.iter().map(|s| s.name.as_str()).collect();
    println!(
        "{kind} sets ({}), warning level (warnings count as reported):",
        names.join(", ")
    );
    println!(
        "  {:<16} {:>9} {:>7} {:>5} {:>5} {:>7}",
        "set", "precision", "recall", "TP", "FP", "misses"
    );
    let mut warning = Counts::default();
    let mut note = Counts::default();
    for set in sets {
        print_row(&set.name, set.warning);
        warning.add(set.warning);
        note.add(set.note);
    }
    print_row(&format!("all {kind}"), warning);
    println!("  note level, all {kind}: {note}");
}

fn print_row(label: &str, counts: Counts) {
    let show = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"));
    println!(
        "  {label:<16} {:>9} {:>7} {:>5} {:>5} {:>7}",
        show(counts.precision()),
        show(counts.recall()),
        counts.true_positives,
        counts.false_positives,
        counts.misses
    );
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("{problem}");
    eprintln!(
        "usage: cargo bench -p devcheck-lint --bench real -- DIR [--verdicts FILE ...] [--sets development|held-out] [--detail]"
    );
    ExitCode::from(exit::FAILURE)
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

/// `DIR/set/name`, `DIR/name` or `DIR/*/name`: two repositories of one
/// name (owners differ) in two sets each keep their own set's directory,
/// and among several `DIR/*/name` the one checked out at the judged commit
/// is taken.
fn find_repository(dir: &Path, set: &str, name: &str, commit: &str) -> Option<PathBuf> {
    for direct in [dir.join(set).join(name), dir.join(name)] {
        if direct.is_dir() {
            return Some(direct);
        }
    }
    let mut nested: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path().join(name))
        .filter(|p| p.is_dir())
        .collect();
    nested.sort();
    let at_commit = nested
        .iter()
        .position(|p| git_head(p).as_deref() == Some(commit));
    match at_commit {
        Some(i) => Some(nested.swap_remove(i)),
        None => nested.into_iter().next(),
    }
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
