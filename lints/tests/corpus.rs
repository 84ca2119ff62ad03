//! The corpus under `tests/corpus/lint/`: realistic training, evaluation,
//! RL-rollout, GAN and decoding loops, and one case per class of false
//! positive and miss found on real code. A `.rs` file there is one case,
//! linted alone; a directory is one case linted as a whole (several files,
//! crates and manifests: a small workspace). Each expected finding is
//! marked on its line with `//~ <severity> <rule>`; every other line must
//! stay silent. The exact human and JSON output is kept as snapshots in
//! `snapshots/lint/`.

use std::path::{Path, PathBuf};

use devcheck_lint::{lint_paths, render, Config, Report};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("lints/ sits in the workspace")
        .to_owned()
}

/// Every case: the `.rs` files and the directories of the corpus.
fn corpus() -> Vec<PathBuf> {
    let dir = workspace().join("tests/corpus/lint");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the corpus directory exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 8,
        "the corpus went missing from {}",
        dir.display()
    );
    cases
}

/// The Rust files of a case.
fn files(case: &Path) -> Vec<PathBuf> {
    if case.is_file() {
        return vec![case.to_owned()];
    }
    let mut found = Vec::new();
    let mut pending = vec![case.to_owned()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("readable case directory") {
            let path = entry.expect("readable entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// `name.devcheck.toml` next to a corpus file, or `devcheck.toml` in a
/// case directory, configures its run.
fn config_for(case: &Path) -> Config {
    let config = if case.is_dir() {
        case.join("devcheck.toml")
    } else {
        case.with_extension("devcheck.toml")
    };
    if config.exists() {
        Config::load(&config).expect("corpus configuration parses")
    } else {
        Config::default()
    }
}

fn lint(case: &Path) -> Report {
    lint_paths(&[case.to_owned()], &config_for(case))
}

fn name(case: &Path) -> String {
    case.file_stem().unwrap().to_string_lossy().into_owned()
}

/// (file, line, severity, rule) for every `//~` marker of a case.
fn markers(case: &Path) -> Vec<(PathBuf, usize, String, String)> {
    let mut found = Vec::new();
    for file in files(case) {
        let text = std::fs::read_to_string(&file).expect("corpus file is readable");
        for (index, line) in text.lines().enumerate() {
            if let Some((_, marker)) = line.split_once("//~ ") {
                let mut words = marker.split_whitespace();
                let severity = words.next().expect("a severity after //~").to_owned();
                let rule = words.next().expect("a rule after the severity").to_owned();
                found.push((file.clone(), index + 1, severity, rule));
            }
        }
    }
    found
}

#[test]
fn findings_match_the_markers_exactly() {
    let mut mismatches = Vec::new();
    for case in corpus() {
        let report = lint(&case);
        assert!(
            report.errors.is_empty(),
            "{}: {:?}",
            case.display(),
            report.errors
        );
        let mut got: Vec<(PathBuf, usize, String, String)> = report
            .findings
            .iter()
            .map(|f| {
                (
                    f.file.clone(),
                    f.line,
                    f.severity.as_str().to_owned(),
                    f.rule.as_str().to_owned(),
                )
            })
            .collect();
        got.sort();
        let want = markers(&case);
        let show = |(file, line, severity, rule): &(PathBuf, usize, String, String)| {
            let file = file.strip_prefix(&case).unwrap_or(file).display();
            format!("{}: {file}:{line} {severity} {rule}", name(&case))
        };
        for finding in got.iter().filter(|g| !want.contains(g)) {
            mismatches.push(format!("unexpected {}", show(finding)));
        }
        for marker in want.iter().filter(|w| !got.contains(w)) {
            mismatches.push(format!("missing {}", show(marker)));
        }
    }
    assert!(mismatches.is_empty(), "\n{}", mismatches.join("\n"));
}

#[test]
fn every_rule_and_both_context_notes_are_covered() {
    let all: Vec<(PathBuf, usize, String, String)> =
        corpus().iter().flat_map(|c| markers(c)).collect();
    for rule in devcheck_lint::rules::all() {
        assert!(
            all.iter()
                .any(|(_, _, severity, r)| r == rule.id.as_str() && severity == "warning"),
            "no corpus warning for {}",
            rule.id
        );
    }
    assert!(all.iter().any(|(_, _, severity, _)| severity == "note"));
}

#[test]
fn output_snapshots() {
    let root = format!("{}/", workspace().display());
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(workspace().join("snapshots/lint"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        for case in corpus() {
            let report = lint(&case);
            let stem = name(&case);
            let human = render::human(&report, false).replace(&root, "");
            let json = render::json(&report).replace(&root, "");
            insta::assert_snapshot!(format!("{stem}.human"), human);
            insta::assert_snapshot!(format!("{stem}.json"), json);
        }
    });
}
