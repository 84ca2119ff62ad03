//! Which code runs in the hot path of a release build.
//!
//! Test code (`#[test]`, `#[cfg(test)]`, files under `tests/`),
//! `debug_assert!` and `#[cfg(debug_assertions)]`, the arguments of log
//! macros below `info`, and code behind a cargo feature that the crate's
//! `default` does not enable never run in a release training loop as
//! shipped. The walker marks such code [`Cold`]; the engine reports it
//! according to `[lint.hot]` in `devcheck.toml`.

use std::collections::BTreeSet;

use syn::punctuated::Punctuated;
use syn::{Attribute, Expr, Lit, Meta, Token};

use super::facts::Cold;

/// The cargo features a crate is built with: its `default` set, closed over
/// the features each enables, plus any the configuration names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Features {
    enabled: BTreeSet<String>,
}

impl Features {
    /// The features enabled by default according to a `Cargo.toml`'s text,
    /// plus `extra`: what `cargo build --release` compiles, as clippy lints
    /// it. A feature that enables an optional `tch` is no exception; a crate
    /// whose tch code sits behind one names it in `extra` (`[lint.hot]
    /// features`). A manifest that does not parse enables only `extra`.
    pub fn from_manifest(text: &str, extra: &[String]) -> Features {
        let table = toml::from_str::<toml::Table>(text).ok();
        Features::closure(table.as_ref(), extra).0
    }

    /// The features of a crate whose manifest is `table`, built with its
    /// `default` and `extra` on, and what they ask of its dependencies:
    /// (dependency, feature) for each `dep/feature` or `dep?/feature`.
    pub fn closure(
        table: Option<&toml::Table>,
        extra: &[String],
    ) -> (Features, Vec<(String, String)>) {
        let mut enabled: BTreeSet<String> = extra.iter().cloned().collect();
        let mut asked = Vec::new();
        let features = table
            .and_then(|t| t.get("features"))
            .and_then(toml::Value::as_table);
        let mut pending: Vec<String> = vec!["default".into()];
        pending.extend(extra.iter().cloned());
        while let Some(name) = pending.pop() {
            let Some(list) = features
                .and_then(|f| f.get(&name))
                .and_then(toml::Value::as_array)
            else {
                continue;
            };
            for entry in list.iter().filter_map(toml::Value::as_str) {
                // `dep:x` and `x/y` name dependencies, not this crate's
                // features; `x/y` asks dependency `x` for its feature `y`.
                if let Some((dep, feature)) = entry.split_once('/') {
                    let dep = dep.trim_end_matches('?').trim_start_matches("dep:");
                    asked.push((dep.to_owned(), feature.to_owned()));
                    continue;
                }
                if entry.starts_with("dep:") {
                    continue;
                }
                if enabled.insert(entry.to_owned()) {
                    pending.push(entry.to_owned());
                }
            }
        }
        (Features { enabled }, asked)
    }

    /// Only the given features (a file outside any crate).
    pub fn only(extra: &[String]) -> Features {
        Features {
            enabled: extra.iter().cloned().collect(),
        }
    }

    pub(crate) fn has(&self, name: &str) -> bool {
        self.enabled.contains(name)
    }
}

/// Why the items these attributes apply to are not in a release hot path:
/// a test attribute, or a `#[cfg(..)]` that is false in a default release
/// build.
pub(crate) fn attrs_cold(attrs: &[Attribute], features: &Features) -> Option<Cold> {
    attrs.iter().find_map(|attr| {
        let path = attr.path();
        let last = path.segments.last()?.ident.to_string();
        if is_test_attribute(&last) {
            return Some(Cold::Test);
        }
        if !path.is_ident("cfg") {
            return None;
        }
        let Meta::List(list) = &attr.meta else {
            return None;
        };
        let predicate: Meta = syn::parse2(list.tokens.clone()).ok()?;
        match evaluate(&predicate, features) {
            Truth::False(reason) => Some(reason),
            Truth::True => None,
        }
    })
}

/// `cfg!(..)` in an `if` condition: why the branch does not run, if it does not.
pub(crate) fn cfg_macro_cold(mac: &syn::Macro, features: &Features) -> Option<Cold> {
    if !mac.path.is_ident("cfg") {
        return None;
    }
    let predicate: Meta = syn::parse2(mac.tokens.clone()).ok()?;
    match evaluate(&predicate, features) {
        Truth::False(reason) => Some(reason),
        Truth::True => None,
    }
}

fn is_test_attribute(name: &str) -> bool {
    matches!(
        name,
        "test" | "bench" | "rstest" | "test_case" | "quickcheck" | "proptest"
    )
}

enum Truth {
    True,
    /// False in a default release build, for this reason.
    False(Cold),
}

/// Evaluates a cfg predicate for a default release build on the host.
/// Predicates about the target (`unix`, `target_os`) count as true: the
/// code may well run there.
fn evaluate(predicate: &Meta, features: &Features) -> Truth {
    match predicate {
        Meta::Path(path) if path.is_ident("test") => Truth::False(Cold::Test),
        Meta::Path(path) if path.is_ident("debug_assertions") => Truth::False(Cold::DebugAssertion),
        Meta::NameValue(nv) if nv.path.is_ident("feature") => match &nv.value {
            Expr::Lit(syn::ExprLit {
                lit: Lit::Str(name),
                ..
            }) if !features.has(&name.value()) => Truth::False(Cold::Feature(name.value())),
            _ => Truth::True,
        },
        Meta::List(list) => {
            let Ok(inner) = list.parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            else {
                return Truth::True;
            };
            if list.path.is_ident("not") {
                match inner.first().map(|p| evaluate(p, features)) {
                    // `not(test)`, `not(feature = "x")` with x off: compiled.
                    Some(Truth::False(_)) | None => Truth::True,
                    Some(Truth::True) => match inner.first() {
                        Some(Meta::NameValue(nv)) if nv.path.is_ident("feature") => {
                            Truth::False(Cold::Feature(format!(
                                "not {}",
                                quote::ToTokens::to_token_stream(&nv.value)
                            )))
                        }
                        // `not(unix)` and the like: assume it may be built.
                        _ => Truth::True,
                    },
                }
            } else if list.path.is_ident("all") {
                inner
                    .iter()
                    .map(|p| evaluate(p, features))
                    .find(|t| matches!(t, Truth::False(_)))
                    .unwrap_or(Truth::True)
            } else if list.path.is_ident("any") {
                let mut first_false = None;
                for p in &inner {
                    match evaluate(p, features) {
                        Truth::True => return Truth::True,
                        Truth::False(reason) => {
                            first_false.get_or_insert(reason);
                        }
                    }
                }
                first_false.map_or(Truth::True, Truth::False)
            } else {
                Truth::True
            }
        }
        _ => Truth::True,
    }
}

/// Log macros whose arguments are evaluated only below the `info` level.
pub(crate) fn is_debug_log(name: &str) -> bool {
    matches!(name, "debug" | "trace")
}

/// `debug_assert!` and friends: compiled out of release builds.
pub(crate) fn is_debug_assertion(name: &str) -> bool {
    name.starts_with("debug_assert")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cold(attr: &str, features: &Features) -> Option<Cold> {
        let item: syn::ItemFn = syn::parse_str(&format!("{attr} fn f() {{}}")).unwrap();
        attrs_cold(&item.attrs, features)
    }

    #[test]
    fn default_features_are_read_and_closed_over() {
        let manifest = r#"
            [package]
            name = "x"
            [features]
            default = ["cuda"]
            cuda = ["fast", "dep:cudarc", "tch/cuda"]
            fast = []
            slow = []
        "#;
        let features = Features::from_manifest(manifest, &["extra".into()]);
        assert!(features.has("cuda") && features.has("fast") && features.has("extra"));
        assert!(!features.has("slow") && !features.has("cudarc") && !features.has("tch/cuda"));
        assert_eq!(
            Features::from_manifest("not toml [", &[]),
            Features::default()
        );
    }

    #[test]
    fn a_feature_that_enables_an_optional_tch_is_off_unless_named() {
        let manifest = r#"
            [package]
            name = "x"
            [dependencies]
            tch = { version = "0.17", optional = true }
            [features]
            torch = ["dep:tch", "images"]
            images = []
        "#;
        let features = Features::from_manifest(manifest, &[]);
        assert!(!features.has("torch") && !features.has("images"));
        let named = Features::from_manifest(manifest, &["torch".into()]);
        assert!(named.has("torch") && named.has("images"));
    }

    #[test]
    fn cfg_predicates_are_evaluated_for_a_default_release_build() {
        let features = Features::only(&["on".into()]);
        assert_eq!(cold("#[test]", &features), Some(Cold::Test));
        assert_eq!(cold("#[tokio::test]", &features), Some(Cold::Test));
        assert_eq!(cold("#[cfg(test)]", &features), Some(Cold::Test));
        assert_eq!(
            cold("#[cfg(debug_assertions)]", &features),
            Some(Cold::DebugAssertion)
        );
        assert_eq!(
            cold("#[cfg(feature = \"off\")]", &features),
            Some(Cold::Feature("off".into()))
        );
        assert_eq!(cold("#[cfg(feature = \"on\")]", &features), None);
        assert_eq!(cold("#[cfg(not(feature = \"off\"))]", &features), None);
        assert_eq!(cold("#[cfg(not(test))]", &features), None);
        assert_eq!(cold("#[cfg(unix)]", &features), None);
        assert_eq!(
            cold("#[cfg(all(unix, feature = \"off\"))]", &features),
            Some(Cold::Feature("off".into()))
        );
        assert_eq!(cold("#[cfg(any(test, feature = \"on\"))]", &features), None);
        assert_eq!(
            cold("#[cfg(any(test, feature = \"off\"))]", &features),
            Some(Cold::Test)
        );
        assert_eq!(cold("#[inline]", &features), None);
    }
}
