//! `// devcheck: allow(<rule>, ...)` comments.
//!
//! On a line, or the line above, a comment silences the named rules for
//! findings that start on that line (or whose statement does). As an inner
//! doc comment (`//! devcheck: allow(<rule>)`) it silences them in the whole
//! file. `all` names every rule.

use std::collections::HashMap;

use crate::rules::RuleId;

const MARKER: &str = "devcheck:";

/// The allow comments of one file.
#[derive(Clone, Debug, Default)]
pub(crate) struct Suppressions {
    whole_file: Vec<Option<RuleId>>,
    by_line: HashMap<usize, Vec<Option<RuleId>>>,
    /// Allow comments naming rules that do not exist: (line, message).
    pub(crate) unknown: Vec<(usize, String)>,
}

impl Suppressions {
    /// Finds the allow comments in `text`.
    pub(crate) fn scan(text: &str) -> Suppressions {
        let mut found = Suppressions::default();
        let mut line = 1;
        let mut counted_to = 0;
        for at in memchr::memmem::find_iter(text.as_bytes(), MARKER) {
            line += memchr::memchr_iter(b'\n', &text.as_bytes()[counted_to..at]).count();
            counted_to = at;
            let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
            let before = text[line_start..at].trim_start();
            let Some(comment_at) = before.find("//") else {
                continue;
            };
            let file_wide = before[comment_at..].starts_with("//!");
            let rest = text[at + MARKER.len()..].trim_start();
            let Some(rest) = rest.strip_prefix("allow(") else {
                continue;
            };
            let Some(close) = rest.find(')') else {
                continue;
            };
            let mut rules = Vec::new();
            for name in rest[..close]
                .split(',')
                .map(str::trim)
                .filter(|n| !n.is_empty())
            {
                if name == "all" {
                    rules.push(None);
                } else if let Some(id) = RuleId::parse(name) {
                    rules.push(Some(id));
                } else {
                    found.unknown.push((
                        line,
                        format!(
                            "unknown rule `{name}` in a devcheck allow comment; known rules: {}",
                            crate::config::known_rules()
                        ),
                    ));
                }
            }
            if file_wide {
                found.whole_file.extend(rules);
            } else {
                found.by_line.entry(line).or_default().extend(rules);
            }
        }
        found
    }

    /// Whether `rule` is allowed for a finding starting on `line` in a
    /// statement starting on `statement_line`.
    pub(crate) fn allows(&self, rule: RuleId, line: usize, statement_line: usize) -> bool {
        let names = |rules: &Vec<Option<RuleId>>| rules.iter().any(|r| r.is_none_or(|r| r == rule));
        if names(&self.whole_file) {
            return true;
        }
        [
            line,
            line.saturating_sub(1),
            statement_line,
            statement_line.saturating_sub(1),
        ]
        .iter()
        .any(|l| self.by_line.get(l).is_some_and(names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules;

    #[test]
    fn line_and_line_above_and_file_wide() {
        let text = "fn f() {\n    // devcheck: allow(host-sync)\n    a();\n    b(); // devcheck: allow(data-dependent-shape, host-value-op)\n    c();\n}\n";
        let s = Suppressions::scan(text);
        assert!(s.allows(rules::by_id("host-sync"), 3, 3));
        assert!(s.allows(rules::by_id("host-sync"), 2, 2));
        assert!(!s.allows(rules::by_id("host-sync"), 5, 5));
        assert!(s.allows(rules::by_id("data-dependent-shape"), 4, 4));
        assert!(
            s.allows(rules::by_id("host-value-op"), 5, 5),
            "the line above counts"
        );
        assert!(!s.allows(rules::by_id("syncing-helper"), 4, 4));
        assert!(
            s.allows(rules::by_id("host-sync"), 9, 3),
            "the statement's line counts"
        );
        let whole = Suppressions::scan("//! devcheck: allow(all)\nfn f() {}\n");
        assert!(whole.allows(rules::by_id("custom-pattern"), 40, 40));
        assert!(s.unknown.is_empty());
    }

    #[test]
    fn unknown_rules_are_reported_and_prose_is_ignored() {
        let s = Suppressions::scan(
            "let x = 1;\n// devcheck: allow(host-synk)\n/// devcheck: checks loops\n",
        );
        assert_eq!(s.unknown.len(), 1);
        assert_eq!(s.unknown[0].0, 2);
        assert!(s.unknown[0].1.contains("`host-synk`"));
        assert!(
            !Suppressions::scan("let s = \"devcheck: allow(all)\";").allows(
                rules::by_id("host-sync"),
                1,
                1
            )
        );
    }
}
