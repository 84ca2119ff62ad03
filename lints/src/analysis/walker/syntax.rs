//! Questions answered by the syntax alone: what an expression starts from,
//! whether it is a part of a tensor, a periodic guard, a request loop.

use super::*;

pub(super) fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

/// The type arguments written on a type's last path segment (`Agent` in
/// `Robot<Agent>`).
pub(super) fn type_args(ty: &Type) -> Vec<&Type> {
    match ty {
        Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| crate::analysis::types::type_arguments(&s.arguments).collect())
            .unwrap_or_default(),
        Type::Reference(r) => type_args(&r.elem),
        _ => Vec::new(),
    }
}

/// The type parameter a field's type is, by name, also behind `&`, `Box`,
/// `Option`, `Rc`, `Arc` and `RefCell` (`model: M`, `net: Box<N>`).
pub(super) fn param_of(ty: &Type) -> Option<String> {
    match ty {
        Type::Reference(r) => param_of(&r.elem),
        Type::Paren(p) => param_of(&p.elem),
        Type::Path(p) if p.qself.is_none() => {
            let last = p.path.segments.last()?;
            if p.path.segments.len() == 1 && last.arguments.is_empty() {
                return Some(last.ident.to_string());
            }
            match last.ident.to_string().as_str() {
                "Box" | "Option" | "Rc" | "Arc" | "RefCell" => {
                    type_args(ty).first().and_then(|t| param_of(t))
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether a range counts a model's parts: its end names layers, blocks or
/// heads (`0..self.n_layers`, `0..config.num_hidden_layers`), as an encoder
/// that shares one layer's weights runs it (ALBERT); not a size or length
/// named after them (`0..block_size` counts tokens).
pub(super) fn counts_components(iterable: &Expr) -> bool {
    let end = match iterable {
        Expr::Range(r) => r.end.as_deref(),
        Expr::Paren(p) => return counts_components(&p.expr),
        Expr::MethodCall(m) => return counts_components(&m.receiver),
        _ => None,
    };
    let Some(end) = end else {
        return false;
    };
    let text = quote::ToTokens::to_token_stream(end)
        .to_string()
        .to_lowercase();
    let words: Vec<&str> = text
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect();
    let parts = ["layer", "layers", "block", "blocks", "head", "heads"];
    words.iter().any(|w| parts.contains(w))
        && !words
            .iter()
            .any(|w| matches!(*w, "size" | "len" | "length"))
}

/// Whether an iterated expression walks over a model's layers: a range up
/// to their number (`0..config.num_hidden_layers`, `0..self.n_layer`) or the
/// layers themselves (`&self.layers`, `weights.layers.iter()`). A forward
/// pass runs its layers one after another, each a step of its own.
pub(super) fn counts_layers(iterable: &Expr) -> bool {
    counts_named(iterable, &["layer", "layers"])
}

/// Whether an iterated expression walks over parallel environments: a
/// range up to their number (`0..NUM_ENVS`, `0..self.n_envs`,
/// `0..envs.len()`) or the environments themselves (`envs.iter_mut()`,
/// `&mut self.envs`).
pub(super) fn counts_environments(iterable: &Expr) -> bool {
    counts_named(iterable, &["env", "envs", "environments"])
}

/// Whether an iterated expression is a range up to a number, or a
/// collection, named by one of `words` (a `_`-separated part of a path
/// segment, field or method name, in any case).
fn counts_named(iterable: &Expr, words: &[&str]) -> bool {
    let named = |ident: &syn::Ident| {
        ident
            .to_string()
            .to_lowercase()
            .split('_')
            .any(|w| words.contains(&w))
    };
    fn names(expr: &Expr, named: &dyn Fn(&syn::Ident) -> bool) -> bool {
        match expr {
            Expr::Path(p) => p.path.segments.iter().any(|s| named(&s.ident)),
            Expr::Field(f) => {
                matches!(&f.member, Member::Named(n) if named(n)) || names(&f.base, named)
            }
            Expr::MethodCall(m) => named(&m.method) || names(&m.receiver, named),
            Expr::Reference(r) => names(&r.expr, named),
            Expr::Paren(p) => names(&p.expr, named),
            Expr::Cast(c) => names(&c.expr, named),
            _ => false,
        }
    }
    match iterable {
        Expr::Range(r) => r.end.as_deref().is_some_and(|end| names(end, &named)),
        other => names(other, &named),
    }
}

/// Whether an iterated expression is a collection held in a field of `self`
/// (`&self.layers`, `self.heads.iter()`, `self.encoders.iter().enumerate()`).
pub(super) fn is_self_field_collection(expr: &Expr) -> bool {
    match expr {
        Expr::Reference(r) => is_self_field_collection(&r.expr),
        Expr::Paren(p) => is_self_field_collection(&p.expr),
        Expr::Field(f) => is_self(&f.base) || is_self_field_collection(&f.base),
        Expr::MethodCall(m) => {
            matches!(
                m.method.to_string().as_str(),
                "iter"
                    | "iter_mut"
                    | "into_iter"
                    | "values"
                    | "values_mut"
                    | "enumerate"
                    | "zip"
                    | "rev"
                    | "skip"
                    | "take"
            ) && is_self_field_collection(&m.receiver)
        }
        _ => false,
    }
}

/// Whether an iterable walks a model's parameters (`vs.variables()`,
/// `vs.trainable_variables().iter()`, `model.parameters()`): one tensor
/// of one model per iteration, not a step.
pub(super) fn walks_parameters(expr: &Expr) -> bool {
    match expr {
        Expr::Reference(r) => walks_parameters(&r.expr),
        Expr::Paren(p) => walks_parameters(&p.expr),
        Expr::Try(t) => walks_parameters(&t.expr),
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            matches!(
                name.as_str(),
                "variables" | "trainable_variables" | "parameters" | "named_parameters"
            ) || (matches!(
                name.as_str(),
                "iter"
                    | "iter_mut"
                    | "into_iter"
                    | "values"
                    | "enumerate"
                    | "zip"
                    | "rev"
                    | "skip"
                    | "take"
                    | "unwrap"
                    | "lock"
            ) && walks_parameters(&m.receiver))
        }
        _ => false,
    }
}

pub(super) fn path_has_segment(path: &syn::Path, name: &str) -> bool {
    path.segments.iter().any(|s| s.ident == name)
}

/// Whether a path names a tch `Kind`: `Kind::Float`, or a variant imported
/// on its own (`use tch::Kind::Float;` then `Float`).
pub(super) fn names_a_kind(path: &syn::Path) -> bool {
    path_has_segment(path, "Kind")
        || path.get_ident().is_some_and(|ident| {
            matches!(
                ident.to_string().as_str(),
                "Float"
                    | "Double"
                    | "Half"
                    | "BFloat16"
                    | "Int64"
                    | "Int"
                    | "Int16"
                    | "Int8"
                    | "Uint8"
                    | "Bool"
                    | "ComplexFloat"
                    | "ComplexDouble"
            )
        })
}

pub(super) fn is_self(expr: &Expr) -> bool {
    matches!(expr, Expr::Path(p) if p.path.is_ident("self"))
}

/// The local variable an expression starts from (`x` in `x.a.b()[i]`).
pub(super) fn root_ident(expr: &Expr) -> Option<String> {
    match expr {
        Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
        Expr::Reference(r) => root_ident(&r.expr),
        Expr::Paren(p) => root_ident(&p.expr),
        Expr::Try(t) => root_ident(&t.expr),
        Expr::Field(f) => root_ident(&f.base),
        Expr::MethodCall(m) => root_ident(&m.receiver),
        Expr::Index(i) => root_ident(&i.expr),
        Expr::Unary(u) => root_ident(&u.expr),
        Expr::Cast(c) => root_ident(&c.expr),
        _ => None,
    }
}

/// Whether an iterable walks a collection the function was handed, one of
/// its `inputs` (`states`, `&states`, `states.iter()`, `states.iter()
/// .enumerate()`), rather than a loader, a range or a field.
pub(super) fn walks_inputs(iterable: &Expr, inputs: &[String]) -> bool {
    match iterable {
        Expr::Path(p) => p
            .path
            .get_ident()
            .is_some_and(|i| inputs.iter().any(|name| i == name)),
        Expr::Reference(r) => walks_inputs(&r.expr, inputs),
        Expr::Paren(p) => walks_inputs(&p.expr, inputs),
        Expr::MethodCall(m) => {
            matches!(
                m.method.to_string().as_str(),
                "iter" | "into_iter" | "iter_mut" | "enumerate" | "copied" | "cloned" | "par_iter"
            ) && walks_inputs(&m.receiver, inputs)
        }
        _ => false,
    }
}

pub(super) fn strip_references(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => strip_references(&r.expr),
        Expr::Paren(p) => strip_references(&p.expr),
        other => other,
    }
}

/// The local an expression names (`loss`, `&loss`, `(loss)`), if it names
/// one.
pub(crate) fn local_name(expr: &Expr) -> Option<String> {
    match strip_references(expr) {
        Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
        _ => None,
    }
}

/// Whether an expression takes a part of a tensor (`t.get(i)`,
/// `t.select(0, i)`, `t.i(..)`), possibly reshaped or unwrapped.
pub(super) fn is_part(expr: &Expr) -> bool {
    match expr {
        Expr::Reference(r) => is_part(&r.expr),
        Expr::Paren(p) => is_part(&p.expr),
        Expr::Try(t) => is_part(&t.expr),
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "get" | "select" | "i" | "narrow" | "slice" | "index" | "index_select" | "f_get"
            | "f_select" | "f_narrow" => !m.args.is_empty(),
            "unwrap" | "expect" | "clone" | "shallow_clone" | "as_ref" | "to_kind"
            | "contiguous" | "view" | "reshape" | "flatten" | "squeeze" | "squeeze_dim"
            | "unsqueeze" | "detach" | "copy" | "view_" => is_part(&m.receiver),
            _ => false,
        },
        _ => false,
    }
}

/// Whether an expression splits a tensor into parts (`t.unbind(0)`,
/// `t.split(64, 0)`, `t.chunk(4, 0)`), possibly iterated, enumerated or
/// zipped: each item of it is a part of one tensor.
pub(super) fn splits_a_tensor(expr: &Expr) -> bool {
    match expr {
        Expr::Reference(r) => splits_a_tensor(&r.expr),
        Expr::Paren(p) => splits_a_tensor(&p.expr),
        Expr::Try(t) => splits_a_tensor(&t.expr),
        Expr::MethodCall(m) => match crate::rules::infallible_name(&m.method.to_string()) {
            "unbind"
            | "split"
            | "split_with_sizes"
            | "chunk"
            | "tensor_split"
            | "unsafe_split"
            | "unsafe_chunk"
            | "split_sizes"
            | "tensor_split_indices" => true,
            "iter" | "into_iter" | "enumerate" | "zip" | "rev" | "skip" | "take" | "step_by"
            | "unwrap" | "expect" => splits_a_tensor(&m.receiver),
            _ => false,
        },
        _ => false,
    }
}

/// `f64::from(x.abs().max())`: an argument ending in a reduction with no
/// arguments, which on anything but a tensor would not convert to a scalar.
pub(super) fn ends_in_reduction(expr: &Expr) -> bool {
    match expr {
        Expr::Reference(r) => ends_in_reduction(&r.expr),
        Expr::Paren(p) => ends_in_reduction(&p.expr),
        Expr::MethodCall(m) => {
            m.args.is_empty()
                && matches!(
                    m.method.to_string().as_str(),
                    "max" | "min" | "sum" | "mean" | "any" | "all" | "norm" | "amax" | "amin"
                )
        }
        _ => false,
    }
}

/// Whether a `for` loop's iterable is a range of numbers (`0..n`,
/// `(0..n).rev()`, `(1..=n).step_by(2)`), rather than items.
pub(super) fn is_range(iterable: &Expr) -> bool {
    match iterable {
        Expr::Range(_) => true,
        Expr::Paren(p) => is_range(&p.expr),
        Expr::MethodCall(m) => {
            matches!(
                m.method.to_string().as_str(),
                "rev" | "step_by" | "skip" | "take" | "into_iter" | "progress" | "enumerate"
            ) && is_range(&m.receiver)
        }
        _ => false,
    }
}

/// A list written out in the source: an array literal or `vec![a, b, c]`
/// (not `vec![x; n]`).
#[derive(Clone, Copy, Debug)]
pub(super) struct Listed {
    /// How many elements it has.
    pub len: usize,
    /// It holds only string literals, at least one (`["a", "b"]`): a
    /// demo's inputs or prompts.
    pub texts: bool,
}

/// The list `expr` writes out, if it is one.
pub(super) fn listed(expr: &Expr) -> Option<Listed> {
    fn of<'a>(elems: impl ExactSizeIterator<Item = &'a Expr> + Clone) -> Listed {
        let text = |e: &Expr| {
            matches!(
                e,
                Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Str(_),
                    ..
                })
            )
        };
        Listed {
            len: elems.len(),
            texts: elems.len() > 0 && elems.clone().all(text),
        }
    }
    match expr {
        Expr::Array(a) => Some(of(a.elems.iter())),
        Expr::Macro(m) if m.mac.path.is_ident("vec") => m
            .mac
            .parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
            .ok()
            .map(|elems| of(elems.iter())),
        Expr::Paren(p) => listed(&p.expr),
        _ => None,
    }
}

/// Whether a `for` loop's iterable walks a list written out that `holds`,
/// directly or through a local bound to one (`lists`), behind references
/// and the iterator `adapters` named.
fn walks_list(
    iterable: &Expr,
    lists: &[(String, Listed)],
    adapters: &[&str],
    holds: impl Fn(&Listed) -> bool + Copy,
) -> bool {
    match iterable {
        Expr::Array(_) | Expr::Macro(_) => listed(iterable).is_some_and(|l| holds(&l)),
        Expr::Path(p) => p
            .path
            .get_ident()
            .is_some_and(|i| lists.iter().any(|(name, l)| i == name && holds(l))),
        Expr::Reference(r) => walks_list(&r.expr, lists, adapters, holds),
        Expr::Paren(p) => walks_list(&p.expr, lists, adapters, holds),
        Expr::MethodCall(m) => {
            adapters.contains(&m.method.to_string().as_str())
                && walks_list(&m.receiver, lists, adapters, holds)
        }
        _ => false,
    }
}

/// Whether a `for` loop's iterable is a list of string literals written
/// out in the source ([`Listed::texts`]), or a local bound to one.
pub(super) fn walks_texts(iterable: &Expr, lists: &[(String, Listed)]) -> bool {
    walks_list(
        iterable,
        lists,
        &["iter", "into_iter", "enumerate", "copied", "cloned"],
        |l| l.texts,
    )
}

/// Whether a `for` loop's iterable runs a few times fixed in the source:
/// a range between two integer literals, a list written out (an array
/// literal or `vec![..]`), or a local bound to one (`lists`), at most
/// [`FIXED_LOOP_MAX`] long.
pub(super) fn fixed_count(iterable: &Expr, lists: &[(String, Listed)]) -> bool {
    fn literal(expr: &Expr) -> Option<usize> {
        match expr {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i.base10_parse().ok(),
            Expr::Paren(p) => literal(&p.expr),
            _ => None,
        }
    }
    match iterable {
        Expr::Range(r) => {
            let (Some(start), Some(end)) = (
                r.start.as_deref().map_or(Some(0), literal),
                r.end.as_deref().and_then(literal),
            ) else {
                return false;
            };
            let end = end + matches!(r.limits, syn::RangeLimits::Closed(_)) as usize;
            end.saturating_sub(start) <= FIXED_LOOP_MAX
        }
        _ => walks_list(
            iterable,
            lists,
            &["iter", "into_iter", "enumerate", "rev", "copied", "cloned"],
            |l| l.len <= FIXED_LOOP_MAX,
        ),
    }
}

/// Where a loop's requests come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RequestSource {
    /// A channel (`rx.recv()`): another thread of the program.
    Channel,
    /// A socket (`listener.incoming()`) or standard input.
    Outside,
}

/// Where a loop's condition or iterable takes the next request from
/// (`receiver.recv()`, `listener.incoming()`), if it takes one.
pub(super) fn drives_requests(expr: &Expr) -> Option<RequestSource> {
    if reads_a_line(expr) {
        return Some(RequestSource::Outside);
    }
    match expr {
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            if is_request_source(&name) {
                Some(if super::calls::is_channel_receive(&name) {
                    RequestSource::Channel
                } else {
                    RequestSource::Outside
                })
            } else {
                drives_requests(&m.receiver)
            }
        }
        Expr::Let(l) => drives_requests(&l.expr),
        Expr::Await(a) => drives_requests(&a.base),
        Expr::Try(t) => drives_requests(&t.expr),
        Expr::Paren(p) => drives_requests(&p.expr),
        Expr::Reference(r) => drives_requests(&r.expr),
        Expr::Match(m) => drives_requests(&m.expr),
        _ => None,
    }
}

/// Whether a `loop` body begins by taking the next request
/// (`let msg = match rx.recv().await { .. }`, `let job = jobs.recv()?`):
/// the loop runs once per incoming request, like `while let Ok(msg) =
/// rx.recv()`; and where from.
pub(super) fn starts_with_request(body: &syn::Block) -> Option<RequestSource> {
    fn evaluates(stmt: &syn::Stmt) -> Option<&Expr> {
        match stmt {
            syn::Stmt::Local(local) => local.init.as_ref().map(|init| &*init.expr),
            syn::Stmt::Expr(expr, _) => Some(expr),
            _ => None,
        }
    }
    // A prompt's line read from standard input, after printing the prompt
    // (`print!(..); stdout().flush()?; stdin().read_line(&mut line)?`).
    body.stmts
        .first()
        .and_then(evaluates)
        .and_then(drives_requests)
        .or_else(|| {
            body.stmts
                .iter()
                .filter_map(evaluates)
                .any(|e| reads_a_line(e) || waits_for_a_key(e))
                .then_some(RequestSource::Outside)
        })
}

/// Whether an expression waits for the user's next terminal event
/// (`event::read()?`, `if event::poll(timeout)? { .. }` of crossterm): an
/// interactive interface answers one key press per request.
fn waits_for_a_key(expr: &Expr) -> bool {
    match expr {
        Expr::Call(c) => matches!(&*c.func, Expr::Path(p) if {
            let names: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
            matches!(names.as_slice(), [.., event, op] if event == "event" && (op == "read" || op == "poll"))
        }),
        Expr::If(i) => waits_for_a_key(&i.cond),
        Expr::Try(t) => waits_for_a_key(&t.expr),
        Expr::Paren(p) => waits_for_a_key(&p.expr),
        Expr::Let(l) => waits_for_a_key(&l.expr),
        Expr::Match(m) => waits_for_a_key(&m.expr),
        _ => false,
    }
}

/// Whether an expression reads from standard input (`io::stdin().read_line(
/// &mut line)?`, `stdin.lock().lines()`): each line the user types is one
/// request.
fn reads_a_line(expr: &Expr) -> bool {
    fn from_stdin(expr: &Expr) -> bool {
        match expr {
            Expr::Call(c) => matches!(&*c.func, Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "stdin")),
            Expr::MethodCall(m) => m.method == "lock" && from_stdin(&m.receiver),
            Expr::Path(p) => p.path.is_ident("stdin"),
            _ => false,
        }
    }
    match expr {
        Expr::MethodCall(m) => {
            (matches!(
                m.method.to_string().as_str(),
                "read_line" | "lines" | "read_to_string"
            ) && from_stdin(&m.receiver))
                || reads_a_line(&m.receiver)
        }
        Expr::Try(t) => reads_a_line(&t.expr),
        Expr::Paren(p) => reads_a_line(&p.expr),
        Expr::Let(l) => reads_a_line(&l.expr),
        _ => false,
    }
}

/// Whether a closure moves its (first) input to a device before using it:
/// `|xs| xs.to_device(device).apply(&net)`, `|xs| net.forward(&xs.to(d))`.
pub(super) fn moves_its_input(closure: &ExprClosure) -> bool {
    fn ident(pat: &Pat) -> Option<String> {
        match pat {
            Pat::Ident(p) => Some(p.ident.to_string()),
            Pat::Type(t) => ident(&t.pat),
            Pat::Reference(r) => ident(&r.pat),
            _ => None,
        }
    }
    struct Moves {
        input: String,
        found: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Moves {
        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            let name = m.method.to_string();
            if (crate::rules::is_device_move(&name) || name == "to" || name == "cuda")
                && root_ident(&m.receiver).as_deref() == Some(self.input.as_str())
            {
                self.found = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let Some(input) = closure.inputs.first().and_then(ident) else {
        return false;
    };
    let mut moves = Moves {
        input,
        found: false,
    };
    syn::visit::Visit::visit_expr(&mut moves, &closure.body);
    moves.found
}

/// What a function body's method calls say of its locals, gathered in one
/// pass before the body is walked.
#[derive(Default)]
pub(super) struct BodyLocals {
    /// Moved to a device other than the CPU with `set_device`
    /// (`vs.set_device(Device::Mps)`).
    pub set_on_device: Vec<String>,
    /// Backpropagated from (`loss.backward()`, `opt.backward_step(&loss)`):
    /// libtorch creates the gradient implicitly only for a 0-dim output, so
    /// each is a 0-dim tensor, wherever in the body it is printed.
    pub backpropagated: Vec<String>,
}

pub(super) fn body_locals(block: &Block) -> BodyLocals {
    struct Locals(BodyLocals);
    impl<'ast> syn::visit::Visit<'ast> for Locals {
        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            let to_cpu = m.args.first().is_some_and(|a| {
                matches!(a, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Cpu"))
            });
            if m.method == "set_device" && !to_cpu {
                if let Expr::Path(p) = &*m.receiver {
                    if let Some(ident) = p.path.get_ident() {
                        self.0.set_on_device.push(ident.to_string());
                    }
                }
            }
            let backpropagated = if m.method == "backward" && m.args.is_empty() {
                local_name(&m.receiver)
            } else if matches!(
                m.method.to_string().as_str(),
                "backward_step" | "backward_step_clip" | "backward_step_clip_norm"
            ) {
                m.args.first().and_then(local_name)
            } else {
                None
            };
            self.0.backpropagated.extend(backpropagated);
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut locals = Locals(BodyLocals::default());
    syn::visit::Visit::visit_block(&mut locals, block);
    locals.0
}

/// The attributes written on an expression statement.
pub(super) fn expr_attrs(expr: &Expr) -> &[Attribute] {
    match expr {
        Expr::Block(e) => &e.attrs,
        Expr::Call(e) => &e.attrs,
        Expr::MethodCall(e) => &e.attrs,
        Expr::ForLoop(e) => &e.attrs,
        Expr::While(e) => &e.attrs,
        Expr::Loop(e) => &e.attrs,
        Expr::If(e) => &e.attrs,
        Expr::Match(e) => &e.attrs,
        Expr::Macro(e) => &e.attrs,
        Expr::Assign(e) => &e.attrs,
        Expr::Binary(e) => &e.attrs,
        Expr::Unsafe(e) => &e.attrs,
        _ => &[],
    }
}

/// `step % 100 == 0`, `(i + 1) % log_every == 0`, `step.is_multiple_of(10)`,
/// `let Some(0) = every.map(|n| step % n)`, possibly combined with `&&`, or
/// with `||` to other branches that each hold on few steps:
/// `(i % k == 0 && i != 0) || i == n_steps - 1`.
pub(super) fn is_periodic(cond: &Expr) -> bool {
    // `epoch % 1 == 0` holds on every step: no period at all.
    fn is_rem(e: &Expr) -> bool {
        match e {
            Expr::Binary(b) => {
                matches!(b.op, BinOp::Rem(_))
                    && !matches!(&*b.right, Expr::Lit(l)
                        if matches!(&l.lit, syn::Lit::Int(i) if i.base10_digits() == "1"))
            }
            Expr::Paren(p) => is_rem(&p.expr),
            _ => false,
        }
    }
    fn holds_rem(e: &Expr) -> bool {
        match e {
            Expr::Binary(b) => {
                matches!(b.op, BinOp::Rem(_)) || holds_rem(&b.left) || holds_rem(&b.right)
            }
            Expr::Paren(p) => holds_rem(&p.expr),
            Expr::MethodCall(m) => {
                m.method == "rem_euclid" || holds_rem(&m.receiver) || m.args.iter().any(holds_rem)
            }
            Expr::Closure(c) => holds_rem(&c.body),
            _ => false,
        }
    }
    fn is_zero(p: &Pat) -> bool {
        match p {
            Pat::Lit(l) => matches!(&l.lit, syn::Lit::Int(i) if i.base10_digits() == "0"),
            Pat::TupleStruct(ts) => ts.elems.len() == 1 && ts.elems.first().is_some_and(is_zero),
            Pat::Paren(p) => is_zero(&p.pat),
            _ => false,
        }
    }
    match cond {
        Expr::Binary(b) => match b.op {
            BinOp::Eq(_) => is_rem(&b.left) || is_rem(&b.right),
            BinOp::And(_) => is_periodic(&b.left) || is_periodic(&b.right),
            // A disjunction runs whenever one branch holds, so every branch
            // must be rare, and one periodic: `i == last` alone is a guard
            // of another kind.
            BinOp::Or(_) => {
                holds_on_few_steps(&b.left)
                    && holds_on_few_steps(&b.right)
                    && (is_periodic(&b.left) || is_periodic(&b.right))
            }
            _ => false,
        },
        Expr::MethodCall(m) => m.method == "is_multiple_of",
        Expr::Paren(p) => is_periodic(&p.expr),
        Expr::Let(l) => is_zero(&l.pat) && holds_rem(&l.expr),
        _ => false,
    }
}

/// A schedule asked by name about the step (`should_eval(step, total,
/// every)`, `self.should_log(step + 1)`, `is_eval_step(i)`): a predicate
/// whose name says it holds on some steps only, given the step, possibly
/// joined with `&&` to anything.
pub(super) fn asks_a_schedule(cond: &Expr) -> bool {
    fn scheduled(name: &str) -> bool {
        name.starts_with("should_")
            || (name.starts_with("is_") && name.ends_with("_step"))
            || name.ends_with("_due")
    }
    match cond {
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| scheduled(&s.ident.to_string())))
                && !c.args.is_empty()
        }
        Expr::MethodCall(m) => scheduled(&m.method.to_string()) && !m.args.is_empty(),
        Expr::Binary(b) if matches!(b.op, BinOp::And(_)) => {
            asks_a_schedule(&b.left) || asks_a_schedule(&b.right)
        }
        Expr::Paren(p) => asks_a_schedule(&p.expr),
        _ => false,
    }
}

/// A buffer's flush: a condition on its length (`pending.len() >=
/// target`) around a block that empties it (`pending.clear()`,
/// `pending.drain(..)`, `mem::take(&mut pending)`, `pending = Vec::new()`).
/// Items pile up on every iteration; the block runs once per so many.
pub(super) fn flushes_a_buffer(cond: &Expr, then_branch: &syn::Block) -> bool {
    fn buffer_name(e: &Expr) -> Option<String> {
        match strip_references(e) {
            Expr::MethodCall(m) if m.method == "len" && m.args.is_empty() => {
                buffer_path(&m.receiver)
            }
            Expr::Paren(p) => buffer_name(&p.expr),
            _ => None,
        }
    }
    let name = match cond {
        Expr::Binary(b) if matches!(b.op, BinOp::Ge(_) | BinOp::Gt(_) | BinOp::Eq(_)) => {
            buffer_name(&b.left)
        }
        Expr::Binary(b) if matches!(b.op, BinOp::Le(_) | BinOp::Lt(_)) => buffer_name(&b.right),
        // `if history.is_full() { ..; history.clear(); }`
        Expr::MethodCall(m) if m.method == "is_full" && m.args.is_empty() => {
            buffer_path(&m.receiver)
        }
        Expr::Paren(p) => return flushes_a_buffer(&p.expr, then_branch),
        _ => return false,
    };
    let Some(name) = name else {
        return false;
    };
    struct Empties<'n> {
        name: &'n str,
        found: bool,
    }
    impl<'ast> syn::visit::Visit<'ast> for Empties<'_> {
        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            if matches!(
                m.method.to_string().as_str(),
                "clear" | "drain" | "split_off"
            ) && buffer_path(&m.receiver).is_some_and(|n| n == self.name)
            {
                self.found = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_call(&mut self, c: &'ast syn::ExprCall) {
            let take = matches!(&*c.func, Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "take" || s.ident == "replace"));
            if take
                && c.args
                    .first()
                    .and_then(buffer_path)
                    .is_some_and(|n| n == self.name)
            {
                self.found = true;
            }
            syn::visit::visit_expr_call(self, c);
        }
        fn visit_expr_assign(&mut self, a: &'ast syn::ExprAssign) {
            if buffer_path(&a.left).is_some_and(|n| n == self.name) {
                self.found = true;
            }
            syn::visit::visit_expr_assign(self, a);
        }
    }
    let mut empties = Empties {
        name: &name,
        found: false,
    };
    syn::visit::Visit::visit_block(&mut empties, then_branch);
    empties.found
}

/// A guard on how far a counter has gone since a mark that its branch moves
/// up to it (`if step - last_eval >= every { last_eval = step; .. }`,
/// `if (self.count - self.mark) as f64 > threshold { self.mark = self.count;
/// .. }`): it holds once per that distance.
pub(super) fn resets_a_mark(cond: &Expr, then_branch: &syn::Block) -> bool {
    fn mark_of(e: &Expr) -> Option<String> {
        match e {
            Expr::Paren(p) => mark_of(&p.expr),
            Expr::Cast(c) => mark_of(&c.expr),
            Expr::Binary(b) if matches!(b.op, BinOp::Sub(_)) => {
                let strip = |e: &Expr| -> Option<String> {
                    match e {
                        Expr::Cast(c) => buffer_path(&c.expr),
                        Expr::Paren(p) => buffer_path(&p.expr),
                        other => buffer_path(other),
                    }
                };
                strip(&b.right).filter(|_| strip(&b.left).is_some())
            }
            _ => None,
        }
    }
    let mark = match cond {
        Expr::Binary(b) if matches!(b.op, BinOp::Ge(_) | BinOp::Gt(_)) => mark_of(&b.left),
        Expr::Binary(b) if matches!(b.op, BinOp::Le(_) | BinOp::Lt(_)) => mark_of(&b.right),
        Expr::Paren(p) => return resets_a_mark(&p.expr, then_branch),
        _ => return false,
    };
    let Some(mark) = mark else {
        return false;
    };
    then_branch.stmts.iter().any(|stmt| {
        matches!(stmt, syn::Stmt::Expr(Expr::Assign(a), _)
            if buffer_path(&a.left).is_some_and(|left| left == mark))
    })
}

/// A buffer named by a plain name or a chain of fields (`pending`,
/// `self.pending`), as text.
fn buffer_path(expr: &Expr) -> Option<String> {
    match strip_references(expr) {
        Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
        Expr::Field(f) => Some(format!(
            "{}.{}",
            buffer_path(&f.base)?,
            quote::ToTokens::to_token_stream(&f.member)
        )),
        _ => None,
    }
}

/// A condition that picks out the last (or first) iteration of a pass over
/// the data, once per epoch: an equality with one side off by one
/// (`batch_idx == n_batches - 1`, `i + 1 == len`), possibly joined with
/// `&&` to anything.
pub(super) fn is_last_step(cond: &Expr) -> bool {
    fn off_by_one(e: &Expr) -> bool {
        match e {
            Expr::Binary(b) if matches!(b.op, BinOp::Sub(_) | BinOp::Add(_)) => {
                matches!(&*b.right, Expr::Lit(l) if matches!(&l.lit, syn::Lit::Int(i) if i.base10_digits() == "1"))
            }
            Expr::Paren(p) => off_by_one(&p.expr),
            _ => false,
        }
    }
    match cond {
        Expr::Binary(b) => match b.op {
            BinOp::Eq(_) => off_by_one(&b.left) || off_by_one(&b.right),
            BinOp::And(_) => is_last_step(&b.left) || is_last_step(&b.right),
            _ => false,
        },
        Expr::Paren(p) => is_last_step(&p.expr),
        _ => false,
    }
}

/// Whether a condition holds on one value of a loop's counter only:
/// `step == 999`, `i == n_iter`, `epoch == cfg.epochs - 1` (the other side
/// does not name the counter), alone or in a conjunction.
pub(super) fn is_one_iteration(cond: &Expr, counter: &str) -> bool {
    fn is_counter(e: &Expr, counter: &str) -> bool {
        match e {
            Expr::Path(p) => p.path.is_ident(counter),
            Expr::Paren(p) => is_counter(&p.expr, counter),
            _ => false,
        }
    }
    fn names(e: &Expr, counter: &str) -> bool {
        use syn::visit::Visit;
        struct Finder<'c>(&'c str, bool);
        impl<'ast> Visit<'ast> for Finder<'_> {
            fn visit_path(&mut self, p: &'ast syn::Path) {
                self.1 |= p.is_ident(self.0);
            }
        }
        let mut finder = Finder(counter, false);
        finder.visit_expr(e);
        finder.1
    }
    match cond {
        Expr::Binary(b) => match b.op {
            BinOp::Eq(_) => {
                (is_counter(&b.left, counter) && !names(&b.right, counter))
                    || (is_counter(&b.right, counter) && !names(&b.left, counter))
            }
            BinOp::And(_) => {
                is_one_iteration(&b.left, counter) || is_one_iteration(&b.right, counter)
            }
            _ => false,
        },
        Expr::Paren(p) => is_one_iteration(&p.expr, counter),
        _ => false,
    }
}

/// `None` as a pattern.
pub(super) fn is_none_pattern(pat: &Pat) -> bool {
    match pat {
        Pat::Ident(p) => p.ident == "None" && p.subpat.is_none(),
        Pat::Path(p) => p.path.segments.last().is_some_and(|s| s.ident == "None"),
        Pat::Paren(p) => is_none_pattern(&p.pat),
        _ => false,
    }
}

/// Whether a pattern takes the value out of a `Some` or an `Ok`.
pub(super) fn is_some_pattern(pat: &Pat) -> bool {
    match pat {
        Pat::TupleStruct(ts) => ts
            .path
            .segments
            .last()
            .is_some_and(|s| s.ident == "Some" || s.ident == "Ok"),
        Pat::Paren(p) => is_some_pattern(&p.pat),
        _ => false,
    }
}

/// Whether a block always leaves the code after it: it ends in `return`,
/// `continue` or `break` (as a statement or its tail).
pub(super) fn diverges(block: &syn::Block) -> bool {
    match block.stmts.last() {
        Some(syn::Stmt::Expr(expr, _)) => leaves(expr),
        Some(syn::Stmt::Macro(m)) => is_diverging_macro(&m.mac),
        _ => false,
    }
}

/// Whether an expression never yields a value: `return`, `continue`,
/// `break`, `panic!` and its kin, or a block that ends in one (a match
/// arm's `_ => panic!(..)`). Its value takes no part in a join.
pub(super) fn expr_diverges(expr: &Expr) -> bool {
    leaves(expr) || matches!(strip_parens(expr), Expr::Block(b) if diverges(&b.block))
}

/// `return`, `continue`, `break`, or `panic!` and its kin.
fn leaves(expr: &Expr) -> bool {
    match strip_parens(expr) {
        Expr::Return(_) | Expr::Continue(_) | Expr::Break(_) => true,
        Expr::Macro(m) => is_diverging_macro(&m.mac),
        _ => false,
    }
}

fn is_diverging_macro(mac: &syn::Macro) -> bool {
    mac.path.segments.last().is_some_and(|s| {
        matches!(
            s.ident.to_string().as_str(),
            "panic" | "unreachable" | "bail" | "todo" | "unimplemented"
        )
    })
}

fn strip_parens(expr: &Expr) -> &Expr {
    match expr {
        Expr::Paren(p) => strip_parens(&p.expr),
        _ => expr,
    }
}

/// Whether an expression takes the next item of an iterator or a data
/// loader (`iter.next()`, `loader.next_batch()`): `None` means the data
/// ran out, once per pass over it.
pub(super) fn takes_next(expr: &Expr) -> bool {
    match expr {
        Expr::MethodCall(m) => {
            let name = m.method.to_string();
            name == "next" || name.starts_with("next_")
        }
        Expr::Await(a) => takes_next(&a.base),
        Expr::Paren(p) => takes_next(&p.expr),
        Expr::Reference(r) => takes_next(&r.expr),
        _ => false,
    }
}

/// A condition that holds on few iterations of a loop: a periodic guard, or
/// an equality, which picks out particular steps (`i == n_steps - 1`,
/// `step == 0`), or a disjunction of those. A comparison such as `i > 10`
/// or a flag holds on an unknown share of the steps, so it is not one.
fn holds_on_few_steps(cond: &Expr) -> bool {
    match cond {
        Expr::Binary(b) => match b.op {
            BinOp::Eq(_) => true,
            BinOp::Or(_) => holds_on_few_steps(&b.left) && holds_on_few_steps(&b.right),
            _ => is_periodic(cond),
        },
        Expr::Paren(p) => holds_on_few_steps(&p.expr),
        _ => is_periodic(cond),
    }
}

/// If a `for` loop's iterable is `t.iter::<T>()` (possibly unwrapped), the
/// start of that method name.
pub(super) fn driving_tensor_iter(iterable: &Expr) -> Option<(usize, usize)> {
    match iterable {
        Expr::MethodCall(m) if m.method == "iter" && m.turbofish.is_some() => {
            let start = m.method.span().start();
            Some((start.line, start.column + 1))
        }
        Expr::MethodCall(m)
            if TRANSPARENT.contains(&m.method.to_string().as_str())
                || SAME_ELEMENTS.contains(&m.method.to_string().as_str())
                || m.method == "enumerate" =>
        {
            driving_tensor_iter(&m.receiver)
        }
        Expr::Try(t) => driving_tensor_iter(&t.expr),
        Expr::Paren(p) => driving_tensor_iter(&p.expr),
        _ => None,
    }
}

/// The span of an expression's first token, found without building its
/// token stream (which `Spanned` would do, at a cost linear in its size).
pub(crate) fn first_span(expr: &Expr) -> Span {
    match expr {
        Expr::MethodCall(m) => first_span(&m.receiver),
        Expr::Binary(b) => first_span(&b.left),
        Expr::Call(c) => first_span(&c.func),
        Expr::Field(f) => first_span(&f.base),
        Expr::Index(i) => first_span(&i.expr),
        Expr::Try(t) => first_span(&t.expr),
        Expr::Await(a) => first_span(&a.base),
        Expr::Cast(c) => first_span(&c.expr),
        Expr::Assign(a) => first_span(&a.left),
        Expr::Path(p) => match (&p.qself, &p.path.leading_colon, p.path.segments.first()) {
            (Some(q), _, _) => q.lt_token.span,
            (None, Some(colon), _) => colon.spans[0],
            (None, None, Some(s)) => s.ident.span(),
            _ => Span::call_site(),
        },
        Expr::Lit(l) => l.lit.span(),
        Expr::Macro(m) => m
            .mac
            .path
            .segments
            .first()
            .map_or_else(Span::call_site, |s| s.ident.span()),
        Expr::If(i) => i.if_token.span,
        Expr::ForLoop(f) => f
            .label
            .as_ref()
            .map_or(f.for_token.span, |l| l.name.apostrophe),
        Expr::While(w) => w
            .label
            .as_ref()
            .map_or(w.while_token.span, |l| l.name.apostrophe),
        Expr::Loop(l) => l
            .label
            .as_ref()
            .map_or(l.loop_token.span, |l| l.name.apostrophe),
        Expr::Match(m) => m.match_token.span,
        Expr::Block(b) => b
            .label
            .as_ref()
            .map_or(b.block.brace_token.span.open(), |l| l.name.apostrophe),
        Expr::Unsafe(u) => u.unsafe_token.span,
        Expr::Paren(p) => p.paren_token.span.open(),
        Expr::Tuple(t) => t.paren_token.span.open(),
        Expr::Array(a) => a.bracket_token.span.open(),
        Expr::Reference(r) => r.and_token.span,
        Expr::Return(r) => r.return_token.span,
        Expr::Break(b) => b.break_token.span,
        Expr::Let(l) => l.let_token.span,
        Expr::Struct(s) => s
            .path
            .segments
            .first()
            .map_or_else(Span::call_site, |s| s.ident.span()),
        Expr::Range(r) => r
            .start
            .as_deref()
            .map_or_else(|| r.limits.span(), first_span),
        Expr::Group(g) => first_span(&g.expr),
        other => other.span(),
    }
}

/// Whether a block runs an update itself, outside loops of its own: a
/// backward pass or an optimizer step (clearing gradients alone is none).
/// One that runs epochs of minibatches runs its steps in those loops.
pub(super) fn runs_an_update(block: &syn::Block) -> bool {
    struct Updates(bool);
    impl<'ast> syn::visit::Visit<'ast> for Updates {
        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            let name = m.method.to_string();
            if is_update(&name) && name != "zero_grad" {
                self.0 = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_for_loop(&mut self, _: &'ast ExprForLoop) {}
        fn visit_expr_while(&mut self, _: &'ast syn::ExprWhile) {}
        fn visit_expr_loop(&mut self, _: &'ast syn::ExprLoop) {}
    }
    let mut updates = Updates(false);
    syn::visit::Visit::visit_block(&mut updates, block);
    updates.0
}

/// Whether a call builds an error value: `Err(..)`.
pub(super) fn builds_an_error(call: &ExprCall) -> bool {
    matches!(&*call.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s| s.ident == "Err"))
}

/// Whether an expression's value is an error built there (`Err(..)`, or a
/// block ending in one).
pub(super) fn hands_back_an_error(expr: &Expr) -> bool {
    match expr {
        Expr::Call(c) => builds_an_error(c),
        Expr::Paren(p) => hands_back_an_error(&p.expr),
        Expr::Block(b) => match b.block.stmts.last() {
            Some(syn::Stmt::Expr(last, None)) => hands_back_an_error(last),
            _ => false,
        },
        _ => false,
    }
}

/// The names a loop body moves to a device itself, or whose fields it
/// does (`batch.inputs.to_device(device)`, `xs.to(device)`): not a move to
/// the CPU, and only plain names and their fields, not what a method
/// returns (`model.forward(&xs).to_device(..)`).
pub(super) fn moved_to_device(body: &syn::Block) -> Vec<String> {
    struct Moves(Vec<String>);
    impl<'ast> syn::visit::Visit<'ast> for Moves {
        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            let to_cpu = m.args.first().is_some_and(|a| match strip_references(a) {
                Expr::Path(p) => path_has_segment(&p.path, "Cpu"),
                _ => false,
            });
            if matches!(
                m.method.to_string().as_str(),
                "to_device" | "to_device_" | "to"
            ) && !m.args.is_empty()
                && !to_cpu
            {
                if let Some(name) = field_root(&m.receiver) {
                    if !self.0.contains(&name) {
                        self.0.push(name);
                    }
                }
            }
            syn::visit::visit_expr_method_call(self, m);
        }
    }
    let mut moves = Moves(Vec::new());
    syn::visit::Visit::visit_block(&mut moves, body);
    moves.0
}

/// Whether an expression runs a model (`model.forward_one(&x, &mut
/// cache)`, `xs.apply(&net).squeeze()`), outside closures it builds.
pub(super) fn runs_a_model(expr: &Expr) -> bool {
    struct Runs(bool);
    impl<'ast> syn::visit::Visit<'ast> for Runs {
        fn visit_expr_method_call(&mut self, m: &'ast ExprMethodCall) {
            self.0 |= is_forward(&m.method.to_string());
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_closure(&mut self, _: &'ast syn::ExprClosure) {}
    }
    let mut runs = Runs(false);
    syn::visit::Visit::visit_expr(&mut runs, expr);
    runs.0
}

/// The named fields of `self` a chain of them goes through
/// (`self.config.inner`: `config`, `inner`; `self` itself: none); `None`
/// unless it starts at `self`.
pub(super) fn self_fields(expr: &Expr) -> Option<Vec<String>> {
    match expr {
        _ if is_self(expr) => Some(Vec::new()),
        Expr::Field(f) => {
            let Member::Named(name) = &f.member else {
                return None;
            };
            let mut path = self_fields(&f.base)?;
            path.push(name.to_string());
            Some(path)
        }
        Expr::Paren(p) => self_fields(&p.expr),
        _ => None,
    }
}

/// The name a plain name or a chain of its fields starts from.
fn field_root(expr: &Expr) -> Option<String> {
    match strip_references(expr) {
        Expr::Path(p) => p.path.get_ident().map(ToString::to_string),
        Expr::Field(f) => field_root(&f.base),
        _ => None,
    }
}

/// Whether a `let` only renames a value: a name, or its `?`, `unwrap()` or
/// `expect(..)` (`let batch = batch?;`).
pub(super) fn rebinds_a_name(init: &Expr) -> bool {
    match strip_references(init) {
        Expr::Path(p) => p.path.get_ident().is_some(),
        Expr::Try(t) => rebinds_a_name(&t.expr),
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
            rebinds_a_name(&m.receiver)
        }
        _ => false,
    }
}

/// Whether a function or method by this name writes what it is given out
/// (to a file, a stream, a store on disk): `write_features`, `write_all`,
/// `save`, `export_frame`, `dump`, `serialize`, `persist`.
pub(super) fn is_writer(name: &str) -> bool {
    ["write", "save", "export", "dump", "serialize", "persist"]
        .iter()
        .any(|prefix| name.starts_with(prefix))
}

/// Whether a loop's body leaves it unconditionally on its first pass: a
/// `break` of this loop (unlabelled, or naming its `label`) among the
/// body's own statements, not under a condition.
pub(super) fn breaks_at_once(body: &syn::Block, label: Option<&syn::Label>) -> bool {
    body.stmts.iter().any(|stmt| match stmt {
        syn::Stmt::Expr(Expr::Break(b), _) => match (&b.label, label) {
            (None, _) => true,
            (Some(named), Some(own)) => named.ident == own.name.ident,
            (Some(_), None) => false,
        },
        _ => false,
    })
}

/// Whether a statement leaves its block unconditionally (`break`,
/// `continue`, `return`, `panic!` and its kin): the statements after it
/// never run.
pub(super) fn leaves_block(stmt: &syn::Stmt) -> bool {
    matches!(stmt, syn::Stmt::Expr(expr, _) if leaves(expr))
}

/// The names a pattern binds.
pub(super) fn pattern_names(pat: &Pat) -> Vec<String> {
    struct Names(Vec<String>);
    impl<'ast> syn::visit::Visit<'ast> for Names {
        fn visit_pat_ident(&mut self, p: &'ast syn::PatIdent) {
            self.0.push(p.ident.to_string());
            syn::visit::visit_pat_ident(self, p);
        }
    }
    let mut names = Names(Vec::new());
    syn::visit::Visit::visit_pat(&mut names, pat);
    names.0
}

/// Whether an expression takes a lock and holds its guard
/// (`shared.queue.lock().unwrap()`, `state.write()?`, `m.lock()`).
pub(super) fn takes_a_lock(expr: &Expr) -> bool {
    match expr {
        Expr::MethodCall(m) => {
            matches!(m.method.to_string().as_str(), "lock" | "write") && m.args.is_empty()
                || (matches!(
                    m.method.to_string().as_str(),
                    "unwrap" | "expect" | "unwrap_or_else"
                ) && takes_a_lock(&m.receiver))
        }
        Expr::Try(t) => takes_a_lock(&t.expr),
        Expr::Paren(p) => takes_a_lock(&p.expr),
        Expr::Await(a) => takes_a_lock(&a.base),
        _ => false,
    }
}

/// The name a statement binds to `Instant::now()` (`let start =
/// std::time::Instant::now();`).
pub(super) fn starts_a_timer(stmt: &Stmt) -> Option<String> {
    let Stmt::Local(local) = stmt else {
        return None;
    };
    let Pat::Ident(name) = &local.pat else {
        return None;
    };
    let init = &local.init.as_ref()?.expr;
    let Expr::Call(call) = &**init else {
        return None;
    };
    let Expr::Path(path) = &*call.func else {
        return None;
    };
    let mut last = path.path.segments.iter().rev().map(|s| &s.ident);
    let instant_now =
        last.next().is_some_and(|s| s == "now") && last.next().is_some_and(|s| s == "Instant");
    (call.args.is_empty() && instant_now).then(|| name.ident.to_string())
}

/// Whether statements read how long ago `timer` started: `timer.elapsed()`,
/// `x.duration_since(timer)`, or `Instant::now() - timer`.
pub(super) fn reads_elapsed(stmts: &[Stmt], timer: &str) -> bool {
    struct Elapsed<'a> {
        timer: &'a str,
        found: bool,
    }
    impl Elapsed<'_> {
        /// `timer` or `&timer`.
        fn is_timer(&self, expr: &Expr) -> bool {
            matches!(strip_references(expr), Expr::Path(p) if p.path.is_ident(self.timer))
        }
    }
    impl<'ast> syn::visit::Visit<'ast> for Elapsed<'_> {
        fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
            let elapsed = m.method == "elapsed" && self.is_timer(&m.receiver);
            let since = m.method == "duration_since" && m.args.iter().any(|a| self.is_timer(a));
            if elapsed || since {
                self.found = true;
            }
            syn::visit::visit_expr_method_call(self, m);
        }
        fn visit_expr_binary(&mut self, b: &'ast syn::ExprBinary) {
            if matches!(b.op, BinOp::Sub(_)) && self.is_timer(&b.right) {
                self.found = true;
            }
            syn::visit::visit_expr_binary(self, b);
        }
        fn visit_macro(&mut self, mac: &'ast syn::Macro) {
            // `println!("{:?}", start.elapsed())`: the arguments of a
            // format macro are expressions.
            if let Ok(args) = mac.parse_body_with(
                syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated,
            ) {
                for arg in &args {
                    syn::visit::Visit::visit_expr(self, arg);
                }
            }
        }
    }
    let mut visitor = Elapsed {
        timer,
        found: false,
    };
    for stmt in stmts {
        syn::visit::Visit::visit_stmt(&mut visitor, stmt);
        if visitor.found {
            return true;
        }
    }
    false
}

/// `Ok(inner)` or `Some(inner)` ending a function that returns a `Result`
/// or an `Option` (any alias of that name, `anyhow::Result<T>`): the type
/// the value inside is returned as, and that value.
pub(crate) fn wrapped_tail<'a>(ty: &'a Type, tail: &'a Expr) -> Option<(&'a Type, &'a Expr)> {
    let Expr::Call(call) = tail else {
        return None;
    };
    let Expr::Path(callee) = &*call.func else {
        return None;
    };
    let wrapper = match callee.path.get_ident()?.to_string().as_str() {
        "Ok" => "Result",
        "Some" => "Option",
        _ => return None,
    };
    let [inner] = call.args.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let Type::Path(p) = ty else {
        return None;
    };
    let last = p.path.segments.last()?;
    if last.ident != wrapper {
        return None;
    }
    let syn::PathArguments::AngleBracketed(args) = &last.arguments else {
        return None;
    };
    match args.args.first()? {
        syn::GenericArgument::Type(inner_ty) => Some((inner_ty, inner)),
        _ => None,
    }
}

/// The functions a method call hands a framework to run once per frame,
/// by name: the systems of bevy's `add_systems(Update, (act, learn.after(
/// act)))` or `add_system(act)` (not a start-up schedule's), and a notan
/// app's `.update(update)` or `.draw(draw)` on the builder `init_with` or
/// `init` starts.
pub(super) fn frame_registrations(name: &str, m: &ExprMethodCall) -> Vec<String> {
    fn functions(expr: &Expr, out: &mut Vec<String>) {
        match expr {
            Expr::Path(p) if p.qself.is_none() => {
                if let Some(last) = p.path.segments.last() {
                    out.push(last.ident.to_string());
                }
            }
            Expr::Tuple(t) => t.elems.iter().for_each(|e| functions(e, out)),
            Expr::Paren(p) => functions(&p.expr, out),
            // `learn.after(act)`, `act.run_if(ready)`, `(a, b).chain()`.
            Expr::MethodCall(m) => functions(&m.receiver, out),
            _ => {}
        }
    }
    fn starts_an_app(expr: &Expr) -> bool {
        match expr {
            Expr::Call(c) => matches!(&*c.func, Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| s.ident == "init_with" || s.ident == "init")),
            Expr::MethodCall(m) => starts_an_app(&m.receiver),
            _ => false,
        }
    }
    let mut out = Vec::new();
    match name {
        "add_system" | "add_systems" => {
            let startup = m.args.len() == 2
                && matches!(m.args.first(), Some(Expr::Path(p))
                    if p.path.segments.last().is_some_and(|s| s.ident.to_string().contains("Startup")));
            if !startup {
                if let Some(systems) = m.args.last() {
                    functions(systems, &mut out);
                }
            }
        }
        "update" | "draw" if m.args.len() == 1 && starts_an_app(&m.receiver) => {
            if let Some(Expr::Path(p)) = m.args.first() {
                if let Some(ident) = p.path.get_ident() {
                    out.push(ident.to_string());
                }
            }
        }
        _ => {}
    }
    out
}

/// Whether a condition asks whether the user just acted: a click, a key or
/// a mouse button pressed (`ui.button("Run").clicked()`, `app.mouse
/// .was_pressed(..)`, `is_key_pressed(KeyCode::Space)`): its branch runs
/// once per user event, not on every frame.
pub(super) fn asks_for_user_input(cond: &Expr) -> bool {
    const EVENTS: &[&str] = &[
        "clicked",
        "double_clicked",
        "secondary_clicked",
        "was_pressed",
        "was_released",
        "just_pressed",
        "just_released",
        "is_key_pressed",
        "is_key_released",
        "is_mouse_button_pressed",
        "key_pressed",
        "mouse_pressed",
    ];
    match cond {
        Expr::MethodCall(m) => {
            EVENTS.contains(&m.method.to_string().as_str()) || asks_for_user_input(&m.receiver)
        }
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p)
                if p.path.segments.last().is_some_and(|s| EVENTS.contains(&s.ident.to_string().as_str())))
        }
        Expr::Binary(b) => asks_for_user_input(&b.left) || asks_for_user_input(&b.right),
        Expr::Unary(u) => asks_for_user_input(&u.expr),
        Expr::Paren(p) => asks_for_user_input(&p.expr),
        Expr::Let(l) => asks_for_user_input(&l.expr),
        _ => false,
    }
}

/// A message that is a struct or enum value or an array built where it is
/// sent: a struct literal (`Request { query, reply }`), a constructor or
/// variant of a type named by path (`Request::new(q, tx)`,
/// `Flag::Stop(rank)`, `Flag::Halt`, `Batch(t)`), an array (`&[value]`).
/// No receiver takes such a value apart as a tuple. The
/// standard wrappers (`Box::new`, `Arc::new`, `Some`, `Ok`) wrap what they
/// are given, and tch's `Tensor` is a tensor, not a message type.
pub(super) fn sends_named_value(message: &Expr) -> bool {
    const WRAPPERS: &[&str] = &[
        "Box", "Arc", "Rc", "Mutex", "RwLock", "RefCell", "Cell", "Some", "Ok", "Err", "Vec",
        "Tensor", "Self",
    ];
    let uppercase = |s: &syn::PathSegment| {
        s.ident
            .to_string()
            .starts_with(|c: char| c.is_ascii_uppercase())
    };
    match message {
        Expr::Struct(_) | Expr::Array(_) | Expr::Repeat(_) => true,
        Expr::Paren(p) => sends_named_value(&p.expr),
        Expr::Reference(r) => sends_named_value(&r.expr),
        // `Flag::Halt`: a variant, both segments a type's name.
        Expr::Path(p) => {
            let segments: Vec<_> = p.path.segments.iter().collect();
            matches!(segments.as_slice(), [.., ty, variant] if uppercase(ty) && uppercase(variant)
                && !WRAPPERS.contains(&ty.ident.to_string().as_str()))
        }
        Expr::Call(c) => {
            let Expr::Path(p) = &*c.func else {
                return false;
            };
            let segments: Vec<_> = p.path.segments.iter().collect();
            // The type the call builds: the segment before the function
            // (`Request` of `Request::new`), or a tuple struct or variant
            // called by its own name (`Batch(t)`).
            let ty = match segments.as_slice() {
                [.., ty, _] if uppercase(ty) => ty,
                [.., only] if uppercase(only) => only,
                _ => return false,
            };
            !WRAPPERS.contains(&ty.ident.to_string().as_str())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_range_counts_parts_by_their_name_not_by_a_size_named_after_them() {
        let counts = |source: &str| counts_components(&syn::parse_str(source).unwrap());
        assert!(counts("0..self.n_layers"));
        assert!(counts("0..cfg.n_layer"));
        assert!(counts("(0..config.num_hidden_layers).rev()"));
        assert!(counts("0..self.n_heads"));
        assert!(!counts("0..self.block_size"));
        assert!(!counts("0..max_len"));
        assert!(!counts("0..steps"));
    }
}
