//! SARIF 2.1.0, the format GitHub code scanning and most CI dashboards read.
//!
//! The `rules[]` array comes from the same registry as `--explain` and
//! `--list-rules`. File locations are relative to a source root (the git
//! repository's top level, found by [`source_root`]) under the `%SRCROOT%`
//! base id, so results line up with the files a code-scanning upload knows.

use std::path::{Component, Path, PathBuf};

use serde_json::{json, Value};

use crate::config::Level;
use crate::rules::{self, RuleInfo};
use crate::{FileError, Finding, Report, Severity};

/// The schema the output declares.
pub const SARIF_SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The base id every artifact location is relative to.
const SOURCE_ROOT_ID: &str = "%SRCROOT%";

/// The git repository's top level above `cwd` (the nearest ancestor holding
/// `.git`, a directory or a worktree's file), else `cwd` itself.
pub fn source_root(cwd: &Path) -> PathBuf {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .unwrap_or(cwd)
        .to_path_buf()
}

/// Renders the report as a SARIF 2.1.0 log with one run. Relative paths in
/// the report are taken relative to `cwd`; locations are written relative to
/// `root` (see [`source_root`]), or as absolute `file://` URIs for files
/// outside it.
pub fn sarif(report: &Report, cwd: &Path, root: &Path) -> String {
    let locator = Locator::new(cwd, root);
    let results: Vec<Value> = report
        .findings
        .iter()
        .map(|finding| result(finding, &locator))
        .collect();
    let mut invocation = json!({ "executionSuccessful": report.errors.is_empty() });
    if !report.errors.is_empty() {
        let notifications: Vec<Value> = report
            .errors
            .iter()
            .map(|error| notification(error, &locator))
            .collect();
        invocation["toolExecutionNotifications"] = Value::Array(notifications);
    }
    let log = json!({
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {
                "driver": {
                    "name": "devcheck-lint",
                    "version": env!("CARGO_PKG_VERSION"),
                    "rules": rules::all().map(descriptor).collect::<Vec<_>>(),
                }
            },
            "originalUriBaseIds": {
                SOURCE_ROOT_ID: { "uri": directory_uri(&locator.root) }
            },
            // Columns count characters, as in the other formats.
            "columnKind": "unicodeCodePoints",
            "invocations": [invocation],
            "results": results,
        }]
    });
    let mut text =
        serde_json::to_string_pretty(&log).expect("a tree of JSON values always serialises");
    text.push('\n');
    text
}

/// A rule's `reportingDescriptor`.
fn descriptor(rule: &RuleInfo) -> Value {
    let markdown: String = rule
        .doc
        .lines()
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n");
    json!({
        "id": rule.id.as_str(),
        "shortDescription": { "text": rule.summary },
        "fullDescription": { "text": what_it_does(&markdown).unwrap_or(rule.summary) },
        "help": {
            "text": rule.explain(),
            "markdown": format!("{}\n\n{}", rule.summary, markdown.trim_end()),
        },
        "defaultConfiguration": { "level": configured_level(rule.default_level) },
    })
}

/// The body of the doc's "What it does" section, as one paragraph.
fn what_it_does(markdown: &str) -> Option<&str> {
    let (_, rest) = markdown.split_once("### What it does")?;
    let body = rest.split("\n###").next()?.trim();
    (!body.is_empty()).then_some(body)
}

fn configured_level(level: Level) -> &'static str {
    match level {
        Level::Allow => "none",
        Level::Note => "note",
        Level::Warn => "warning",
        Level::Deny => "error",
    }
}

fn result_level(severity: Severity) -> &'static str {
    match severity {
        Severity::Note => "note",
        Severity::Warning => "warning",
        Severity::Error => "error",
    }
}

fn result(finding: &Finding, locator: &Locator) -> Value {
    let rule_index = rules::all()
        .position(|rule| rule.id == finding.rule)
        .expect("every finding's rule is in the registry");
    // Code-scanning shows only the message, so the notes (the loop, the call
    // chain) travel in it, one per line, as the human format prints them.
    let mut text = finding.message.clone();
    for note in &finding.notes {
        text.push_str("\nnote: ");
        text.push_str(note);
    }
    json!({
        "ruleId": finding.rule.as_str(),
        "ruleIndex": rule_index,
        "level": result_level(finding.severity),
        "message": { "text": text },
        "locations": [{
            "physicalLocation": {
                "artifactLocation": locator.artifact(&finding.file),
                // Both formats count 1-based characters with the end just
                // past the last one, which is SARIF's exclusive endColumn.
                "region": {
                    "startLine": finding.line,
                    "startColumn": finding.column,
                    "endLine": finding.end_line,
                    "endColumn": finding.end_column,
                },
            }
        }],
    })
}

fn notification(error: &FileError, locator: &Locator) -> Value {
    let mut physical = json!({ "artifactLocation": locator.artifact(&error.file) });
    if let Some(line) = error.line {
        physical["region"] = json!({ "startLine": line });
    }
    json!({
        "level": "error",
        "message": { "text": error.message },
        "locations": [{ "physicalLocation": physical }],
    })
}

/// Turns report paths into artifact locations.
struct Locator {
    cwd: PathBuf,
    root: PathBuf,
}

impl Locator {
    fn new(cwd: &Path, root: &Path) -> Locator {
        Locator {
            cwd: normalize(cwd),
            root: normalize(&cwd.join(root)),
        }
    }

    fn artifact(&self, file: &Path) -> Value {
        let absolute = normalize(&self.cwd.join(file));
        match absolute.strip_prefix(&self.root) {
            Ok(relative) => json!({
                "uri": encode_path(relative),
                "uriBaseId": SOURCE_ROOT_ID,
            }),
            Err(_) => json!({ "uri": file_uri(&absolute) }),
        }
    }
}

/// Removes `.` and resolves `..` without touching the file system, so a
/// symlinked checkout keeps the paths the user typed.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `a/b c.rs` → `a/b%20c.rs`: forward slashes, everything outside RFC 3986's
/// unreserved set percent-encoded.
fn encode_path(path: &Path) -> String {
    let mut uri = String::new();
    for (index, component) in path.components().enumerate() {
        if index > 0 {
            uri.push('/');
        }
        let Component::Normal(name) = component else {
            continue;
        };
        for byte in name.to_string_lossy().bytes() {
            if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
                uri.push(byte as char);
            } else {
                uri.push_str(&format!("%{byte:02X}"));
            }
        }
    }
    uri
}

fn file_uri(absolute: &Path) -> String {
    let relative: PathBuf = absolute
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    let encoded = encode_path(&relative);
    match absolute.components().next() {
        // Windows: `C:\x` → `file:///C:/x`.
        Some(Component::Prefix(prefix)) => {
            format!("file:///{}/{encoded}", prefix.as_os_str().to_string_lossy())
        }
        _ => format!("file:///{encoded}"),
    }
}

fn directory_uri(dir: &Path) -> String {
    let uri = file_uri(dir);
    if uri.ends_with('/') {
        uri
    } else {
        uri + "/"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(file: &str) -> Finding {
        Finding {
            rule: rules::by_id("host-value-op"),
            severity: Severity::Warning,
            file: PathBuf::from(file),
            line: 4,
            column: 9,
            end_line: 4,
            end_column: 21,
            message: "`equal` compares on the device and reads the answer back".into(),
            notes: vec!["via `Agent::learn` → `Tensor::equal`".into()],
            help: "",
        }
    }

    fn render(report: &Report) -> Value {
        let text = sarif(report, Path::new("/repo/crate"), Path::new("/repo"));
        serde_json::from_str(&text).expect("valid JSON")
    }

    #[test]
    fn the_log_has_the_shape_code_scanning_requires() {
        let report = Report {
            findings: vec![finding("src/train loop.rs")],
            ..Report::default()
        };
        let log = render(&report);
        assert_eq!(log["$schema"], SARIF_SCHEMA);
        assert_eq!(log["version"], "2.1.0");
        let runs = log["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1);
        let run = &runs[0];
        let driver = &run["tool"]["driver"];
        assert_eq!(driver["name"], "devcheck-lint");
        assert_eq!(driver["version"], env!("CARGO_PKG_VERSION"));
        let ids: Vec<&str> = driver["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|rule| rule["id"].as_str().unwrap())
            .collect();
        let registry: Vec<&str> = rules::all().map(|rule| rule.id.as_str()).collect();
        assert_eq!(ids, registry);
        for rule in driver["rules"].as_array().unwrap() {
            for key in ["shortDescription", "fullDescription", "help"] {
                assert!(rule[key]["text"].as_str().is_some_and(|t| !t.is_empty()));
            }
            assert!(rule["help"]["markdown"]
                .as_str()
                .unwrap()
                .contains("### Why is this bad"));
            assert_eq!(rule["defaultConfiguration"]["level"], "warning");
        }
        assert_eq!(
            run["originalUriBaseIds"]["%SRCROOT%"]["uri"],
            "file:///repo/"
        );
        assert_eq!(run["invocations"][0]["executionSuccessful"], true);

        let result = &run["results"][0];
        assert_eq!(result["ruleId"], "host-value-op");
        assert_eq!(result["ruleIndex"], 1);
        assert_eq!(result["level"], "warning");
        assert_eq!(
            result["message"]["text"],
            "`equal` compares on the device and reads the answer back\nnote: via `Agent::learn` → `Tensor::equal`"
        );
        let location = &result["locations"][0]["physicalLocation"];
        assert_eq!(
            location["artifactLocation"],
            json!({ "uri": "crate/src/train%20loop.rs", "uriBaseId": "%SRCROOT%" })
        );
        assert_eq!(
            location["region"],
            json!({ "startLine": 4, "startColumn": 9, "endLine": 4, "endColumn": 21 })
        );
    }

    #[test]
    fn input_errors_become_notifications_and_fail_the_invocation() {
        let report = Report {
            errors: vec![FileError {
                file: PathBuf::from("../outside/gen.rs"),
                line: Some(3),
                message: "could not parse: expected `;`".into(),
            }],
            ..Report::default()
        };
        let log = render(&report);
        let invocation = &log["runs"][0]["invocations"][0];
        assert_eq!(invocation["executionSuccessful"], false);
        let notification = &invocation["toolExecutionNotifications"][0];
        assert_eq!(notification["level"], "error");
        assert_eq!(
            notification["message"]["text"],
            "could not parse: expected `;`"
        );
        // `/repo/crate/../outside` is still inside the repository.
        assert_eq!(
            notification["locations"][0]["physicalLocation"],
            json!({
                "artifactLocation": { "uri": "outside/gen.rs", "uriBaseId": "%SRCROOT%" },
                "region": { "startLine": 3 },
            })
        );
    }

    #[test]
    fn files_outside_the_root_get_absolute_uris() {
        let report = Report {
            findings: vec![finding("/elsewhere/x.rs")],
            ..Report::default()
        };
        let log = render(&report);
        assert_eq!(
            log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"],
            json!({ "uri": "file:///elsewhere/x.rs" })
        );
    }

    #[test]
    fn the_source_root_is_the_repository_top_level() {
        let dir = tempfile::tempdir().unwrap();
        let nested = dir.path().join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        assert_eq!(source_root(&nested), nested);
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        assert_eq!(source_root(&nested), dir.path());
    }
}
