//! The per-function walk: evaluates expressions to [`Val`]s, tracks loops,
//! periodic guards, local closures and code outside the release hot path,
//! and records sync sites, calls, field stores and the step markers that
//! tell a step loop from an epoch loop.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{
    Attribute, BinOp, Block, Expr, ExprBinary, ExprCall, ExprClosure, ExprForLoop, ExprIf,
    ExprMatch, ExprMethodCall, ExprPath, FnArg, ImplItem, Item, Local, Member, Pat, ReturnType,
    Signature, Stmt, TraitItem, Type, UnOp, UseTree,
};

use super::facts::{
    channel_part, AliasFacts, CallSite, Callee, Cold, Context, FieldStore, FileFacts, Fix,
    FlagGuard, FnFacts, Loc, LoopFacts, Site, StructFacts, TraitFacts, TyKind, UseFacts, CHANNEL,
    CHANNEL_MESSAGE, CHANNEL_OPEN, FIXED_LOOP_MAX,
};
use super::hot_path::{attrs_cold, cfg_macro_cold, Features};
use super::types::{
    annotation_target, classify_in, compact, conversion_target, generic_bounds, is_scalar,
};
use super::values::{
    gate, is_comparison, is_loss, is_module_application, module_application, tch_tensor_method,
    tensor_method, Gate, Place, PlaceRef, TensorFacts, TypeRef, Val,
};
use crate::config::CustomPattern;
use crate::rules::{self, CalleeName, Conversion, Hit, MethodCall, NamedCall, OwnLoop};

mod calls;
mod expressions;
mod syntax;

use syntax::{
    body_locals, diverges, expr_attrs, is_part, is_some_pattern, leaves_block, listed, param_of,
    path_has_segment, reads_elapsed, rebinds_a_name, root_ident, splits_a_tensor, starts_a_timer,
    strip_references, takes_a_lock, takes_next, type_args, type_name, BodyLocals, Listed,
};
pub(crate) use syntax::{first_span, local_name};

/// How deep the walker follows nested expressions before giving up on the
/// rest of one; far beyond real code, well within the worker's stack.
pub(crate) const MAX_DEPTH: usize = 3000;

/// Iterator adapters whose closure runs once per element.
const ELEMENT_ADAPTERS: &[&str] = &[
    "map",
    "for_each",
    "try_for_each",
    "filter",
    "filter_map",
    "flat_map",
    "inspect",
    "any",
    "all",
    "find",
    "find_map",
    "position",
    "take_while",
    "skip_while",
    "map_while",
    "partition",
    "max_by_key",
    "min_by_key",
    "fold",
    "try_fold",
    "scan",
    "reduce",
    "sum_by",
    "then",
    "and_then",
    "for_each_concurrent",
    "try_for_each_concurrent",
];

/// A benchmark harness's methods (criterion's `Bencher`) that run the
/// closure they are given once per measured iteration. `Iterator::iter`
/// takes no closure, so a closure argument tells them apart.
pub(crate) fn is_bench_routine(name: &str) -> bool {
    matches!(
        name,
        "iter"
            | "iter_batched"
            | "iter_batched_ref"
            | "iter_with_setup"
            | "iter_with_large_drop"
            | "iter_with_large_setup"
    )
}

/// Methods that hand back their receiver's value (`Option`/`Result`
/// plumbing, references, locks).
const TRANSPARENT: &[&str] = &[
    "unwrap",
    "ok_or",
    "ok_or_else",
    "expect",
    "unwrap_or_default",
    "unwrap_or_else",
    "unwrap_or",
    "clone",
    "as_ref",
    "as_mut",
    "borrow",
    "borrow_mut",
    "lock",
    "read",
    "write",
    "to_owned",
    "ok",
    "context",
    "with_context",
    "map_err",
    "unwrap_unchecked",
    "as_deref",
    "as_deref_mut",
];

/// Iterator methods that keep the element type.
const SAME_ELEMENTS: &[&str] = &[
    "rev",
    "skip",
    "take",
    "step_by",
    "cycle",
    "peekable",
    "chain",
    "filter",
    "skip_while",
    "take_while",
    "inspect",
    "by_ref",
    "fuse",
    "copied",
    "cloned",
    "shuffle",
    "return_smaller_last_batch",
    "progress",
    "progress_count",
];

/// Method names that run an update: a backward pass, an optimizer or
/// environment step.
pub(crate) fn is_update(name: &str) -> bool {
    matches!(
        name,
        "backward_step"
            | "backward_step_clip"
            | "backward_step_clip_norm"
            | "backward"
            | "run_backward"
            | "step"
            | "zero_grad"
    )
}

/// Method names that run a model once.
pub(crate) fn is_forward(name: &str) -> bool {
    matches!(
        name,
        "forward"
            | "forward_t"
            | "forward_ts"
            | "forward_is"
            | "forward_mt"
            | "apply"
            | "apply_t"
            | "method_is"
            | "method_ts"
    ) || name.starts_with("forward_")
}

/// Methods whose call in a loop's condition or iterable makes it a loop
/// over incoming requests.
fn is_request_source(name: &str) -> bool {
    matches!(
        name,
        "recv" | "recv_timeout" | "blocking_recv" | "incoming" | "accept"
    )
}

/// A network connection's type (`TcpStream`, `&mut UnixStream`): what a
/// server reads its clients' requests from.
fn is_connection(ty: &syn::Type) -> bool {
    match ty {
        syn::Type::Reference(r) => is_connection(&r.elem),
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .is_some_and(|s| matches!(s.ident.to_string().as_str(), "TcpStream" | "UnixStream")),
        _ => false,
    }
}

/// tch objects that live where the device they are built with says.
fn is_placed_tch_type(name: &str) -> bool {
    matches!(name, "VarStore" | "CModule" | "TrainableCModule")
}

/// What the walker knows about the function it is in; a function starts
/// from a fresh one, and a nested item saves and restores its enclosing one.
#[derive(Default)]
struct FnState {
    /// Local bindings, innermost last.
    bindings: Vec<Binding>,
    /// Bindings being made are a loop's items (its pattern or closure
    /// parameters).
    binding_items: bool,
    /// Bindings being made are parts of one tensor (its rows, its chunks).
    binding_parts: bool,
    /// Bindings being made hold the next item of an iterator or loader.
    binding_next: bool,
    /// Bindings being made hold what a function computes here
    /// (`create_mask(&ids[i])`), not a value taken out of a collection.
    binding_computed: bool,
    /// The length of `bindings` at the start of each open scope.
    scopes: Vec<usize>,
    /// Where the walk is: function, loop, periodic guard, statement.
    context: Context,
    /// The type `Self` names, inside an impl or a trait.
    self_ty: Option<String>,
    /// Type parameters in scope with their first trait bound.
    generics: Vec<(String, TyKind)>,
    /// Local closures bound at function level: the sites in each body.
    closures: Vec<Vec<usize>>,
    /// The calls in each such closure's body, by index into the calls.
    closure_calls: Vec<Vec<usize>>,
    /// What each such closure returns, as far as its body says.
    closure_values: Vec<Val>,
    /// The closures whose bodies are being walked.
    open_closures: Vec<usize>,
    /// Closure bodies being walked: a `return` there is the closure's.
    closure_depth: usize,
    /// Where what the function returns lives, joined over its returns.
    returns: Option<Place>,
    /// The type of what the function returns, if every return agrees.
    returned_type: Option<TypeRef>,
    /// The scope depth at the start of each open loop: bindings deeper
    /// than the innermost one change from one iteration to the next.
    loop_scopes: Vec<usize>,
    /// Names whose value (or a field of it) each open loop's body moves to
    /// a device itself (`batch.inputs.to_device(device)`): until then it is
    /// host data.
    moved_in_loops: Vec<Vec<String>>,
    /// Locals the function moves to a device later (`vs.set_device(d)`):
    /// a VarStore built on the CPU first, and the modules built from it,
    /// end up on that device.
    set_on_device: Vec<String>,
    /// Locals the body backpropagates from: 0-dim tensors (see
    /// [`syntax::BodyLocals`]).
    backpropagated: Vec<String>,
    /// The function's parameters bound to a plain name (not `self`).
    inputs: Vec<String>,
    /// Locals holding a lock's guard (`let mut q = shared.queue.lock()
    /// .unwrap()`): a push into one hands work to another thread.
    locked: Vec<String>,
    /// Names a request loop binds to what it takes (`while let Ok((input,
    /// reply)) = jobs.recv()`): a send on one of them replies to the
    /// request rather than handing work on.
    request_items: Vec<String>,
    /// Names that hold a network connection (a `TcpStream` or
    /// `UnixStream` parameter) or a reader or clone of one: the lines read
    /// from them are a client's requests.
    sockets: Vec<String>,
    /// The function writes bytes out (`write_all`, `File::create`,
    /// `fs::write`): its whole-tensor copies are exports.
    writes_out: bool,
    /// Locals bound by a `let` whose value holds copies made there: the
    /// whole-tensor copies (sites) and crate calls it made, by the name.
    copied: Vec<(String, Vec<usize>, Vec<usize>)>,
    /// Locals bound to a list written out (an array literal or `vec![..]`).
    lists: Vec<(String, Listed)>,
    /// The function's `bool` parameters bound by name and not rebound
    /// since, with their positions: a branch on one is a [`FlagGuard`].
    flag_params: Vec<(String, usize)>,
    /// Locals bound to a `bool` known here (`let show_debug = false;`)
    /// and not rebound since.
    bool_locals: Vec<(String, bool)>,
}

/// A read's subject as a loop sees it (see [`Site::item`], [`Site::varies`]).
#[derive(Clone, Copy, Debug, Default)]
struct Whole {
    item: bool,
    varies: bool,
}

impl Whole {
    /// Each element of an iterator, converted point-free.
    const ELEMENT: Whole = Whole {
        item: true,
        varies: true,
    };
}

/// A local variable.
struct Binding {
    name: String,
    value: Val,
    /// The scope depth it was bound at.
    depth: usize,
    /// Bound by a loop's pattern or an adapter closure's parameters.
    item: bool,
    /// Bound to a part of one tensor (`t.get(i)`, an item of `t.unbind(0)`).
    part: bool,
    /// Bound to the next item of an iterator or loader (`it.next()`),
    /// `None` when the data ran out.
    next: bool,
    /// Bound to what a free function computes in this iteration
    /// (`create_mask(&ids[i])`): a value made here, not an item.
    computed: bool,
}

/// Walks one parsed file.
pub(crate) struct Walker<'a> {
    source: &'a str,
    mentions_tch: bool,
    patterns: &'a [CustomPattern],
    features: &'a Features,
    /// What the walk found.
    pub(crate) facts: FileFacts,
    consts: HashMap<String, Val>,
    /// The file's boolean constants (`const DEBUG: bool = false`).
    flags: HashMap<String, bool>,
    /// Names the file's imports give under another name (`use log::debug
    /// as log_debug;`), by the name they are called by.
    pub(crate) renamed: HashMap<String, String>,
    /// The function being walked.
    fn_state: FnState,
    /// Inline `mod` blocks around the item being walked.
    module: Vec<String>,
    /// Why the item being walked is not in a release hot path.
    item_cold: Option<Cold>,
    next_statement: usize,
    depth: usize,
    /// The walk met an expression nested deeper than [`MAX_DEPTH`].
    pub(crate) too_deep: bool,
    /// The last `.try_into()` seen: (receiver, where, by reference, what
    /// the receiver is as a loop's subject).
    last_try_into: Option<(Val, Loc, bool, Whole)>,
    /// The type arguments of the impl being walked (`Agent` in `impl
    /// Robot<Agent>`), classified; empty outside impls or where none says more.
    impl_args: Vec<TyKind>,
    /// The impl being walked is of a framework's per-frame trait
    /// (`eframe::App`, ggez's `EventHandler`).
    frame_trait: bool,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        source: &'a str,
        mentions_tch: bool,
        patterns: &'a [CustomPattern],
        features: &'a Features,
        file_cold: Option<Cold>,
    ) -> Walker<'a> {
        Walker {
            source,
            mentions_tch,
            patterns,
            features,
            facts: FileFacts {
                mentions_tch,
                ..FileFacts::default()
            },
            consts: HashMap::new(),
            flags: HashMap::new(),
            renamed: HashMap::new(),
            fn_state: FnState::default(),
            module: Vec::new(),
            item_cold: file_cold,
            next_statement: 0,
            depth: 0,
            too_deep: false,
            last_try_into: None,
            impl_args: Vec::new(),
            frame_trait: false,
        }
    }

    /// Walks every item of the file.
    pub(crate) fn file(&mut self, file: &syn::File) {
        if let Some(cold) = attrs_cold(&file.attrs, self.features) {
            self.item_cold.get_or_insert(cold);
        }
        self.collect_consts(&file.items);
        collect_renames(&file.items, &mut self.renamed);
        for item in &file.items {
            self.item(item);
        }
    }

    // ----- items -------------------------------------------------------

    fn collect_consts(&mut self, items: &[Item]) {
        for item in items {
            match item {
                Item::Const(c) => self.remember_const(&c.ident, &c.expr),
                Item::Static(s) => self.remember_const(&s.ident, &s.expr),
                Item::Mod(m) => {
                    if let Some((_, items)) = &m.content {
                        self.collect_consts(items);
                    }
                }
                _ => {}
            }
        }
    }

    fn remember_const(&mut self, ident: &syn::Ident, expr: &Expr) {
        if let Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Bool(b),
            ..
        }) = expr
        {
            self.flags.insert(ident.to_string(), b.value);
        }
        let value = self.const_val(expr);
        if let Val::Device(place) = &value {
            self.facts
                .device_consts
                .push((ident.to_string(), *place == Place::Cpu));
        }
        if matches!(value, Val::Device(_)) || value.is_cpu_placement() {
            self.consts.insert(ident.to_string(), value);
        }
    }

    /// Evaluates a constant's initialiser without recording anything.
    fn const_val(&self, expr: &Expr) -> Val {
        match expr {
            Expr::Path(p) => self.path_val(p),
            Expr::Paren(p) => self.const_val(&p.expr),
            Expr::Tuple(t) => Val::Tuple(t.elems.iter().map(|e| self.const_val(e)).collect()),
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if path_has_segment(&p.path, "Device") => Val::Device(Place::Device),
                _ => Val::Unknown,
            },
            _ => Val::Unknown,
        }
    }

    /// Runs `walk` with the item's own coldness (attributes) added.
    fn with_item_cold(&mut self, attrs: &[Attribute], walk: impl FnOnce(&mut Self)) {
        let saved = self.item_cold.clone();
        if self.item_cold.is_none() {
            self.item_cold = attrs_cold(attrs, self.features);
        }
        walk(self);
        self.item_cold = saved;
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Fn(f) => self.with_item_cold(&f.attrs, |w| {
                let generics = generic_bounds(&f.sig.generics);
                w.function(None, None, false, &f.sig, &f.block, generics);
            }),
            Item::Impl(imp) => self.with_item_cold(&imp.attrs, |w| {
                let owner = type_name(&imp.self_ty);
                let trait_impl = imp
                    .trait_
                    .as_ref()
                    .and_then(|(_, path, _)| path.segments.last())
                    .map(|s| s.ident.to_string());
                w.frame_trait = imp
                    .trait_
                    .as_ref()
                    .is_some_and(|(_, path, _)| is_frame_trait(path));
                let impl_generics = generic_bounds(&imp.generics);
                // A const parameter written as an argument (`N` in
                // `impl<const N: usize> Player<N, Net>`) parses as a type;
                // the struct's positions count type parameters only.
                let consts: Vec<String> = imp
                    .generics
                    .const_params()
                    .map(|c| c.ident.to_string())
                    .collect();
                let args = type_args(&imp.self_ty)
                    .into_iter()
                    .filter(|t| {
                        !matches!(t, Type::Path(p) if p.path.get_ident()
                            .is_some_and(|i| consts.iter().any(|c| i == c)))
                    })
                    .map(|t| classify_in(t, owner.as_deref(), &impl_generics))
                    .collect::<Vec<_>>();
                // Only arguments that name something help a field's type.
                w.impl_args = if args.iter().any(|a| !matches!(a, TyKind::Other)) {
                    args
                } else {
                    Vec::new()
                };
                for member in &imp.items {
                    if let ImplItem::Fn(m) = member {
                        w.with_item_cold(&m.attrs, |w| {
                            let mut generics = impl_generics.clone();
                            generics.extend(generic_bounds(&m.sig.generics));
                            w.function(
                                owner.clone(),
                                trait_impl.clone(),
                                false,
                                &m.sig,
                                &m.block,
                                generics,
                            );
                        });
                    }
                }
                w.impl_args.clear();
                w.frame_trait = false;
            }),
            Item::Trait(t) => self.with_item_cold(&t.attrs, |w| {
                w.facts.traits.push(TraitFacts {
                    name: t.ident.to_string(),
                    supertraits: t
                        .supertraits
                        .iter()
                        .filter_map(|bound| match bound {
                            syn::TypeParamBound::Trait(b) => {
                                b.path.segments.last().map(|s| s.ident.to_string())
                            }
                            _ => None,
                        })
                        .collect(),
                });
                let owner = Some(t.ident.to_string());
                for member in &t.items {
                    if let TraitItem::Fn(m) = member {
                        if let Some(body) = &m.default {
                            w.with_item_cold(&m.attrs, |w| {
                                let generics = generic_bounds(&m.sig.generics);
                                w.function(owner.clone(), None, true, &m.sig, body, generics);
                            });
                        }
                    }
                }
            }),
            Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    self.with_item_cold(&m.attrs, |w| {
                        w.module.push(m.ident.to_string());
                        for item in items {
                            w.item(item);
                        }
                        w.module.pop();
                    });
                }
            }
            Item::Struct(s) => {
                let name = s.ident.to_string();
                let generics = generic_bounds(&s.generics);
                let fields = classify_fields(&s.fields, &name, &generics);
                let params: Vec<String> = s
                    .generics
                    .type_params()
                    .map(|p| p.ident.to_string())
                    .collect();
                let param_fields = s
                    .fields
                    .iter()
                    .enumerate()
                    .filter_map(|(i, f)| {
                        let param = param_of(&f.ty)?;
                        Some((field_name(i, f), params.iter().position(|p| *p == param)?))
                    })
                    .collect();
                let setters = derives_setters(&s.attrs);
                self.facts.structs.push(StructFacts {
                    name,
                    fields,
                    param_fields,
                    setters,
                });
            }
            Item::Enum(e) => {
                // Each variant with fields is a struct named `Enum::Variant`,
                // so `Enum::Variant(model)` patterns know what they bind.
                let generics = generic_bounds(&e.generics);
                let name = e.ident.to_string();
                for variant in &e.variants {
                    if variant.fields.is_empty() {
                        continue;
                    }
                    let fields = classify_fields(&variant.fields, &name, &generics);
                    self.facts.structs.push(StructFacts {
                        name: format!("{name}::{}", variant.ident),
                        fields,
                        param_fields: Vec::new(),
                        setters: false,
                    });
                }
            }
            // An import the build's features leave out (`#[cfg(not(feature
            // = "cuda"))] pub use super::refkernels::*;` in a default cuda
            // build) names nothing calls can reach.
            Item::Use(u)
                if matches!(attrs_cold(&u.attrs, self.features), Some(Cold::Feature(_))) => {}
            Item::Use(u) => {
                let mut prefix = Vec::new();
                self.use_tree(&u.tree, &mut prefix);
            }
            Item::Type(t) => {
                let named = match &*t.ty {
                    Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
                    _ => None,
                };
                if named.as_deref().and_then(conversion_target).is_some() {
                    self.facts.aliases.push(AliasFacts {
                        name: t.ident.to_string(),
                    });
                } else if let Some(named) = named {
                    self.facts.type_aliases.push((t.ident.to_string(), named));
                }
            }
            _ => {}
        }
    }

    fn use_tree(&mut self, tree: &UseTree, prefix: &mut Vec<String>) {
        match tree {
            UseTree::Path(p) => {
                prefix.push(p.ident.to_string());
                self.use_tree(&p.tree, prefix);
                prefix.pop();
            }
            UseTree::Name(n) => {
                let name = n.ident.to_string();
                let (path, alias) = if name == "self" {
                    (prefix.clone(), prefix.last().cloned().unwrap_or_default())
                } else {
                    let mut path = prefix.clone();
                    path.push(name.clone());
                    (path, name)
                };
                self.facts.uses.push(UseFacts {
                    module: self.module.clone(),
                    path,
                    alias,
                });
            }
            UseTree::Rename(r) => {
                let mut path = prefix.clone();
                let name = r.ident.to_string();
                if name != "self" {
                    path.push(name);
                }
                self.facts.uses.push(UseFacts {
                    module: self.module.clone(),
                    path,
                    alias: r.rename.to_string(),
                });
            }
            UseTree::Glob(_) => self.facts.uses.push(UseFacts {
                module: self.module.clone(),
                path: prefix.clone(),
                alias: "*".into(),
            }),
            UseTree::Group(g) => {
                for tree in &g.items {
                    self.use_tree(tree, prefix);
                }
            }
        }
    }

    /// An item inside a function body: walked on its own, then the
    /// enclosing function's state is restored.
    fn nested_item(&mut self, item: &Item) {
        let for_item = FnState {
            context: self.fn_state.context.clone(),
            self_ty: self.fn_state.self_ty.clone(),
            generics: self.fn_state.generics.clone(),
            ..FnState::default()
        };
        let enclosing = std::mem::replace(&mut self.fn_state, for_item);
        let cold = self.fn_state.context.cold.clone();
        let saved = std::mem::replace(&mut self.item_cold, cold);
        self.item(item);
        self.item_cold = saved;
        self.fn_state = enclosing;
    }

    fn function(
        &mut self,
        owner: Option<String>,
        trait_impl: Option<String>,
        in_trait: bool,
        sig: &Signature,
        block: &Block,
        mut generics: Vec<(String, TyKind)>,
    ) {
        let index = self.facts.functions.len();
        // Generic parameters of the enclosing function stay in scope for
        // items nested in it.
        for outer in &self.fn_state.generics {
            if !generics.iter().any(|(n, _)| *n == outer.0) {
                generics.push(outer.clone());
            }
        }
        let returns = match &sig.output {
            ReturnType::Default => TyKind::Other,
            ReturnType::Type(_, ty) => classify_in(ty, owner.as_deref(), &generics),
        };
        // `-> impl Module` is one type, the body's, not every impl of the
        // trait; closures (`impl Fn(..) -> T`) are classified by their output.
        let opaque = matches!(&sig.output, ReturnType::Type(_, ty) if matches!(**ty, Type::ImplTrait(_)))
            && matches!(returns, TyKind::Named(_));
        let loc = self.loc(sig.ident.span(), sig.ident.span());
        let cold = self.item_cold.clone();
        self.facts.functions.push(FnFacts {
            owner: owner.clone(),
            in_trait,
            trait_impl,
            name: sig.ident.to_string(),
            module: self.module.clone(),
            has_receiver: sig.receiver().is_some(),
            arity: sig.inputs.len() - usize::from(sig.receiver().is_some()),
            returns,
            body_return: None,
            return_place: Place::Device,
            update: false,
            forward: false,
            forward_named: false,
            update_named: false,
            hands_on: false,
            compiled_out: matches!(cold, Some(Cold::Feature(_))),
            frame: (self.frame_trait
                && sig.receiver().is_some()
                && matches!(sig.ident.to_string().as_str(), "update" | "draw"))
            .then_some(loc.line),
        });
        self.next_statement += 1;
        let BodyLocals {
            set_on_device,
            backpropagated,
        } = body_locals(block);
        self.fn_state = FnState {
            self_ty: owner,
            generics,
            context: Context {
                loop_id: None,
                periodic: None,
                function: Some(index),
                statement_line: loc.line,
                statement: self.next_statement,
                cold,
                flag: None,
            },
            set_on_device,
            backpropagated,
            ..FnState::default()
        };
        self.push_scope();
        for (position, input) in sig.inputs.iter().enumerate() {
            let place = Place::of(PlaceRef::Param(position));
            match input {
                FnArg::Receiver(_) => {
                    let value = match self.fn_state.self_ty.as_deref() {
                        Some("Tensor") => Val::tensor_at(place),
                        Some(ty) if !self.impl_args.is_empty() && !in_trait => Val::Deferred(
                            TypeRef::Instance {
                                name: ty.to_owned(),
                                args: self.impl_args.clone(),
                            },
                            place,
                        ),
                        Some(ty) => Val::Deferred(TypeRef::Named(ty.to_owned()), place),
                        None => Val::Unknown,
                    };
                    self.bind("self".into(), value);
                }
                FnArg::Typed(pt) => {
                    let value = kind_val(&self.classify(&pt.ty), place);
                    self.bind_pat(&pt.pat, value);
                    if let Pat::Ident(p) = &*pt.pat {
                        self.fn_state.inputs.push(p.ident.to_string());
                    }
                    if let (Pat::Ident(p), true) = (&*pt.pat, is_connection(&pt.ty)) {
                        self.fn_state.sockets.push(p.ident.to_string());
                    }
                    if let (Pat::Ident(p), true) = (&*pt.pat, is_bool(&pt.ty)) {
                        if p.mutability.is_none() && p.subpat.is_none() {
                            self.fn_state
                                .flag_params
                                .push((p.ident.to_string(), position));
                        }
                    }
                }
            }
        }
        let sites_before = self.facts.sites.len();
        let tail = self.block(block);
        // A function that writes bytes out, or is named for it
        // (`save_safetensors`, `write_checkpoint`), exports what it copies
        // whole: outside its own loops, or each whole item of a loop of its
        // own (every parameter of a checkpoint). A writer that copies row by
        // row still waits once per row where one copy would do.
        if self.fn_state.writes_out || syntax::is_writer(&sig.ident.to_string()) {
            let loops = &self.facts.loops;
            for site in &mut self.facts.sites[sites_before..] {
                let whole = match site.context.loop_id {
                    None => true,
                    Some(l) => site.item || loops[l].over_parameters,
                };
                let own = site.context.function == Some(index) && whole;
                if own && site.hit.fix == Fix::Bulk && site.context.cold.is_none() {
                    site.context.cold = Some(Cold::Export);
                }
            }
        }
        // `fn value(t: &Tensor) -> f32 { t.into() }`: the return type names
        // what the tail's bare conversion converts into.
        // So does the `Ok` or `Some` of a `Result` or an `Option` it
        // returns (`fn forward(..) -> Result<Vec<Vec<f32>>> { Ok(out.into()) }`).
        if let (ReturnType::Type(_, ty), Some(Stmt::Expr(expr, None))) =
            (&sig.output, block.stmts.last())
        {
            match syntax::wrapped_tail(ty, expr) {
                Some((inner_ty, inner)) => self.annotated_try_into(inner_ty, inner),
                None => self.annotated_try_into(ty, expr),
            }
        }
        // A body that ends by handing back an error (`Err(..)`, the whole
        // of a trait method a wrapper does not support) returns no tensor
        // there; one that returns nothing else returns no data at all.
        let error_tail = matches!(block.stmts.last(), Some(Stmt::Expr(expr, None)) if syntax::hands_back_an_error(expr));
        if !error_tail {
            self.note_return(&tail);
        }
        match self.fn_state.returns.take() {
            Some(place) => self.facts.functions[index].return_place = place,
            None if error_tail => self.facts.functions[index].return_place = Place::Cpu,
            None => {}
        }
        let returned = self.fn_state.returned_type.take();
        let moving = TypeRef::Written(TyKind::MovingModule);
        if opaque || returned.as_ref() == Some(&moving) {
            self.facts.functions[index].body_return = Some(returned.unwrap_or(TypeRef::Unknown));
        }
        self.pop_scope();
    }

    fn classify(&self, ty: &Type) -> TyKind {
        classify_in(
            ty,
            self.fn_state.self_ty.as_deref(),
            &self.fn_state.generics,
        )
    }

    /// Joins a returned value's place into the function's.
    fn note_return(&mut self, value: &Val) {
        if self.fn_state.closure_depth > 0 {
            return;
        }
        let ty = value.type_ref();
        self.fn_state.returned_type = Some(match self.fn_state.returned_type.take() {
            Some(before) if before != ty => TypeRef::Unknown,
            _ => ty,
        });
        let Some(place) = value.place() else {
            return;
        };
        self.fn_state.returns = Some(match self.fn_state.returns.take() {
            Some(before) => before.both(place),
            None => place,
        });
    }

    // ----- scopes ------------------------------------------------------

    fn push_scope(&mut self) {
        self.fn_state.scopes.push(self.fn_state.bindings.len());
    }

    fn pop_scope(&mut self) {
        if let Some(len) = self.fn_state.scopes.pop() {
            self.fn_state.bindings.truncate(len);
        }
    }

    fn bind(&mut self, name: String, value: Val) {
        self.fn_state.flag_params.retain(|(n, _)| *n != name);
        self.fn_state.bool_locals.retain(|(n, _)| *n != name);
        let depth = self.fn_state.scopes.len();
        let item = self.fn_state.binding_items;
        let part = self.fn_state.binding_parts;
        let next = self.fn_state.binding_next;
        let computed = self.fn_state.binding_computed;
        self.fn_state.bindings.push(Binding {
            name,
            value,
            depth,
            item,
            part,
            next,
            computed,
        });
    }

    fn lookup(&self, name: &str) -> Option<&Val> {
        self.fn_state
            .bindings
            .iter()
            .rev()
            .find(|b| b.name == name)
            .map(|b| &b.value)
    }

    /// `name.push(..)` of a value making `grown`: a collection that held
    /// nothing known (just built empty) now holds what was pushed, and one
    /// of the same shape holds both; anything else is rebound as usual.
    fn grow_collection(&mut self, name: &str, grown: Val) {
        let Some(slot) = self
            .fn_state
            .bindings
            .iter_mut()
            .rev()
            .find(|b| b.name == name)
        else {
            return;
        };
        let merged = match (&slot.value, &grown) {
            (before, _) if is_empty_collection(before) => Some(grown.clone()),
            (Val::Tensors { place, mask }, Val::Tensors { place: p, mask: m }) => {
                Some(Val::Tensors {
                    place: place.clone().both(p.clone()),
                    mask: *mask && *m,
                })
            }
            (Val::Iter(before), Val::Iter(pushed)) => Some(Val::Iter(Box::new(
                (**before).clone().join((**pushed).clone()),
            ))),
            _ => None,
        };
        match merged {
            Some(value) => slot.value = value,
            None => self.rebind(name, grown),
        }
    }

    /// `name = value`. In a block nested below the binding's (a branch, a
    /// loop body) the old value may survive, so the two are joined.
    fn rebind(&mut self, name: &str, value: Val) {
        let depth = self.fn_state.scopes.len();
        if let Some(slot) = self
            .fn_state
            .bindings
            .iter_mut()
            .rev()
            .find(|b| b.name == name)
        {
            slot.value = if depth > slot.depth + 1 {
                std::mem::replace(&mut slot.value, Val::Unknown).join(value)
            } else {
                value
            };
        }
    }

    /// A value of unknown origin bound to a name the loop around moves to
    /// a device (the name, or a field of it): the loop's own move says it
    /// was on the host, as a batch a loader built on the CPU is.
    pub(super) fn host_until_moved(&self, pat: &Pat, value: Val) -> Val {
        let Pat::Ident(p) = pat else {
            return value;
        };
        let name = p.ident.to_string();
        if !self
            .fn_state
            .moved_in_loops
            .iter()
            .flatten()
            .any(|n| *n == name)
        {
            return value;
        }
        match value {
            Val::Unknown => Val::Deferred(TypeRef::Unknown, Place::Cpu),
            Val::Deferred(ty, _) => Val::Deferred(ty, Place::Cpu),
            other => other,
        }
    }

    fn bind_pat(&mut self, pat: &Pat, value: Val) {
        match pat {
            Pat::Ident(p) => {
                if let Some((_, sub)) = &p.subpat {
                    self.bind_pat(sub, value.clone());
                }
                self.bind(p.ident.to_string(), value);
            }
            Pat::Tuple(t) => {
                let has_rest = t.elems.iter().any(|e| matches!(e, Pat::Rest(_)));
                for (i, elem) in t.elems.iter().enumerate() {
                    let part = match &value {
                        Val::Tuple(parts) if !has_rest => {
                            parts.get(i).cloned().unwrap_or(Val::Unknown)
                        }
                        Val::Deferred(ty, place) if !has_rest => Val::Deferred(
                            TypeRef::Part {
                                base: Box::new(ty.clone()),
                                index: Some(i),
                            },
                            place.clone(),
                        ),
                        // A crate model's `forward` destructured as a
                        // tuple: each part is what its signature says.
                        Val::Tensor(TensorFacts {
                            forward_of: Some(forward),
                            place,
                            ..
                        }) if !has_rest => Val::Deferred(
                            TypeRef::Part {
                                base: forward.clone(),
                                index: Some(i),
                            },
                            place.clone(),
                        ),
                        // A tensor method destructured as a tuple (`topk`,
                        // `sort`, `max_dim`) returns tensors.
                        Val::Tensor(facts) => Val::tensor_at(facts.place.clone()),
                        _ => Val::Unknown,
                    };
                    self.bind_pat(elem, part);
                }
            }
            Pat::TupleStruct(ts) => {
                let wrapper =
                    ts.path.segments.last().is_some_and(|s| {
                        matches!(s.ident.to_string().as_str(), "Some" | "Ok" | "Box")
                    });
                let variant = self.variant_name(&ts.path);
                let ivalue = ivalue_part(&ts.path, &value);
                for (i, elem) in ts.elems.iter().enumerate() {
                    let part = if wrapper && ts.elems.len() == 1 {
                        value.clone()
                    } else if let Some(part) = &ivalue {
                        part.clone()
                    } else if let Some(variant) = &variant {
                        Val::Deferred(
                            TypeRef::Field {
                                base: Box::new(TypeRef::Named(variant.clone())),
                                field: i.to_string(),
                            },
                            value.place().unwrap_or_default(),
                        )
                    } else {
                        Val::Unknown
                    };
                    self.bind_pat(elem, part);
                }
            }
            Pat::Reference(r) => self.bind_pat(&r.pat, value),
            Pat::Paren(p) => self.bind_pat(&p.pat, value),
            Pat::Type(pt) => {
                let declared = kind_val(&self.classify(&pt.ty), value.place().unwrap_or_default());
                let merged = match (&declared, &value) {
                    (Val::Tensor(_), Val::Tensor(_))
                    | (Val::Tensors { .. }, Val::Tensors { .. }) => value,
                    // A declared collection of other values
                    // (`let v: Vec<T> = t.to_vec1()?`) is not the tensor
                    // a method of unknown result is taken for.
                    (Val::Deferred(TypeRef::Written(TyKind::Collection(_)), _), Val::Tensor(_)) => {
                        declared
                    }
                    (Val::Deferred(..), Val::Tensor(_) | Val::Deferred(..)) => value,
                    _ => declared,
                };
                self.bind_pat(&pt.pat, merged);
            }
            Pat::Or(o) => {
                if let Some(first) = o.cases.first() {
                    self.bind_pat(first, value);
                }
            }
            Pat::Slice(s) => {
                let element = value.element().unwrap_or(Val::Unknown);
                for elem in &s.elems {
                    self.bind_pat(elem, element.clone());
                }
            }
            Pat::Struct(s) => {
                let owner = self
                    .variant_name(&s.path)
                    .or_else(|| s.path.segments.last().map(|s| s.ident.to_string()));
                // Each field lives where the value does.
                let place = value.place().unwrap_or_default();
                for field in &s.fields {
                    let part = match (&owner, &field.member) {
                        (Some(owner), Member::Named(name)) => Val::Deferred(
                            TypeRef::Field {
                                base: Box::new(TypeRef::Named(owner.clone())),
                                field: name.to_string(),
                            },
                            place.clone(),
                        ),
                        _ => Val::Unknown,
                    };
                    self.bind_pat(&field.pat, part);
                }
            }
            _ => {}
        }
    }

    /// Whether an expression is a whole value that changes with each
    /// iteration of the innermost loop (a loop item), rather than a part of
    /// a tensor or a value from outside the loop.
    fn is_item(&self, expr: &Expr) -> bool {
        let Some(&loop_scope) = self.fn_state.loop_scopes.last() else {
            return false;
        };
        // Bound in this iteration, to one of the loop's items or to a value
        // taken out of a collection; not to a tensor computed here.
        let bound_in_loop = |e: &Expr| {
            root_ident(e).is_some_and(|name| {
                self.fn_state
                    .bindings
                    .iter()
                    .rev()
                    .find(|b| b.name == name)
                    .is_some_and(|b| {
                        b.depth > loop_scope
                            && !b.part
                            && (b.item
                                || !(b.computed
                                    || matches!(b.value, Val::Tensor(_) | Val::Tensors { .. })))
                    })
            })
        };
        !is_part(expr)
            && (bound_in_loop(expr)
                || matches!(strip_references(expr), Expr::Index(i)
                    if bound_in_loop(&i.index) && !self.holds_parts(&i.expr)))
    }

    /// Whether an expression's value is bound anew each time round the
    /// innermost loop, whole: a loop item, or a value taken or computed in
    /// the iteration; not a part of one tensor, not a value from outside.
    fn varies(&self, expr: &Expr) -> bool {
        let Some(&loop_scope) = self.fn_state.loop_scopes.last() else {
            return false;
        };
        !is_part(expr)
            && root_ident(expr).is_some_and(|name| {
                self.fn_state
                    .bindings
                    .iter()
                    .rev()
                    .find(|b| b.name == name)
                    .is_some_and(|b| b.depth > loop_scope && !b.part)
            })
    }

    /// `Enum::Variant` or `Self::Variant` in a pattern: the variant's
    /// struct name (see `Item::Enum`).
    fn variant_name(&self, path: &syn::Path) -> Option<String> {
        let n = path.segments.len();
        if n < 2 {
            return None;
        }
        let owner = path.segments[n - 2].ident.to_string();
        let owner = if owner == "Self" {
            self.fn_state.self_ty.clone()?
        } else if owner.starts_with(|c: char| c.is_ascii_uppercase()) {
            owner
        } else {
            return None;
        };
        Some(format!("{owner}::{}", path.segments[n - 1].ident))
    }

    // ----- statements --------------------------------------------------

    fn block(&mut self, block: &Block) -> Val {
        self.push_scope();
        let saved = (
            self.fn_state.context.statement_line,
            self.fn_state.context.statement,
            self.fn_state.context.cold.clone(),
        );
        let saved_periodic = self.fn_state.context.periodic.clone();
        let mut value = Val::Other;
        let mut timers: Vec<String> = Vec::new();
        for (i, stmt) in block.stmts.iter().enumerate() {
            // What follows a `break`, `continue` or `return` never runs.
            if i > 0 && leaves_block(&block.stmts[i - 1]) {
                break;
            }
            let first_loop = self.facts.loops.len();
            value = self.stmt(stmt);
            // `let start = Instant::now(); for _ in 0..n { .. } start.elapsed()`:
            // a count of repetitions, outside any other loop, timed whole.
            let repetitions = matches!(stmt, Stmt::Expr(Expr::ForLoop(f), _)
                if matches!(&*f.pat, Pat::Wild(_))
                    || matches!(&*f.pat, Pat::Ident(i) if i.ident.to_string().starts_with('_')));
            if repetitions
                && first_loop < self.facts.loops.len()
                && self.facts.loops[first_loop].repeats
                && self.facts.loops[first_loop].parent.is_none()
                && !self.facts.loops[first_loop].carries
                && timers
                    .iter()
                    .any(|timer| reads_elapsed(&block.stmts[i + 1..], timer))
            {
                self.facts.loops[first_loop].timed = true;
            }
            if let Some(timer) = starts_a_timer(stmt) {
                timers.push(timer);
            }
            self.fn_state.context.cold = saved.2.clone();
            // `if sample.is_some() { return sample; }` with `sample` the next
            // item of a loader: what follows runs only once the data ran out.
            if let Stmt::Expr(Expr::If(i), _) = stmt {
                if i.else_branch.is_none() && diverges(&i.then_branch) {
                    if let Some(guard) = self.data_present(&i.cond) {
                        self.fn_state.context.periodic.get_or_insert(guard);
                    }
                }
            }
        }
        self.fn_state.context.periodic = saved_periodic;
        self.fn_state.context.statement_line = saved.0;
        self.fn_state.context.statement = saved.1;
        self.pop_scope();
        value
    }

    /// The guard under which code runs when a condition that says a loader's
    /// next item is there (`batch.is_some()`, `let Some(b) = it.next()`)
    /// does not hold: the data ran out.
    fn data_present(&self, cond: &Expr) -> Option<String> {
        let item = match cond {
            Expr::MethodCall(m) if m.method == "is_some" || m.method == "is_ok" => &*m.receiver,
            Expr::Let(l) if is_some_pattern(&l.pat) => &*l.expr,
            Expr::Paren(p) => return self.data_present(&p.expr),
            _ => return None,
        };
        self.takes_next_item(item)
            .then(|| format!("{} is None", self.source_of(item)))
    }

    /// Starts a new statement at `line`, with the coldness of its attributes.
    fn begin_statement(&mut self, line: usize, attrs: &[Attribute]) {
        self.next_statement += 1;
        self.fn_state.context.statement = self.next_statement;
        self.fn_state.context.statement_line = line;
        if self.fn_state.context.cold.is_none() {
            self.fn_state.context.cold = attrs_cold(attrs, self.features);
        }
    }

    fn stmt(&mut self, stmt: &Stmt) -> Val {
        match stmt {
            Stmt::Local(local) => {
                self.begin_statement(local.let_token.span.start().line, &local.attrs);
                self.local(local);
                Val::Other
            }
            Stmt::Item(item) => {
                self.nested_item(item);
                Val::Other
            }
            Stmt::Expr(expr, semi) => {
                self.begin_statement(first_span(expr).start().line, expr_attrs(expr));
                let value = self.expr(expr);
                if semi.is_some() {
                    Val::Other
                } else {
                    value
                }
            }
            Stmt::Macro(m) => {
                self.begin_statement(m.mac.path.span().start().line, &m.attrs);
                self.mac(&m.mac);
                Val::Other
            }
        }
    }

    fn local(&mut self, local: &Local) {
        let Some(init) = &local.init else {
            self.bind_pat(&local.pat, Val::Unknown);
            return;
        };
        if let (Pat::Ident(p), Expr::Closure(c)) = (&local.pat, &*init.expr) {
            if self.fn_state.context.loop_id.is_none() {
                let id = self.fn_state.closures.len();
                self.fn_state.closures.push(Vec::new());
                self.fn_state.closure_calls.push(Vec::new());
                self.fn_state.open_closures.push(id);
                let value = self.closure(c);
                self.fn_state.closure_values.push(value);
                self.fn_state.open_closures.pop();
                self.bind(p.ident.to_string(), Val::Closure(id));
                return;
            }
        }
        if let (Pat::Ident(p), true) = (&local.pat, self.wraps_a_socket(&init.expr)) {
            self.fn_state.sockets.push(p.ident.to_string());
        }
        if let (Pat::Ident(p), true) = (&local.pat, takes_a_lock(&init.expr)) {
            self.fn_state.locked.push(p.ident.to_string());
        }
        if let (Pat::Ident(p), Some(list)) = (&local.pat, listed(&init.expr)) {
            self.fn_state.lists.push((p.ident.to_string(), list));
        }
        self.last_try_into = None;
        let (sites_before, calls_before) = (self.facts.sites.len(), self.facts.calls.len());
        let value = self.expr(&init.expr);
        self.note_copied(&local.pat, sites_before, calls_before);
        if let Some((_, diverge)) = &init.diverge {
            // `let Some(batch) = loader.next() else { .. }`: the data ran out.
            let guard = self
                .takes_next_item(&init.expr)
                .then(|| format!("{} is None", self.source_of(&*init.expr)));
            self.guarded(guard, |w| {
                w.expr(diverge);
            });
        }
        if let Pat::Type(pt) = &local.pat {
            self.annotated_try_into(&pt.ty, &init.expr);
        }
        self.fn_state.binding_parts = self.holds_parts(&init.expr);
        self.fn_state.binding_next = takes_next(&init.expr);
        self.fn_state.binding_computed = computes(&init.expr);
        // `let batch = batch?;`: the same item, renamed.
        let value = if rebinds_a_name(&init.expr) {
            self.host_until_moved(&local.pat, value)
        } else {
            value
        };
        // `let mut vs = VarStore::new(Device::Cpu); ..; vs.set_device(d)`.
        let value = match (&local.pat, value) {
            (Pat::Ident(p), Val::Deferred(ty, Place::Cpu))
                if self.fn_state.set_on_device.contains(&p.ident.to_string()) =>
            {
                Val::Deferred(ty, Place::Device)
            }
            (_, value) => value,
        };
        self.bind_pat(&local.pat, value);
        if let Pat::Ident(p) = &local.pat {
            if let Some(known) = self
                .literal_bool(&init.expr)
                .filter(|_| p.mutability.is_none())
            {
                self.fn_state.bool_locals.push((p.ident.to_string(), known));
            }
        }
        self.fn_state.binding_parts = false;
        self.fn_state.binding_next = false;
        self.fn_state.binding_computed = false;
    }

    /// Notes the names a `let` binds to what its value copied: the
    /// whole-tensor copies and crate calls made since `sites_before` and
    /// `calls_before`, for a writer that takes one of the names.
    fn note_copied(&mut self, pat: &Pat, sites_before: usize, calls_before: usize) {
        let sites = self.copies_since(sites_before);
        let calls: Vec<usize> = (calls_before..self.facts.calls.len()).collect();
        if sites.is_empty() && calls.is_empty() {
            return;
        }
        for name in syntax::pattern_names(pat) {
            self.fn_state
                .copied
                .push((name, sites.clone(), calls.clone()));
        }
    }

    /// The whole-tensor copies of this function made since `sites_before`.
    fn copies_since(&self, sites_before: usize) -> Vec<usize> {
        let function = self.fn_state.context.function;
        (sites_before..self.facts.sites.len())
            .filter(|&i| {
                let site = &self.facts.sites[i];
                site.hit.fix == Fix::Bulk && site.context.function == function
            })
            .collect()
    }

    /// Whether the function backpropagates from this local.
    pub(super) fn backpropagated(&self, name: &str) -> bool {
        self.fn_state.backpropagated.iter().any(|b| b == name)
    }

    /// A writer (`write_features(..)`, `fs::write(..)`, `img.save(..)`)
    /// taking a local bound to a copy: that copy is what it writes out.
    pub(super) fn written_out<'e>(&mut self, name: &str, args: impl IntoIterator<Item = &'e Expr>) {
        if !syntax::is_writer(name) || self.fn_state.copied.is_empty() {
            return;
        }
        for arg in args {
            let Some(root) = syntax::root_ident(arg) else {
                continue;
            };
            let Some((_, sites, calls)) = self
                .fn_state
                .copied
                .iter()
                .rev()
                .find(|(bound, ..)| *bound == root)
                .cloned()
            else {
                continue;
            };
            self.mark_written(name, sites, calls);
        }
    }

    /// A writer whose receiver or arguments copy the tensor themselves
    /// (`t.to_device(Device::Cpu).write_npy(path)`, `save_frame(&t.to(Device::Cpu),
    /// i)`): the whole-tensor copies made since `sites_before`, while they
    /// were walked, are what it writes out. Not the crate calls among them:
    /// what a helper returns there may be a scalar that is only logged
    /// (`writer.write_scalar("scale", step, scaler.current_scale())`).
    pub(super) fn written_directly(&mut self, name: &str, sites_before: usize) {
        if syntax::is_writer(name) {
            let sites = self.copies_since(sites_before);
            self.mark_written(name, sites, Vec::new());
        }
    }

    fn mark_written(&mut self, name: &str, sites: Vec<usize>, calls: Vec<usize>) {
        for i in sites {
            let context = &mut self.facts.sites[i].context;
            if context.cold.is_none() {
                context.cold = Some(Cold::Written {
                    writer: name.to_owned(),
                });
            }
        }
        for i in calls {
            self.facts.calls[i]
                .written_by
                .get_or_insert_with(|| name.to_owned());
        }
    }

    /// Whether an expression is the next item of an iterator or loader,
    /// taken here or bound from one (`batch` in `let batch = it.next()`).
    fn takes_next_item(&self, expr: &Expr) -> bool {
        takes_next(expr)
            || matches!(expr, Expr::Path(p) if p.path.get_ident().is_some_and(|name| {
                self.fn_state
                    .bindings
                    .iter()
                    .rev()
                    .find(|b| *name == b.name)
                    .is_some_and(|b| b.next)
            }))
    }

    /// Walks `walk` behind a guard that holds on few iterations (a
    /// periodic one, the last batch, the data running out), if any.
    pub(crate) fn guarded<T>(
        &mut self,
        guard: Option<String>,
        walk: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let saved = self.fn_state.context.periodic.clone();
        if guard.is_some() {
            self.fn_state.context.periodic = guard;
        }
        let value = walk(self);
        self.fn_state.context.periodic = saved;
        value
    }

    /// Whether an expression is a part of one tensor, or parts of one:
    /// `t.get(i)`, `t.unbind(0)`, or a value derived from a binding that
    /// is one (`rows.iter()` with `rows = t.unbind(0)`, `row.to_kind(..)`).
    fn holds_parts(&self, expr: &Expr) -> bool {
        is_part(expr)
            || splits_a_tensor(expr)
            || root_ident(expr).is_some_and(|name| {
                self.fn_state
                    .bindings
                    .iter()
                    .rev()
                    .find(|b| b.name == name)
                    .is_some_and(|b| b.part)
            })
    }

    /// `let x: f64 = t.try_into()?;` or `let x: f32 = t.into();`: the
    /// annotation says a scalar (or a `Vec`, or an ndarray) is the target.
    fn annotated_try_into(&mut self, ty: &Type, init: &Expr) {
        let Some(target) = annotation_target(ty) else {
            return;
        };
        let mut expr = init;
        loop {
            match expr {
                Expr::Try(t) => expr = &t.expr,
                Expr::MethodCall(m)
                    if matches!(m.method.to_string().as_str(), "unwrap" | "expect") =>
                {
                    expr = &m.receiver
                }
                _ => break,
            }
        }
        // `.try_into()`, or the infallible `.into()` of tch's older
        // `From<Tensor>` impls; on anything but a tensor `.into()` is some
        // other conversion, so only a tensor's counts.
        let conversion = match expr {
            Expr::MethodCall(m) if m.args.is_empty() && m.method == "try_into" => Some(true),
            Expr::MethodCall(m) if m.args.is_empty() && m.method == "into" => Some(false),
            _ => None,
        };
        if let (Some(fallible), Some((receiver, loc, by_ref, whole))) =
            (conversion, self.last_try_into.take())
        {
            let method = if fallible { "try_into" } else { "into" };
            let op = format!("{method}::<{}>", compact(ty));
            let conversion = Conversion {
                op: &op,
                target,
                by_ref: by_ref && fallible,
                fallible,
            };
            if let Some(hit) = rules::first_hit(|rule| rule.conversion(&conversion)) {
                // The annotation names what the bare `try_into()` left open.
                self.facts
                    .sites
                    .retain(|s| !(s.loc == loc && s.hit.op == "try_into"));
                self.report_with(hit, &receiver, loc, None, whole);
            }
        }
    }

    // ----- recording ---------------------------------------------------

    /// Records a rule's hit if its subject passes the rule's bar.
    pub(crate) fn report(&mut self, hit: Hit, subject: &Val, loc: Loc) {
        self.report_with(hit, subject, loc, None, Whole::default());
    }

    /// Records a hit whose subject is the expression `subject_expr`.
    fn report_on(&mut self, hit: Hit, subject: &Val, loc: Loc, subject_expr: Option<&Expr>) {
        let whole = subject_expr.map(|e| self.whole(e)).unwrap_or_default();
        self.report_with(hit, subject, loc, None, whole);
    }

    /// What an expression is as a loop's subject: a whole item of it, and
    /// whether it is bound anew each time round.
    fn whole(&self, expr: &Expr) -> Whole {
        Whole {
            item: self.is_item(expr),
            varies: self.varies(expr),
        }
    }

    fn report_with(
        &mut self,
        hit: Hit,
        subject: &Val,
        loc: Loc,
        method: Option<&str>,
        whole: Whole,
    ) {
        self.report_site(hit, subject, loc, method, whole);
    }

    /// Records a hit like [`Self::report_with`]; the site's index, if one
    /// was recorded.
    fn report_site(
        &mut self,
        hit: Hit,
        subject: &Val,
        loc: Loc,
        method: Option<&str>,
        whole: Whole,
    ) -> Option<usize> {
        let Gate::Report(requirement) = gate(subject, hit.need, self.mentions_tch, method) else {
            return None;
        };
        // `t.iter::<T>()` is a loop of its own: one read per item.
        let element_iter = hit.own_loop == Some(OwnLoop::Elements);
        let saved = element_iter.then(|| {
            let saved = self.enter_loop(false, loc.line);
            self.mark_loop(|l| l.element_iter = true);
            saved
        });
        let index = self.facts.sites.len();
        self.push_site(Site {
            hit,
            loc,
            context: self.fn_state.context.clone(),
            requirement,
            place: subject.place().unwrap_or_default(),
            via: Vec::new(),
            item: whole.item,
            varies: whole.varies,
            alias: None,
        });
        if let Some(saved) = saved {
            self.exit_loop(saved);
        }
        Some(index)
    }

    fn push_site(&mut self, site: Site) {
        let index = self.facts.sites.len();
        self.facts.sites.push(site);
        for &closure in &self.fn_state.open_closures {
            self.fn_state.closures[closure].push(index);
        }
    }

    /// Asks the rules about a callee by name; what they report is recorded
    /// whatever it is called on.
    pub(crate) fn callee(&mut self, name: CalleeName<'_>, loc: Loc) {
        let callee = NamedCall {
            name,
            patterns: self.patterns,
        };
        if let Some(hit) = rules::first_hit(|rule| rule.callee(&callee)) {
            self.push_site(Site {
                hit,
                loc,
                context: self.fn_state.context.clone(),
                requirement: None,
                place: Place::Device,
                via: Vec::new(),
                item: false,
                varies: false,
                alias: None,
            });
        }
    }

    /// Records a call for the crate pass; `literals` as in
    /// [`CallSite::literals`].
    pub(super) fn record_call(
        &mut self,
        callee: Callee,
        loc: Loc,
        args: Vec<Option<Place>>,
        literals: Vec<Option<bool>>,
        item: bool,
    ) {
        let index = self.facts.calls.len();
        self.facts.calls.push(CallSite {
            callee,
            loc,
            context: self.fn_state.context.clone(),
            args,
            item,
            literals,
            written_by: None,
        });
        for &closure in &self.fn_state.open_closures {
            self.fn_state.closure_calls[closure].push(index);
        }
    }

    /// A local closure handed by name to an iterator adapter
    /// (`(0..n).map(search_one)`): its body runs once per element, as
    /// an adapter's closure written in place would. Its reads and calls
    /// made outside loops of its own are recorded again inside a loop at
    /// the adapter, where they sit.
    pub(super) fn closure_handed_to_adapter(&mut self, id: usize, line: usize, statement: bool) {
        let saved = self.enter_loop(statement, line);
        let sites: Vec<Site> = self.fn_state.closures[id]
            .iter()
            .map(|&i| &self.facts.sites[i])
            .filter(|s| s.context.loop_id.is_none())
            .cloned()
            .collect();
        let calls: Vec<CallSite> = self.fn_state.closure_calls[id]
            .iter()
            .map(|&i| &self.facts.calls[i])
            .filter(|c| c.context.loop_id.is_none())
            .cloned()
            .collect();
        for mut site in sites {
            site.context = self.replayed_context(site.context);
            self.push_site(site);
        }
        for mut call in calls {
            call.context = self.replayed_context(call.context);
            self.facts.calls.push(call);
        }
        self.exit_loop(saved);
    }

    /// The context of something recorded in a closure's body, replayed
    /// where the walk is now: its own statement, guard and coldness, and
    /// the walk's loop, function and the guard or coldness it adds.
    fn replayed_context(&self, body: Context) -> Context {
        let here = &self.fn_state.context;
        Context {
            periodic: body.periodic.or_else(|| here.periodic.clone()),
            cold: body.cold.or_else(|| here.cold.clone()),
            flag: body.flag.or_else(|| here.flag.clone()),
            statement_line: body.statement_line,
            statement: body.statement,
            ..here.clone()
        }
    }

    /// A local closure whose body syncs, called: reported at the call, as
    /// a call of a helper that reads is. At function level it counts where
    /// the function runs per step, beside the body's own sites.
    fn closure_call(&mut self, id: usize, name: &str, loc: Loc) {
        let first = self.fn_state.closures[id]
            .iter()
            .map(|&i| &self.facts.sites[i])
            .find(|s| s.context.loop_id.is_none())
            .cloned();
        if let Some(mut site) = first {
            site.via.insert(0, format!("closure `{name}`"));
            site.loc = loc;
            let periodic = self
                .fn_state
                .context
                .periodic
                .clone()
                .or(site.context.periodic.take());
            let cold = self
                .fn_state
                .context
                .cold
                .clone()
                .or(site.context.cold.take());
            let flag = site
                .context
                .flag
                .take()
                .or_else(|| self.fn_state.context.flag.clone());
            site.context = Context {
                periodic,
                cold,
                flag,
                ..self.fn_state.context.clone()
            };
            self.push_site(site);
        }
    }

    // ----- spans -------------------------------------------------------

    pub(crate) fn loc(&self, start: Span, end: Span) -> Loc {
        let s = start.start();
        let e = end.end();
        Loc {
            line: s.line,
            column: s.column + 1,
            end_line: e.line,
            end_column: e.column + 1,
        }
    }

    /// The source text of a node, whitespace collapsed, for notes.
    fn source_of(&self, node: &impl Spanned) -> String {
        let range = node.span().byte_range();
        self.source.get(range).map_or_else(String::new, |s| {
            s.split_whitespace().collect::<Vec<_>>().join(" ")
        })
    }

    pub(crate) fn lookup_name(&self, name: &str) -> Val {
        self.lookup(name).cloned().unwrap_or(Val::Unknown)
    }

    /// A `bool` known where it is written: a literal, a local bound to one
    /// and not rebound since, or a constant of the file (`false`,
    /// `show_debug` after `let show_debug = false;`, `!VERBOSE`).
    pub(crate) fn literal_bool(&self, expr: &Expr) -> Option<bool> {
        match expr {
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Bool(b),
                ..
            }) => Some(b.value),
            Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                let local = self
                    .fn_state
                    .bool_locals
                    .iter()
                    .rev()
                    .find(|(n, _)| *n == name);
                match local {
                    Some(&(_, known)) => Some(known),
                    None if self.lookup(&name).is_some() => None,
                    None => self.flags.get(&name).copied(),
                }
            }
            Expr::Paren(p) => self.literal_bool(&p.expr),
            Expr::Group(g) => self.literal_bool(&g.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => {
                self.literal_bool(&u.expr).map(|b| !b)
            }
            _ => None,
        }
    }

    /// The `bool` parameter a condition tests, and the value that makes it
    /// hold (`debug` holds when `debug` is true, `!quiet` when `quiet` is
    /// false).
    pub(crate) fn flag_test(&self, cond: &Expr) -> Option<FlagGuard> {
        match cond {
            Expr::Path(p) => {
                let name = p.path.get_ident()?.to_string();
                let &(_, param) = self.fn_state.flag_params.iter().find(|(n, _)| *n == name)?;
                Some(FlagGuard {
                    param,
                    name,
                    on: true,
                })
            }
            Expr::Paren(p) => self.flag_test(&p.expr),
            Expr::Group(g) => self.flag_test(&g.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => self
                .flag_test(&u.expr)
                .map(|g| FlagGuard { on: !g.on, ..g }),
            _ => None,
        }
    }

    /// Whether an expression is a connection a name of [`FnState::sockets`]
    /// holds, or a reader or clone of one (`BufReader::new(stream)`,
    /// `stream.try_clone()?`).
    pub(crate) fn wraps_a_socket(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Call(c) => {
                matches!(&*c.func, Expr::Path(p) if p.path.segments.last()
                    .is_some_and(|s| s.ident == "new"))
                    && c.args.first().is_some_and(|a| self.wraps_a_socket(a))
            }
            Expr::MethodCall(m) => {
                matches!(
                    m.method.to_string().as_str(),
                    "try_clone" | "clone" | "by_ref"
                ) && self.wraps_a_socket(&m.receiver)
            }
            Expr::Try(t) => self.wraps_a_socket(&t.expr),
            Expr::Paren(p) => self.wraps_a_socket(&p.expr),
            Expr::Reference(r) => self.wraps_a_socket(&r.expr),
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| self.fn_state.sockets.iter().any(|s| i == s)),
            _ => false,
        }
    }

    /// Whether a loop's iterable or condition reads the lines a client
    /// sends over a connection (`reader.lines()`, `reader.read_line(&mut
    /// line)?`): each line is a request.
    pub(crate) fn reads_a_client(&self, expr: &Expr) -> bool {
        match expr {
            Expr::MethodCall(m) => {
                (matches!(
                    m.method.to_string().as_str(),
                    "lines" | "read_line" | "split"
                ) && self.wraps_a_socket(&m.receiver))
                    || self.reads_a_client(&m.receiver)
            }
            Expr::Try(t) => self.reads_a_client(&t.expr),
            Expr::Paren(p) => self.reads_a_client(&p.expr),
            Expr::Let(l) => self.reads_a_client(&l.expr),
            Expr::Binary(b) => self.reads_a_client(&b.left),
            _ => false,
        }
    }

    /// The value a condition has whatever runs, where the file's boolean
    /// constants decide it (`DEBUG`, `!SAVE`, `DEBUG && verbose`), or the
    /// source writes it (`if false`).
    pub(crate) fn constant_truth(&self, cond: &Expr) -> Option<bool> {
        match cond {
            Expr::Path(p) if p.qself.is_none() => {
                let last = p.path.segments.last()?;
                self.flags.get(&last.ident.to_string()).copied()
            }
            // `if false { .. }`: switched off in the source itself.
            Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Bool(b),
                ..
            }) => Some(b.value),
            Expr::Paren(p) => self.constant_truth(&p.expr),
            Expr::Group(g) => self.constant_truth(&g.expr),
            Expr::Unary(u) if matches!(u.op, UnOp::Not(_)) => {
                self.constant_truth(&u.expr).map(|b| !b)
            }
            Expr::Binary(b) => {
                let (left, right) = (self.constant_truth(&b.left), self.constant_truth(&b.right));
                match b.op {
                    BinOp::And(_) if left == Some(false) || right == Some(false) => Some(false),
                    BinOp::And(_) => left.zip(right).map(|(l, r)| l && r),
                    BinOp::Or(_) if left == Some(true) || right == Some(true) => Some(true),
                    BinOp::Or(_) => left.zip(right).map(|(l, r)| l || r),
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// Walks `walk` as code outside the release hot path, for `reason`.
    pub(crate) fn cold<T>(&mut self, reason: Cold, walk: impl FnOnce(&mut Self) -> T) -> T {
        let saved = self.fn_state.context.cold.clone();
        if saved.is_none() {
            self.fn_state.context.cold = Some(reason);
        }
        let value = walk(self);
        self.fn_state.context.cold = saved;
        value
    }
}

/// Whether a parameter's type is `bool`.
fn is_bool(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("bool"))
}

/// Whether an initialiser is what a free function computes
/// (`create_mask(&ids[i], len)`, behind `?`, `unwrap` or `expect`), rather
/// than a value taken out of a collection or a constructor's (`Some(..)`,
/// `Batch(..)`).
fn computes(init: &Expr) -> bool {
    match init {
        Expr::Try(t) => computes(&t.expr),
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
            computes(&m.receiver)
        }
        Expr::Call(c) => matches!(&*c.func, Expr::Path(p)
        if p.path.segments.last().is_some_and(|s| {
            s.ident.to_string().starts_with(|c: char| c.is_ascii_lowercase())
        })),
        // `if let Some(w) = &weights { Some(w[i].slice(..)) } else { None }`.
        Expr::If(_) | Expr::Match(_) => true,
        _ => false,
    }
}

/// The renames of a file's imports (`use log::debug as log_debug;`), in
/// inline modules too: the name each is called by, to the imported one.
fn collect_renames(items: &[Item], out: &mut HashMap<String, String>) {
    fn tree(t: &syn::UseTree, out: &mut HashMap<String, String>) {
        match t {
            syn::UseTree::Path(p) => tree(&p.tree, out),
            syn::UseTree::Rename(r) if r.rename != "_" => {
                out.insert(r.rename.to_string(), r.ident.to_string());
            }
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| tree(t, out)),
            _ => {}
        }
    }
    for item in items {
        match item {
            Item::Use(u) => tree(&u.tree, out),
            Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    collect_renames(items, out);
                }
            }
            _ => {}
        }
    }
}

/// Whether a struct derives setters named after its fields
/// (`#[derive(Setters)]` of derive-setters, `#[derive(Builder)]` of
/// derive_builder, `#[derive(TypedBuilder)]`).
fn derives_setters(attrs: &[Attribute]) -> bool {
    attrs
        .iter()
        .filter(|a| a.path().is_ident("derive"))
        .any(|a| {
            let mut found = false;
            let _ = a.parse_nested_meta(|meta| {
                if meta.path.segments.last().is_some_and(|s| {
                    matches!(
                        s.ident.to_string().as_str(),
                        "Setters" | "Builder" | "TypedBuilder"
                    )
                }) {
                    found = true;
                }
                Ok(())
            });
            found
        })
}

/// A collection just built, holding nothing known: `Vec::new()`,
/// `Vec::with_capacity(n)`, `vec![]`.
fn is_empty_collection(value: &Val) -> bool {
    match value {
        Val::Unknown => true,
        Val::Deferred(
            TypeRef::Return {
                owner: Some(owner),
                name,
            },
            _,
        ) => {
            matches!(&**owner, TypeRef::Named(t) if matches!(t.as_str(), "Vec" | "VecDeque"))
                && matches!(name.as_str(), "new" | "with_capacity")
        }
        _ => false,
    }
}

fn result_name(result: &TypeRef) -> String {
    match result {
        TypeRef::Return { name, .. } => name.clone(),
        _ => String::new(),
    }
}

/// The value of a classified type whose data lives at `place`.
fn kind_val(kind: &TyKind, place: Place) -> Val {
    match kind {
        TyKind::Tensor => Val::tensor_at(place),
        TyKind::Tensors => Val::Tensors { place, mask: false },
        TyKind::Named(name) => Val::Deferred(TypeRef::Named(name.clone()), place),
        TyKind::Tuple(parts) => {
            Val::Tuple(parts.iter().map(|p| kind_val(p, place.clone())).collect())
        }
        TyKind::Collection(_) | TyKind::Map(_) => {
            Val::Deferred(TypeRef::Written(kind.clone()), place)
        }
        TyKind::Device => Val::Device(place),
        TyKind::Callable(_) | TyKind::MovingModule => {
            Val::Deferred(TypeRef::Written(kind.clone()), place)
        }
        TyKind::Number | TyKind::Other => Val::Other,
    }
}

fn cpu_options() -> Val {
    Val::Tuple(vec![Val::Other, Val::Device(Place::Cpu)])
}

/// An array or `vec!` of these values: a collection of tensors, or of
/// tuples (`Vec<(Tensor, i64)>`), which is iterated like an iterator of
/// them; its tensors live where all of them do.
pub(crate) fn collection_of(values: Vec<Val>) -> Val {
    if matches!(values.first(), Some(Val::Tuple(_))) {
        let element = values.into_iter().reduce(Val::join).unwrap_or(Val::Unknown);
        return match element {
            Val::Tuple(_) => Val::Iter(Box::new(element)),
            _ => Val::Unknown,
        };
    }
    let tensors: Vec<&TensorFacts> = values
        .iter()
        .filter_map(|v| match v {
            Val::Tensor(facts) => Some(facts),
            _ => None,
        })
        .collect();
    if tensors.is_empty() {
        return Val::Unknown;
    }
    let place = tensors
        .iter()
        .map(|t| t.place.clone())
        .reduce(Place::both)
        .unwrap_or_default();
    Val::Tensors {
        place,
        mask: tensors.iter().any(|t| t.mask),
    }
}

fn with_placement(value: Val, place: Place) -> Val {
    match value {
        Val::Tensor(facts) => Val::Tensor(TensorFacts { place, ..facts }),
        Val::Tuple(parts) => Val::Tuple(
            parts
                .into_iter()
                .map(|p| with_placement(p, place.clone()))
                .collect(),
        ),
        other => other,
    }
}

/// Where an object built from these arguments computes: on the CPU if it is
/// built from a CPU object (an `nn::Path` of a CPU `VarStore`) or CPU data.
fn built_from(args: &[Val]) -> Place {
    args.iter()
        .map(|a| match a {
            Val::Deferred(_, place) => place.clone(),
            Val::Tensor(_) | Val::Tensors { .. } => a.imposed_place(),
            _ => Place::Device,
        })
        .fold(Place::Device, Place::either)
}

/// tch's readers of tensor files (`Tensor::load`, `read_npy`, `read_npz`,
/// `load_multi`, `read_safetensors`, ...), in their fallible `f_` forms
/// too: what they read is host data until it is moved, unless a
/// `_with_device` form names a device.
fn is_tensor_reader(name: &str) -> bool {
    let name = crate::rules::infallible_name(name);
    name.starts_with("load") || name.starts_with("read_")
}

/// The readers among them that return named tensors, `Vec<(String, Tensor)>`.
fn reads_named_tensors(name: &str) -> bool {
    let name = crate::rules::infallible_name(name);
    name.contains("multi") || matches!(name, "read_npz" | "read_safetensors")
}

/// tch's dataset and image loaders (`vision::mnist::load_dir`,
/// `vision::image::load`, `imagenet::load_image_and_resize224`): what they
/// load is host data until it is moved.
fn is_dataset_loader(module: &str, name: &str) -> bool {
    matches!(module, "mnist" | "cifar" | "imagenet" | "image") && name.starts_with("load")
}

/// A list of named tensors (`Vec<(String, Tensor)>`) whose tensors live at `place`.
fn named_tensors(place: Place) -> Val {
    let pair = TyKind::Tuple(vec![TyKind::Other, TyKind::Tensor]);
    Val::Deferred(TypeRef::Written(TyKind::Collection(Box::new(pair))), place)
}

/// `Tensor::name(args)`: a tensor, on the CPU when built from host data,
/// with CPU options, or from CPU tensors.
fn tensor_constructor(name: &str, args: &[Val], first: Option<&Expr>) -> Val {
    let host_data = matches!(
        name,
        "from_slice"
            | "of_slice"
            | "from_slice2"
            | "from"
            | "f_from_slice"
            | "try_from"
            | "of_data"
            | "from_data_size"
            | "f_of_slice"
            | "f_from_slice2"
            | "scalar_tensor"
    ) || (is_tensor_reader(name) && !name.ends_with("_with_device"));
    let empty_shape = matches!(
        first,
        Some(Expr::Array(a)) if a.elems.is_empty()
    ) || matches!(first, Some(Expr::Reference(r)) if matches!(&*r.expr, Expr::Array(a) if a.elems.is_empty()));
    let scalar = (name == "from" && matches!(args.first(), Some(Val::Other)))
        || name == "scalar_tensor"
        || (matches!(name, "zeros" | "ones" | "full" | "empty" | "rand" | "randn") && empty_shape);
    // A reader's device is its last argument (`load_multi_from_stream_with_device(
    // stream, Device::Cpu)`): the stream before it places nothing.
    let device_arg = if is_tensor_reader(name) && name.ends_with("_with_device") {
        args.last().and_then(Val::placement)
    } else {
        None
    };
    let place = if host_data {
        Place::Cpu
    } else if let Some(place) = device_arg {
        place
    } else if let Some(place) = args.iter().find_map(Val::placement) {
        place
    } else {
        let tensors: Vec<&Val> = args
            .iter()
            .filter(|a| matches!(a, Val::Tensor(_) | Val::Tensors { .. } | Val::Deferred(..)))
            .collect();
        if !tensors.is_empty() && tensors.iter().all(|a| a.is_cpu_tensor()) {
            Place::Cpu
        } else {
            tensors
                .iter()
                .map(|a| a.imposed_place())
                .fold(Place::Device, Place::either)
        }
    };
    if is_tensor_reader(name) && reads_named_tensors(name) {
        return named_tensors(place);
    }
    // `Tensor::from(self.gamma)`: 0-dim if the field is a number, which
    // only the crate pass can tell.
    let zero_dim_if = match args.first() {
        Some(Val::Deferred(ty, _)) if name == "from" => Some(ty.clone()),
        _ => None,
    };
    Val::Tensor(TensorFacts {
        place,
        scalar,
        mask: false,
        zero_dim_if,
        forward_of: None,
    })
}

/// A field's name: its identifier, or its position in a tuple struct.
fn field_name(position: usize, field: &syn::Field) -> String {
    field
        .ident
        .as_ref()
        .map_or_else(|| position.to_string(), ToString::to_string)
}

/// A struct's (or variant's) fields by name, their types classified.
fn classify_fields(
    fields: &syn::Fields,
    owner: &str,
    generics: &[(String, TyKind)],
) -> Vec<(String, TyKind)> {
    fields
        .iter()
        .enumerate()
        .map(|(i, f)| (field_name(i, f), classify_in(&f.ty, Some(owner), generics)))
        .collect()
}

fn field_val(base: Val, member: &Member) -> Val {
    let field = match member {
        Member::Named(ident) => ident.to_string(),
        Member::Unnamed(index) => {
            if let Val::Tuple(parts) = &base {
                return parts
                    .get(index.index as usize)
                    .cloned()
                    .unwrap_or(Val::Unknown);
            }
            index.index.to_string()
        }
    };
    match base {
        Val::Deferred(ty, place) => Val::Deferred(
            TypeRef::Field {
                base: Box::new(ty),
                field,
            },
            place,
        ),
        // A tensor has no fields: the value was taken for one because a
        // tch method name returned it (`model.forward_t(..)` of a crate
        // model returning a struct of outputs). Its field lives where the
        // value does; the crate pass finds its type by the field's name.
        Val::Tensor(facts) => Val::Deferred(
            TypeRef::Field {
                base: Box::new(TypeRef::Unknown),
                field,
            },
            facts.place,
        ),
        Val::Unknown => Val::deferred(TypeRef::Field {
            base: Box::new(TypeRef::Unknown),
            field,
        }),
        _ => Val::Unknown,
    }
}

/// What a pattern on one of tch's `IValue` variants binds (the values a
/// TorchScript module's `forward_is` returns): `IValue::Tensor(t)` a tensor,
/// `IValue::TensorList(v)` tensors, `IValue::Tuple(v)` and
/// `IValue::GenericList(v)` values that may each be a tensor, and the
/// scalar variants a host value. `None` for any other pattern.
fn ivalue_part(path: &syn::Path, value: &Val) -> Option<Val> {
    let n = path.segments.len();
    if n < 2 || path.segments[n - 2].ident != "IValue" {
        return None;
    }
    let place = value.place().unwrap_or_default();
    Some(match path.segments[n - 1].ident.to_string().as_str() {
        "Tensor" => Val::tensor_at(place),
        "TensorList" | "Tuple" | "GenericList" => Val::Tensors { place, mask: false },
        _ => Val::Other,
    })
}

/// Whether an impl's trait is a framework's per-frame one: `eframe::App`
/// (egui's app, whose `update` runs every frame) or ggez's `EventHandler`.
fn is_frame_trait(path: &syn::Path) -> bool {
    let names: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    match names.as_slice() {
        [.., last] if last == "EventHandler" => true,
        [.., framework, last] if last == "App" => framework == "eframe",
        _ => false,
    }
}
