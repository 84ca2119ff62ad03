//! The rule registry and the hooks through which rules see code.
//!
//! Each rule is one module that declares its id, default level and
//! documentation ([`RuleInfo`], from which `--explain`, `--list-rules` and
//! SARIF's `rules[]` come) and implements the `Rule` hooks it needs, as a
//! clippy lint implements `LateLintPass`: the walker evaluates the code and
//! calls every registered rule at each hook. The `registry!` call below is
//! the one list of rules; adding a rule is a new module and one line there.

use std::cmp::Ordering;
use std::fmt;

use serde::{Serialize, Serializer};

use crate::analysis::facts::Fix;
use crate::analysis::values::Val;
use crate::config::{Config, CustomPattern, Level};

/// Declares a rule the way clippy declares a lint: the doc comment is the
/// rule's documentation, and it is also kept as a string for `--explain`.
/// It declares the rule's [`RuleInfo`] static and the unit struct that
/// implements the rule's [`Rule`] hooks.
macro_rules! declare_rule {
    (
        $(#[doc = $doc:literal])*
        pub $rule:ident => $info:ident,
        id: $id:literal,
        level: $level:ident,
        summary: $summary:literal,
        help: $help:literal $(,)?
    ) => {
        $(#[doc = $doc])*
        pub static $info: $crate::rules::RuleInfo = $crate::rules::RuleInfo {
            id: $crate::rules::RuleId::new($id),
            default_level: $crate::config::Level::$level,
            summary: $summary,
            help: $help,
            doc: concat!($($doc, "\n"),*),
        };

        #[doc = concat!("The `", $id, "` rule's hooks.")]
        pub(crate) struct $rule;
    };
}

/// The registry: declares each rule's module and lists its hooks, in the
/// order `--list-rules` prints the rules, the walker asks them (the first
/// rule that reports a call wins) and findings on one column are sorted.
macro_rules! registry {
    ($($module:ident::$rule:ident),* $(,)?) => {
        $(mod $module;)*

        static REGISTRY: &[&dyn Rule] = &[$(&$module::$rule),*];
    };
}

registry! {
    host_sync::HostSync,
    host_value_op::HostValueOp,
    data_dependent_shape::DataDependentShape,
    syncing_helper::SyncingHelper,
    custom_pattern::CustomPattern,
}

/// Every registered rule's entry, in registry order.
pub fn all() -> impl ExactSizeIterator<Item = &'static RuleInfo> + Clone {
    REGISTRY.iter().map(|rule| rule.info())
}

/// A registered rule's id, for tests that name one.
#[cfg(test)]
pub(crate) fn by_id(id: &str) -> RuleId {
    RuleId::parse(id).expect("a registered rule")
}

/// Every registered rule's hooks, in registry order.
pub(crate) fn registered() -> &'static [&'static dyn Rule] {
    REGISTRY
}

/// The first registered rule's hit at one hook: `hook` asks one rule.
pub(crate) fn first_hit(hook: impl Fn(&dyn Rule) -> Option<Hit>) -> Option<Hit> {
    REGISTRY.iter().find_map(|rule| hook(*rule))
}

/// What the walker shows a rule, and when. Every hook has a default that
/// reports nothing: a rule implements the ones it needs.
pub(crate) trait Rule: Sync {
    /// The rule's registry entry.
    fn info(&self) -> &'static RuleInfo;

    /// A method call: `receiver.name(args)`.
    fn method_call(&self, _call: &MethodCall<'_>) -> Option<Hit> {
        None
    }

    /// A method named as a path and applied to each element
    /// (`.map(Tensor::double_value)`); the call has no arguments.
    fn point_free_method(&self, _call: &MethodCall<'_>) -> Option<Hit> {
        None
    }

    /// A conversion into a host type the walker recognised
    /// (`f64::try_from(&t)`, `let x: f64 = t.try_into()?`).
    fn conversion(&self, _conversion: &Conversion<'_>) -> Option<Hit> {
        None
    }

    /// A call of a function by path (`readbacks::scalar_f64(&t)`).
    fn path_call(&self, _call: &PathCall<'_>) -> Option<Hit> {
        None
    }

    /// One argument of a formatting macro (`println!("{}", t)`).
    fn format_arg(&self, _arg: &FormatArg<'_>) -> Option<Hit> {
        None
    }

    /// Any callee by name, whatever it is called on: a hit here is recorded
    /// without asking whether its subject is a tensor.
    fn callee(&self, _callee: &NamedCall<'_>) -> Option<Hit> {
        None
    }

    /// The advice printed under a finding whose reads have these fixes.
    fn help(&self, _fixes: &[Fix]) -> &'static str {
        self.info().help
    }

    /// Whether, under `config`, the rule can report in files the prefilter
    /// would turn away, so that every file must be parsed.
    fn parses_every_file(&self, _config: &Config) -> bool {
        false
    }

    /// Byte strings, any of which makes a file worth parsing for this rule
    /// even if it never mentions tch (the prefilter's tch-only operations).
    fn prefilter_tokens(&self) -> &'static [&'static str] {
        &[]
    }

    /// Identifiers that can start one of this rule's findings inside the
    /// body of a macro the walker does not know.
    fn macro_idents(&self) -> &'static [&'static str] {
        &[]
    }
}

/// Stable identifier of a rule, written in kebab case in all output.
/// Rules order by their place in the registry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuleId(&'static str);

impl RuleId {
    /// An id as a rule declares it; only [`declare_rule!`] makes them.
    pub(crate) const fn new(id: &'static str) -> RuleId {
        RuleId(id)
    }

    /// The kebab-case id used on the command line, in config and in output.
    pub fn as_str(self) -> &'static str {
        self.0
    }

    /// Looks a registered rule up by its kebab-case id.
    pub fn parse(id: &str) -> Option<RuleId> {
        all().map(|r| r.id).find(|r| r.as_str() == id)
    }

    /// The rule's registry entry.
    pub fn info(self) -> &'static RuleInfo {
        self.rule().info()
    }

    /// The rule's hooks.
    pub(crate) fn rule(self) -> &'static dyn Rule {
        REGISTRY[self.position()]
    }

    fn position(self) -> usize {
        REGISTRY
            .iter()
            .position(|rule| rule.info().id.0 == self.0)
            .expect("ids are made only by rules, and every rule is registered")
    }
}

impl PartialOrd for RuleId {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RuleId {
    fn cmp(&self, other: &Self) -> Ordering {
        self.position().cmp(&other.position())
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RuleId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// A rule's registry entry.
#[derive(Debug)]
pub struct RuleInfo {
    /// The rule's id.
    pub id: RuleId,
    /// Level used when `devcheck.toml` does not set one.
    pub default_level: Level,
    /// One line for `--list-rules`.
    pub summary: &'static str,
    /// The standing advice printed under each finding.
    pub help: &'static str,
    /// Markdown in clippy's shape: What it does / Why is this bad / Example / Use instead.
    pub doc: &'static str,
}

impl RuleInfo {
    /// The documentation as `--explain` prints it: one level of doc-comment
    /// indentation removed, code fences made plain.
    pub fn explain(&self) -> String {
        let mut out = format!("{}: {}\n\n", self.id, self.summary);
        for line in self.doc.lines() {
            let line = line.strip_prefix(' ').unwrap_or(line);
            let line = if line.starts_with("```") { "```" } else { line };
            out.push_str(line);
            out.push('\n');
        }
        out
    }
}

/// How sure a rule must be that the receiver (or argument) is a tensor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Need {
    /// The method name only exists on tch types (`double_value`): anything
    /// not known to be something else counts.
    Name,
    /// The name is tch's but common enough elsewhere (`nonzero`, `equal`):
    /// an unknown receiver counts only in files that use tch.
    TchFile,
    /// The name is generic (`to_string`, `print`): only a value known to be a
    /// tensor counts.
    Tensor,
}

/// A method call as the rules see it.
pub(crate) struct MethodCall<'a> {
    /// The method's name.
    pub name: &'a str,
    /// What is known about each argument.
    pub args: &'a [Val],
    /// Whether the single type in the turbofish (`iter::<f64>`) is a scalar.
    pub scalar_turbofish: bool,
    /// Whether the first argument is an index list with a variable in it
    /// (`&[i, j]`): one element per read.
    pub element_index: bool,
}

/// What a conversion converts into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A scalar (`f64`, `i64`, `bool`, ...).
    Scalar,
    /// A `Vec` or an ndarray array: a bulk copy.
    Bulk,
    /// A host type the code does not write out (`t.try_into()` whose type
    /// comes from elsewhere): every `TryFrom<Tensor>` tch has reads the
    /// tensor.
    Inferred,
}

/// A conversion into a host type, as the rules see it.
pub(crate) struct Conversion<'a> {
    /// How the conversion is written (`f64::try_from`, `try_into::<f64>`).
    pub op: &'a str,
    /// What it converts into.
    pub target: Target,
    /// The argument is a reference, which primitive `From` impls never
    /// take, so a scalar conversion from one can only be tch's.
    pub by_ref: bool,
    /// It is fallible (`try_from`, `try_into`).
    pub fallible: bool,
}

/// A call of a function by path, as the rules see it.
pub(crate) struct PathCall<'a> {
    /// The path's segments as written (`readbacks`, `scalar_f64`).
    pub segments: &'a [String],
    /// The last segment: the function's name.
    pub name: &'a str,
}

/// How a format placeholder prints its argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FormatTrait {
    /// `{}`: tch's `Display` prints every element.
    Display,
    /// `{:?}`: tch's `Debug` prints values only for tensors under ten elements.
    Debug,
}

/// One argument of a formatting macro, as the rules see it.
pub(crate) struct FormatArg<'a> {
    /// The macro's name, without `!`.
    pub macro_name: &'a str,
    /// How the placeholder prints it.
    pub how: FormatTrait,
    /// The argument is known to be a 0-dim tensor.
    pub scalar: bool,
}

/// A callee by name, as the rules see it.
pub(crate) struct NamedCall<'a> {
    /// How it is called.
    pub name: CalleeName<'a>,
    /// The `[[lint.patterns]]` of `devcheck.toml`.
    pub patterns: &'a [CustomPattern],
}

/// How a callee is named where it is called.
#[derive(Clone, Copy)]
pub(crate) enum CalleeName<'a> {
    /// A method's name (`item`).
    Method(&'a str),
    /// A function's path as written (`metrics`, `flush`).
    Path(&'a [String]),
    /// A macro's name, without `!`.
    Macro(&'a str),
}

impl CalleeName<'_> {
    /// The name as patterns match it: `item`, `metrics::flush`, `log_scalar!`.
    pub(crate) fn written(self) -> String {
        match self {
            CalleeName::Method(name) => name.to_owned(),
            CalleeName::Path(segments) => segments.join("::"),
            CalleeName::Macro(name) => format!("{name}!"),
        }
    }
}

/// A rule's verdict on one call: report it if the subject passes `need`.
#[derive(Clone, Debug)]
pub(crate) struct Hit {
    /// Which rule fires.
    pub rule: RuleId,
    /// Short name of the operation, used in call chains (`f32::try_from`).
    pub op: String,
    /// The finding's message, without the loop context.
    pub message: String,
    /// An extra note specific to this operation.
    pub note: Option<String>,
    /// How sure the walker must be that the subject is a tensor.
    pub need: Need,
    /// Which advice fits.
    pub fix: Fix,
    /// A loop the operation runs by itself, whatever loop it is called in.
    pub own_loop: Option<OwnLoop>,
    /// The `devcheck.toml` pattern that matched, for custom patterns.
    pub pattern: Option<usize>,
}

/// A loop that an operation runs by itself: its reads repeat even where
/// the call runs once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OwnLoop {
    /// `t.iter::<T>()`: one read per item of the iterator.
    Elements,
}

impl Hit {
    pub(crate) fn new(rule: RuleId, op: impl Into<String>, need: Need, message: String) -> Hit {
        Hit {
            rule,
            op: op.into(),
            message,
            note: None,
            need,
            fix: Fix::Rule,
            own_loop: None,
            pattern: None,
        }
    }

    pub(crate) fn with_note(mut self, note: impl Into<String>) -> Hit {
        self.note = Some(note.into());
        self
    }

    pub(crate) fn with_fix(mut self, fix: Fix) -> Hit {
        self.fix = fix;
        self
    }

    pub(crate) fn with_own_loop(mut self, own_loop: OwnLoop) -> Hit {
        self.own_loop = Some(own_loop);
        self
    }

    pub(crate) fn with_pattern(mut self, pattern: usize) -> Hit {
        self.pattern = Some(pattern);
        self
    }
}

/// Strips tch's fallible prefix: `f_double_value` behaves like `double_value`.
pub(crate) fn infallible_name(name: &str) -> &str {
    name.strip_prefix("f_").unwrap_or(name)
}

/// tch's moves whose first argument is where the data goes: `to_device(d)`
/// and `to_device_(d, kind, non_blocking, copy)`, which also converts the
/// kind but moves all the same (and their `f_` variants).
pub(crate) fn is_device_move(name: &str) -> bool {
    matches!(infallible_name(name), "to_device" | "to_device_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_are_unique() {
        let ids: Vec<&str> = all().map(|r| r.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "host-sync",
                "host-value-op",
                "data-dependent-shape",
                "syncing-helper",
                "custom-pattern"
            ]
        );
        for rule in all() {
            assert_eq!(RuleId::parse(rule.id.as_str()), Some(rule.id));
            assert_eq!(rule.id.info().id, rule.id);
        }
        assert_eq!(RuleId::parse("host_sync"), None);
    }

    #[test]
    fn every_registered_rules_prefilter_tokens_make_a_file_a_candidate() {
        // The registry is the only list: a rule's own tokens make a file
        // that never mentions tch worth parsing.
        assert!(!crate::prefilter::is_candidate(
            "fn f(x: u8) { x.frobnicate() }"
        ));
        for rule in registered() {
            for token in rule.prefilter_tokens() {
                let text = format!("fn f(x: u8) {{ x{token} }}");
                assert!(crate::prefilter::is_candidate(&text), "{text}");
            }
        }
    }

    #[test]
    fn ids_order_by_their_place_in_the_registry() {
        let ids: Vec<RuleId> = all().map(|r| r.id).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        assert_eq!(sorted, ids);
        assert!(by_id("host-sync") < by_id("custom-pattern"));
    }

    #[test]
    fn every_rule_is_documented_in_clippys_shape() {
        for rule in all() {
            for heading in [
                "### What it does",
                "### Why is this bad",
                "### Example",
                "### Use instead",
            ] {
                assert!(rule.doc.contains(heading), "{} lacks {heading}", rule.id);
            }
            let explained = rule.explain();
            assert!(explained.starts_with(&format!("{}: ", rule.id)));
            assert!(!explained.contains("```rust"), "fences are made plain");
        }
    }
}
