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
    CallSite, Callee, Cold, Context, FieldStore, FileFacts, FnFacts, Loc, LoopFacts, Site,
    StructFacts, TyKind, UseFacts,
};
use super::hot_path::{attrs_cold, cfg_macro_cold, Features};
use super::types::{
    annotation_target, classify_in, compact, conversion_target, generic_bounds, is_scalar,
};
use super::values::{
    gate, is_comparison, is_loss, tch_tensor_method, tensor_method, Gate, Place, PlaceRef,
    TensorFacts, TypeRef, Val,
};
use crate::config::CustomPattern;
use crate::rules::{
    custom_pattern, data_dependent_shape, host_sync, host_value_op, syncing_helper, Hit, MethodCall,
};

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

/// Methods that hand back their receiver's value (`Option`/`Result`
/// plumbing, references, locks).
const TRANSPARENT: &[&str] = &[
    "unwrap",
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
    /// The length of `bindings` at the start of each open scope.
    scopes: Vec<usize>,
    /// Where the walk is: function, loop, periodic guard, statement.
    context: Context,
    /// The type `Self` names, inside an impl or a trait.
    self_ty: Option<String>,
    /// Type parameters in scope with their first trait bound.
    generics: Vec<(String, String)>,
    /// Local closures bound at function level: the sites in each body.
    closures: Vec<Vec<usize>>,
    /// The closures whose bodies are being walked.
    open_closures: Vec<usize>,
    /// Closure bodies being walked: a `return` there is the closure's.
    closure_depth: usize,
    /// Where what the function returns lives, joined over its returns.
    returns: Option<Place>,
    /// The scope depth at the start of each open loop: bindings deeper
    /// than the innermost one change from one iteration to the next.
    loop_scopes: Vec<usize>,
}

/// A local variable.
struct Binding {
    name: String,
    value: Val,
    /// The scope depth it was bound at.
    depth: usize,
    /// Bound by a loop's pattern or an adapter closure's parameters.
    item: bool,
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
    /// The last `.try_into()` seen: (receiver, where, by reference, a loop item).
    last_try_into: Option<(Val, Loc, bool, bool)>,
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
            facts: FileFacts::default(),
            consts: HashMap::new(),
            fn_state: FnState::default(),
            module: Vec::new(),
            item_cold: file_cold,
            next_statement: 0,
            depth: 0,
            too_deep: false,
            last_try_into: None,
        }
    }

    /// Walks every item of the file.
    pub(crate) fn file(&mut self, file: &syn::File) {
        if let Some(cold) = attrs_cold(&file.attrs, self.features) {
            self.item_cold.get_or_insert(cold);
        }
        self.collect_consts(&file.items);
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
        let value = self.const_val(expr);
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
                let impl_generics = generic_bounds(&imp.generics);
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
            }),
            Item::Trait(t) => self.with_item_cold(&t.attrs, |w| {
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
                let fields = s
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let field = f
                            .ident
                            .as_ref()
                            .map_or_else(|| i.to_string(), ToString::to_string);
                        (field, classify_in(&f.ty, Some(&name), &generics))
                    })
                    .collect();
                self.facts.structs.push(StructFacts { name, fields });
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
                    let fields = variant
                        .fields
                        .iter()
                        .enumerate()
                        .map(|(i, f)| {
                            let field = f
                                .ident
                                .as_ref()
                                .map_or_else(|| i.to_string(), ToString::to_string);
                            (field, classify_in(&f.ty, Some(&name), &generics))
                        })
                        .collect();
                    self.facts.structs.push(StructFacts {
                        name: format!("{name}::{}", variant.ident),
                        fields,
                    });
                }
            }
            Item::Use(u) => {
                let mut prefix = Vec::new();
                self.use_tree(&u.tree, &mut prefix);
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
        mut generics: Vec<(String, String)>,
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
        let loc = self.loc(sig.ident.span(), sig.ident.span());
        let cold = self.item_cold.clone();
        self.facts.functions.push(FnFacts {
            owner: owner.clone(),
            in_trait,
            trait_impl,
            name: sig.ident.to_string(),
            module: self.module.clone(),
            has_receiver: sig.receiver().is_some(),
            returns,
            return_place: Place::Device,
            cold: cold.clone(),
            update: false,
            forward: false,
            loc,
        });
        self.next_statement += 1;
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
            },
            ..FnState::default()
        };
        self.push_scope();
        for (position, input) in sig.inputs.iter().enumerate() {
            let place = Place::of(PlaceRef::Param(position));
            match input {
                FnArg::Receiver(_) => {
                    let value = match self.fn_state.self_ty.as_deref() {
                        Some("Tensor") => Val::tensor_at(place),
                        Some(ty) => Val::Deferred(TypeRef::Named(ty.to_owned()), place),
                        None => Val::Unknown,
                    };
                    self.bind("self".into(), value);
                }
                FnArg::Typed(pt) => {
                    let value = kind_val(&self.classify(&pt.ty), place);
                    self.bind_pat(&pt.pat, value);
                }
            }
        }
        let tail = self.block(block);
        self.note_return(&tail);
        if let Some(place) = self.fn_state.returns.take() {
            self.facts.functions[index].return_place = place;
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
        let depth = self.fn_state.scopes.len();
        let item = self.fn_state.binding_items;
        self.fn_state.bindings.push(Binding {
            name,
            value,
            depth,
            item,
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
                for (i, elem) in ts.elems.iter().enumerate() {
                    let part = if wrapper && ts.elems.len() == 1 {
                        value.clone()
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
                for field in &s.fields {
                    let part = match (&owner, &field.member) {
                        (Some(owner), Member::Named(name)) => Val::deferred(TypeRef::Field {
                            base: Box::new(TypeRef::Named(owner.clone())),
                            field: name.to_string(),
                        }),
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
                            && (b.item || !matches!(b.value, Val::Tensor(_) | Val::Tensors { .. }))
                    })
            })
        };
        !is_part(expr)
            && (bound_in_loop(expr)
                || matches!(strip_references(expr), Expr::Index(i) if bound_in_loop(&i.index)))
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
        let mut value = Val::Other;
        for stmt in &block.stmts {
            value = self.stmt(stmt);
            self.fn_state.context.cold = saved.2.clone();
        }
        self.fn_state.context.statement_line = saved.0;
        self.fn_state.context.statement = saved.1;
        self.pop_scope();
        value
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
                self.fn_state.open_closures.push(id);
                self.closure(c);
                self.fn_state.open_closures.pop();
                self.bind(p.ident.to_string(), Val::Closure(id));
                return;
            }
        }
        self.last_try_into = None;
        let value = self.expr(&init.expr);
        if let Some((_, diverge)) = &init.diverge {
            self.expr(diverge);
        }
        if let Pat::Type(pt) = &local.pat {
            self.annotated_try_into(&pt.ty, &init.expr);
        }
        self.bind_pat(&local.pat, value);
    }

    /// `let x: f64 = t.try_into()?;`: the annotation says a scalar (or a
    /// `Vec`, or an ndarray) is the target.
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
        let is_try_into =
            matches!(expr, Expr::MethodCall(m) if m.method == "try_into" && m.args.is_empty());
        if let (true, Some((receiver, loc, by_ref, item))) =
            (is_try_into, self.last_try_into.take())
        {
            let op = format!("try_into::<{}>", compact(ty));
            let hit = host_sync::conversion(&op, target, by_ref, true);
            self.report_with(hit, &receiver, loc, None, item);
        }
    }

    // ----- expressions -------------------------------------------------

    pub(crate) fn expr(&mut self, expr: &Expr) -> Val {
        if self.depth >= MAX_DEPTH {
            if !self.too_deep {
                self.too_deep = true;
                let line = first_span(expr).start().line;
                self.facts.incomplete.push((
                    line,
                    format!(
                        "expression nested more than {MAX_DEPTH} levels deep; the rest of it was not analysed"
                    ),
                ));
            }
            return Val::Unknown;
        }
        self.depth += 1;
        let value = self.expr_inner(expr);
        self.depth -= 1;
        value
    }

    fn expr_inner(&mut self, expr: &Expr) -> Val {
        match expr {
            Expr::Array(a) => {
                let values: Vec<Val> = a.elems.iter().map(|e| self.expr(e)).collect();
                collection_of(values)
            }
            Expr::Assign(a) => {
                let value = self.expr(&a.right);
                match &*a.left {
                    Expr::Path(p) if p.path.segments.len() == 1 && p.qself.is_none() => {
                        self.rebind(&p.path.segments[0].ident.to_string(), value);
                    }
                    Expr::Field(f) if is_self(&f.base) => {
                        self.store_field(None, &f.member, &value);
                    }
                    left => {
                        self.expr(left);
                    }
                }
                Val::Other
            }
            Expr::Async(a) => self.block(&a.block),
            Expr::Await(a) => self.expr(&a.base),
            Expr::Binary(b) => self.binary(b),
            Expr::Block(b) => self.block(&b.block),
            Expr::Break(b) => {
                if let Some(e) = &b.expr {
                    self.expr(e);
                }
                Val::Other
            }
            Expr::Call(c) => self.call(c),
            Expr::Cast(c) => {
                self.expr(&c.expr);
                Val::Other
            }
            Expr::Closure(c) => {
                self.closure(c);
                Val::Unknown
            }
            Expr::Const(c) => self.block(&c.block),
            Expr::Field(f) => {
                let base = self.expr(&f.base);
                field_val(base, &f.member)
            }
            Expr::ForLoop(f) => self.for_loop(f),
            Expr::Group(g) => self.expr(&g.expr),
            Expr::If(i) => self.if_expr(i),
            Expr::Index(i) => {
                let base = self.expr(&i.expr);
                self.expr(&i.index);
                match base {
                    Val::Tensors { place, mask } => Val::Tensor(TensorFacts {
                        place,
                        scalar: false,
                        mask,
                    }),
                    Val::Deferred(t, place) => Val::Deferred(
                        TypeRef::Part {
                            base: Box::new(t),
                            index: None,
                        },
                        place,
                    ),
                    _ => Val::Unknown,
                }
            }
            Expr::Let(l) => {
                let value = self.expr(&l.expr);
                self.bind_pat(&l.pat, value);
                Val::Other
            }
            Expr::Lit(_) => Val::Other,
            Expr::Loop(l) => {
                let saved = self.enter_loop(true, l.loop_token.span.start().line);
                self.block(&l.body);
                self.exit_loop(saved);
                Val::Unknown
            }
            Expr::Macro(m) => self.mac(&m.mac),
            Expr::Match(m) => self.match_expr(m),
            Expr::MethodCall(m) => self.method_call(m),
            Expr::Paren(p) => self.expr(&p.expr),
            Expr::Path(p) => self.path_val(p),
            Expr::Range(r) => {
                if let Some(start) = &r.start {
                    self.expr(start);
                }
                if let Some(end) = &r.end {
                    self.expr(end);
                }
                Val::Iter(Box::new(Val::Other))
            }
            Expr::RawAddr(r) => {
                self.expr(&r.expr);
                Val::Other
            }
            Expr::Reference(r) => self.expr(&r.expr),
            Expr::Repeat(r) => {
                let value = self.expr(&r.expr);
                self.expr(&r.len);
                collection_of(vec![value])
            }
            Expr::Return(r) => {
                if let Some(e) = &r.expr {
                    let value = self.expr(e);
                    self.note_return(&value);
                }
                Val::Other
            }
            Expr::Struct(s) => self.struct_literal(s),
            Expr::Try(t) => self.expr(&t.expr),
            Expr::TryBlock(t) => self.block(&t.block),
            Expr::Tuple(t) => Val::Tuple(t.elems.iter().map(|e| self.expr(e)).collect()),
            Expr::Unary(u) => {
                let value = self.expr(&u.expr);
                match (&u.op, value) {
                    (UnOp::Deref(_), v) => v,
                    (_, Val::Tensor(facts)) => Val::Tensor(facts),
                    (_, Val::Other) => Val::Other,
                    _ => Val::Unknown,
                }
            }
            Expr::Unsafe(u) => self.block(&u.block),
            Expr::While(w) => {
                let saved = self.enter_loop(true, w.while_token.span.start().line);
                if drives_requests(&w.cond) {
                    self.mark_loop(|l| l.request = true);
                }
                self.push_scope();
                self.expr(&w.cond);
                self.block(&w.body);
                self.pop_scope();
                self.exit_loop(saved);
                Val::Unknown
            }
            Expr::Yield(y) => {
                if let Some(e) = &y.expr {
                    self.expr(e);
                }
                Val::Unknown
            }
            _ => Val::Unknown,
        }
    }

    /// `S { f: v, .. }`: records what each field holds; the value is on the
    /// CPU if every field that holds data is.
    fn struct_literal(&mut self, s: &syn::ExprStruct) -> Val {
        let owner = match s.path.segments.last().map(|s| s.ident.to_string()) {
            Some(name) if name == "Self" => self.fn_state.self_ty.clone(),
            other => other,
        };
        let mut place: Option<Place> = None;
        for field in &s.fields {
            let value = self.expr(&field.expr);
            if let Some(p) = value.place() {
                place = Some(place.map_or(p.clone(), |before| before.both(p)));
            }
            if let Some(owner) = &owner {
                self.store_field(Some(owner.clone()), &field.member, &value);
            }
        }
        if let Some(rest) = &s.rest {
            self.expr(rest);
        }
        match owner {
            Some(name) => Val::Deferred(TypeRef::Named(name), place.unwrap_or_default()),
            None => Val::Unknown,
        }
    }

    /// Records `owner.field = value` (`owner` defaults to `Self`).
    fn store_field(&mut self, owner: Option<String>, member: &Member, value: &Val) {
        let Some(owner) = owner.or_else(|| self.fn_state.self_ty.clone()) else {
            return;
        };
        let field = match member {
            Member::Named(ident) => ident.to_string(),
            Member::Unnamed(index) => index.index.to_string(),
        };
        self.facts.field_stores.push(FieldStore {
            owner,
            field,
            place: value.place(),
            function: self.fn_state.context.function,
        });
    }

    fn binary(&mut self, b: &ExprBinary) -> Val {
        let left = self.expr(&b.left);
        let right = self.expr(&b.right);
        match b.op {
            BinOp::Add(_)
            | BinOp::Sub(_)
            | BinOp::Mul(_)
            | BinOp::Div(_)
            | BinOp::Rem(_)
            | BinOp::BitAnd(_)
            | BinOp::BitOr(_)
            | BinOp::BitXor(_) => left.arithmetic(right),
            _ => Val::Other,
        }
    }

    fn if_expr(&mut self, i: &ExprIf) -> Val {
        self.push_scope();
        self.expr(&i.cond);
        let guard = is_periodic(&i.cond).then(|| self.source_of(&*i.cond));
        let saved = self.fn_state.context.periodic.clone();
        if guard.is_some() {
            self.fn_state.context.periodic = guard;
        }
        let saved_cold = self.fn_state.context.cold.clone();
        if let Expr::Macro(m) = &*i.cond {
            if saved_cold.is_none() {
                self.fn_state.context.cold = cfg_macro_cold(&m.mac, self.features);
            }
        }
        let then_value = self.block(&i.then_branch);
        self.fn_state.context.cold = saved_cold;
        self.fn_state.context.periodic = saved;
        self.pop_scope();
        match &i.else_branch {
            Some((_, else_expr)) => {
                let else_value = self.expr(else_expr);
                then_value.join(else_value)
            }
            None => Val::Other,
        }
    }

    fn match_expr(&mut self, m: &ExprMatch) -> Val {
        let scrutinee = self.expr(&m.expr);
        let mut value: Option<Val> = None;
        for arm in &m.arms {
            if attrs_cold(&arm.attrs, self.features).is_some() {
                continue;
            }
            self.push_scope();
            self.bind_pat(&arm.pat, scrutinee.clone());
            if let Some((_, guard)) = &arm.guard {
                self.expr(guard);
            }
            let arm_value = self.expr(&arm.body);
            self.pop_scope();
            value = Some(match value {
                Some(v) => v.join(arm_value),
                None => arm_value,
            });
        }
        value.unwrap_or(Val::Other)
    }

    fn for_loop(&mut self, f: &ExprForLoop) -> Val {
        let sites_before = self.facts.sites.len();
        let iterable = self.expr(&f.expr);
        let saved = self.enter_loop(true, f.for_token.span.start().line);
        if drives_requests(&f.expr) {
            self.mark_loop(|l| l.request = true);
        }
        // `for v in t.iter::<f64>()` reads one element per iteration of this
        // very loop, so the read belongs inside it.
        if let Some(start) = driving_tensor_iter(&f.expr) {
            let loop_context = self.fn_state.context.clone();
            for site in &mut self.facts.sites[sites_before..] {
                if site.hit.op == "iter::<T>" && (site.loc.line, site.loc.column) == start {
                    site.context = Context {
                        statement_line: site.context.statement_line,
                        statement: site.context.statement,
                        ..loop_context.clone()
                    };
                }
            }
        }
        self.push_scope();
        let element = iterable.element().unwrap_or(Val::Unknown);
        self.fn_state.binding_items = true;
        self.bind_pat(&f.pat, element);
        self.fn_state.binding_items = false;
        self.block(&f.body);
        self.pop_scope();
        self.exit_loop(saved);
        Val::Other
    }

    fn enter_loop(&mut self, statement: bool, line: usize) -> Context {
        let id = self.facts.loops.len();
        let parent = self.fn_state.context.loop_id;
        self.facts.loops.push(LoopFacts {
            parent,
            function: self.fn_state.context.function,
            line,
            statement,
            ..LoopFacts::default()
        });
        let saved = self.fn_state.context.clone();
        self.fn_state.context.loop_id = Some(id);
        self.fn_state.context.periodic = None;
        self.fn_state.loop_scopes.push(self.fn_state.scopes.len());
        saved
    }

    fn exit_loop(&mut self, saved: Context) {
        self.fn_state.loop_scopes.pop();
        let statement = self.fn_state.context.statement;
        let statement_line = self.fn_state.context.statement_line;
        self.fn_state.context = Context {
            statement,
            statement_line,
            ..saved
        };
    }

    /// Marks the innermost loop, if there is one.
    fn mark_loop(&mut self, mark: impl FnOnce(&mut LoopFacts)) {
        if let Some(id) = self.fn_state.context.loop_id {
            mark(&mut self.facts.loops[id]);
        }
    }

    /// Notes a step marker (`update`: a backward or optimizer step;
    /// otherwise running a model) on the innermost loop, or on the
    /// function when outside loops.
    fn mark_step(&mut self, update: bool) {
        match (
            self.fn_state.context.loop_id,
            self.fn_state.context.function,
        ) {
            (Some(id), _) => {
                let facts = &mut self.facts.loops[id];
                if update {
                    facts.update = true;
                } else {
                    facts.forward = true;
                }
            }
            (None, Some(f)) => {
                let facts = &mut self.facts.functions[f];
                if update {
                    facts.update = true;
                } else {
                    facts.forward = true;
                }
            }
            (None, None) => {}
        }
    }

    /// A closure that runs where it is written (`no_grad(|| ..)`, a
    /// callback): its body is walked in the current context.
    fn closure(&mut self, c: &ExprClosure) -> Val {
        self.push_scope();
        for input in &c.inputs {
            self.bind_pat(input, Val::Unknown);
        }
        self.fn_state.closure_depth += 1;
        let value = self.expr(&c.body);
        self.fn_state.closure_depth -= 1;
        self.pop_scope();
        value
    }

    /// A closure an iterator adapter runs once per element.
    fn closure_loop(&mut self, c: &ExprClosure, params: &[Val], statement: bool) -> Val {
        let saved = self.enter_loop(statement, c.or1_token.span.start().line);
        self.push_scope();
        self.fn_state.binding_items = true;
        for (i, input) in c.inputs.iter().enumerate() {
            self.bind_pat(input, params.get(i).cloned().unwrap_or(Val::Unknown));
        }
        self.fn_state.binding_items = false;
        self.fn_state.closure_depth += 1;
        let value = self.expr(&c.body);
        self.fn_state.closure_depth -= 1;
        self.pop_scope();
        self.exit_loop(saved);
        value
    }

    fn path_val(&self, p: &ExprPath) -> Val {
        let segments = &p.path.segments;
        if segments.len() == 1 && p.qself.is_none() {
            let name = segments[0].ident.to_string();
            if let Some(value) = self.lookup(&name) {
                return value.clone();
            }
            if let Some(value) = self.consts.get(&name) {
                return value.clone();
            }
            return match name.as_str() {
                "FLOAT_CPU" | "DOUBLE_CPU" | "INT64_CPU" => cpu_options(),
                _ => Val::Unknown,
            };
        }
        let Some(last) = segments.last() else {
            return Val::Unknown;
        };
        let last = last.ident.to_string();
        let previous = segments.iter().rev().nth(1).map(|s| s.ident.to_string());
        match (previous.as_deref(), last.as_str()) {
            (Some("Device"), "Cpu") => Val::Device(Place::Cpu),
            (Some("Device"), _) => Val::Device(Place::Device),
            (Some("kind"), "FLOAT_CPU" | "DOUBLE_CPU" | "INT64_CPU") => cpu_options(),
            (Some("Kind"), _) => Val::Other,
            _ => self.consts.get(&last).cloned().unwrap_or(Val::Unknown),
        }
    }

    fn call(&mut self, c: &ExprCall) -> Val {
        let Expr::Path(func) = &*c.func else {
            let callee = self.expr(&c.func);
            let args: Vec<Val> = c.args.iter().map(|a| self.expr(a)).collect();
            return self.call_value(&callee, &args);
        };
        let segments: Vec<String> = func
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let Some(name) = segments.last().cloned() else {
            return Val::Unknown;
        };
        let loc = self.loc(first_span(&c.func), c.paren_token.span.close());

        if segments.len() == 1 && func.qself.is_none() {
            match self.lookup(&name).cloned() {
                // A local closure called by name.
                Some(Val::Closure(id)) => {
                    for arg in &c.args {
                        self.expr(arg);
                    }
                    self.closure_call(id, &name, loc);
                    return Val::Unknown;
                }
                // A local value called as a function: a boxed module.
                Some(callee) => {
                    let args: Vec<Val> = c.args.iter().map(|a| self.expr(a)).collect();
                    return self.call_value(&callee, &args);
                }
                None => {}
            }
        }

        // `tch::no_grad(|| ..)` returns what the closure returns.
        if name == "no_grad" || name == "autocast" {
            let mut value = Val::Unknown;
            for arg in &c.args {
                value = match arg {
                    Expr::Closure(closure) => self.closure(closure),
                    other => self.expr(other),
                };
            }
            return value;
        }

        let mut args = Vec::with_capacity(c.args.len());
        for arg in &c.args {
            args.push(self.expr(arg));
        }
        let item_args = c.args.iter().any(|a| self.is_item(a));

        // `f64::try_from(&t)`, `Vec::<f32>::try_from(&t)`, `<f64>::from(&t)`.
        if name == "try_from" || name == "from" {
            let qualifier = match &func.qself {
                Some(q) => match &*q.ty {
                    Type::Path(tp) => tp
                        .path
                        .segments
                        .last()
                        .map(|s| (s.ident.to_string(), compact(s))),
                    _ => None,
                },
                None if func.path.segments.len() >= 2 => {
                    let s = &func.path.segments[func.path.segments.len() - 2];
                    Some((s.ident.to_string(), compact(s)))
                }
                None => None,
            };
            if let Some((type_name, written)) = qualifier {
                if let Some(target) = conversion_target(&type_name) {
                    let by_ref = matches!(c.args.first(), Some(Expr::Reference(_)));
                    let op = format!("{written}::{name}");
                    let hit = host_sync::conversion(&op, target, by_ref, name == "try_from");
                    let mut subject = args.first().cloned().unwrap_or(Val::Unknown);
                    if matches!(subject, Val::Unknown | Val::Deferred(..))
                        && self.mentions_tch
                        && c.args.first().is_some_and(ends_in_reduction)
                    {
                        // `f64::from(x.abs().max())`: a zero-argument
                        // reduction converted to a scalar is a tensor's.
                        subject = Val::tensor_at(subject.place().unwrap_or_default());
                    }
                    self.report_on(hit, &subject, loc, c.args.first());
                    return Val::Other;
                }
            }
        }

        // devcheck's tracked readbacks: `readbacks::scalar_f64(&loss)`.
        if segments.iter().any(|s| s == "readbacks") {
            if let Some(hit) = host_sync::tracked_readback(&name) {
                let subject = args.first().cloned().unwrap_or(Val::Unknown);
                self.report_on(hit, &subject, loc, c.args.first());
                return Val::Other;
            }
        }

        if !self.patterns.is_empty() {
            self.custom(&segments.join("::"), loc);
        }

        let qualifier = (segments.len() >= 2).then(|| segments[segments.len() - 2].as_str());
        match qualifier {
            Some("Tensor") => tensor_constructor(&name, &args, c.args.first()),
            Some("Device") => Val::Device(Place::Device),
            // tch's mini-batch iterator over (inputs, targets).
            Some("Iter2") if name == "new" => {
                let place = args
                    .first()
                    .filter(|a| a.is_cpu_tensor())
                    .map_or(Place::Device, |_| Place::Cpu);
                let batch = Val::tensor_at(place);
                Val::Iter(Box::new(Val::Tuple(vec![batch.clone(), batch])))
            }
            Some(ty) if is_placed_tch_type(ty) => {
                let place = args
                    .iter()
                    .find_map(Val::placement)
                    .unwrap_or_else(|| built_from(&args));
                Val::Deferred(TypeRef::Named(ty.to_owned()), place)
            }
            _ if matches!(name.as_str(), "Some" | "Ok" | "Box" | "new")
                && matches!(
                    qualifier,
                    None | Some("Box" | "Rc" | "Arc" | "RefCell" | "Mutex" | "Cell" | "RwLock")
                ) =>
            {
                if name == "new" && qualifier.is_none() {
                    return self.crate_call(Callee::Free(segments), None, &args, loc, item_args);
                }
                args.into_iter().next().unwrap_or(Val::Unknown)
            }
            _ => {
                let owner = match qualifier {
                    Some("Self") => self.fn_state.self_ty.clone().map(TypeRef::Named),
                    Some(q) if q.starts_with(|c: char| c.is_ascii_uppercase()) => {
                        Some(TypeRef::Named(q.to_owned()))
                    }
                    _ => None,
                };
                match owner {
                    Some(owner) => self.crate_call(
                        Callee::Assoc {
                            owner: owner.clone(),
                            name: name.clone(),
                        },
                        Some(owner),
                        &args,
                        loc,
                        item_args,
                    ),
                    None => self.crate_call(Callee::Free(segments), None, &args, loc, item_args),
                }
            }
        }
    }

    /// A call that may reach a crate-local function: recorded for the
    /// crate pass; its value is deferred to it.
    fn crate_call(
        &mut self,
        callee: Callee,
        owner: Option<TypeRef>,
        args: &[Val],
        loc: Loc,
        item: bool,
    ) -> Val {
        let name = callee.name().to_owned();
        let arg_places: Vec<Place> = args.iter().map(|a| a.place().unwrap_or_default()).collect();
        if is_update(&name) {
            self.mark_step(true);
        } else if is_forward(&name) {
            self.mark_step(false);
        }
        self.record_call(
            callee,
            loc,
            arg_places.iter().cloned().map(Some).collect(),
            item,
        );
        let result = TypeRef::Return {
            owner: owner.map(Box::new),
            name,
        };
        let module = is_forward(&result_name(&result));
        Val::Deferred(result.clone(), Place::of_call(result, arg_places, module))
    }

    /// Calling a value (a boxed module, a function pointer): runs a model,
    /// whose output is where the model is.
    fn call_value(&mut self, callee: &Val, _args: &[Val]) -> Val {
        // A closure parameter (`f: &dyn Fn(..)`) is a callback, not a model.
        let callback = matches!(callee, Val::Deferred(TypeRef::Named(n), _)
            if matches!(n.as_str(), "Fn" | "FnMut" | "FnOnce"));
        if !callback {
            self.mark_step(false);
        }
        let place = callee.imposed_place();
        match callee {
            Val::Unknown | Val::Deferred(..) => Val::Deferred(TypeRef::Unknown, place),
            _ => Val::Unknown,
        }
    }

    fn method_call(&mut self, m: &ExprMethodCall) -> Val {
        let receiver = self.expr(&m.receiver);
        let name = m.method.to_string();
        let adapter = self.adapter_params(&name, &receiver, &m.args);
        let mut args = Vec::with_capacity(m.args.len());
        for arg in &m.args {
            let value = match (arg, &adapter) {
                (Expr::Closure(c), Some(params)) => self.closure_loop(
                    c,
                    params,
                    matches!(
                        name.as_str(),
                        "for_each"
                            | "try_for_each"
                            | "for_each_concurrent"
                            | "try_for_each_concurrent"
                    ),
                ),
                // `losses.iter().map(f32::try_from)`: a point-free conversion
                // of each element.
                (Expr::Path(path), Some(params)) => {
                    self.point_free(path, params.last().cloned().unwrap_or(Val::Unknown), arg);
                    Val::Unknown
                }
                _ => self.expr(arg),
            };
            args.push(value);
        }
        let loc = self.loc(m.method.span(), m.paren_token.span.close());
        let scalar_turbofish = m.turbofish.as_ref().is_some_and(|t| {
            t.args.len() == 1
                && matches!(t.args.first(), Some(syn::GenericArgument::Type(Type::Path(p)))
                    if p.path.get_ident().is_some_and(|i| is_scalar(&i.to_string())))
        });
        // `t.double_value(&[i])`: an index that varies, one element per read.
        let element_index = matches!(
            m.args.first(),
            Some(Expr::Reference(r)) if matches!(&*r.expr, Expr::Array(a)
                if a.elems.iter().any(|e| !matches!(e, Expr::Lit(_))))
        );
        let call = MethodCall {
            name: &name,
            args: &args,
            scalar_turbofish,
            element_index,
        };
        let checks = [
            host_sync::method,
            host_value_op::method,
            data_dependent_shape::method,
            syncing_helper::method,
        ];
        let found = checks.iter().find_map(|check| check(&call));
        let hit = found.is_some();
        if let Some(found) = found {
            let item = self.is_item(&m.receiver);
            self.report_with(found, &receiver, loc, Some(&name), item);
        }
        if !self.patterns.is_empty() {
            self.custom(&name, loc);
        }
        if name == "try_into" && args.is_empty() {
            let by_ref = matches!(&*m.receiver, Expr::Reference(_))
                || matches!(&*m.receiver, Expr::Paren(p) if matches!(&*p.expr, Expr::Reference(_)));
            let item = self.is_item(&m.receiver);
            self.last_try_into = Some((receiver.clone(), loc, by_ref, item));
        }
        if name == "push" {
            if let (Expr::Path(p), Some(Val::Tensor(pushed))) = (&*m.receiver, args.first()) {
                if let Some(ident) = p.path.get_ident() {
                    let place = match &receiver {
                        Val::Tensors { place, .. } => place.clone().both(pushed.place.clone()),
                        _ => pushed.place.clone(),
                    };
                    self.rebind(
                        &ident.to_string(),
                        Val::Tensors {
                            place,
                            mask: pushed.mask,
                        },
                    );
                }
            }
        }
        if is_update(&name) {
            self.mark_step(true);
        } else if is_forward(&name) {
            self.mark_step(false);
        }
        let mut arg_places: Vec<Place> = vec![receiver.place().unwrap_or_default()];
        arg_places.extend(args.iter().map(|a| a.place().unwrap_or_default()));
        // A call a rule reports is that rule's finding, not a call to follow.
        if matches!(receiver, Val::Unknown | Val::Deferred(..) | Val::Tensor(_))
            && !TRANSPARENT.contains(&name.as_str())
            && !hit
        {
            self.record_call(
                Callee::Method {
                    receiver: receiver.type_ref(),
                    name: name.clone(),
                },
                loc,
                arg_places.iter().cloned().map(Some).collect(),
                self.is_item(&m.receiver) || m.args.iter().any(|a| self.is_item(a)),
            );
        }
        self.method_value(&name, receiver, &args, m, arg_places)
    }

    /// `f32::try_from` or `Tensor::double_value` passed to an adapter:
    /// applied to each element.
    fn point_free(&mut self, path: &ExprPath, element: Val, arg: &Expr) {
        let segments: Vec<String> = path
            .path
            .segments
            .iter()
            .map(|s| s.ident.to_string())
            .collect();
        let [.., qualifier, name] = segments.as_slice() else {
            return;
        };
        let span = arg.span();
        let loc = self.loc(span, span);
        // Applied once per element: a loop of its own.
        let saved = self.enter_loop(false, loc.line);
        self.point_free_hit(qualifier, name, element, loc);
        self.exit_loop(saved);
    }

    fn point_free_hit(&mut self, qualifier: &str, name: &str, element: Val, loc: Loc) {
        if matches!(name, "try_from" | "from") {
            if let Some(target) = conversion_target(qualifier) {
                let op = format!("{qualifier}::{name}");
                let hit = host_sync::conversion(&op, target, false, name == "try_from");
                self.report_with(hit, &element, loc, None, true);
            }
        } else if qualifier == "Tensor" {
            let call = MethodCall {
                name,
                args: &[],
                scalar_turbofish: false,
                element_index: false,
            };
            if let Some(hit) = host_sync::method(&call) {
                self.report_with(hit, &element, loc, None, true);
            }
        }
    }

    /// If `name` is an iterator adapter called on an iterator (or a stream
    /// whose closure is async), the values its closure receives.
    fn adapter_params(
        &self,
        name: &str,
        receiver: &Val,
        args: &syn::punctuated::Punctuated<Expr, syn::Token![,]>,
    ) -> Option<Vec<Val>> {
        let async_body = args
            .iter()
            .any(|a| matches!(a, Expr::Closure(c) if matches!(&*c.body, Expr::Async(_))));
        let element = match receiver {
            Val::Iter(element) => (**element).clone(),
            _ if matches!(name, "for_each" | "try_for_each") || async_body => Val::Unknown,
            _ => return None,
        };
        if !ELEMENT_ADAPTERS.contains(&name) {
            return None;
        }
        Some(match name {
            "fold" | "try_fold" | "scan" | "reduce" => vec![Val::Unknown, element],
            _ => vec![element],
        })
    }

    fn method_value(
        &mut self,
        name: &str,
        receiver: Val,
        args: &[Val],
        m: &ExprMethodCall,
        arg_places: Vec<Place>,
    ) -> Val {
        if TRANSPARENT.contains(&name) {
            return receiver;
        }
        match (name, &receiver) {
            ("iter", Val::Tensor(_)) => return Val::Iter(Box::new(Val::Other)),
            (
                "iter" | "iter_mut" | "into_iter" | "par_iter" | "par_iter_mut" | "into_par_iter"
                | "drain",
                _,
            ) => {
                return Val::Iter(Box::new(receiver.element().unwrap_or(Val::Unknown)));
            }
            // Strings' and maps' iterators; a crate-local type may define
            // methods of the same names, so deferred receivers stay deferred.
            ("chars" | "bytes" | "lines" | "keys" | "split_whitespace" | "char_indices", _)
                if args.is_empty() && !matches!(receiver, Val::Deferred(..)) =>
            {
                return Val::Iter(Box::new(Val::Other));
            }
            ("values" | "values_mut", _)
                if args.is_empty() && !matches!(receiver, Val::Deferred(..)) =>
            {
                return Val::Iter(Box::new(Val::Unknown));
            }
            ("enumerate", Val::Iter(element)) => {
                return Val::Iter(Box::new(Val::Tuple(vec![Val::Other, (**element).clone()])));
            }
            ("zip" | "zip_eq", Val::Iter(element)) => {
                let other = args.first().and_then(Val::element).unwrap_or(Val::Unknown);
                return Val::Iter(Box::new(Val::Tuple(vec![(**element).clone(), other])));
            }
            ("to_device", Val::Iter(element)) => {
                let place = args.first().and_then(Val::placement).unwrap_or_default();
                return Val::Iter(Box::new(with_placement((**element).clone(), place)));
            }
            (_, Val::Iter(_)) if SAME_ELEMENTS.contains(&name) => return receiver,
            ("map" | "filter_map" | "flat_map" | "map_while", Val::Iter(_)) => {
                return Val::Iter(Box::new(args.first().cloned().unwrap_or(Val::Unknown)));
            }
            ("collect", Val::Iter(element)) => {
                return match &**element {
                    Val::Tensor(facts) => Val::Tensors {
                        place: facts.place.clone(),
                        mask: facts.mask,
                    },
                    _ => Val::Unknown,
                };
            }
            ("next" | "last" | "nth", Val::Iter(element)) => return (**element).clone(),
            (
                "first" | "last" | "get" | "get_mut" | "pop" | "remove" | "swap_remove"
                | "pop_front" | "pop_back" | "first_mut" | "last_mut",
                Val::Tensors { .. } | Val::Deferred(..),
            ) if !matches!(receiver, Val::Deferred(TypeRef::Named(_), _)) => {
                return receiver.element().unwrap_or(Val::Unknown);
            }
            ("chunks" | "windows" | "chunks_exact", Val::Tensors { .. }) => {
                return Val::Iter(Box::new(receiver))
            }
            ("train_iter" | "test_iter", _) if self.mentions_tch => {
                let place = receiver.place().unwrap_or_default();
                return Val::Iter(Box::new(Val::Tuple(vec![
                    Val::tensor_at(place.clone()),
                    Val::tensor_at(place),
                ])));
            }
            _ => {}
        }
        let receiver_place = match &receiver {
            Val::Deferred(_, place) => place.clone(),
            _ => Place::Device,
        };
        match receiver {
            Val::Tensor(facts) => tensor_method(name, facts, args),
            Val::Unknown | Val::Deferred(..) if name == "device" => {
                Val::Device(receiver.place().unwrap_or_default())
            }
            Val::Unknown | Val::Deferred(..)
                if self.mentions_tch
                    && (name == "to_device"
                        || (name == "to"
                            && args.first().is_some_and(|a| a.placement().is_some()))) =>
            {
                Val::tensor_at(args.first().and_then(Val::placement).unwrap_or_default())
            }
            Val::Unknown | Val::Deferred(..) if self.mentions_tch && name == "cuda" => {
                Val::tensor_at(Place::Device)
            }
            Val::Unknown | Val::Deferred(..)
                if self.mentions_tch && is_comparison(name) && args.len() == 1 =>
            {
                Val::Tensor(TensorFacts {
                    place: receiver_place,
                    scalar: false,
                    mask: true,
                })
            }
            Val::Unknown | Val::Deferred(..) if self.mentions_tch && tch_tensor_method(name) => {
                let result = TypeRef::Return {
                    owner: Some(Box::new(receiver.type_ref())),
                    name: name.to_owned(),
                };
                Val::Tensor(TensorFacts {
                    place: receiver_place.either(Place::of_call(
                        result,
                        arg_places,
                        is_forward(name),
                    )),
                    scalar: is_loss(name),
                    mask: false,
                })
            }
            Val::Unknown | Val::Deferred(..)
                if self.mentions_tch
                    && matches!(name, "mean" | "sum" | "prod")
                    && matches!(m.args.first(), Some(Expr::Path(p)) if path_has_segment(&p.path, "Kind")) =>
            {
                Val::Tensor(TensorFacts {
                    place: receiver_place,
                    scalar: true,
                    mask: false,
                })
            }
            Val::Unknown | Val::Deferred(..) => {
                let result = TypeRef::Return {
                    owner: Some(Box::new(receiver.type_ref())),
                    name: name.to_owned(),
                };
                let module = is_forward(name);
                Val::Deferred(
                    result.clone(),
                    receiver_place.either(Place::of_call(result, arg_places, module)),
                )
            }
            _ => Val::Unknown,
        }
    }

    // ----- recording ---------------------------------------------------

    /// Records a rule's hit if its subject passes the rule's bar.
    pub(crate) fn report(&mut self, hit: Hit, subject: &Val, loc: Loc) {
        self.report_with(hit, subject, loc, None, false);
    }

    /// Records a hit whose subject is the expression `subject_expr`.
    fn report_on(&mut self, hit: Hit, subject: &Val, loc: Loc, subject_expr: Option<&Expr>) {
        let item = subject_expr.is_some_and(|e| self.is_item(e));
        self.report_with(hit, subject, loc, None, item);
    }

    fn report_with(&mut self, hit: Hit, subject: &Val, loc: Loc, method: Option<&str>, item: bool) {
        let Gate::Report(requirement) = gate(subject, hit.need, self.mentions_tch, method) else {
            return;
        };
        // `t.iter::<T>()` is a loop of its own: one read per item.
        let element_iter = hit.op == "iter::<T>";
        let saved = element_iter.then(|| {
            let saved = self.enter_loop(false, loc.line);
            self.mark_loop(|l| l.element_iter = true);
            saved
        });
        self.push_site(Site {
            hit,
            loc,
            context: self.fn_state.context.clone(),
            requirement,
            place: subject.place().unwrap_or_default(),
            pattern: None,
            via: Vec::new(),
            item,
        });
        if let Some(saved) = saved {
            self.exit_loop(saved);
        }
    }

    fn push_site(&mut self, site: Site) {
        let index = self.facts.sites.len();
        self.facts.sites.push(site);
        for &closure in &self.fn_state.open_closures {
            self.fn_state.closures[closure].push(index);
        }
    }

    /// Checks a callee against the `devcheck.toml` patterns.
    pub(crate) fn custom(&mut self, callee: &str, loc: Loc) {
        if let Some((index, hit)) = custom_pattern::check(self.patterns, callee) {
            self.push_site(Site {
                hit,
                loc,
                context: self.fn_state.context.clone(),
                requirement: None,
                place: Place::Device,
                pattern: Some(index),
                via: Vec::new(),
                item: false,
            });
        }
    }

    fn record_call(&mut self, callee: Callee, loc: Loc, args: Vec<Option<Place>>, item: bool) {
        self.facts.calls.push(CallSite {
            callee,
            loc,
            context: self.fn_state.context.clone(),
            args,
            item,
        });
    }

    /// A local closure whose body syncs, called inside a loop: reported at
    /// the call. At function level the body's sites already count.
    fn closure_call(&mut self, id: usize, name: &str, loc: Loc) {
        if self.fn_state.context.loop_id.is_none() {
            return;
        }
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
            site.context = Context {
                periodic,
                cold,
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

    pub(crate) fn has_patterns(&self) -> bool {
        !self.patterns.is_empty()
    }

    pub(crate) fn lookup_name(&self, name: &str) -> Val {
        self.lookup(name).cloned().unwrap_or(Val::Unknown)
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
        TyKind::Collection(_) => Val::Deferred(TypeRef::Written(kind.clone()), place),
        TyKind::Device => Val::Device(place),
        TyKind::Other => Val::Other,
    }
}

fn cpu_options() -> Val {
    Val::Tuple(vec![Val::Other, Val::Device(Place::Cpu)])
}

/// An array or `vec!` of these values.
pub(crate) fn collection_of(values: Vec<Val>) -> Val {
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
            | "read_npy"
            | "read_npz"
            | "load"
            | "load_multi"
            | "read_safetensors"
            | "scalar_tensor"
    );
    let empty_shape = matches!(
        first,
        Some(Expr::Array(a)) if a.elems.is_empty()
    ) || matches!(first, Some(Expr::Reference(r)) if matches!(&*r.expr, Expr::Array(a) if a.elems.is_empty()));
    let scalar = (name == "from" && matches!(args.first(), Some(Val::Other)))
        || name == "scalar_tensor"
        || (matches!(name, "zeros" | "ones" | "full" | "empty" | "rand" | "randn") && empty_shape);
    let place = if host_data {
        Place::Cpu
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
    Val::Tensor(TensorFacts {
        place,
        scalar,
        mask: false,
    })
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
        Val::Unknown => Val::deferred(TypeRef::Field {
            base: Box::new(TypeRef::Unknown),
            field,
        }),
        _ => Val::Unknown,
    }
}

fn type_name(ty: &Type) -> Option<String> {
    match ty {
        Type::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        Type::Reference(r) => type_name(&r.elem),
        _ => None,
    }
}

fn path_has_segment(path: &syn::Path, name: &str) -> bool {
    path.segments.iter().any(|s| s.ident == name)
}

fn is_self(expr: &Expr) -> bool {
    matches!(expr, Expr::Path(p) if p.path.is_ident("self"))
}

/// The local variable an expression starts from (`x` in `x.a.b()[i]`).
fn root_ident(expr: &Expr) -> Option<String> {
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

fn strip_references(expr: &Expr) -> &Expr {
    match expr {
        Expr::Reference(r) => strip_references(&r.expr),
        Expr::Paren(p) => strip_references(&p.expr),
        other => other,
    }
}

/// Whether an expression takes a part of a tensor (`t.get(i)`,
/// `t.select(0, i)`, `t.i(..)`), possibly reshaped or unwrapped.
fn is_part(expr: &Expr) -> bool {
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

/// `f64::from(x.abs().max())`: an argument ending in a reduction with no
/// arguments, which on anything but a tensor would not convert to a scalar.
fn ends_in_reduction(expr: &Expr) -> bool {
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

/// Whether a loop's condition or iterable takes the next request
/// (`receiver.recv()`, `listener.incoming()`).
fn drives_requests(expr: &Expr) -> bool {
    match expr {
        Expr::MethodCall(m) => {
            is_request_source(&m.method.to_string()) || drives_requests(&m.receiver)
        }
        Expr::Let(l) => drives_requests(&l.expr),
        Expr::Await(a) => drives_requests(&a.base),
        Expr::Try(t) => drives_requests(&t.expr),
        Expr::Paren(p) => drives_requests(&p.expr),
        Expr::Reference(r) => drives_requests(&r.expr),
        _ => false,
    }
}

/// The attributes written on an expression statement.
fn expr_attrs(expr: &Expr) -> &[Attribute] {
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
/// `let Some(0) = every.map(|n| step % n)`, possibly combined with `&&`.
fn is_periodic(cond: &Expr) -> bool {
    fn is_rem(e: &Expr) -> bool {
        match e {
            Expr::Binary(b) => matches!(b.op, BinOp::Rem(_)),
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
            _ => false,
        },
        Expr::MethodCall(m) => m.method == "is_multiple_of",
        Expr::Paren(p) => is_periodic(&p.expr),
        Expr::Let(l) => is_zero(&l.pat) && holds_rem(&l.expr),
        _ => false,
    }
}

/// If a `for` loop's iterable is `t.iter::<T>()` (possibly unwrapped), the
/// start of that method name.
fn driving_tensor_iter(iterable: &Expr) -> Option<(usize, usize)> {
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
