//! The per-function walk: evaluates expressions to [`Val`]s, tracks loops,
//! periodic guards and local closures, and records sync sites and calls.

use std::collections::HashMap;

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::{
    BinOp, Block, Expr, ExprBinary, ExprCall, ExprClosure, ExprForLoop, ExprIf, ExprMatch,
    ExprMethodCall, ExprPath, FnArg, ImplItem, Item, Local, Member, Pat, ReturnType, Signature,
    Stmt, TraitItem, Type, UnOp,
};

use super::facts::{
    CallSite, Callee, Context, FileFacts, FnFacts, Loc, LoopFacts, Site, StructFacts, TyKind,
};
use super::types::{annotation_target, classify, compact, conversion_target, is_scalar};
use super::values::{
    gate, is_comparison, is_loss, tch_tensor_method, tensor_method, Gate, TensorFacts, TypeRef, Val,
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
    "to_owned",
    "ok",
    "context",
    "with_context",
    "map_err",
    "unwrap_unchecked",
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
];

/// What the walker knows about the function it is in; a function starts
/// from a fresh one, and a nested item saves and restores its enclosing one.
#[derive(Default)]
struct FnState {
    /// Local bindings, innermost last.
    bindings: Vec<(String, Val)>,
    /// The length of `bindings` at the start of each open scope.
    scopes: Vec<usize>,
    /// Where the walk is: function, loop, periodic guard, statement.
    context: Context,
    /// The type `Self` names, inside an impl or a trait.
    self_ty: Option<String>,
    /// Local closures bound at function level: the sites in each body.
    closures: Vec<Vec<usize>>,
    /// The closures whose bodies are being walked.
    open_closures: Vec<usize>,
}

/// Walks one parsed file.
pub(crate) struct Walker<'a> {
    source: &'a str,
    mentions_tch: bool,
    patterns: &'a [CustomPattern],
    /// What the walk found.
    pub(crate) facts: FileFacts,
    consts: HashMap<String, Val>,
    /// The function being walked.
    fn_state: FnState,
    depth: usize,
    /// The walk met an expression nested deeper than [`MAX_DEPTH`].
    pub(crate) too_deep: bool,
    last_try_into: Option<(Val, Loc, bool)>,
}

impl<'a> Walker<'a> {
    pub(crate) fn new(
        source: &'a str,
        mentions_tch: bool,
        patterns: &'a [CustomPattern],
    ) -> Walker<'a> {
        Walker {
            source,
            mentions_tch,
            patterns,
            facts: FileFacts::default(),
            consts: HashMap::new(),
            fn_state: FnState::default(),
            depth: 0,
            too_deep: false,
            last_try_into: None,
        }
    }

    /// Walks every item of the file.
    pub(crate) fn file(&mut self, file: &syn::File) {
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
        if matches!(value, Val::Device { .. }) || value.is_cpu_placement() {
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
                Expr::Path(p) if path_has_segment(&p.path, "Device") => Val::Device { cpu: false },
                _ => Val::Unknown,
            },
            _ => Val::Unknown,
        }
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::Fn(f) => self.function(None, false, &f.sig, &f.block),
            Item::Impl(imp) => {
                let owner = type_name(&imp.self_ty);
                for member in &imp.items {
                    if let ImplItem::Fn(m) = member {
                        self.function(owner.clone(), false, &m.sig, &m.block);
                    }
                }
            }
            Item::Trait(t) => {
                let owner = Some(t.ident.to_string());
                for member in &t.items {
                    if let TraitItem::Fn(m) = member {
                        if let Some(body) = &m.default {
                            self.function(owner.clone(), true, &m.sig, body);
                        }
                    }
                }
            }
            Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    for item in items {
                        self.item(item);
                    }
                }
            }
            Item::Struct(s) => {
                let name = s.ident.to_string();
                let fields = s
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(i, f)| {
                        let field = f
                            .ident
                            .as_ref()
                            .map_or_else(|| i.to_string(), ToString::to_string);
                        (field, classify(&f.ty, Some(&name)))
                    })
                    .collect();
                self.facts.structs.push(StructFacts { name, fields });
            }
            _ => {}
        }
    }

    /// An item inside a function body: walked on its own, then the
    /// enclosing function's state is restored.
    fn nested_item(&mut self, item: &Item) {
        let for_item = FnState {
            context: self.fn_state.context.clone(),
            self_ty: self.fn_state.self_ty.clone(),
            ..FnState::default()
        };
        let enclosing = std::mem::replace(&mut self.fn_state, for_item);
        self.item(item);
        self.fn_state = enclosing;
    }

    fn function(&mut self, owner: Option<String>, in_trait: bool, sig: &Signature, block: &Block) {
        let index = self.facts.functions.len();
        let returns = match &sig.output {
            ReturnType::Default => TyKind::Other,
            ReturnType::Type(_, ty) => classify(ty, owner.as_deref()),
        };
        let loc = self.loc(sig.ident.span(), sig.ident.span());
        self.facts.functions.push(FnFacts {
            owner: owner.clone(),
            in_trait,
            name: sig.ident.to_string(),
            has_receiver: sig.receiver().is_some(),
            returns,
            loc,
        });
        self.fn_state = FnState {
            self_ty: owner,
            context: Context {
                loop_id: None,
                periodic: None,
                function: Some(index),
                statement_line: loc.line,
            },
            ..FnState::default()
        };
        self.push_scope();
        for input in &sig.inputs {
            match input {
                FnArg::Receiver(_) => {
                    let value = match self.fn_state.self_ty.as_deref() {
                        Some("Tensor") => Val::device_tensor(),
                        Some(ty) => Val::Deferred(TypeRef::Named(ty.to_owned())),
                        None => Val::Unknown,
                    };
                    self.bind("self".into(), value);
                }
                FnArg::Typed(pt) => {
                    let value = self.type_val(&pt.ty);
                    self.bind_pat(&pt.pat, value);
                }
            }
        }
        self.block(block);
        self.pop_scope();
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
        self.fn_state.bindings.push((name, value));
    }

    fn lookup(&self, name: &str) -> Option<&Val> {
        self.fn_state
            .bindings
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
    }

    fn rebind(&mut self, name: &str, value: Val) {
        if let Some(slot) = self
            .fn_state
            .bindings
            .iter_mut()
            .rev()
            .find(|(n, _)| n == name)
        {
            slot.1 = value;
        }
    }

    fn type_val(&self, ty: &Type) -> Val {
        kind_val(&classify(ty, self.fn_state.self_ty.as_deref()))
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
                        Val::Deferred(ty) if !has_rest => Val::Deferred(TypeRef::Part {
                            base: Box::new(ty.clone()),
                            index: Some(i),
                        }),
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
                for elem in &ts.elems {
                    let part = if wrapper && ts.elems.len() == 1 {
                        value.clone()
                    } else {
                        Val::Unknown
                    };
                    self.bind_pat(elem, part);
                }
            }
            Pat::Reference(r) => self.bind_pat(&r.pat, value),
            Pat::Paren(p) => self.bind_pat(&p.pat, value),
            Pat::Type(pt) => {
                let declared = self.type_val(&pt.ty);
                let merged = match (&declared, &value) {
                    (Val::Tensor(_), Val::Tensor(_))
                    | (Val::Tensors { .. }, Val::Tensors { .. }) => value,
                    (Val::Deferred(_), Val::Tensor(_) | Val::Deferred(_)) => value,
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
                for field in &s.fields {
                    self.bind_pat(&field.pat, Val::Unknown);
                }
            }
            _ => {}
        }
    }

    // ----- statements --------------------------------------------------

    fn block(&mut self, block: &Block) -> Val {
        self.push_scope();
        let statement_line = self.fn_state.context.statement_line;
        let mut value = Val::Other;
        for stmt in &block.stmts {
            value = self.stmt(stmt);
        }
        self.fn_state.context.statement_line = statement_line;
        self.pop_scope();
        value
    }

    fn stmt(&mut self, stmt: &Stmt) -> Val {
        match stmt {
            Stmt::Local(local) => {
                self.fn_state.context.statement_line = local.let_token.span.start().line;
                self.local(local);
                Val::Other
            }
            Stmt::Item(item) => {
                self.nested_item(item);
                Val::Other
            }
            Stmt::Expr(expr, semi) => {
                self.fn_state.context.statement_line = first_span(expr).start().line;
                let value = self.expr(expr);
                if semi.is_some() {
                    Val::Other
                } else {
                    value
                }
            }
            Stmt::Macro(m) => {
                self.fn_state.context.statement_line = m.mac.path.span().start().line;
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
        if let (true, Some((receiver, loc, by_ref))) = (is_try_into, self.last_try_into.take()) {
            let op = format!("try_into::<{}>", compact(ty));
            let hit = host_sync::conversion(&op, target, by_ref, true);
            self.report(hit, &receiver, loc);
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
                    Val::Tensors { cpu, mask } => Val::Tensor(TensorFacts {
                        cpu,
                        scalar: false,
                        mask,
                    }),
                    Val::Deferred(t) => Val::Deferred(TypeRef::Part {
                        base: Box::new(t),
                        index: None,
                    }),
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
                let saved = self.enter_loop(true, l.loop_token.span);
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
                    self.expr(e);
                }
                Val::Other
            }
            Expr::Struct(s) => {
                for field in &s.fields {
                    self.expr(&field.expr);
                }
                if let Some(rest) = &s.rest {
                    self.expr(rest);
                }
                match s.path.segments.last().map(|s| s.ident.to_string()) {
                    Some(name) if name == "Self" => self
                        .fn_state
                        .self_ty
                        .clone()
                        .map_or(Val::Unknown, |t| Val::Deferred(TypeRef::Named(t))),
                    Some(name) => Val::Deferred(TypeRef::Named(name)),
                    None => Val::Unknown,
                }
            }
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
                let saved = self.enter_loop(true, w.while_token.span);
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
        let then_value = self.block(&i.then_branch);
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
        let saved = self.enter_loop(true, f.for_token.span);
        // `for v in t.iter::<f64>()` reads one element per iteration of this
        // very loop, so the read belongs inside it.
        if let Some(start) = driving_tensor_iter(&f.expr) {
            let loop_context = self.fn_state.context.clone();
            for site in &mut self.facts.sites[sites_before..] {
                if site.hit.op == "iter::<T>" && (site.loc.line, site.loc.column) == start {
                    site.context = Context {
                        statement_line: site.context.statement_line,
                        ..loop_context.clone()
                    };
                }
            }
        }
        self.push_scope();
        let element = iterable.element().unwrap_or(Val::Unknown);
        self.bind_pat(&f.pat, element);
        self.block(&f.body);
        self.pop_scope();
        self.exit_loop(saved);
        Val::Other
    }

    fn enter_loop(&mut self, statement: bool, keyword: Span) -> Context {
        let id = self.facts.loops.len();
        let parent = self.fn_state.context.loop_id;
        self.facts.loops.push(LoopFacts {
            has_nested_loop: false,
            parent,
            line: keyword.start().line,
        });
        // Only loop statements (and `for_each`) make the enclosing loop an
        // outer, once-per-epoch loop; a `.map(..)` over a shape does not.
        if statement {
            if let Some(parent) = parent {
                self.facts.loops[parent].has_nested_loop = true;
            }
        }
        let saved = self.fn_state.context.clone();
        self.fn_state.context.loop_id = Some(id);
        self.fn_state.context.periodic = None;
        saved
    }

    fn exit_loop(&mut self, saved: Context) {
        self.fn_state.context = saved;
    }

    /// A closure that runs where it is written (`no_grad(|| ..)`, a
    /// callback): its body is walked in the current context.
    fn closure(&mut self, c: &ExprClosure) -> Val {
        self.push_scope();
        for input in &c.inputs {
            self.bind_pat(input, Val::Unknown);
        }
        let value = self.expr(&c.body);
        self.pop_scope();
        value
    }

    /// A closure an iterator adapter runs once per element.
    fn closure_loop(&mut self, c: &ExprClosure, params: &[Val], statement: bool) -> Val {
        let saved = self.enter_loop(statement, c.or1_token.span);
        self.push_scope();
        for (i, input) in c.inputs.iter().enumerate() {
            self.bind_pat(input, params.get(i).cloned().unwrap_or(Val::Unknown));
        }
        let value = self.expr(&c.body);
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
            (Some("Device"), "Cpu") => Val::Device { cpu: true },
            (Some("Device"), _) => Val::Device { cpu: false },
            (Some("kind"), "FLOAT_CPU" | "DOUBLE_CPU" | "INT64_CPU") => cpu_options(),
            (Some("Kind"), _) => Val::Other,
            _ => self.consts.get(&last).cloned().unwrap_or(Val::Unknown),
        }
    }

    fn call(&mut self, c: &ExprCall) -> Val {
        let Expr::Path(func) = &*c.func else {
            self.expr(&c.func);
            for arg in &c.args {
                self.expr(arg);
            }
            return Val::Unknown;
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

        // A local closure called by name.
        if segments.len() == 1 && func.qself.is_none() {
            if let Some(Val::Closure(id)) = self.lookup(&name).cloned() {
                for arg in &c.args {
                    self.expr(arg);
                }
                self.closure_call(id, &name, loc);
                return Val::Unknown;
            }
        }

        // `tch::no_grad(|| ..)` returns what the closure returns.
        if name == "no_grad" {
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
                    let subject = args.first().cloned().unwrap_or(Val::Unknown);
                    self.report(hit, &subject, loc);
                    return Val::Other;
                }
            }
        }

        if !self.patterns.is_empty() {
            self.custom(&segments.join("::"), loc);
        }

        let qualifier = (segments.len() >= 2).then(|| segments[segments.len() - 2].as_str());
        match qualifier {
            Some("Tensor") => {
                let host_data = matches!(
                    name.as_str(),
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
                );
                let tensors: Vec<&Val> = args
                    .iter()
                    .filter(|a| {
                        matches!(a, Val::Tensor(_) | Val::Tensors { .. } | Val::Deferred(_))
                    })
                    .collect();
                let cpu = host_data
                    || args.iter().any(Val::is_cpu_placement)
                    || (!tensors.is_empty() && tensors.iter().all(|a| a.is_cpu_tensor()));
                Val::Tensor(TensorFacts {
                    cpu,
                    scalar: false,
                    mask: false,
                })
            }
            Some("Device") => Val::Device { cpu: false },
            // tch's mini-batch iterator over (inputs, targets).
            Some("Iter2") if name == "new" => {
                let cpu = args.first().is_some_and(Val::is_cpu_tensor);
                let batch = Val::Tensor(TensorFacts {
                    cpu,
                    ..TensorFacts::default()
                });
                Val::Iter(Box::new(Val::Tuple(vec![batch.clone(), batch])))
            }
            _ if matches!(name.as_str(), "Some" | "Ok" | "Box" | "new")
                && matches!(
                    qualifier,
                    None | Some("Box" | "Rc" | "Arc" | "RefCell" | "Mutex" | "Cell")
                ) =>
            {
                if name == "new" && qualifier.is_none() {
                    self.record_call(Callee::Free(name.clone()), loc);
                    return Val::Deferred(TypeRef::Return { owner: None, name });
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
                    Some(owner) => {
                        self.record_call(
                            Callee::Assoc {
                                owner: owner.clone(),
                                name: name.clone(),
                            },
                            loc,
                        );
                        Val::Deferred(TypeRef::Return {
                            owner: Some(Box::new(owner)),
                            name,
                        })
                    }
                    None => {
                        self.record_call(Callee::Free(name.clone()), loc);
                        Val::Deferred(TypeRef::Return { owner: None, name })
                    }
                }
            }
        }
    }

    fn method_call(&mut self, m: &ExprMethodCall) -> Val {
        let receiver = self.expr(&m.receiver);
        let name = m.method.to_string();
        let adapter = self.adapter_params(&name, &receiver);
        let mut args = Vec::with_capacity(m.args.len());
        for arg in &m.args {
            let value = match (arg, &adapter) {
                (Expr::Closure(c), Some(params)) => self.closure_loop(
                    c,
                    params,
                    matches!(name.as_str(), "for_each" | "try_for_each"),
                ),
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
        let call = MethodCall {
            name: &name,
            args: &args,
            scalar_turbofish,
        };
        let checks = [
            host_sync::method,
            host_value_op::method,
            data_dependent_shape::method,
            syncing_helper::method,
        ];
        if let Some(hit) = checks.iter().find_map(|check| check(&call)) {
            self.report(hit, &receiver, loc);
        }
        if !self.patterns.is_empty() {
            self.custom(&name, loc);
        }
        if name == "try_into" && args.is_empty() {
            let by_ref = matches!(&*m.receiver, Expr::Reference(_))
                || matches!(&*m.receiver, Expr::Paren(p) if matches!(&*p.expr, Expr::Reference(_)));
            self.last_try_into = Some((receiver.clone(), loc, by_ref));
        }
        if name == "push" {
            if let (Expr::Path(p), Some(Val::Tensor(pushed))) = (&*m.receiver, args.first()) {
                if let Some(ident) = p.path.get_ident() {
                    let cpu = match &receiver {
                        Val::Tensors { cpu, .. } => *cpu && pushed.cpu,
                        _ => pushed.cpu,
                    };
                    self.rebind(
                        &ident.to_string(),
                        Val::Tensors {
                            cpu,
                            mask: pushed.mask,
                        },
                    );
                }
            }
        }
        if matches!(receiver, Val::Unknown | Val::Deferred(_) | Val::Tensor(_))
            && !TRANSPARENT.contains(&name.as_str())
        {
            self.record_call(
                Callee::Method {
                    receiver: receiver.type_ref(),
                    name: name.clone(),
                },
                loc,
            );
        }
        self.method_value(&name, receiver, &args, m)
    }

    /// If `name` is an iterator adapter called on an iterator, the values
    /// its closure receives.
    fn adapter_params(&self, name: &str, receiver: &Val) -> Option<Vec<Val>> {
        let element = match receiver {
            Val::Iter(element) => (**element).clone(),
            _ if matches!(name, "for_each" | "try_for_each") => Val::Unknown,
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

    fn method_value(&mut self, name: &str, receiver: Val, args: &[Val], m: &ExprMethodCall) -> Val {
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
                if args.is_empty() && !matches!(receiver, Val::Deferred(_)) =>
            {
                return Val::Iter(Box::new(Val::Other));
            }
            ("values" | "values_mut", _)
                if args.is_empty() && !matches!(receiver, Val::Deferred(_)) =>
            {
                return Val::Iter(Box::new(Val::Unknown));
            }
            ("enumerate", Val::Iter(element)) => {
                return Val::Iter(Box::new(Val::Tuple(vec![Val::Other, (**element).clone()])));
            }
            ("zip", Val::Iter(element)) => {
                let other = args.first().and_then(Val::element).unwrap_or(Val::Unknown);
                return Val::Iter(Box::new(Val::Tuple(vec![(**element).clone(), other])));
            }
            ("to_device", Val::Iter(element)) => {
                let cpu = args.first().is_some_and(Val::is_cpu_placement);
                return Val::Iter(Box::new(with_placement((**element).clone(), cpu)));
            }
            (_, Val::Iter(_)) if SAME_ELEMENTS.contains(&name) => return receiver,
            ("map" | "filter_map" | "flat_map" | "map_while", Val::Iter(_)) => {
                return Val::Iter(Box::new(args.first().cloned().unwrap_or(Val::Unknown)));
            }
            ("collect", Val::Iter(element)) => {
                return match &**element {
                    Val::Tensor(facts) => Val::Tensors {
                        cpu: facts.cpu,
                        mask: facts.mask,
                    },
                    _ => Val::Unknown,
                };
            }
            ("next" | "last" | "nth", Val::Iter(element)) => return (**element).clone(),
            (
                "first" | "last" | "get" | "pop" | "remove" | "swap_remove" | "pop_front"
                | "pop_back",
                Val::Tensors { .. },
            ) => {
                return receiver.element().unwrap_or(Val::Unknown);
            }
            ("chunks" | "windows" | "chunks_exact", Val::Tensors { .. }) => {
                return Val::Iter(Box::new(receiver))
            }
            ("train_iter" | "test_iter", _) if self.mentions_tch => {
                return Val::Iter(Box::new(Val::Tuple(vec![
                    Val::device_tensor(),
                    Val::device_tensor(),
                ])));
            }
            _ => {}
        }
        match receiver {
            Val::Tensor(facts) => tensor_method(name, facts, args),
            Val::Unknown | Val::Deferred(_) if self.mentions_tch && name == "to_device" => {
                Val::Tensor(TensorFacts {
                    cpu: args.first().is_some_and(Val::is_cpu_placement),
                    ..Default::default()
                })
            }
            Val::Unknown | Val::Deferred(_)
                if self.mentions_tch && is_comparison(name) && args.len() == 1 =>
            {
                Val::Tensor(TensorFacts {
                    cpu: false,
                    scalar: false,
                    mask: true,
                })
            }
            Val::Unknown | Val::Deferred(_) if self.mentions_tch && tch_tensor_method(name) => {
                Val::Tensor(TensorFacts {
                    cpu: false,
                    scalar: is_loss(name),
                    mask: false,
                })
            }
            Val::Unknown | Val::Deferred(_)
                if self.mentions_tch
                    && matches!(name, "mean" | "sum" | "prod")
                    && matches!(m.args.first(), Some(Expr::Path(p)) if path_has_segment(&p.path, "Kind")) =>
            {
                Val::Tensor(TensorFacts {
                    cpu: false,
                    scalar: true,
                    mask: false,
                })
            }
            Val::Unknown | Val::Deferred(_) => Val::Deferred(TypeRef::Return {
                owner: Some(Box::new(receiver.type_ref())),
                name: name.to_owned(),
            }),
            _ => Val::Unknown,
        }
    }

    // ----- recording ---------------------------------------------------

    /// Records a rule's hit if its subject passes the rule's bar.
    pub(crate) fn report(&mut self, hit: Hit, subject: &Val, loc: Loc) {
        let Gate::Report(requirement) = gate(subject, hit.need, self.mentions_tch) else {
            return;
        };
        self.push_site(Site {
            hit,
            loc,
            context: self.fn_state.context.clone(),
            requirement,
            pattern: None,
            via: Vec::new(),
        });
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
                pattern: Some(index),
                via: Vec::new(),
            });
        }
    }

    fn record_call(&mut self, callee: Callee, loc: Loc) {
        self.facts.calls.push(CallSite {
            callee,
            loc,
            context: self.fn_state.context.clone(),
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
            site.context = Context {
                periodic,
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
}

/// The value of a classified type.
fn kind_val(kind: &TyKind) -> Val {
    match kind {
        TyKind::Tensor => Val::device_tensor(),
        TyKind::Tensors => Val::Tensors {
            cpu: false,
            mask: false,
        },
        TyKind::Named(name) => Val::Deferred(TypeRef::Named(name.clone())),
        TyKind::Tuple(parts) => Val::Tuple(parts.iter().map(kind_val).collect()),
        TyKind::Device => Val::Device { cpu: false },
        TyKind::Other => Val::Other,
    }
}

fn cpu_options() -> Val {
    Val::Tuple(vec![Val::Other, Val::Device { cpu: true }])
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
    Val::Tensors {
        cpu: tensors.iter().all(|t| t.cpu),
        mask: tensors.iter().any(|t| t.mask),
    }
}

fn with_placement(value: Val, cpu: bool) -> Val {
    match value {
        Val::Tensor(facts) => Val::Tensor(TensorFacts { cpu, ..facts }),
        Val::Tuple(parts) => {
            Val::Tuple(parts.into_iter().map(|p| with_placement(p, cpu)).collect())
        }
        other => other,
    }
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
        Val::Deferred(_) | Val::Unknown => Val::Deferred(TypeRef::Field {
            base: Box::new(base.type_ref()),
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

/// `step % 100 == 0`, `(i + 1) % log_every == 0`, `step.is_multiple_of(10)`,
/// possibly combined with `&&`.
fn is_periodic(cond: &Expr) -> bool {
    fn is_rem(e: &Expr) -> bool {
        match e {
            Expr::Binary(b) => matches!(b.op, BinOp::Rem(_)),
            Expr::Paren(p) => is_rem(&p.expr),
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
