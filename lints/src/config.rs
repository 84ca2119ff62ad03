//! `devcheck.toml`: per-rule levels and extra call patterns.
//!
//! The lint reads the `[lint]` table only, so the same file can configure
//! the rest of devcheck:
//!
//! ```toml
//! [lint]
//! max-file-size = 33554432          # bytes; larger files are reported, not linted
//!
//! [lint.levels]
//! host-sync = "deny"                # allow | note | warn | deny
//! data-dependent-shape = "note"
//!
//! [[lint.patterns]]
//! call = "^log_scalar$"             # regex over the callee
//! message = "`log_scalar` reads its tensor back to the host"
//! level = "warn"                    # optional, defaults to custom-pattern's level
//!
//! [lint.hot]                        # code outside the release hot path, linted as hot code
//! tests = true                      # #[test], #[cfg(test)], tests/ (default: not reported)
//! debug-assertions = true           # debug_assert!, #[cfg(debug_assertions)] (default: not reported)
//! debug-logs = true                 # debug!/trace! arguments (default: notes)
//! features = ["cuda"]               # features taken as enabled besides `default` (others: notes)
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use regex::Regex;
use serde::Deserialize;
use thiserror::Error;

use crate::rules::{self, RuleId};

/// The file name looked for when no `--config` is given.
pub const FILE_NAME: &str = "devcheck.toml";

/// Files larger than this are reported as errors instead of being parsed,
/// unless `devcheck.toml` says otherwise.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 32 * 1024 * 1024;

/// How a rule's findings are reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    /// Not reported at all.
    Allow,
    /// Reported as a note; does not fail the run.
    Note,
    /// Reported as a warning; fails the run with exit code 1.
    Warn,
    /// Reported as an error; fails the run with exit code 1.
    Deny,
}

/// A user-defined call to report inside loops.
#[derive(Clone, Debug)]
pub struct CustomPattern {
    /// Matched against the method name, the function path as written, or `name!`.
    pub call: Regex,
    /// Message for findings; a generic one is used when absent.
    pub message: Option<String>,
    /// Level for this pattern; `custom-pattern`'s level when absent.
    pub level: Option<Level>,
}

/// Which code outside the release hot path is linted as hot code
/// (`[lint.hot]`). By default test code and debug assertions are not
/// reported, and debug logs and code behind features that are off by
/// default are reported as notes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HotCode {
    /// `#[test]`, `#[cfg(test)]` and files under `tests/`.
    pub tests: bool,
    /// `debug_assert!` and `#[cfg(debug_assertions)]`.
    pub debug_assertions: bool,
    /// The arguments of `debug!` and `trace!`.
    pub debug_logs: bool,
    /// Cargo features taken as enabled in every crate, besides `default`.
    pub features: Vec<String>,
}

/// The lint's configuration.
#[derive(Clone, Debug)]
pub struct Config {
    levels: BTreeMap<RuleId, Level>,
    /// Extra calls to report, from `[[lint.patterns]]`.
    pub patterns: Vec<CustomPattern>,
    /// Files larger than this many bytes are reported as errors, not parsed.
    pub max_file_size: u64,
    /// Code outside the release hot path that is linted as hot code.
    pub hot: HotCode,
    /// Where the configuration was read from, if from a file.
    pub path: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            levels: BTreeMap::new(),
            patterns: Vec::new(),
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            hot: HotCode::default(),
            path: None,
        }
    }
}

/// Why a configuration could not be used.
#[derive(Debug, Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The configuration file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the schema.
    #[error("{path} is not a valid devcheck configuration: {message}")]
    Syntax {
        /// The configuration file.
        path: PathBuf,
        /// The TOML parser's explanation, with line and column.
        message: String,
    },
    /// A level was given for a rule that does not exist.
    #[error("{path}: unknown rule `{rule}` in [lint.levels]; known rules: {known}")]
    UnknownRule {
        /// The configuration file.
        path: PathBuf,
        /// The misspelt id.
        rule: String,
        /// The ids that exist, comma-separated.
        known: String,
    },
    /// A pattern is not a valid regex.
    #[error("{path}: pattern `{pattern}` in [[lint.patterns]] is not a valid regex: {source}")]
    BadPattern {
        /// The configuration file.
        path: PathBuf,
        /// The pattern as written.
        pattern: String,
        /// The regex compiler's explanation.
        source: regex::Error,
    },
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    lint: RawLint,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawLint {
    #[serde(default)]
    levels: BTreeMap<String, Level>,
    #[serde(default)]
    patterns: Vec<RawPattern>,
    max_file_size: Option<u64>,
    #[serde(default)]
    hot: RawHot,
}

#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawHot {
    #[serde(default)]
    tests: bool,
    #[serde(default)]
    debug_assertions: bool,
    #[serde(default)]
    debug_logs: bool,
    #[serde(default)]
    features: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPattern {
    call: String,
    message: Option<String>,
    level: Option<Level>,
}

/// The rule ids, comma-separated, for error messages.
pub(crate) fn known_rules() -> String {
    rules::all()
        .map(|r| r.id.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

impl Config {
    /// The level configured for `rule`, or the rule's default.
    pub fn level(&self, rule: RuleId) -> Level {
        self.levels
            .get(&rule)
            .copied()
            .unwrap_or(rule.info().default_level)
    }

    /// Sets the level of one rule.
    pub fn set_level(&mut self, rule: RuleId, level: Level) {
        self.levels.insert(rule, level);
    }

    /// Parses configuration text; `path` is only used in error messages.
    pub fn from_toml(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let raw: RawFile = toml::from_str(text).map_err(|e| ConfigError::Syntax {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        let mut config = Config {
            path: Some(path.to_owned()),
            ..Config::default()
        };
        for (rule, level) in raw.lint.levels {
            let id = RuleId::parse(&rule).ok_or_else(|| ConfigError::UnknownRule {
                path: path.to_owned(),
                rule: rule.clone(),
                known: known_rules(),
            })?;
            config.levels.insert(id, level);
        }
        for pattern in raw.lint.patterns {
            let call = Regex::new(&pattern.call).map_err(|source| ConfigError::BadPattern {
                path: path.to_owned(),
                pattern: pattern.call.clone(),
                source,
            })?;
            config.patterns.push(CustomPattern {
                call,
                message: pattern.message,
                level: pattern.level,
            });
        }
        if let Some(max) = raw.lint.max_file_size {
            config.max_file_size = max;
        }
        config.hot = HotCode {
            tests: raw.lint.hot.tests,
            debug_assertions: raw.lint.hot.debug_assertions,
            debug_logs: raw.lint.hot.debug_logs,
            features: raw.lint.hot.features,
        };
        Ok(config)
    }

    /// Reads a configuration file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
            path: path.to_owned(),
            source,
        })?;
        Config::from_toml(&text, path)
    }

    /// Looks for `devcheck.toml` in `start` and its ancestors and loads the
    /// first one found; the default configuration if there is none.
    pub fn discover(start: &Path) -> Result<Config, ConfigError> {
        let start = std::path::absolute(start).unwrap_or_else(|_| start.to_owned());
        let mut dir = if start.is_dir() {
            Some(start.as_path())
        } else {
            start.parent()
        };
        while let Some(current) = dir {
            let candidate = current.join(FILE_NAME);
            if candidate.is_file() {
                return Config::load(&candidate);
            }
            dir = current.parent();
        }
        Ok(Config::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::from_toml(text, Path::new("devcheck.toml"))
    }

    #[test]
    fn levels_patterns_and_size_are_read() {
        let config = parse(
            r#"
            [matrix]
            devices = ["cpu"]

            [lint]
            max-file-size = 1000

            [lint.levels]
            host-sync = "deny"
            data-dependent-shape = "allow"

            [[lint.patterns]]
            call = "^log_scalar$"
            message = "reads back"
            level = "note"

            [lint.hot]
            tests = true
            features = ["cuda"]
            "#,
        )
        .unwrap();
        assert!(config.hot.tests && !config.hot.debug_logs);
        assert_eq!(config.hot.features, ["cuda"]);
        assert_eq!(config.level(rules::by_id("host-sync")), Level::Deny);
        assert_eq!(
            config.level(rules::by_id("data-dependent-shape")),
            Level::Allow
        );
        assert_eq!(config.level(rules::by_id("host-value-op")), Level::Warn);
        assert_eq!(config.max_file_size, 1000);
        assert_eq!(config.patterns.len(), 1);
        assert!(config.patterns[0].call.is_match("log_scalar"));
        assert_eq!(config.patterns[0].level, Some(Level::Note));
    }

    #[test]
    fn an_unknown_rule_names_the_known_ones() {
        let err = parse("[lint.levels]\nhost-synk = \"deny\"\n").unwrap_err();
        let message = err.to_string();
        assert!(message.contains("unknown rule `host-synk`"), "{message}");
        assert!(message.contains("host-sync, host-value-op"), "{message}");
    }

    #[test]
    fn a_bad_level_or_key_or_regex_is_an_error() {
        let err = parse("[lint.levels]\nhost-sync = \"loud\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::Syntax { .. }), "{err}");
        assert!(err.to_string().contains("loud"), "{err}");
        let err = parse("[lint]\nlevel = 3\n").unwrap_err();
        assert!(err.to_string().contains("unknown field `level`"), "{err}");
        let err = parse("[[lint.patterns]]\ncall = \"(\"\n").unwrap_err();
        assert!(matches!(err, ConfigError::BadPattern { .. }), "{err}");
    }

    #[test]
    fn discovery_walks_up_and_defaults_when_absent() {
        let root = std::env::temp_dir().join(format!("devcheck-config-{}", std::process::id()));
        let nested = root.join("a/b");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(
            root.join(FILE_NAME),
            "[lint.levels]\nhost-sync = \"note\"\n",
        )
        .unwrap();
        let found = Config::discover(&nested).unwrap();
        assert_eq!(found.level(rules::by_id("host-sync")), Level::Note);
        assert_eq!(found.path.as_deref(), Some(root.join(FILE_NAME).as_path()));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
