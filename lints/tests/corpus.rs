//! The corpus under `tests/corpus/lint/`: realistic training, evaluation,
//! RL-rollout, GAN and decoding loops. Each expected finding is marked on
//! its line with `//~ <severity> <rule>`; every other line must stay
//! silent. The exact human and JSON output is kept as snapshots in
//! `snapshots/lint/`.

use std::path::{Path, PathBuf};

use devcheck_lint::{lint_paths, render, Config, Report};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("lints/ sits in the workspace")
        .to_owned()
}

fn corpus() -> Vec<PathBuf> {
    let dir = workspace().join("tests/corpus/lint");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("the corpus directory exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    files.sort();
    assert!(
        files.len() >= 8,
        "the corpus went missing from {}",
        dir.display()
    );
    files
}

/// `name.devcheck.toml` next to a corpus file configures its run.
fn config_for(file: &Path) -> Config {
    let config = file.with_extension("devcheck.toml");
    if config.exists() {
        Config::load(&config).expect("corpus configuration parses")
    } else {
        Config::default()
    }
}

fn lint(file: &Path) -> Report {
    lint_paths(&[file.to_owned()], &config_for(file))
}

/// (line, severity, rule) for every `//~` marker.
fn markers(file: &Path) -> Vec<(usize, String, String)> {
    let text = std::fs::read_to_string(file).expect("corpus file is readable");
    let mut found = Vec::new();
    for (index, line) in text.lines().enumerate() {
        if let Some((_, marker)) = line.split_once("//~ ") {
            let mut words = marker.split_whitespace();
            let severity = words.next().expect("a severity after //~").to_owned();
            let rule = words.next().expect("a rule after the severity").to_owned();
            found.push((index + 1, severity, rule));
        }
    }
    found
}

#[test]
fn findings_match_the_markers_exactly() {
    let mut mismatches = Vec::new();
    for file in corpus() {
        let report = lint(&file);
        assert!(
            report.errors.is_empty(),
            "{}: {:?}",
            file.display(),
            report.errors
        );
        let mut got: Vec<(usize, String, String)> = report
            .findings
            .iter()
            .map(|f| {
                (
                    f.line,
                    f.severity.as_str().to_owned(),
                    f.rule.as_str().to_owned(),
                )
            })
            .collect();
        got.sort();
        let want = markers(&file);
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        for finding in got.iter().filter(|g| !want.contains(g)) {
            mismatches.push(format!("{name}: unexpected {finding:?}"));
        }
        for marker in want.iter().filter(|w| !got.contains(w)) {
            mismatches.push(format!("{name}: missing {marker:?}"));
        }
    }
    assert!(mismatches.is_empty(), "\n{}", mismatches.join("\n"));
}

#[test]
fn every_rule_and_both_context_notes_are_covered() {
    let all: Vec<(usize, String, String)> = corpus().iter().flat_map(|f| markers(f)).collect();
    for rule in devcheck_lint::rules::RULES {
        assert!(
            all.iter()
                .any(|(_, severity, r)| r == rule.id.as_str() && severity == "warning"),
            "no corpus warning for {}",
            rule.id
        );
    }
    assert!(all.iter().any(|(_, severity, _)| severity == "note"));
}

#[test]
fn output_snapshots() {
    let root = format!("{}/", workspace().display());
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(workspace().join("snapshots/lint"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.bind(|| {
        for file in corpus() {
            let report = lint(&file);
            let stem = file.file_stem().unwrap().to_string_lossy().into_owned();
            let human = render::human(&report, false).replace(&root, "");
            let json = render::json(&report).replace(&root, "");
            insta::assert_snapshot!(format!("{stem}.human"), human);
            insta::assert_snapshot!(format!("{stem}.json"), json);
        }
    });
}
