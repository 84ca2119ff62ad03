//! Calls: conversions and tch operations the rules look at, calls into
//! crate-local functions recorded for the crate pass, iterator adapters run
//! as loops, and what a method call on a tensor or unknown value gives.

use super::*;
use crate::rules::{self, CalleeName, Conversion, PathCall, Target};
use syntax::{ends_in_reduction, names_a_kind, sends_named_value, takes_a_lock};

/// A type name that may be a crate's alias of a type tch converts tensors
/// into: capitalised, and not one of std's or tch's own types.
fn is_alias_candidate(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
        && !matches!(
            name,
            "Tensor" | "Kind" | "Device" | "Self" | "String" | "PathBuf" | "Box" | "Rc" | "Arc"
        )
}

impl Walker<'_> {
    pub(super) fn call(&mut self, c: &ExprCall) -> Val {
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
        // `File::create(path)`, `fs::write(path, bytes)`: the function writes
        // its data out.
        let writes = match segments.as_slice() {
            [.., owner, last] => {
                (owner == "File" && last == "create") || (owner == "fs" && last == "write")
            }
            _ => false,
        };
        if writes {
            self.fn_state.writes_out = true;
        }
        self.written_out(&name, &c.args);

        if segments.len() == 1 && func.qself.is_none() {
            match self.lookup(&name).cloned() {
                // A local closure called by name.
                Some(Val::Closure(id)) => {
                    for arg in &c.args {
                        self.expr(arg);
                    }
                    self.closure_call(id, &name, loc);
                    return self
                        .fn_state
                        .closure_values
                        .get(id)
                        .cloned()
                        .unwrap_or(Val::Unknown);
                }
                // A local value called as a function: a boxed module.
                Some(callee) => {
                    let args: Vec<Val> = c.args.iter().map(|a| self.expr(a)).collect();
                    return self.call_value(&callee, &args);
                }
                None => {}
            }
            // `Wrapper(out)`, `Self(out)`: a tuple struct built like a
            // struct literal, storing each argument into its field.
            if name.starts_with(|c: char| c.is_ascii_uppercase())
                && !matches!(name.as_str(), "Some" | "Ok" | "Err" | "Box")
            {
                let owner = if name == "Self" {
                    self.fn_state.self_ty.clone()
                } else {
                    Some(name.clone())
                };
                if let Some(owner) = owner {
                    return self.tuple_struct(owner, c);
                }
            }
        }

        // `Command::Resize(n)`: an enum variant built like a tuple struct.
        // (`Device::Cuda(0)` is tch's, and names a device.)
        if name.starts_with(|c: char| c.is_ascii_uppercase()) && func.qself.is_none() {
            if let Some(variant) = self
                .variant_name(&func.path)
                .filter(|v| !v.starts_with("Device::"))
            {
                return self.tuple_struct(variant, c);
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

        // `mpsc::channel()`, `crossbeam_channel::bounded(n)`: a sender and a
        // receiver, which hold no data of their own.
        if is_channel_constructor(&segments) {
            for arg in &c.args {
                self.expr(arg);
            }
            return Val::Tuple(vec![Val::Other, Val::Other]);
        }

        let sites_before = self.facts.sites.len();
        let mut args = Vec::with_capacity(c.args.len());
        for arg in &c.args {
            args.push(self.expr(arg));
        }
        self.written_directly(&name, sites_before);
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
                    let conversion = Conversion {
                        op: &op,
                        target,
                        by_ref,
                        fallible: name == "try_from",
                    };
                    let hit = rules::first_hit(|rule| rule.conversion(&conversion));
                    let mut subject = args.first().cloned().unwrap_or(Val::Unknown);
                    if matches!(subject, Val::Unknown | Val::Deferred(..))
                        && self.mentions_tch
                        && c.args.first().is_some_and(ends_in_reduction)
                    {
                        // `f64::from(x.abs().max())`: a zero-argument
                        // reduction converted to a scalar is a tensor's.
                        subject = Val::tensor_at(subject.place().unwrap_or_default());
                    }
                    if let Some(hit) = hit {
                        self.report_on(hit, &subject, loc, c.args.first());
                    }
                    return Val::Other;
                }
                // `AttentionHead::try_from(t)`: a conversion into a type the
                // crate may define as an alias of `Vec<Vec<f32>>`.
                if name == "try_from" && is_alias_candidate(&type_name) {
                    let op = format!("{written}::{name}");
                    let conversion = Conversion {
                        op: &op,
                        target: Target::Bulk,
                        by_ref: false,
                        fallible: true,
                    };
                    let subject = args.first().cloned().unwrap_or(Val::Unknown);
                    let whole = c.args.first().map(|a| self.whole(a)).unwrap_or_default();
                    if let Some(hit) = rules::first_hit(|rule| rule.conversion(&conversion)) {
                        if let Some(site) = self.report_site(hit, &subject, loc, None, whole) {
                            self.facts.sites[site].alias = Some(type_name);
                        }
                    }
                }
            }
        }

        // A function a rule reports on its first argument:
        // `readbacks::scalar_f64(&loss)`.
        let path_call = PathCall {
            segments: &segments,
            name: &name,
        };
        if let Some(hit) = rules::first_hit(|rule| rule.path_call(&path_call)) {
            let subject = args.first().cloned().unwrap_or(Val::Unknown);
            self.report_on(hit, &subject, loc, c.args.first());
            return Val::Other;
        }

        self.callee(CalleeName::Path(&segments), loc);

        let qualifier = (segments.len() >= 2).then(|| segments[segments.len() - 2].as_str());
        // `nn::func(move |xs| xs.to_device(d)..)`: the module is the closure.
        if matches!(name.as_str(), "func" | "func_t")
            && matches!(qualifier, None | Some("nn"))
            && args.first().is_some_and(Val::is_moving_module)
        {
            return args[0].clone();
        }
        match qualifier {
            Some("Tensor") => tensor_constructor(&name, &args, c.args.first()),
            Some(module) if self.mentions_tch && is_dataset_loader(module, &name) => Val::Deferred(
                TypeRef::Return {
                    owner: None,
                    name: name.clone(),
                },
                Place::Cpu,
            ),
            Some("Device") => Val::Device(Place::Device),
            // tch's mini-batch iterator over (inputs, targets).
            // Its batches are slices of its inputs, where they live.
            Some("Iter2") if name == "new" => {
                let place = args.first().and_then(Val::place).unwrap_or_default();
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
                    return self.crate_call(Callee::Free(segments), None, &args, c, loc, item_args);
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
                        c,
                        loc,
                        item_args,
                    ),
                    None => self.crate_call(Callee::Free(segments), None, &args, c, loc, item_args),
                }
            }
        }
    }

    /// A call that may reach a crate-local function (`call`, as written):
    /// recorded for the crate pass; its value is deferred to it.
    pub(super) fn crate_call(
        &mut self,
        callee: Callee,
        owner: Option<TypeRef>,
        args: &[Val],
        call: &ExprCall,
        loc: Loc,
        item: bool,
    ) -> Val {
        let name = callee.name().to_owned();
        let arg_places: Vec<Place> = args.iter().map(|a| a.place().unwrap_or_default()).collect();
        self.mark_named_step(&name, true);
        let literals = call.args.iter().map(|a| self.literal_bool(a)).collect();
        self.record_call(
            callee,
            loc,
            arg_places.iter().cloned().map(Some).collect(),
            literals,
            item,
        );
        let result = TypeRef::Return {
            owner: owner.map(Box::new),
            name,
        };
        let module = is_forward(&result_name(&result));
        let devices = device_handles(args, 0);
        Val::Deferred(
            result.clone(),
            Place::of_call_with_devices(result, arg_places, devices, module),
        )
    }

    /// Calling a value (a boxed module, a function pointer): runs a model,
    /// whose output is where the model is if it moves its input, and else
    /// where the model and its inputs are (see [`module_application`]).
    pub(super) fn call_value(&mut self, callee: &Val, args: &[Val]) -> Val {
        // A closure parameter (`f: &dyn Fn(..)`) is a callback, not a model.
        let callback = matches!(
            callee,
            Val::Deferred(TypeRef::Written(TyKind::Callable(_)), _)
        );
        if !callback {
            self.mark_step(false);
        }
        let place = if callee.is_moving_module() {
            callee.place().unwrap_or_default()
        } else {
            let mut places = vec![callee.imposed_place()];
            places.extend(args.iter().map(Val::imposed_place));
            Place::of_call(
                TypeRef::Return {
                    owner: Some(Box::new(callee.type_ref())),
                    name: "call".to_owned(),
                },
                places,
                true,
            )
        };
        match callee {
            // Its type is in sight: what calling it returns is known.
            Val::Deferred(TypeRef::Written(TyKind::Callable(output)), _) => kind_val(output, place),
            // A field or a call result: the crate pass reads its type.
            Val::Deferred(ty, _) if *ty != TypeRef::Unknown => {
                Val::Deferred(TypeRef::Output(Box::new(ty.clone())), place)
            }
            Val::Unknown | Val::Deferred(..) => Val::Deferred(TypeRef::Unknown, place),
            _ => Val::Unknown,
        }
    }

    /// The local closure a path names, if it names one.
    fn local_closure(&self, path: &ExprPath) -> Option<usize> {
        match self.lookup(&path.path.get_ident()?.to_string()) {
            Some(Val::Closure(id)) => Some(*id),
            _ => None,
        }
    }

    pub(super) fn method_call(&mut self, m: &ExprMethodCall) -> Val {
        let name = m.method.to_string();
        for callback in super::syntax::frame_registrations(&name, m) {
            let line = m.method.span().start().line;
            self.facts.frame_callbacks.push((callback, line));
        }
        let sites_before = self.facts.sites.len();
        let receiver = self.expr(&m.receiver);
        let adapter = self.adapter_params(&name, &receiver, &m.args);
        let parts = adapter.is_some() && self.holds_parts(&m.receiver);
        let mut args = Vec::with_capacity(m.args.len());
        for arg in &m.args {
            let value = match (arg, &adapter) {
                (Expr::Closure(c), None) if is_bench_routine(&name) => self.bench_loop(c),
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
                    parts,
                    &m.receiver,
                ),
                // `(0..n).map(search_one)`: a local closure run on each
                // element.
                (Expr::Path(path), Some(_)) if self.local_closure(path).is_some() => {
                    if let Some(id) = self.local_closure(path) {
                        let line = path.path.segments[0].ident.span().start().line;
                        let statement = matches!(name.as_str(), "for_each" | "try_for_each");
                        self.closure_handed_to_adapter(id, line, statement);
                    }
                    Val::Unknown
                }
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
        self.written_directly(&name, sites_before);
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
        let found = rules::first_hit(|rule| rule.method_call(&call));
        let hit = found.is_some();
        if let Some(found) = found {
            let whole = self.whole(&m.receiver);
            self.report_with(found, &receiver, loc, Some(&name), whole);
        }
        self.callee(CalleeName::Method(&name), loc);
        if (name == "try_into" || name == "into") && args.is_empty() {
            let by_ref = matches!(&*m.receiver, Expr::Reference(_))
                || matches!(&*m.receiver, Expr::Paren(p) if matches!(&*p.expr, Expr::Reference(_)));
            let whole = self.whole(&m.receiver);
            // `t.try_into()` whose host type is inferred from elsewhere (a
            // struct field, a tuple returned): a tensor converts only into
            // host data. A `let` annotation, if any, names the type instead.
            if name == "try_into" && matches!(receiver, Val::Tensor(_)) {
                let conversion = Conversion {
                    op: "try_into",
                    target: Target::Inferred,
                    by_ref,
                    fallible: true,
                };
                if let Some(hit) = rules::first_hit(|rule| rule.conversion(&conversion)) {
                    self.report_with(hit, &receiver, loc, None, whole);
                }
            }
            self.last_try_into = Some((receiver.clone(), loc, by_ref, whole));
        }
        if matches!(name.as_str(), "write_all" | "write_npy" | "serialize_into") {
            self.fn_state.writes_out = true;
        }
        if name == "push" {
            if let (Expr::Path(p), Some(pushed)) = (&*m.receiver, args.first()) {
                let grown = collection_of(vec![pushed.clone()]);
                if let (Some(ident), false) = (p.path.get_ident(), grown == Val::Unknown) {
                    self.grow_collection(&ident.to_string(), grown);
                }
            }
        }
        // Handing results on: over a channel, to a queue whose waiters a
        // condition variable wakes, or into a queue behind a lock.
        let into_locked_queue = matches!(name.as_str(), "push" | "push_back" | "push_front")
            && (takes_a_lock(&m.receiver)
                || matches!(&*m.receiver, Expr::Path(p) if p.path.get_ident()
                    .is_some_and(|q| self.fn_state.locked.iter().any(|l| q == l))));
        // A send on what a request loop took answers that request.
        let replies =
            root_ident(&m.receiver).is_some_and(|r| self.fn_state.request_items.contains(&r));
        if (is_channel_send(&name)
            || matches!(name.as_str(), "notify_one" | "notify_all")
            || into_locked_queue)
            && !replies
        {
            if let Some(f) = self.fn_state.context.function {
                self.facts.functions[f].hands_on = true;
            }
            let mut current = self.fn_state.context.loop_id;
            while let Some(id) = current {
                self.facts.loops[id].sends = true;
                current = self.facts.loops[id].parent;
            }
        }
        if is_channel_send(&name)
            && args.len() == 1
            && !matches!(receiver, Val::Tensor(_) | Val::Tensors { .. })
        {
            if self.holds_no_data(&m.args[0]) {
                self.store_sent(&Val::Other, true);
            } else {
                self.store_sent(&args[0], sends_named_value(&m.args[0]));
            }
        }
        // `scheduler.step(epoch)`, `early_stopping.step(score)`: bookkeeping
        // once per epoch, not an optimizer step. `state.apply(card)` on a
        // value not known as a tensor, given its argument by value, is a
        // method of some other type: tch's `xs.apply(&m)` borrows its module.
        let other_apply = is_module_application(&name)
            && !matches!(receiver, Val::Tensor(_))
            && !matches!(m.args.first(), Some(Expr::Reference(_)));
        self.written_out(&name, std::iter::once(&*m.receiver).chain(&m.args));
        if !(other_apply || name == "step" && schedules(&m.receiver)) {
            if name == "step" && !m.args.is_empty() && !matches!(receiver, Val::Tensor(_)) {
                if let Some(id) = self.fn_state.context.loop_id {
                    self.facts.loops[id].steps_environment = true;
                }
            }
            // A method of a value of unknown type may be the crate's own.
            let may_be_crate = matches!(receiver, Val::Unknown | Val::Deferred(..))
                && !TRANSPARENT.contains(&name.as_str())
                && (!hit || matches!(receiver, Val::Deferred(..)));
            if name == "step" && m.args.is_empty() && may_be_crate {
                self.mark_named_update();
            } else {
                self.mark_named_step(&name, may_be_crate);
            }
        }
        let mut arg_places: Vec<Place> = vec![receiver.place().unwrap_or_default()];
        arg_places.extend(args.iter().map(|a| a.place().unwrap_or_default()));
        // A call a rule reports is that rule's finding, not a call to follow;
        // unless a crate type may define the method itself (an optimizer of
        // its own with a `clip_grad_norm`), which the crate pass resolves.
        // A method of a crate trait implemented for tch's `Device`
        // (`device.cuda_synchronize()`) is the crate's to follow too.
        if matches!(
            receiver,
            Val::Unknown | Val::Deferred(..) | Val::Tensor(_) | Val::Device(_)
        ) && !TRANSPARENT.contains(&name.as_str())
            && (!hit || matches!(receiver, Val::Deferred(..)))
        {
            // The receiver comes first, as among the places.
            let literals = std::iter::once(None)
                .chain(m.args.iter().map(|a| self.literal_bool(a)))
                .collect();
            let receiver_type = match &receiver {
                Val::Device(_) => TypeRef::Named("Device".to_owned()),
                other => other.type_ref(),
            };
            self.record_call(
                Callee::Method {
                    receiver: receiver_type,
                    name: name.clone(),
                },
                loc,
                arg_places.iter().cloned().map(Some).collect(),
                literals,
                self.is_item(&m.receiver) || m.args.iter().any(|a| self.is_item(a)),
            );
        }
        self.method_value(&name, receiver, &args, m, arg_places)
    }

    /// `f32::try_from` or `Tensor::double_value` passed to an adapter:
    /// applied to each element.
    pub(super) fn point_free(&mut self, path: &ExprPath, element: Val, arg: &Expr) {
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

    pub(super) fn point_free_hit(&mut self, qualifier: &str, name: &str, element: Val, loc: Loc) {
        if matches!(name, "try_from" | "from") {
            if let Some(target) = conversion_target(qualifier) {
                let op = format!("{qualifier}::{name}");
                let conversion = Conversion {
                    op: &op,
                    target,
                    by_ref: false,
                    fallible: name == "try_from",
                };
                if let Some(hit) = rules::first_hit(|rule| rule.conversion(&conversion)) {
                    self.report_with(hit, &element, loc, None, Whole::ELEMENT);
                }
            }
        } else if qualifier == "Tensor" {
            let call = MethodCall {
                name,
                args: &[],
                scalar_turbofish: false,
                element_index: false,
            };
            if let Some(hit) = rules::first_hit(|rule| rule.point_free_method(&call)) {
                self.report_with(hit, &element, loc, None, Whole::ELEMENT);
            }
        }
    }

    /// If `name` is an iterator adapter called on an iterator (or a stream
    /// whose closure is async), the values its closure receives.
    pub(super) fn adapter_params(
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

    pub(super) fn method_value(
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
        if is_channel_receive(name) && !matches!(receiver, Val::Tensor(_) | Val::Tensors { .. }) {
            return Val::Deferred(received(), Place::Device);
        }
        match (name, &receiver) {
            // A sequential model with a layer that moves its input.
            ("add" | "add_fn" | "add_fn_t", _)
                if receiver.is_moving_module() || args.iter().any(Val::is_moving_module) =>
            {
                let place = args
                    .iter()
                    .filter_map(Val::place)
                    .fold(receiver.place().unwrap_or_default(), Place::either);
                return Val::Deferred(TypeRef::Written(TyKind::MovingModule), place);
            }
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
                let moved = Val::Iter(Box::new(with_placement((**element).clone(), place)));
                // tch's `Iter2::to_device` moves the iterator itself:
                // `iter.to_device(device);` alone moves its batches.
                if let Expr::Path(p) = &*m.receiver {
                    if let Some(name) = p.path.get_ident() {
                        self.rebind(&name.to_string(), moved.clone());
                    }
                }
                return moved;
            }
            (_, Val::Iter(_)) if SAME_ELEMENTS.contains(&name) => return receiver,
            ("map" | "filter_map" | "flat_map" | "map_while", Val::Iter(_)) => {
                return Val::Iter(Box::new(args.first().cloned().unwrap_or(Val::Unknown)));
            }
            // `.map(|a| encode(a)).collect::<Vec<Tensor>>()`: the turbofish
            // says the items a crate function makes are tensors, which stay
            // where that function puts them.
            ("collect", Val::Iter(element)) => {
                if let Val::Deferred(_, place) = &**element {
                    let tensors = m.turbofish.as_ref().is_some_and(|t| {
                        matches!(t.args.first(), Some(syn::GenericArgument::Type(ty))
                            if self.classify(ty) == TyKind::Tensors)
                    });
                    if tensors {
                        return Val::Tensors {
                            place: place.clone(),
                            mask: false,
                        };
                    }
                }
                return collection_of(vec![(**element).clone()]);
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
                    && (crate::rules::is_device_move(name)
                        || (name == "to"
                            && args.first().is_some_and(|a| a.placement().is_some()))) =>
            {
                Val::tensor_at(args.first().and_then(Val::placement).unwrap_or_default())
            }
            Val::Unknown | Val::Deferred(..) if self.mentions_tch && name == "cuda" => {
                Val::tensor_at(Place::Device)
            }
            Val::Unknown | Val::Deferred(..)
                if self.mentions_tch && crate::analysis::values::is_shape_tensor(name) =>
            {
                Val::tensor_at(Place::Cpu)
            }
            Val::Unknown | Val::Deferred(..)
                if self.mentions_tch && is_comparison(name) && args.len() == 1 =>
            {
                Val::Tensor(TensorFacts {
                    place: receiver_place,
                    scalar: false,
                    mask: true,
                    zero_dim_if: None,
                    forward_of: None,
                })
            }
            Val::Unknown | Val::Deferred(..)
                if self.mentions_tch && is_module_application(name) && !args.is_empty() =>
            {
                Val::tensor_at(module_application(name, receiver.imposed_place(), &args[0]))
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
                    zero_dim_if: None,
                    forward_of: match &receiver {
                        Val::Deferred(owner, _) if is_forward(name) => {
                            Some(Box::new(TypeRef::Forward {
                                owner: Box::new(owner.clone()),
                                name: name.to_owned(),
                            }))
                        }
                        _ => None,
                    },
                })
            }
            Val::Unknown | Val::Deferred(..)
                if self.mentions_tch
                    && matches!(name, "mean" | "sum" | "prod")
                    && matches!(m.args.first(), Some(Expr::Path(p))
                        if names_a_kind(&p.path) || p.path.is_ident("None")) =>
            {
                Val::Tensor(TensorFacts {
                    place: receiver_place,
                    scalar: true,
                    mask: false,
                    zero_dim_if: None,
                    forward_of: None,
                })
            }
            Val::Unknown | Val::Deferred(..) => {
                let result = TypeRef::Return {
                    owner: Some(Box::new(receiver.type_ref())),
                    name: name.to_owned(),
                };
                let module = is_forward(name);
                // The receiver comes first among the places.
                let devices = device_handles(args, 1);
                Val::Deferred(
                    result.clone(),
                    receiver_place.either(Place::of_call_with_devices(
                        result, arg_places, devices, module,
                    )),
                )
            }
            _ => Val::Unknown,
        }
    }
}

/// Which of a call's arguments are device handles, as positions among its
/// places (`offset` of them come first: the receiver).
fn device_handles(args: &[Val], offset: usize) -> Vec<usize> {
    args.iter()
        .enumerate()
        .filter(|(_, a)| matches!(a, Val::Device(_)))
        .map(|(i, _)| i + offset)
        .collect()
}

/// A channel's constructor, by its path: `channel`, `sync_channel`,
/// `bounded`, `unbounded`, alone or under a channel module (`mpsc`,
/// `crossbeam_channel`, `flume`, `oneshot`, ...).
fn is_channel_constructor(segments: &[String]) -> bool {
    let [modules @ .., name] = segments else {
        return false;
    };
    matches!(
        name.as_str(),
        "channel" | "sync_channel" | "bounded" | "unbounded"
    ) && modules.iter().all(|m| {
        matches!(
            m.as_str(),
            "std"
                | "sync"
                | "mpsc"
                | "tokio"
                | "crossbeam"
                | "crossbeam_channel"
                | "channel"
                | "flume"
                | "oneshot"
                | "broadcast"
                | "watch"
                | "async_channel"
                | "kanal"
        )
    })
}

/// Sending one value over a channel (std, crossbeam, flume, tokio).
fn is_channel_send(name: &str) -> bool {
    matches!(
        name,
        "send" | "try_send" | "blocking_send" | "send_blocking" | "send_timeout"
    )
}

/// Receiving a value from a channel.
pub(super) fn is_channel_receive(name: &str) -> bool {
    matches!(
        name,
        "recv"
            | "try_recv"
            | "recv_timeout"
            | "recv_deadline"
            | "blocking_recv"
            | "recv_blocking"
            | "recv_async"
    )
}

/// What a channel hands over: placed by every value the crate sends.
fn received() -> TypeRef {
    TypeRef::Field {
        base: Box::new(TypeRef::Named(CHANNEL.to_owned())),
        field: CHANNEL_MESSAGE.to_owned(),
    }
}

/// A learning-rate schedule or an early-stopping monitor, by the name of
/// the value (`lr_scheduler`, `self.scheduler`, `early_stopping`).
fn schedules(receiver: &Expr) -> bool {
    let name = match receiver {
        Expr::Path(p) => p.path.segments.last().map(|s| s.ident.to_string()),
        Expr::Field(f) => match &f.member {
            Member::Named(ident) => Some(ident.to_string()),
            Member::Unnamed(_) => None,
        },
        _ => None,
    };
    name.is_some_and(|n| {
        let n = n.to_ascii_lowercase();
        n.contains("sched") || n.contains("stopping") || n.contains("stopper")
    })
}
