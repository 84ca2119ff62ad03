//! The real-code benchmark's ground truth.
//!
//! A verdict file (`lints/bench/verdicts/<set>.tsv`) lists places in public
//! repositories that use tch, each judged by reading the code: `true` when
//! a host sync there runs once per iteration of a hot loop in a release
//! build (whether or not the lint reports it), `false` when it does not (a
//! finding the lint should not make). Only facts about the code are kept:
//! repository, commit, file, line, verdict and a one-line reason that
//! describes the code without quoting it.
//!
//! [`score`] compares a lint run over one repository with its verdicts:
//! a warning on a `true` line is a true positive, on a `false` line a false
//! positive, and a `true` line without a warning is a miss. At note level,
//! notes count as reported too. A finding on a line with no verdict is
//! *unjudged*: it is listed, never silently counted.
//!
//! Sets are of two kinds ([`SetKind`]), listed once in
//! `lints/bench/verdicts/sets.toml` ([`SetKinds`]): development sets, which
//! the lint may be tuned on, and held-out sets, which are only measured.
//! Their figures are always reported apart.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::{Finding, Severity};

/// The columns of a verdict file, in order.
pub const HEADER: [&str; 6] = ["repository", "commit", "file", "line", "verdict", "reason"];

/// One judged place in a repository.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// `owner/name` on GitHub.
    pub repository: String,
    /// The commit the line numbers refer to.
    pub commit: String,
    /// Path within the repository, with `/` separators.
    pub file: String,
    /// 1-based line of the read (the first read of its statement).
    pub line: usize,
    /// Whether a host sync runs there once per iteration of a hot loop.
    pub real: bool,
    /// What the code does there, in one line.
    pub reason: String,
}

impl Verdict {
    /// The repository's name without its owner: the directory it is
    /// fetched into.
    pub fn directory(&self) -> &str {
        self.repository
            .rsplit_once('/')
            .map_or(self.repository.as_str(), |(_, name)| name)
    }
}

/// Why a verdict file could not be used.
#[derive(Debug, Error)]
pub enum VerdictError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The verdict file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line does not have the documented shape.
    #[error("{path}:{line}: {message}")]
    Format {
        /// The verdict file.
        path: PathBuf,
        /// 1-based line in it.
        line: usize,
        /// What is wrong and how the line should look.
        message: String,
    },
    /// The list of sets and their kinds is not usable.
    #[error("{path}: {message}")]
    Sets {
        /// The list (`sets.toml`).
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
}

/// Parses a verdict file: a header line, then one tab-separated verdict per
/// line; blank lines and lines starting with `#` are ignored.
pub fn parse(text: &str, path: &Path) -> Result<Vec<Verdict>, VerdictError> {
    let error = |line: usize, message: String| VerdictError::Format {
        path: path.to_owned(),
        line,
        message,
    };
    let mut verdicts = Vec::new();
    let mut seen_header = false;
    let mut keys: BTreeMap<(String, String, usize), usize> = BTreeMap::new();
    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        if raw.trim().is_empty() || raw.starts_with('#') {
            continue;
        }
        let columns: Vec<&str> = raw.split('\t').collect();
        if !seen_header {
            if columns != HEADER {
                return Err(error(
                    number,
                    format!("the first line must be the header `{}`", HEADER.join("\\t")),
                ));
            }
            seen_header = true;
            continue;
        }
        let [repository, commit, file, line, verdict, reason] = columns.as_slice() else {
            return Err(error(
                number,
                format!(
                    "{} tab-separated columns expected, found {}",
                    HEADER.len(),
                    columns.len()
                ),
            ));
        };
        if !repository.contains('/') {
            return Err(error(
                number,
                format!("repository `{repository}` is not `owner/name`"),
            ));
        }
        if commit.len() != 40 || !commit.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(error(
                number,
                format!("commit `{commit}` is not 40 hex digits"),
            ));
        }
        let line: usize = line
            .parse()
            .ok()
            .filter(|&l| l > 0)
            .ok_or_else(|| error(number, format!("line `{line}` is not a positive number")))?;
        let real = match *verdict {
            "true" => true,
            "false" => false,
            other => {
                return Err(error(
                    number,
                    format!("verdict `{other}` is neither `true` nor `false`"),
                ))
            }
        };
        if reason.trim().is_empty() {
            return Err(error(number, "the reason is empty".into()));
        }
        let key = (repository.to_string(), file.to_string(), line);
        if let Some(first) = keys.insert(key, number) {
            return Err(error(
                number,
                format!("{repository} {file}:{line} is judged twice (first on line {first})"),
            ));
        }
        verdicts.push(Verdict {
            repository: repository.to_string(),
            commit: commit.to_string(),
            file: file.to_string(),
            line,
            real,
            reason: reason.to_string(),
        });
    }
    if !seen_header {
        return Err(error(1, "the file has no header line".into()));
    }
    Ok(verdicts)
}

/// Reads and parses a verdict file.
pub fn load(path: &Path) -> Result<Vec<Verdict>, VerdictError> {
    let text = std::fs::read_to_string(path).map_err(|source| VerdictError::Io {
        path: path.to_owned(),
        source,
    })?;
    parse(&text, path)
}

/// Whether the lint may be tuned on a set of verdicts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SetKind {
    /// The lint is developed and tuned on it.
    Development,
    /// Only measured: no change to the lint is made in response to it.
    HeldOut,
}

impl SetKind {
    /// The name used in `sets.toml` and in the benchmark's output.
    pub fn as_str(self) -> &'static str {
        match self {
            SetKind::Development => "development",
            SetKind::HeldOut => "held-out",
        }
    }

    /// Both kinds, development first.
    pub const ALL: [SetKind; 2] = [SetKind::Development, SetKind::HeldOut];
}

impl fmt::Display for SetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for SetKind {
    type Err = String;

    fn from_str(text: &str) -> Result<SetKind, String> {
        SetKind::ALL
            .into_iter()
            .find(|kind| kind.as_str() == text)
            .ok_or_else(|| format!("`{text}` is neither `development` nor `held-out`"))
    }
}

/// The kind of every verdict set, by the set's name (its verdict file's
/// name without `.tsv`): the one list that says which sets are held out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetKinds {
    kinds: BTreeMap<String, SetKind>,
}

/// `sets.toml` as written.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct SetsFile {
    development: Vec<String>,
    #[serde(rename = "held-out")]
    held_out: Vec<String>,
}

impl SetKinds {
    /// Parses `development = [..]` and `held-out = [..]`; a set may be in
    /// only one of them.
    pub fn parse(text: &str, path: &Path) -> Result<SetKinds, VerdictError> {
        let error = |message: String| VerdictError::Sets {
            path: path.to_owned(),
            message,
        };
        let file: SetsFile = toml::from_str(text).map_err(|err| error(err.message().to_owned()))?;
        let mut kinds = BTreeMap::new();
        let listed = [
            (SetKind::Development, file.development),
            (SetKind::HeldOut, file.held_out),
        ];
        for (kind, sets) in listed {
            for set in sets {
                if let Some(before) = kinds.insert(set.clone(), kind) {
                    return Err(error(format!(
                        "set `{set}` is listed as both {before} and {kind}"
                    )));
                }
            }
        }
        Ok(SetKinds { kinds })
    }

    /// Reads and parses a `sets.toml`.
    pub fn load(path: &Path) -> Result<SetKinds, VerdictError> {
        let text = std::fs::read_to_string(path).map_err(|source| VerdictError::Io {
            path: path.to_owned(),
            source,
        })?;
        SetKinds::parse(&text, path)
    }

    /// The kind of the set whose verdicts are in `file`, by the file's
    /// name; an error naming the list when the set is not in it.
    pub fn of_file(&self, file: &Path, list: &Path) -> Result<SetKind, VerdictError> {
        let set = set_name(file);
        self.kinds
            .get(&set)
            .copied()
            .ok_or_else(|| VerdictError::Sets {
                path: list.to_owned(),
                message: format!(
                    "the set `{set}` ({}) is not listed: add it to `development` or `held-out`",
                    file.display()
                ),
            })
    }
}

/// A set's name: its verdict file's name without `.tsv`.
pub fn set_name(file: &Path) -> String {
    file.file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned())
}

/// A finding with no verdict.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unjudged {
    /// Path within the repository.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// The finding's severity.
    pub severity: Severity,
    /// The finding's message.
    pub message: String,
}

/// Counts for one level (warnings only, or warnings and notes).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Reported lines judged `true`.
    pub true_positives: usize,
    /// Reported lines judged `false`.
    pub false_positives: usize,
    /// Lines judged `true` that were not reported.
    pub misses: usize,
}

impl Counts {
    /// Reported lines that are real syncs, among reported judged lines.
    pub fn precision(&self) -> Option<f64> {
        let reported = self.true_positives + self.false_positives;
        (reported > 0).then(|| self.true_positives as f64 / reported as f64)
    }

    /// Real syncs that were reported, among all lines judged `true`.
    pub fn recall(&self) -> Option<f64> {
        let real = self.true_positives + self.misses;
        (real > 0).then(|| self.true_positives as f64 / real as f64)
    }

    /// Adds another repository's counts.
    pub fn add(&mut self, other: Counts) {
        self.true_positives += other.true_positives;
        self.false_positives += other.false_positives;
        self.misses += other.misses;
    }
}

impl fmt::Display for Counts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let show = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.3}"));
        write!(
            f,
            "precision {} recall {} (TP {}, FP {}, misses {})",
            show(self.precision()),
            show(self.recall()),
            self.true_positives,
            self.false_positives,
            self.misses
        )
    }
}

/// One repository's findings compared with its verdicts.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RepoScore {
    /// Warnings (and errors) count as reported.
    pub warning: Counts,
    /// Notes count as reported too.
    pub note: Counts,
    /// Findings on lines without a verdict.
    pub unjudged: Vec<Unjudged>,
    /// At warning level, what was wrong: warnings on lines judged `false`, and
    /// lines judged `true` with no warning (a note at most), in file order.
    pub mistakes: Vec<Mistake>,
}

/// A judged line the lint got wrong at warning level.
#[derive(Clone, Debug, PartialEq)]
pub struct Mistake {
    /// Path within the repository.
    pub file: String,
    /// 1-based line.
    pub line: usize,
    /// `true` for a false warning, `false` for a miss.
    pub false_warning: bool,
    /// The verdict's reason.
    pub reason: String,
    /// What the lint said there, if anything (a miss may have a note).
    pub message: Option<String>,
}

/// Compares `findings` of a lint run over the repository checked out at
/// `root` with the repository's verdicts.
pub fn score(root: &Path, findings: &[Finding], verdicts: &[&Verdict]) -> RepoScore {
    let mut reported: BTreeMap<(String, usize), (Severity, String)> = BTreeMap::new();
    for finding in findings {
        let file = finding.file.strip_prefix(root).unwrap_or(&finding.file);
        let file = file
            .components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/");
        // A note says why it is no warning: its notes come along.
        let message = if finding.severity < Severity::Warning && !finding.notes.is_empty() {
            format!("{} (note: {})", finding.message, finding.notes.join("; "))
        } else {
            finding.message.clone()
        };
        let entry = reported
            .entry((file, finding.line))
            .or_insert((finding.severity, message.clone()));
        if finding.severity > entry.0 {
            *entry = (finding.severity, message);
        }
    }
    let mut result = RepoScore::default();
    for verdict in verdicts {
        let finding = reported.remove(&(verdict.file.clone(), verdict.line));
        let severity = finding.as_ref().map(|(s, _)| *s);
        let warned = severity.is_some_and(|s| s >= Severity::Warning);
        let noted = severity.is_some();
        if verdict.real != warned {
            result.mistakes.push(Mistake {
                file: verdict.file.clone(),
                line: verdict.line,
                false_warning: warned,
                reason: verdict.reason.clone(),
                message: finding.map(|(_, message)| message),
            });
        }
        match (verdict.real, warned, noted) {
            (true, true, _) => {
                result.warning.true_positives += 1;
                result.note.true_positives += 1;
            }
            (true, false, true) => {
                result.warning.misses += 1;
                result.note.true_positives += 1;
            }
            (true, false, false) => {
                result.warning.misses += 1;
                result.note.misses += 1;
            }
            (false, true, _) => {
                result.warning.false_positives += 1;
                result.note.false_positives += 1;
            }
            (false, false, true) => result.note.false_positives += 1,
            (false, false, false) => {}
        }
    }
    result
        .mistakes
        .sort_by(|a, b| (&a.file, a.line).cmp(&(&b.file, b.line)));
    result.unjudged = reported
        .into_iter()
        .map(|((file, line), (severity, message))| Unjudged {
            file,
            line,
            severity,
            message,
        })
        .collect();
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules;

    const COMMIT: &str = "a1dc7ecec800afb99fff031bf1febe876ecf1572";

    fn file(lines: &[&str]) -> String {
        let mut text = HEADER.join("\t");
        text.push('\n');
        for line in lines {
            text.push_str(line);
            text.push('\n');
        }
        text
    }

    fn finding(file: &str, line: usize, severity: Severity) -> Finding {
        Finding {
            rule: rules::by_id("host-sync"),
            severity,
            file: PathBuf::from("/r").join(file),
            line,
            column: 1,
            end_line: line,
            end_column: 2,
            message: "m".into(),
            notes: Vec::new(),
            help: "",
        }
    }

    #[test]
    fn verdicts_parse_and_bad_lines_name_their_line() {
        let text = file(&[
            "# a comment",
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t3\ttrue\tper-step loss read"),
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t9\tfalse\ttensor built on the CPU"),
        ]);
        let verdicts = parse(&text, Path::new("v.tsv")).unwrap();
        assert_eq!(verdicts.len(), 2);
        assert!(verdicts[0].real && !verdicts[1].real);
        assert_eq!(verdicts[0].directory(), "r");

        let bad = file(&[&format!("o/r\t{COMMIT}\tsrc/a.rs\t3\tmaybe\tx")]);
        let err = parse(&bad, Path::new("v.tsv")).unwrap_err().to_string();
        assert_eq!(
            err,
            "v.tsv:2: verdict `maybe` is neither `true` nor `false`"
        );
        let twice = file(&[
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t3\ttrue\tx"),
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t3\tfalse\ty"),
        ]);
        let err = parse(&twice, Path::new("v.tsv")).unwrap_err().to_string();
        assert!(err.contains("judged twice (first on line 2)"), "{err}");
        let err = parse("repository\tcommit\n", Path::new("v.tsv"))
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("v.tsv:1: the first line must be the header"),
            "{err}"
        );
    }

    #[test]
    fn set_kinds_come_from_one_list_and_unlisted_sets_are_errors() {
        let list = Path::new("sets.toml");
        let kinds = SetKinds::parse(
            "development = [\"dev\", \"dev2\"]\nheld-out = [\"holdout2\"]\n",
            list,
        )
        .unwrap();
        let of = |file: &str| kinds.of_file(Path::new(file), list);
        assert_eq!(of("verdicts/dev.tsv").unwrap(), SetKind::Development);
        assert_eq!(of("/elsewhere/dev2.tsv").unwrap(), SetKind::Development);
        assert_eq!(of("holdout2.tsv").unwrap(), SetKind::HeldOut);
        assert_eq!(
            of("holdout3.tsv").unwrap_err().to_string(),
            "sets.toml: the set `holdout3` (holdout3.tsv) is not listed: add it to `development` or `held-out`"
        );
        let twice = SetKinds::parse("development = [\"a\"]\nheld-out = [\"a\"]\n", list);
        assert_eq!(
            twice.unwrap_err().to_string(),
            "sets.toml: set `a` is listed as both development and held-out"
        );
        assert!(SetKinds::parse("development = []\n", list).is_err());
        assert_eq!("held-out".parse::<SetKind>(), Ok(SetKind::HeldOut));
        assert!("holdout".parse::<SetKind>().is_err());
    }

    #[test]
    fn scores_count_each_judged_line_once_per_level() {
        let text = file(&[
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t1\ttrue\twarned real"),
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t2\ttrue\tnoted real"),
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t3\ttrue\tmissed real"),
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t4\tfalse\twarned false"),
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t5\tfalse\tnoted false"),
            &format!("o/r\t{COMMIT}\tsrc/a.rs\t6\tfalse\tsilent false"),
        ]);
        let verdicts = parse(&text, Path::new("v.tsv")).unwrap();
        let refs: Vec<&Verdict> = verdicts.iter().collect();
        let findings = [
            finding("src/a.rs", 1, Severity::Warning),
            finding("src/a.rs", 1, Severity::Note),
            finding("src/a.rs", 2, Severity::Note),
            finding("src/a.rs", 4, Severity::Warning),
            finding("src/a.rs", 5, Severity::Note),
            finding("src/b.rs", 7, Severity::Warning),
        ];
        let score = score(Path::new("/r"), &findings, &refs);
        assert_eq!(
            score.warning,
            Counts {
                true_positives: 1,
                false_positives: 1,
                misses: 2
            }
        );
        assert_eq!(
            score.note,
            Counts {
                true_positives: 2,
                false_positives: 2,
                misses: 1
            }
        );
        assert_eq!(score.warning.precision(), Some(0.5));
        assert_eq!(score.note.recall(), Some(2.0 / 3.0));
        assert_eq!(score.unjudged.len(), 1);
        assert_eq!(
            (score.unjudged[0].file.as_str(), score.unjudged[0].line),
            ("src/b.rs", 7)
        );
        assert_eq!(
            score.warning.to_string(),
            "precision 0.500 recall 0.333 (TP 1, FP 1, misses 2)"
        );
        // The warning level's mistakes, in line order: the noted and the
        // missed real reads, and the warned false one.
        let mistakes: Vec<(usize, bool, &str, bool)> = score
            .mistakes
            .iter()
            .map(|m| {
                (
                    m.line,
                    m.false_warning,
                    m.reason.as_str(),
                    m.message.is_some(),
                )
            })
            .collect();
        assert_eq!(
            mistakes,
            [
                (2, false, "noted real", true),
                (3, false, "missed real", false),
                (4, true, "warned false", true)
            ]
        );
    }
}
