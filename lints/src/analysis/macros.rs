//! Macro bodies. syn leaves them as tokens; the walker parses the ones whose
//! arguments are expressions, so that `println!("{}", loss)` and
//! `info!(loss = %t)` are seen, and calls inside any macro are walked.

use std::collections::HashSet;
use std::sync::LazyLock;

use proc_macro2::{Delimiter, TokenStream, TokenTree};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, Lit, Token};

use super::facts::{Cold, Loc};
use super::hot_path::{is_debug_assertion, is_debug_log};
use super::values::Val;
use super::walker::{collection_of, local_name, Walker};
use crate::rules::{self, CalleeName, FormatArg, FormatTrait};

/// How a macro uses its arguments.
enum MacroKind {
    /// `format!`-like: the format string is argument `n`.
    Format(usize),
    /// `log`/`tracing` macros: fields, then a format string.
    Log,
    /// `vec![..]`.
    Vec,
    /// `dbg!(..)`: each argument is printed with `{:#?}`.
    Dbg,
    /// itertools' `izip!(a, b, ..)`: the arguments zipped.
    Izip,
    /// Anything else: arguments are walked if they parse as expressions.
    Other,
}

/// Macros that run only once something has failed: they panic or return
/// an error.
fn is_failure(name: &str) -> bool {
    matches!(
        name,
        "panic" | "unreachable" | "todo" | "unimplemented" | "bail"
    )
}

/// Assertions, whose message is formatted only when they fail.
fn is_assertion(name: &str) -> bool {
    matches!(
        name,
        "assert"
            | "assert_eq"
            | "assert_ne"
            | "ensure"
            | "debug_assert"
            | "debug_assert_eq"
            | "debug_assert_ne"
    )
}

fn macro_kind(name: &str) -> MacroKind {
    match name {
        "print" | "println" | "eprint" | "eprintln" | "format" | "format_args" | "panic"
        | "unreachable" | "todo" | "unimplemented" | "anyhow" | "bail" | "eyre" => {
            MacroKind::Format(0)
        }
        "write" | "writeln" | "assert" | "debug_assert" | "ensure" => MacroKind::Format(1),
        "assert_eq" | "assert_ne" | "debug_assert_eq" | "debug_assert_ne" => MacroKind::Format(2),
        "trace" | "debug" | "info" | "warn" | "error" | "log" | "event" => MacroKind::Log,
        "vec" => MacroKind::Vec,
        "dbg" => MacroKind::Dbg,
        "izip" => MacroKind::Izip,
        _ => MacroKind::Other,
    }
}

/// One macro argument.
struct MacroArg {
    expr: Expr,
    /// `name = expr` (format named argument or tracing field name).
    name: Option<String>,
    /// tracing's `%expr` (Display) or `?expr` (Debug).
    sigil: Option<FormatTrait>,
}

impl Walker<'_> {
    /// Walks a macro invocation and returns the value it produces.
    pub(crate) fn mac(&mut self, mac: &syn::Macro) -> Val {
        let Some(name) = mac.path.segments.last().map(|s| s.ident.to_string()) else {
            return Val::Unknown;
        };
        // A macro imported under another name is that macro.
        let name = match self.renamed.get(&name) {
            Some(original) if mac.path.segments.len() == 1 => original.clone(),
            _ => name,
        };
        if is_debug_assertion(&name) {
            return self.cold(Cold::DebugAssertion, |w| w.mac_named(mac, name.clone()));
        }
        if is_debug_log(&name) {
            return self.cold(Cold::DebugLog(name.clone()), |w| {
                w.mac_named(mac, name.clone())
            });
        }
        if is_failure(&name) {
            return self.cold(Cold::Failure, |w| w.mac_named(mac, name.clone()));
        }
        self.mac_named(mac, name)
    }

    fn mac_named(&mut self, mac: &syn::Macro, name: String) -> Val {
        let start = mac
            .path
            .segments
            .first()
            .map_or_else(|| mac.path.span(), |s| s.ident.span());
        let loc = self.loc(start, mac.delimiter.span().close());
        self.callee(CalleeName::Macro(&name), loc);
        match macro_kind(&name) {
            MacroKind::Vec => self.vec_macro(&mac.tokens),
            // `assert!(ok, "{}", t)`: the condition runs every time, the
            // message only once the assertion fails.
            MacroKind::Format(first) if is_assertion(&name) => {
                let mut args = parse_args(&mac.tokens);
                let message = args.split_off(first.min(args.len()));
                for arg in &args {
                    self.expr(&arg.expr);
                }
                let format_at = message.first().filter(|a| is_str(&a.expr)).map(|_| 0);
                self.cold(Cold::Failure, |w| w.format_macro(&name, message, format_at));
                Val::Unknown
            }
            MacroKind::Format(first) => {
                let args = parse_args(&mac.tokens);
                let format_at = args.get(first).filter(|a| is_str(&a.expr)).map(|_| first);
                self.format_macro(&name, args, format_at);
                if name == "format" {
                    Val::Other
                } else {
                    Val::Unknown
                }
            }
            MacroKind::Log => {
                let args = parse_args(&mac.tokens);
                let format_at = args
                    .iter()
                    .position(|a| a.name.is_none() && a.sigil.is_none() && is_str(&a.expr));
                self.format_macro(&name, args, format_at);
                Val::Unknown
            }
            MacroKind::Izip => {
                let elements: Vec<Val> = parse_args(&mac.tokens)
                    .iter()
                    .map(|a| self.expr(&a.expr).element().unwrap_or(Val::Unknown))
                    .collect();
                Val::Iter(Box::new(Val::Tuple(elements)))
            }
            MacroKind::Dbg => {
                let args = parse_args(&mac.tokens);
                for arg in &args {
                    let value = self.expr(&arg.expr);
                    let loc = arg_loc(self, &arg.expr);
                    self.format_arg(
                        &name,
                        FormatTrait::Debug,
                        &value,
                        local_name(&arg.expr),
                        loc,
                    );
                }
                Val::Unknown
            }
            MacroKind::Other => {
                // Parsing every macro body costs as much as a fifth of the
                // file; only bodies that name something a rule looks at are
                // worth it.
                if mentions_interesting_ident(&mac.tokens) {
                    for arg in parse_args(&mac.tokens) {
                        self.expr(&arg.expr);
                    }
                }
                Val::Unknown
            }
        }
    }

    fn vec_macro(&mut self, tokens: &TokenStream) -> Val {
        let repeat = |input: syn::parse::ParseStream<'_>| -> syn::Result<(Expr, Expr)> {
            let element: Expr = input.parse()?;
            input.parse::<Token![;]>()?;
            let count: Expr = input.parse()?;
            Ok((element, count))
        };
        if let Ok((element, count)) = repeat.parse2(tokens.clone()) {
            let value = self.expr(&element);
            self.expr(&count);
            return collection_of(vec![value]);
        }
        let values = parse_args(tokens)
            .iter()
            .map(|a| self.expr(&a.expr))
            .collect();
        collection_of(values)
    }

    fn format_macro(&mut self, name: &str, args: Vec<MacroArg>, format_at: Option<usize>) {
        let values: Vec<Val> = args.iter().map(|a| self.expr(&a.expr)).collect();
        for (arg, value) in args.iter().zip(&values) {
            if let Some(how) = arg.sigil {
                let loc = arg_loc(self, &arg.expr);
                self.format_arg(name, how, value, local_name(&arg.expr), loc);
            }
        }
        let Some(format_at) = format_at else { return };
        let Expr::Lit(syn::ExprLit {
            lit: Lit::Str(literal),
            ..
        }) = &args[format_at].expr
        else {
            return;
        };
        let positional: Vec<usize> = (format_at + 1..args.len())
            .filter(|&i| args[i].name.is_none() && args[i].sigil.is_none())
            .collect();
        let raw = literal.token().to_string();
        let mut next = 0;
        let mut reported = HashSet::new();
        for placeholder in placeholders(&raw) {
            if placeholder.star_precision {
                next += 1;
            }
            let Some(how) = placeholder.how else {
                if placeholder.arg == ArgRef::Next {
                    next += 1;
                }
                continue;
            };
            let index = match &placeholder.arg {
                ArgRef::Next => {
                    next += 1;
                    positional.get(next - 1).copied()
                }
                ArgRef::Index(n) => positional.get(*n).copied(),
                ArgRef::Name(var) => {
                    let named =
                        (format_at + 1..args.len()).find(|&i| args[i].name.as_deref() == Some(var));
                    if named.is_none() && reported.insert(format!("captured {var}")) {
                        // An inline `{loss}` captures a variable.
                        let value = self.lookup_name(var);
                        let loc = inline_loc(literal, &raw, placeholder.start, placeholder.end);
                        self.format_arg(name, how, &value, Some(var.clone()), loc);
                    }
                    named
                }
            };
            if let Some(index) = index {
                if reported.insert(format!("arg {index}")) {
                    let loc = arg_loc(self, &args[index].expr);
                    let local = local_name(&args[index].expr);
                    self.format_arg(name, how, &values[index], local, loc);
                }
            }
        }
    }

    /// `local`: the local the argument names, if it names one: a local the
    /// function backpropagates from is a 0-dim tensor.
    fn format_arg(
        &mut self,
        macro_name: &str,
        how: FormatTrait,
        value: &Val,
        local: Option<String>,
        loc: Loc,
    ) {
        let backpropagated = local.is_some_and(|name| self.backpropagated(&name));
        let scalar = match value {
            Val::Tensor(facts) => facts.scalar || backpropagated,
            Val::Deferred(..) => backpropagated,
            _ => false,
        };
        let arg = FormatArg {
            macro_name,
            how,
            scalar,
        };
        if let Some(hit) = rules::first_hit(|rule| rule.format_arg(&arg)) {
            self.report(hit, value, loc);
        }
    }
}

/// Identifiers that can start a finding inside an arbitrary macro body,
/// besides the rules' own ([`rules::Rule::macro_idents`]): the formatting
/// and log macros whose arguments the rules are shown, and the adapter
/// whose closure runs per element.
const WALKER_IDENTS: &[&str] = &[
    "println", "print", "eprintln", "format", "write", "writeln", "info", "warn", "debug", "error",
    "trace", "dbg", "for_each",
];

/// The walker's identifiers and every registered rule's.
static INTERESTING_IDENTS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    rules::registered()
        .iter()
        .flat_map(|rule| rule.macro_idents())
        .chain(WALKER_IDENTS)
        .copied()
        .collect()
});

fn mentions_interesting_ident(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().any(|tree| match tree {
        TokenTree::Ident(ident) => INTERESTING_IDENTS.iter().any(|name| ident == name),
        TokenTree::Group(group) => mentions_interesting_ident(&group.stream()),
        _ => false,
    })
}

fn arg_loc(walker: &Walker<'_>, expr: &Expr) -> Loc {
    let span = expr.span();
    walker.loc(span, span)
}

fn is_str(expr: &Expr) -> bool {
    matches!(
        expr,
        Expr::Lit(syn::ExprLit {
            lit: Lit::Str(_),
            ..
        })
    )
}

/// Parses a macro body as comma-separated arguments: as plain expressions
/// when it is one, else segment by segment with tracing's field syntax.
fn parse_args(tokens: &TokenStream) -> Vec<MacroArg> {
    if let Ok(list) = Punctuated::<Expr, Token![,]>::parse_terminated.parse2(tokens.clone()) {
        return list
            .into_iter()
            .map(|expr| match expr {
                Expr::Assign(a) if matches!(&*a.left, Expr::Path(p) if p.path.get_ident().is_some()) => {
                    let name = match &*a.left {
                        Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
                        _ => None,
                    };
                    MacroArg { expr: *a.right, name, sigil: None }
                }
                expr => MacroArg { expr, name: None, sigil: None },
            })
            .collect();
    }
    split_top_level(tokens)
        .into_iter()
        .filter_map(parse_segment)
        .collect()
}

fn split_top_level(tokens: &TokenStream) -> Vec<Vec<TokenTree>> {
    let mut segments = vec![Vec::new()];
    for tree in tokens.clone() {
        match &tree {
            TokenTree::Punct(p) if p.as_char() == ',' => segments.push(Vec::new()),
            _ => segments.last_mut().expect("never empty").push(tree),
        }
    }
    segments.retain(|s| !s.is_empty());
    segments
}

/// One segment of a log macro: `target: "x"`, `name = %expr`, `?expr`, `expr`.
fn parse_segment(mut tokens: Vec<TokenTree>) -> Option<MacroArg> {
    // `target: ...`, `parent: ...`: directives, not values.
    if let [TokenTree::Ident(_), TokenTree::Punct(p), rest @ ..] = tokens.as_slice() {
        let is_single_colon = p.as_char() == ':'
            && !matches!(rest.first(), Some(TokenTree::Punct(q)) if q.as_char() == ':');
        if is_single_colon {
            return None;
        }
    }
    // `name = value` or `a.b = value` (tracing field names may be dotted).
    let mut name = None;
    if let Some(eq) = tokens
        .iter()
        .position(|t| matches!(t, TokenTree::Punct(p) if p.as_char() == '='))
    {
        let is_assignment = !matches!(tokens.get(eq + 1), Some(TokenTree::Punct(p)) if p.as_char() == '=')
            && tokens[..eq].iter().all(|t| {
                matches!(t, TokenTree::Ident(_))
                    || matches!(t, TokenTree::Punct(p) if p.as_char() == '.')
            });
        if is_assignment && eq > 0 {
            name = Some(
                tokens[..eq]
                    .iter()
                    .map(ToString::to_string)
                    .collect::<String>(),
            );
            tokens.drain(..=eq);
        }
    }
    let sigil = match tokens.first() {
        Some(TokenTree::Punct(p)) if p.as_char() == '%' => Some(FormatTrait::Display),
        Some(TokenTree::Punct(p)) if p.as_char() == '?' => Some(FormatTrait::Debug),
        _ => None,
    };
    if sigil.is_some() {
        tokens.remove(0);
    }
    if tokens.is_empty() {
        return None;
    }
    // A lone group (`{ .. }`) is a tracing field set, not a value.
    if let [TokenTree::Group(g)] = tokens.as_slice() {
        if g.delimiter() == Delimiter::Brace && name.is_none() {
            return None;
        }
    }
    let expr: Expr = syn::parse2(tokens.into_iter().collect()).ok()?;
    Some(MacroArg { expr, name, sigil })
}

/// Which argument a placeholder formats.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ArgRef {
    Next,
    Index(usize),
    Name(String),
}

/// A `{..}` in a format string.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Placeholder {
    arg: ArgRef,
    /// `None` for traits that tch tensors do not implement (`{:x}`, `{:e}`).
    how: Option<FormatTrait>,
    /// `{:.*}` takes its precision from the next positional argument.
    star_precision: bool,
    /// Byte range of the placeholder within the literal's source text.
    start: usize,
    end: usize,
}

/// The placeholders of a string literal, given its source text (quotes and
/// any `r#` included), so that offsets map back onto the file.
fn placeholders(raw: &str) -> Vec<Placeholder> {
    let bytes = raw.as_bytes();
    let mut found = Vec::new();
    let mut i = raw.find('"').map_or(bytes.len(), |q| q + 1);
    while i < bytes.len() {
        match bytes[i] {
            b'{' if bytes.get(i + 1) == Some(&b'{') => i += 2,
            b'}' if bytes.get(i + 1) == Some(&b'}') => i += 2,
            b'{' => {
                let Some(close) = raw[i..].find('}').map(|n| i + n) else {
                    break;
                };
                let inner = &raw[i + 1..close];
                let (arg, spec) = inner.split_once(':').unwrap_or((inner, ""));
                let arg = arg.trim();
                let arg = if arg.is_empty() {
                    ArgRef::Next
                } else if let Ok(n) = arg.parse() {
                    ArgRef::Index(n)
                } else {
                    ArgRef::Name(arg.to_owned())
                };
                let how = match spec.chars().last() {
                    Some('?') => Some(FormatTrait::Debug),
                    Some(c) if "xXobeEp".contains(c) => None,
                    _ => Some(FormatTrait::Display),
                };
                found.push(Placeholder {
                    arg,
                    how,
                    star_precision: spec.contains(".*"),
                    start: i,
                    end: close + 1,
                });
                i = close + 1;
            }
            _ => i += 1,
        }
    }
    found
}

/// Where `raw[start..end]` lies in the file, given the literal's position.
fn inline_loc(literal: &syn::LitStr, raw: &str, start: usize, end: usize) -> Loc {
    let origin = literal.span().start();
    let position = |offset: usize| {
        let before = &raw[..offset];
        match before.rfind('\n') {
            Some(newline) => (
                origin.line + before.matches('\n').count(),
                before[newline + 1..].chars().count() + 1,
            ),
            None => (origin.line, origin.column + before.chars().count() + 1),
        }
    };
    let (line, column) = position(start);
    let (end_line, end_column) = position(end);
    Loc {
        line,
        column,
        end_line,
        end_column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_found_with_their_traits() {
        let found = placeholders(r#""{} {{x}} {0:?} {loss:.3} {:#?} {:x} {:.*}""#);
        let summary: Vec<(ArgRef, Option<FormatTrait>)> =
            found.iter().map(|p| (p.arg.clone(), p.how)).collect();
        assert_eq!(
            summary,
            vec![
                (ArgRef::Next, Some(FormatTrait::Display)),
                (ArgRef::Index(0), Some(FormatTrait::Debug)),
                (ArgRef::Name("loss".into()), Some(FormatTrait::Display)),
                (ArgRef::Next, Some(FormatTrait::Debug)),
                (ArgRef::Next, None),
                (ArgRef::Next, Some(FormatTrait::Display)),
            ]
        );
        assert!(found[5].star_precision);
        assert_eq!(
            &r#""{} {{x}} {0:?} {loss:.3}""#[found[2].start..found[2].end],
            "{loss:.3}"
        );
        let raw = placeholders(r##"r#"a "{}" b"#"##);
        assert_eq!(raw.len(), 1);
    }

    #[test]
    fn tracing_fields_and_directives() {
        let tokens: TokenStream = r#"target: "train", loss = %t, ?grad, step, "epoch {}", epoch"#
            .parse()
            .unwrap();
        let args = parse_args(&tokens);
        let summary: Vec<(Option<String>, Option<FormatTrait>)> =
            args.iter().map(|a| (a.name.clone(), a.sigil)).collect();
        assert_eq!(
            summary,
            vec![
                (Some("loss".into()), Some(FormatTrait::Display)),
                (None, Some(FormatTrait::Debug)),
                (None, None),
                (None, None),
                (None, None),
            ]
        );
    }
}
