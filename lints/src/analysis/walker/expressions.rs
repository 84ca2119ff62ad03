//! Expressions, control flow and loops: what each evaluates to, which loop
//! and guard code runs in, and the stores into fields it makes.

use super::*;
use syntax::{
    asks_a_schedule, asks_for_user_input, breaks_at_once, builds_an_error, counts_components,
    counts_environments, counts_layers, diverges, drives_requests, driving_tensor_iter,
    expr_diverges, fixed_count, flushes_a_buffer, hands_back_an_error, is_last_step,
    is_none_pattern, is_one_iteration, is_periodic, is_range, is_self_field_collection,
    moved_to_device, moves_its_input, pattern_names, resets_a_mark, runs_a_model, runs_an_update,
    self_fields, starts_with_request, walks_inputs, walks_parameters, walks_texts, RequestSource,
};

impl Walker<'_> {
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

    pub(super) fn expr_inner(&mut self, expr: &Expr) -> Val {
        match expr {
            Expr::Array(a) => {
                let values: Vec<Val> = a.elems.iter().map(|e| self.expr(e)).collect();
                collection_of(values)
            }
            Expr::Assign(a) => {
                let value = self.expr(&a.right);
                if self.assigns_from_before_loop(&a.left) {
                    let model = runs_a_model(&a.right);
                    self.mark_loop(|l| {
                        l.carries = true;
                        l.feeds_back |= model;
                    });
                }
                match &*a.left {
                    Expr::Path(p) if p.path.segments.len() == 1 && p.qself.is_none() => {
                        self.rebind(&p.path.segments[0].ident.to_string(), value);
                    }
                    // `self.device = d`, or through fields, `self.config.device
                    // = device` (a builder's setter).
                    Expr::Field(f) => match self_fields(&f.base) {
                        Some(through) => self.store_field_through(None, through, &f.member, &value),
                        None => {
                            self.expr(&a.left);
                            if !self.replace_tuple_part(&f.base, &f.member, &value) {
                                self.store_into_local(&f.base, &value);
                            }
                        }
                    },
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
            // `Err(format!("{t}"))`: built only on the way out of a failure.
            Expr::Call(c) if builds_an_error(c) => self.cold(Cold::Failure, |w| w.call(c)),
            Expr::Call(c) => self.call(c),
            // `x as f64` is a number; `&mut agent as &mut dyn Agent` is
            // still the agent, seen through a trait.
            Expr::Cast(c) => {
                let value = self.expr(&c.expr);
                match &*c.ty {
                    Type::Reference(_) | Type::Ptr(_) | Type::TraitObject(_) => {
                        match self.classify(&c.ty) {
                            // The trait names every implementation it may be.
                            TyKind::Named(name) => Val::Deferred(
                                TypeRef::Named(name),
                                value.place().unwrap_or_default(),
                            ),
                            _ => value,
                        }
                    }
                    _ => Val::Other,
                }
            }
            Expr::Closure(c) => self.closure_value(c),
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
                        zero_dim_if: None,
                        forward_of: None,
                    }),
                    Val::Deferred(t, place) => Val::Deferred(
                        TypeRef::Part {
                            base: Box::new(t),
                            index: None,
                        },
                        place,
                    ),
                    // A collection of tuples.
                    Val::Iter(element) => *element,
                    // `t.size()[0]`: a part of a known non-tensor is none.
                    Val::Other => Val::Other,
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
                self.fn_state.moved_in_loops.push(moved_to_device(&l.body));
                self.mark_loop(|l| {
                    l.repeats = true;
                    l.open_ended = true;
                });
                if let Some(source) = starts_with_request(&l.body) {
                    self.mark_loop(|l| {
                        l.request = true;
                        l.from_channel = source == RequestSource::Channel;
                    });
                    if let Some(syn::Stmt::Local(first)) = l.body.stmts.first() {
                        self.fn_state
                            .request_items
                            .extend(pattern_names(&first.pat));
                    }
                }
                let marks = self.marks();
                self.block(&l.body);
                if breaks_at_once(&l.body, l.label.as_ref()) {
                    self.runs_once(marks);
                }
                self.fn_state.moved_in_loops.pop();
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
                    // `return Err(..)` hands back an error, no tensor: the
                    // place of what the function returns is its `Ok`'s.
                    let error = matches!(&**e, Expr::Call(c) if builds_an_error(c));
                    if !error {
                        self.note_return(&value);
                    }
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
                self.mark_loop(|l| {
                    l.repeats = true;
                    l.open_ended = true;
                });
                let source = drives_requests(&w.cond).or_else(|| {
                    self.reads_a_client(&w.cond)
                        .then_some(RequestSource::Outside)
                });
                if let Some(source) = source {
                    self.mark_loop(|l| {
                        l.request = true;
                        l.from_channel = source == RequestSource::Channel;
                    });
                    if let Expr::Let(taken) = &*w.cond {
                        self.fn_state
                            .request_items
                            .extend(pattern_names(&taken.pat));
                    }
                }
                self.fn_state.moved_in_loops.push(moved_to_device(&w.body));
                self.push_scope();
                self.expr(&w.cond);
                let marks = self.marks();
                self.block(&w.body);
                if breaks_at_once(&w.body, w.label.as_ref()) {
                    self.runs_once(marks);
                }
                self.pop_scope();
                self.fn_state.moved_in_loops.pop();
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
    pub(super) fn struct_literal(&mut self, s: &syn::ExprStruct) -> Val {
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

    /// `Owner(a, b)`: stores each argument into its field (`0`, `1`, ...);
    /// the value is on the CPU if every argument that holds data is.
    pub(super) fn tuple_struct(&mut self, owner: String, c: &ExprCall) -> Val {
        let mut place: Option<Place> = None;
        for (index, arg) in c.args.iter().enumerate() {
            let value = self.expr(arg);
            if let Some(p) = value.place() {
                place = Some(place.map_or(p.clone(), |before| before.both(p)));
            }
            let member = Member::Unnamed(syn::Index {
                index: index as u32,
                span: Span::call_site(),
            });
            self.store_field(Some(owner.clone()), &member, &value);
        }
        Val::Deferred(TypeRef::Named(owner), place.unwrap_or_default())
    }

    /// Whether an expression visibly holds no data: literals, locals known
    /// to hold none, and enum variants, structs, tuples and `Ok`/`Some`
    /// built only from such (`Stats::BatchSize(n)`, `(id, true)`).
    pub(super) fn holds_no_data(&self, expr: &Expr) -> bool {
        match expr {
            Expr::Lit(_) | Expr::Cast(_) => true,
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|i| matches!(self.lookup(&i.to_string()), Some(Val::Other))),
            Expr::Reference(r) => self.holds_no_data(&r.expr),
            Expr::Paren(p) => self.holds_no_data(&p.expr),
            Expr::Tuple(t) => t.elems.iter().all(|e| self.holds_no_data(e)),
            Expr::Struct(s) => {
                s.rest.is_none() && s.fields.iter().all(|f| self.holds_no_data(&f.expr))
            }
            Expr::Call(c) => {
                matches!(&*c.func, Expr::Path(p) if p.path.segments.last().is_some_and(|s|
                    s.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase())))
                    && c.args.iter().all(|a| self.holds_no_data(a))
            }
            Expr::MethodCall(m) => {
                matches!(
                    m.method.to_string().as_str(),
                    "len" | "is_empty" | "to_string"
                )
            }
            _ => false,
        }
    }

    /// Records a value sent over a channel (`tx.send(v)`): a store into the
    /// channel's one field, a tuple's parts one by one (the message is on
    /// the CPU if each of them is), and each part again by its position. A
    /// value that holds no data (`()`, a number, a sender) says nothing
    /// about where received data is. `built` is the message as written
    /// when it is a struct or enum value built there (see
    /// [`sends_named_value`]) or an array.
    pub(super) fn store_sent(&mut self, value: &Val, built: bool) {
        if let Val::Tuple(parts) = value {
            for (index, part) in parts.iter().enumerate() {
                self.store_sent_into(CHANNEL_MESSAGE, part);
                self.store_sent_into(&channel_part(index), part);
            }
            return;
        }
        self.store_sent_into(CHANNEL_MESSAGE, value);
        // A tensor or a list of them is no tuple either.
        if !built && !matches!(value, Val::Tensor(_) | Val::Tensors { .. }) {
            self.store_sent_into(CHANNEL_OPEN, value);
        }
    }

    /// Records one value sent over a channel into the channel's `field`.
    fn store_sent_into(&mut self, field: &str, value: &Val) {
        if let Val::Tuple(parts) = value {
            for part in parts {
                self.store_sent_into(field, part);
            }
            return;
        }
        if field == CHANNEL_MESSAGE {
            match value {
                Val::Tensor(_) => self.facts.sent.push(TyKind::Tensor),
                Val::Tensors { .. } => self.facts.sent.push(TyKind::Tensors),
                Val::Deferred(TypeRef::Named(name), _) => {
                    self.facts.sent.push(TyKind::Named(name.clone()))
                }
                _ => {}
            }
        }
        self.facts.field_stores.push(FieldStore {
            owner: CHANNEL.to_owned(),
            field: field.to_owned(),
            place: value.place(),
            empty: *value == Val::Other,
            function: self.fn_state.context.function,
            through: Vec::new(),
            ty: match value {
                Val::Deferred(ty, _) => Some(ty.clone()),
                _ => None,
            },
        });
    }

    /// Records `owner.field = value` (`owner` defaults to `Self`).
    pub(super) fn store_field(&mut self, owner: Option<String>, member: &Member, value: &Val) {
        self.store_field_through(owner, Vec::new(), member, value);
    }

    /// Records `owner.a.b.field = value`: a store into the struct that the
    /// fields `through` (`a`, `b`) of `owner` lead to.
    pub(super) fn store_field_through(
        &mut self,
        owner: Option<String>,
        through: Vec<String>,
        member: &Member,
        value: &Val,
    ) {
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
            empty: *value == Val::Other,
            function: self.fn_state.context.function,
            through,
            ty: None,
        });
    }

    pub(super) fn binary(&mut self, b: &ExprBinary) -> Val {
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

    pub(super) fn if_expr(&mut self, i: &ExprIf) -> Val {
        self.push_scope();
        self.expr(&i.cond);
        // A guard that holds on few iterations: every N steps, the last
        // batch of an epoch, the data running out (`batch.is_none()` of a
        // `next()`).
        let ran_out = matches!(&*i.cond, Expr::MethodCall(m)
            if m.method == "is_none" && self.takes_next_item(&m.receiver));
        // A guard around the update itself (`if t % train_every == 0 {
        // ..; opt.backward_step(&loss); .. }`) picks the optimizer steps:
        // each run of its block is one step, and its reads run once per step.
        // So does a buffer's flush once it holds enough (`if pending.len()
        // >= target { ..; pending.clear(); }`), and a schedule asked by name
        // (`if should_eval(step, ..)`).
        let periodic = (is_periodic(&i.cond)
            || flushes_a_buffer(&i.cond, &i.then_branch)
            || resets_a_mark(&i.cond, &i.then_branch)
            || (self.fn_state.context.loop_id.is_some() && asks_a_schedule(&i.cond)))
            && !runs_an_update(&i.then_branch);
        // `if step == 999` of `for step in 0..1000`: one iteration.
        let counter = self
            .fn_state
            .context
            .loop_id
            .and_then(|id| self.facts.loops[id].counter.as_deref());
        let once = counter.is_some_and(|counter| is_one_iteration(&i.cond, counter));
        // A branch taken when the user clicks or presses a key runs once
        // per user event.
        let user_event = asks_for_user_input(&i.cond);
        let guard = (periodic || once || is_last_step(&i.cond) || ran_out || user_event)
            .then(|| self.source_of(&*i.cond));
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
        // A branch taken only once a value has gone bad (`if loss.is_nan()
        // || loss.is_infinite() { ..diagnostics..; continue }`) runs once
        // something has failed, like an error's message.
        if is_anomaly_check(&i.cond) && self.fn_state.context.cold.is_none() {
            self.fn_state.context.cold = Some(Cold::Failure);
        }
        // A branch the file's boolean constants turn off never runs.
        let truth = self.constant_truth(&i.cond);
        if truth == Some(false) && self.fn_state.context.cold.is_none() {
            self.fn_state.context.cold = Some(Cold::Disabled {
                condition: self.source_of(&*i.cond),
                otherwise: false,
            });
        }
        // A branch on a `bool` parameter (`if debug { .. }`): the crate
        // pass asks whether any call passes the value that takes it.
        let flag = truth
            .is_none()
            .then(|| self.flag_test(&i.cond))
            .flatten()
            .filter(|_| self.fn_state.context.flag.is_none());
        if flag.is_some() {
            self.fn_state.context.flag.clone_from(&flag);
        }
        let then_value = self.block(&i.then_branch);
        self.fn_state.context.cold = saved_cold;
        self.fn_state.context.periodic = saved;
        if flag.is_some() {
            self.fn_state.context.flag = None;
        }
        self.pop_scope();
        match &i.else_branch {
            Some((_, else_expr)) => {
                // `if let Some(b) = loader.next_batch() { .. } else { .. }`:
                // the else branch runs once the data ran out.
                let ran_out = self.data_present(&i.cond);
                if let Some(guard) = &flag {
                    self.fn_state.context.flag = Some(FlagGuard {
                        on: !guard.on,
                        ..guard.clone()
                    });
                }
                let else_value = if truth == Some(true) {
                    let disabled = Cold::Disabled {
                        condition: self.source_of(&*i.cond),
                        otherwise: true,
                    };
                    self.cold(disabled, |w| w.guarded(ran_out, |w| w.expr(else_expr)))
                } else {
                    self.guarded(ran_out, |w| w.expr(else_expr))
                };
                if flag.is_some() {
                    self.fn_state.context.flag = None;
                }
                if diverges(&i.then_branch) {
                    else_value
                } else if expr_diverges(else_expr) {
                    then_value
                } else {
                    then_value.join(else_value)
                }
            }
            None => Val::Other,
        }
    }

    pub(super) fn match_expr(&mut self, m: &ExprMatch) -> Val {
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
            // `None =>` of `loader.next()`: the data ran out.
            let ran_out = (is_none_pattern(&arm.pat) && self.takes_next_item(&m.expr))
                .then(|| format!("{} is None", self.source_of(&*m.expr)));
            let arm_value = self.guarded(ran_out, |w| w.expr(&arm.body));
            self.pop_scope();
            // An arm that diverges, or hands back an error (`_ =>
            // Err(..)`), gives the match no tensor of its own.
            if expr_diverges(&arm.body) || hands_back_an_error(&arm.body) {
                continue;
            }
            value = Some(match value {
                Some(v) => v.join(arm_value),
                None => arm_value,
            });
        }
        value.unwrap_or(Val::Other)
    }

    pub(super) fn for_loop(&mut self, f: &ExprForLoop) -> Val {
        let sites_before = self.facts.sites.len();
        let iterable = self.expr(&f.expr);
        let saved = self.enter_loop(true, f.for_token.span.start().line);
        let source = drives_requests(&f.expr).or_else(|| {
            self.reads_a_client(&f.expr)
                .then_some(RequestSource::Outside)
        });
        if let Some(source) = source {
            self.mark_loop(|l| {
                l.request = true;
                l.from_channel = source == RequestSource::Channel;
            });
            self.fn_state.request_items.extend(pattern_names(&f.pat));
        }
        if is_self_field_collection(&f.expr) || (is_range(&f.expr) && counts_components(&f.expr)) {
            self.mark_loop(|l| l.over_components = true);
        } else if is_range(&f.expr) {
            self.mark_loop(|l| l.repeats = true);
        }
        if fixed_count(&f.expr, &self.fn_state.lists) {
            self.mark_loop(|l| l.fixed = true);
        }
        if walks_inputs(&f.expr, &self.fn_state.inputs) {
            self.mark_loop(|l| l.over_inputs = true);
        }
        if walks_texts(&f.expr, &self.fn_state.lists) {
            self.mark_loop(|l| l.listed = true);
        }
        if walks_parameters(&f.expr) {
            self.mark_loop(|l| l.over_parameters = true);
        }
        if counts_environments(&f.expr) {
            self.mark_loop(|l| l.over_environments = true);
        }
        if counts_layers(&f.expr) {
            self.mark_loop(|l| l.over_layers = true);
        }
        if let (true, Pat::Ident(counter)) = (is_range(&f.expr), &*f.pat) {
            let counter = counter.ident.to_string();
            self.mark_loop(|l| l.counter = Some(counter));
        }
        // `for v in t.iter::<f64>()` reads one element per iteration of this
        // very loop, so the read belongs inside it.
        if let Some(start) = driving_tensor_iter(&f.expr) {
            let loop_context = self.fn_state.context.clone();
            for site in &mut self.facts.sites[sites_before..] {
                if site.hit.own_loop == Some(OwnLoop::Elements)
                    && (site.loc.line, site.loc.column) == start
                {
                    site.context = Context {
                        statement_line: site.context.statement_line,
                        statement: site.context.statement,
                        ..loop_context.clone()
                    };
                }
            }
        }
        // `for res in trainer`: each iteration calls the iterator's
        // `next`, which the crate pass resolves where the type is the
        // crate's own (`impl Iterator for Trainer`, a training step a
        // batch). A reference, a value of unknown type or a generic
        // iterator is left alone.
        if let Val::Deferred(ty, place) = &iterable {
            // A generic `I: Iterator` is std's trait: its `next` is no
            // crate method.
            let std_iterator = matches!(ty, TypeRef::Named(name)
                if matches!(name.as_str(), "Iterator" | "IntoIterator" | "DoubleEndedIterator" | "ExactSizeIterator"));
            if *ty != TypeRef::Unknown && !std_iterator && !matches!(&*f.expr, Expr::Reference(_)) {
                let loc = self.loc(f.for_token.span, f.expr.span());
                self.record_call(
                    Callee::Method {
                        receiver: ty.clone(),
                        name: "next".to_owned(),
                    },
                    loc,
                    vec![Some(place.clone())],
                    vec![None],
                    false,
                );
            }
        }
        self.push_scope();
        self.fn_state.moved_in_loops.push(moved_to_device(&f.body));
        let element = iterable.element().unwrap_or(Val::Unknown);
        let element = self.host_until_moved(&f.pat, element);
        self.fn_state.binding_items = true;
        self.fn_state.binding_parts = self.holds_parts(&f.expr);
        self.bind_pat(&f.pat, element);
        self.fn_state.binding_items = false;
        self.fn_state.binding_parts = false;
        let marks = self.marks();
        self.block(&f.body);
        if breaks_at_once(&f.body, f.label.as_ref()) {
            self.runs_once(marks);
        }
        self.fn_state.moved_in_loops.pop();
        self.pop_scope();
        self.exit_loop(saved);
        Val::Other
    }

    pub(super) fn enter_loop(&mut self, statement: bool, line: usize) -> Context {
        let id = self.facts.loops.len();
        let parent = self.fn_state.context.loop_id;
        self.facts.loops.push(LoopFacts {
            parent,
            function: self.fn_state.context.function,
            line,
            statement,
            periodic: parent.is_some() && self.fn_state.context.periodic.is_some(),
            ..LoopFacts::default()
        });
        let saved = self.fn_state.context.clone();
        self.fn_state.context.loop_id = Some(id);
        self.fn_state.context.periodic = None;
        self.fn_state.loop_scopes.push(self.fn_state.scopes.len());
        saved
    }

    /// Where the facts of the innermost loop's body start: the loop, and
    /// the first site, call and loop its body records.
    pub(super) fn marks(&self) -> (usize, usize, usize, usize) {
        (
            self.fn_state.context.loop_id.unwrap_or(usize::MAX),
            self.facts.sites.len(),
            self.facts.calls.len(),
            self.facts.loops.len(),
        )
    }

    /// The innermost loop leaves at once on its first pass (`for b in
    /// batches { ..; break; }`): it runs its body once, so what the body
    /// holds sits where the loop does, and the steps it runs are its
    /// surroundings'.
    pub(super) fn runs_once(&mut self, (id, sites, calls, loops): (usize, usize, usize, usize)) {
        let Some(facts) = self.facts.loops.get_mut(id) else {
            return;
        };
        let parent = facts.parent;
        let (update, forward, forward_named, update_named) = (
            std::mem::take(&mut facts.update),
            std::mem::take(&mut facts.forward),
            std::mem::take(&mut facts.forward_named),
            std::mem::take(&mut facts.update_named),
        );
        for site in &mut self.facts.sites[sites..] {
            if site.context.loop_id == Some(id) {
                site.context.loop_id = parent;
            }
        }
        for call in &mut self.facts.calls[calls..] {
            if call.context.loop_id == Some(id) {
                call.context.loop_id = parent;
            }
        }
        for inner in &mut self.facts.loops[loops..] {
            if inner.parent == Some(id) {
                inner.parent = parent;
            }
        }
        if let Some((outer_update, outer_forward, outer_named, outer_update_named)) =
            self.all_step_marks(parent)
        {
            *outer_update |= update;
            *outer_forward |= forward;
            *outer_named |= forward_named;
            *outer_update_named |= update_named;
        }
    }

    pub(super) fn exit_loop(&mut self, saved: Context) {
        self.fn_state.loop_scopes.pop();
        let statement = self.fn_state.context.statement;
        let statement_line = self.fn_state.context.statement_line;
        self.fn_state.context = Context {
            statement,
            statement_line,
            ..saved
        };
    }

    /// Whether an assignment's target names (a name, or a tuple of them)
    /// were bound before the innermost loop: what the assignment stores is
    /// there for the loop's next iteration.
    pub(super) fn assigns_from_before_loop(&self, left: &Expr) -> bool {
        let Some(&loop_scope) = self.fn_state.loop_scopes.last() else {
            return false;
        };
        let before_loop = |name: &str| {
            self.fn_state
                .bindings
                .iter()
                .rev()
                .find(|b| b.name == name)
                .is_some_and(|b| b.depth <= loop_scope)
        };
        match left {
            Expr::Path(p) => p
                .path
                .get_ident()
                .is_some_and(|name| before_loop(&name.to_string())),
            Expr::Tuple(t) => t.elems.iter().any(|e| self.assigns_from_before_loop(e)),
            _ => false,
        }
    }

    /// `pair.0 = pair.0.to(Device::Cpu)`: the local tuple's part is the
    /// new value from then on, the other parts what they were. Whether it
    /// was one.
    fn replace_tuple_part(&mut self, base: &Expr, member: &Member, value: &Val) -> bool {
        let (Expr::Path(p), Member::Unnamed(index)) = (base, member) else {
            return false;
        };
        let Some(name) = p.path.get_ident().map(ToString::to_string) else {
            return false;
        };
        let index = index.index as usize;
        let mut parts = match self.lookup(&name).cloned() {
            Some(Val::Tuple(parts)) => parts,
            // A tuple a crate function returned: its parts as fields of it
            // (a pair at least).
            Some(whole @ Val::Deferred(..)) => (0..=index.max(1))
                .map(|i| field_val(whole.clone(), &Member::Unnamed(i.into())))
                .collect(),
            _ => return false,
        };
        if index >= parts.len() {
            parts.resize(index + 1, Val::Unknown);
        }
        parts[index] = value.clone();
        self.rebind(&name, Val::Tuple(parts));
        true
    }

    /// `m.train_images = m.train_images.to_device(device)`: a local whose
    /// field takes a value that may be on a device holds device data from
    /// then on, wherever the rest of it was built.
    fn store_into_local(&mut self, base: &Expr, value: &Val) {
        let Expr::Path(p) = base else {
            return;
        };
        let (Some(name), Some(stored)) = (p.path.get_ident(), value.place()) else {
            return;
        };
        if stored.is_cpu() {
            return;
        }
        let name = name.to_string();
        if let Some(Val::Deferred(ty, place)) = self.lookup(&name).cloned() {
            self.rebind(&name, Val::Deferred(ty, place.both(stored)));
        }
    }

    /// Marks the innermost loop, if there is one.
    pub(super) fn mark_loop(&mut self, mark: impl FnOnce(&mut LoopFacts)) {
        if let Some(id) = self.fn_state.context.loop_id {
            mark(&mut self.facts.loops[id]);
        }
    }

    /// Notes the step a call by this name marks, if any: an update, or
    /// running a model. Clearing gradients outside loops is no update of
    /// the function's own: it is the tidying around one (before a loop of
    /// minibatches, or after it), not a step that a call runs each time.
    /// A forward pass by name that `may_be_crate` (a function or a method
    /// of a value of unknown type) is left to the crate pass, which knows
    /// whether the function it reaches runs a model.
    pub(super) fn mark_named_step(&mut self, name: &str, may_be_crate: bool) {
        if is_update(name) {
            if name != "zero_grad" || self.fn_state.context.loop_id.is_some() {
                self.mark_step(true);
            }
        } else if is_forward(name) && !may_be_crate {
            self.mark_step(false);
        } else if is_forward(name) {
            // The crate pass decides whether the function it reaches runs
            // a model (`forward_named`).
            if let Some((_, _, named)) = self.step_marks(self.fn_state.context.loop_id) {
                *named = true;
            }
        }
    }

    /// Notes a step marker (`update`: a backward or optimizer step;
    /// otherwise running a model) on the innermost loop, or on the
    /// function when outside loops.
    pub(super) fn mark_step(&mut self, update: bool) {
        if let Some((runs_update, runs_forward, _)) = self.step_marks(self.fn_state.context.loop_id)
        {
            if update {
                *runs_update = true;
            } else {
                *runs_forward = true;
            }
        }
    }

    /// The step marks (runs an update, runs a model, calls a forward pass
    /// by name) of a loop, or of the function being walked where `loop_id`
    /// is none: outside functions, none.
    fn step_marks(&mut self, loop_id: Option<usize>) -> Option<(&mut bool, &mut bool, &mut bool)> {
        self.all_step_marks(loop_id)
            .map(|(update, forward, forward_named, _)| (update, forward, forward_named))
    }

    /// [`Self::step_marks`] and the bare `step()` mark (see
    /// [`LoopFacts::update_named`]).
    fn all_step_marks(
        &mut self,
        loop_id: Option<usize>,
    ) -> Option<(&mut bool, &mut bool, &mut bool, &mut bool)> {
        match (loop_id, self.fn_state.context.function) {
            (Some(id), _) => {
                let l = &mut self.facts.loops[id];
                Some((
                    &mut l.update,
                    &mut l.forward,
                    &mut l.forward_named,
                    &mut l.update_named,
                ))
            }
            (None, Some(f)) => {
                let f = &mut self.facts.functions[f];
                Some((
                    &mut f.update,
                    &mut f.forward,
                    &mut f.forward_named,
                    &mut f.update_named,
                ))
            }
            (None, None) => None,
        }
    }

    /// A bare `x.step()` on a value the crate's own type may be: an
    /// optimizer step, or a game's or a simulation's own step (`self.step()`
    /// advancing a search to its next leaf), which the crate pass tells
    /// apart by where the method it reaches lives.
    pub(super) fn mark_named_update(&mut self) {
        if let Some((_, _, _, named)) = self.all_step_marks(self.fn_state.context.loop_id) {
            *named = true;
        }
    }

    /// A closure that runs where it is written (`no_grad(|| ..)`, a
    /// callback): its body is walked in the current context.
    pub(super) fn closure(&mut self, c: &ExprClosure) -> Val {
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

    /// A closure as a value: a module that computes where its body does
    /// when it moves its input to a device (`move |xs|
    /// xs.to_device(device).apply(&net)`); otherwise nothing is known.
    pub(super) fn closure_value(&mut self, c: &ExprClosure) -> Val {
        let body = self.closure(c);
        if moves_its_input(c) {
            Val::Deferred(
                TypeRef::Written(TyKind::MovingModule),
                body.place().unwrap_or_default(),
            )
        } else {
            Val::Unknown
        }
    }

    /// A benchmark's routine (`b.iter(|| ..)`): the harness runs the
    /// closure over and over, each run one call of the code measured, as
    /// a server's loop answers one request per iteration.
    pub(super) fn bench_loop(&mut self, c: &ExprClosure) -> Val {
        let saved = self.enter_loop(true, c.or1_token.span.start().line);
        self.mark_loop(|l| {
            l.repeats = true;
            l.request = true;
        });
        let value = self.closure(c);
        self.exit_loop(saved);
        value
    }

    /// A closure an iterator adapter runs once per element of what
    /// `receiver` iterates.
    pub(super) fn closure_loop(
        &mut self,
        c: &ExprClosure,
        params: &[Val],
        statement: bool,
        parts: bool,
        receiver: &Expr,
    ) -> Val {
        let fixed = fixed_count(receiver, &self.fn_state.lists);
        let listed = walks_texts(receiver, &self.fn_state.lists);
        let saved = self.enter_loop(statement, c.or1_token.span.start().line);
        if is_self_field_collection(receiver) {
            self.mark_loop(|l| l.over_components = true);
        }
        if walks_parameters(receiver) {
            self.mark_loop(|l| l.over_parameters = true);
        }
        if walks_inputs(receiver, &self.fn_state.inputs) {
            self.mark_loop(|l| l.over_inputs = true);
        }
        if fixed {
            self.mark_loop(|l| l.fixed = true);
        }
        if listed {
            self.mark_loop(|l| l.listed = true);
        }
        self.push_scope();
        self.fn_state.binding_items = true;
        self.fn_state.binding_parts = parts;
        for (i, input) in c.inputs.iter().enumerate() {
            self.bind_pat(input, params.get(i).cloned().unwrap_or(Val::Unknown));
        }
        self.fn_state.binding_items = false;
        self.fn_state.binding_parts = false;
        self.fn_state.closure_depth += 1;
        let value = self.expr(&c.body);
        self.fn_state.closure_depth -= 1;
        self.pop_scope();
        self.exit_loop(saved);
        value
    }

    pub(super) fn path_val(&self, p: &ExprPath) -> Val {
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
                // An absent value holds no data.
                "None" => Val::Other,
                _ => imported_device(&name),
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
            _ => self
                .consts
                .get(&last)
                .cloned()
                .unwrap_or_else(|| imported_device(&last)),
        }
    }
}

/// A constant another file defines, named as devices are (`DEVICE`,
/// `TORCH_DEVICE`, `DEV`): a device the crate pass places by every
/// constant of that name in the workspace. Any other name is unknown.
fn imported_device(name: &str) -> Val {
    let constant = name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
    if constant && (name.contains("DEVICE") || name == "DEV") {
        Val::Device(Place::CpuIf(vec![PlaceRef::Const(name.to_owned())]))
    } else {
        Val::Unknown
    }
}

/// Whether a condition holds only once a host number has gone bad: a
/// disjunction of `x.is_nan()`, `x.is_infinite()` and `!x.is_finite()`
/// checks, or a conjunction with one among its terms.
fn is_anomaly_check(cond: &Expr) -> bool {
    if tests_tensor_anomaly(cond, false) {
        return true;
    }
    match cond {
        Expr::Paren(p) => is_anomaly_check(&p.expr),
        Expr::MethodCall(m) => {
            m.args.is_empty() && matches!(m.method.to_string().as_str(), "is_nan" | "is_infinite")
        }
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => matches!(&*u.expr,
            Expr::MethodCall(m) if m.args.is_empty() && m.method == "is_finite"),
        Expr::Binary(b) => match b.op {
            BinOp::Or(_) => is_anomaly_check(&b.left) && is_anomaly_check(&b.right),
            BinOp::And(_) => is_anomaly_check(&b.left) || is_anomaly_check(&b.right),
            _ => false,
        },
        _ => false,
    }
}

/// Whether a condition reads back whether a tensor went bad: `bool::from(
/// t.isnan().any())`, `t.isinf().any().int64_value(&[]) != 0`, or
/// `!bool::from(t.isfinite().all())` (`negated`: under a `!`).
fn tests_tensor_anomaly(cond: &Expr, negated: bool) -> bool {
    match cond {
        Expr::Paren(p) => tests_tensor_anomaly(&p.expr, negated),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Not(_)) => {
            tests_tensor_anomaly(&u.expr, !negated)
        }
        // `bool::from(..)`, `bool::try_from(..)`.
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p) if p.path.segments.len() == 2
                && p.path.segments[0].ident == "bool"
                && matches!(p.path.segments[1].ident.to_string().as_str(), "from" | "try_from"))
                && c.args
                    .first()
                    .is_some_and(|a| reduces_an_anomaly(a, negated))
        }
        // `.int64_value(&[]) != 0`, `.. > 0`.
        Expr::Binary(b) if matches!(b.op, BinOp::Ne(_) | BinOp::Gt(_)) && !negated => {
            reads_an_anomaly(&b.left)
        }
        Expr::MethodCall(m) => match m.method.to_string().as_str() {
            "unwrap" | "expect" => tests_tensor_anomaly(&m.receiver, negated),
            "is_nonzero" => reduces_an_anomaly(&m.receiver, negated),
            _ => false,
        },
        _ => false,
    }
}

/// `t.isnan().any().int64_value(&[])`, `f64::from(t.isinf().any())`: a
/// read of whether any element went bad.
fn reads_an_anomaly(expr: &Expr) -> bool {
    match expr {
        Expr::Paren(p) => reads_an_anomaly(&p.expr),
        Expr::MethodCall(m)
            if matches!(
                m.method.to_string().as_str(),
                "int64_value" | "double_value"
            ) =>
        {
            reduces_an_anomaly(&m.receiver, false)
        }
        Expr::MethodCall(m) if matches!(m.method.to_string().as_str(), "unwrap" | "expect") => {
            reads_an_anomaly(&m.receiver)
        }
        Expr::Call(c) => {
            matches!(&*c.func, Expr::Path(p) if p.path.segments.len() == 2
                && matches!(p.path.segments[1].ident.to_string().as_str(), "from" | "try_from"))
                && c.args.first().is_some_and(|a| reduces_an_anomaly(a, false))
        }
        _ => false,
    }
}

/// `t.isnan().any()` or `t.isinf().any()` (any element bad), or, under a
/// `!`, `t.isfinite().all()` (every element good).
fn reduces_an_anomaly(expr: &Expr, negated: bool) -> bool {
    let expr = match expr {
        Expr::Reference(r) => &*r.expr,
        Expr::Paren(p) => &*p.expr,
        other => other,
    };
    let Expr::MethodCall(m) = expr else {
        return false;
    };
    let (reduction, tests): (&str, &[&str]) = if negated {
        ("all", &["isfinite"])
    } else {
        ("any", &["isnan", "isinf", "isposinf", "isneginf"])
    };
    if m.method != reduction {
        return false;
    }
    let mut receiver = &*m.receiver;
    loop {
        match receiver {
            Expr::MethodCall(inner) if tests.contains(&inner.method.to_string().as_str()) => {
                return true
            }
            Expr::MethodCall(inner) => receiver = &inner.receiver,
            Expr::Paren(p) => receiver = &p.expr,
            _ => return false,
        }
    }
}
