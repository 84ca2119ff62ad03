//! Where deferred values live: fields by what the workspace stores into
//! them, call results by what the callee returns for the call's arguments
//! (or, outside the crate, by what they are built from), parameters by
//! what every non-test caller passes. Answers are memoised and cycles end
//! in "possibly on a device".

use super::*;
use crate::analysis::facts::{channel_part, CHANNEL, CHANNEL_MESSAGE, CHANNEL_OPEN};

/// Place references one question may look at before giving up.
const PLACE_BUDGET: usize = 20_000;

/// The ends of std, crossbeam, flume and tokio channels, by type name.
const CHANNEL_ENDS: &[&str] = &[
    "Sender",
    "SyncSender",
    "UnboundedSender",
    "Receiver",
    "UnboundedReceiver",
];

/// Placement questions answered once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum PlaceKey {
    Field(String, String),
    Return(FnId),
    Param(FnId, usize),
}

/// Parameters' places while evaluating a place.
pub(super) enum Env<'e> {
    /// In this function: parameters are placed by what its callers pass.
    In(Option<FnId>),
    /// Parameters are these arguments, themselves placed in `outer`.
    Args(&'e [Place], &'e Env<'e>),
}

impl CrateIndex<'_> {
    // ----- placement -----------------------------------------------------

    /// Whether a place is on the CPU, for code in `function` of `file`.
    /// Marks the workspace as a program that only ever runs on the CPU
    /// (no file names an accelerator): every place is the CPU.
    pub(crate) fn set_cpu_only(&mut self, cpu_only: bool) {
        self.cpu_only = cpu_only;
    }

    pub(crate) fn is_cpu(&self, place: &Place, file: usize, function: Option<usize>) -> bool {
        if self.cpu_only {
            return true;
        }
        let env = Env::In(function.map(|f| (file, f)));
        self.budget.set(PLACE_BUDGET);
        self.place_cpu(place, file, &env, 0)
    }

    pub(super) fn place_cpu(
        &self,
        place: &Place,
        file: usize,
        env: &Env<'_>,
        depth: usize,
    ) -> bool {
        match place {
            Place::Cpu => true,
            Place::Device => false,
            Place::CpuIf(refs) => {
                depth <= MAX_DEPTH && refs.iter().any(|r| self.ref_cpu(r, file, env, depth + 1))
            }
        }
    }

    pub(super) fn ref_cpu(
        &self,
        reference: &PlaceRef,
        file: usize,
        env: &Env<'_>,
        depth: usize,
    ) -> bool {
        // Generated or hostile code can nest calls wide and deep; past the
        // budget a value counts as possibly on a device.
        let left = self.budget.get();
        if left == 0 {
            return false;
        }
        self.budget.set(left - 1);
        let from = Some(self.files[file].unit);
        match reference {
            PlaceRef::Param(i) => match env {
                Env::Args(args, outer) => args
                    .get(*i)
                    .is_some_and(|a| self.place_cpu(a, file, outer, depth)),
                Env::In(Some(function)) => self.param_cpu(*function, *i, depth),
                Env::In(None) => false,
            },
            PlaceRef::Value(TypeRef::Field { base, field }) => match self.resolve(base, from) {
                Some(TyKind::Named(owner)) => self.field_cpu(&owner, field, depth),
                // `pack.outputs.0` of a tuple field: where the tuple is.
                Some(TyKind::Tuple(_)) => {
                    let base = PlaceRef::Value((**base).clone());
                    self.ref_cpu(&base, file, env, depth + 1)
                }
                // A value of a type nothing says (an item of a collection
                // built by a macro): the field is every crate struct's field
                // of that name, CPU data where all of them only ever hold it.
                None => {
                    let owners: Vec<&str> = self
                        .stores
                        .keys()
                        .filter(|(owner, name)| *name == field.as_str() && *owner != CHANNEL)
                        .map(|(owner, _)| *owner)
                        .collect();
                    !owners.is_empty()
                        && owners
                            .iter()
                            .all(|owner| self.field_cpu(owner, field, depth))
                }
                _ => false,
            },
            // A part of a message taken apart as a tuple (`let (policy,
            // value) = rx.recv()?`) comes from that part of each tuple sent,
            // or from a message of no known shape; a struct or enum value
            // sent (a request on another channel) is never one.
            PlaceRef::Value(TypeRef::Part {
                base,
                index: Some(index),
            }) if is_channel_message(base) => self.channel_part_cpu(*index, depth),
            PlaceRef::Value(TypeRef::Part { base, .. }) => {
                let base = PlaceRef::Value((**base).clone());
                self.ref_cpu(&base, file, env, depth + 1)
            }
            PlaceRef::Value(_) => false,
            PlaceRef::HostData(ty) => !matches!(self.resolve(ty, from), Some(TyKind::Number)),
            PlaceRef::Const(name) => self.device_consts.get(name.as_str()) == Some(&true),
            PlaceRef::All(places) => places
                .iter()
                .all(|place| self.place_cpu(place, file, env, depth + 1)),
            PlaceRef::Call {
                result,
                args,
                module,
                devices,
            } => {
                let TypeRef::Return { owner, name } = result else {
                    return false;
                };
                let callees = match owner {
                    None => self.closest(
                        from,
                        self.named(name)
                            .filter(|&id| self.function(id).owner.is_none()),
                    ),
                    Some(owner) => match self.resolve(owner, from) {
                        Some(TyKind::Named(owner)) => self.methods_of(&owner, name, from),
                        Some(TyKind::Tensor) => Vec::new(),
                        // A closure module, or calling a closure or function
                        // pointer.
                        Some(TyKind::MovingModule) => Vec::new(),
                        Some(TyKind::Callable(_)) if *module => Vec::new(),
                        Some(_) => return false,
                        None if AMBIGUOUS_METHODS.contains(&name.as_str()) => Vec::new(),
                        None => self.closest(
                            from,
                            self.named(name)
                                .filter(|&id| self.function(id).has_receiver),
                        ),
                    },
                };
                // A module that moves its input computes where it is (the
                // receiver); any other call, a module's included, runs where
                // its arguments are, since libtorch refuses to mix a CPU
                // tensor with a device one.
                let built_from_cpu = || {
                    let moves_input =
                        *module && owner.as_ref().is_some_and(|o| self.may_move_input(o, from));
                    let relevant = if moves_input {
                        &args[..args.len().min(1)]
                    } else {
                        &args[..]
                    };
                    relevant
                        .iter()
                        .any(|a| self.place_cpu(a, file, env, depth + 1))
                };
                if callees.is_empty() {
                    // Outside the crate (a tch module, `nn::linear`): built
                    // from or applied to something on the CPU, it is there.
                    return built_from_cpu();
                }
                // A crate object (not a tensor) built from CPU objects
                // computes there too, whatever the constructor keeps, unless
                // it is handed a device that is not the CPU to go to.
                let objects = callees
                    .iter()
                    .all(|&id| matches!(self.function(id).returns, TyKind::Named(_)));
                let told_device = || {
                    devices.iter().any(|&i| {
                        args.get(i)
                            .is_some_and(|a| !self.place_cpu(a, file, env, depth + 1))
                    })
                };
                if objects && built_from_cpu() && !told_device() {
                    return true;
                }
                let inner = Env::Args(args, env);
                callees.iter().all(|&id| {
                    let returned = &self.function(id).return_place;
                    match returned {
                        Place::Cpu => true,
                        Place::Device => false,
                        _ if args.is_empty() => self.return_cpu(id, depth),
                        _ => self.place_cpu(returned, id.0, &inner, depth + 1),
                    }
                })
            }
        }
    }

    /// Whether a value sent over a channel holds no data: an end of a
    /// channel (`self.reply_to.clone()`, a reply sender sent with a
    /// request), a number field (`self.count`) or a number a crate
    /// function returns (a batch size), reached from nothing but the
    /// function's parameters.
    fn sends_no_data(&self, store: &FieldStore, file: usize) -> bool {
        let Some(Place::CpuIf(refs)) = &store.place else {
            return false;
        };
        let from = Some(self.files[file].unit);
        let no_data = |r: &PlaceRef| match r {
            PlaceRef::Value(ty) => match self.resolve(ty, from) {
                Some(TyKind::Named(name)) => CHANNEL_ENDS.contains(&name.as_str()),
                Some(TyKind::Number) => true,
                _ => false,
            },
            PlaceRef::Call { result, .. } => self.resolve(result, from) == Some(TyKind::Number),
            _ => false,
        };
        refs.iter().any(no_data)
            && refs
                .iter()
                .all(|r| matches!(r, PlaceRef::Param(_)) || no_data(r))
    }

    /// Whether a module of this type may move its input (see
    /// [`TyKind::MovingModule`]): when a call result, if any function the
    /// call may reach returns such a module, so that a name several
    /// modules define counts as moving (the reported side).
    fn may_move_input(&self, ty: &TypeRef, from: Option<usize>) -> bool {
        let moving = |ids: Vec<FnId>| {
            ids.into_iter()
                .any(|id| self.return_kind(id, 0) == Some(TyKind::MovingModule))
        };
        match ty {
            TypeRef::Return { owner: None, name } => moving(
                self.closest(
                    from,
                    self.named(name)
                        .filter(|&id| self.function(id).owner.is_none()),
                ),
            ),
            TypeRef::Return {
                owner: Some(owner),
                name,
            } => match self.resolve(owner, from) {
                Some(TyKind::Named(owner)) => moving(self.methods_of(&owner, name, from)),
                _ => false,
            },
            _ => self.resolve(ty, from) == Some(TyKind::MovingModule),
        }
    }

    /// Memoised, cycle-safe answers to placement questions.
    pub(super) fn memo(&self, key: PlaceKey, compute: impl FnOnce() -> bool) -> bool {
        if let Some(&known) = self.places.borrow().get(&key) {
            return known;
        }
        if !self.visiting.borrow_mut().insert(key.clone()) {
            return false;
        }
        let value = compute();
        self.visiting.borrow_mut().remove(&key);
        self.places.borrow_mut().insert(key, value);
        value
    }

    /// Whether a function returns CPU data whatever its arguments.
    pub(super) fn return_cpu(&self, id: FnId, depth: usize) -> bool {
        self.memo(PlaceKey::Return(id), || {
            let env = Env::In(None);
            self.place_cpu(&self.function(id).return_place, id.0, &env, depth + 1)
        })
    }

    /// Whether part `index` of every tuple the crate sends over a channel,
    /// and every message of no known shape it sends, is on the CPU (and
    /// some such message is sent). A message a crate function built as one
    /// of the crate's structs (`let request = Request::new(q)`) is no tuple.
    fn channel_part_cpu(&self, index: usize, depth: usize) -> bool {
        let part = channel_part(index);
        let mut sent = Vec::new();
        for field in [part.as_str(), CHANNEL_OPEN] {
            let Some(stores) = self.stores.get(&(CHANNEL, field)) else {
                continue;
            };
            sent.extend(stores.iter().filter(|(file, store)| {
                let from = Some(self.files[*file].unit);
                let built = field == CHANNEL_OPEN
                    && store.ty.as_ref().is_some_and(|ty| {
                        matches!(self.resolve(ty, from),
                            Some(TyKind::Named(name)) if self.local_types.contains(name.as_str()))
                    });
                !built && self.holds_data(CHANNEL, *file, store)
            }));
        }
        !sent.is_empty()
            && sent
                .iter()
                .all(|(file, store)| self.store_cpu(*file, store, depth))
    }

    /// Whether a store into `owner` holds data: not a store of nothing
    /// (`None`, a number), nor a value sent over a channel that holds none
    /// (a reply sender sent with a request, a number).
    fn holds_data(&self, owner: &str, file: usize, store: &FieldStore) -> bool {
        !(store.empty || owner == CHANNEL && self.sends_no_data(store, file))
    }

    /// Whether a stored value is on the CPU, placed in the function that
    /// stores it.
    fn store_cpu(&self, file: usize, store: &FieldStore, depth: usize) -> bool {
        store.place.as_ref().is_some_and(|place| {
            let env = Env::In(store.function.map(|f| (file, f)));
            self.place_cpu(place, file, &env, depth + 1)
        })
    }

    /// Whether every value the crate stores into `owner.field` is on the CPU.
    pub(super) fn field_cpu(&self, owner: &str, field: &str, depth: usize) -> bool {
        self.memo(PlaceKey::Field(owner.to_owned(), field.to_owned()), || {
            let stores = self
                .stores
                .get(&(owner, field))
                .map_or(&[][..], Vec::as_slice);
            // Stores that hold no data say nothing about where the field's
            // data is; every other store must be CPU data.
            let with_data: Vec<&(usize, &FieldStore)> = stores
                .iter()
                .filter(|(file, store)| self.holds_data(owner, *file, store))
                .collect();
            let setters = self.setter_calls(owner, field);
            (!with_data.is_empty() || !setters.is_empty())
                && with_data
                    .iter()
                    .all(|(file, store)| self.store_cpu(*file, store, depth))
                && setters.iter().all(|&(file, call)| {
                    let call = &self.files[file].facts.calls[call];
                    call.args.get(1).cloned().flatten().is_some_and(|place| {
                        let env = Env::In(call.context.function.map(|f| (file, f)));
                        self.place_cpu(&place, file, &env, depth + 1)
                    })
                })
        })
    }

    /// Calls of a setter the struct derives for the field
    /// (`builder.vs(store)` with `#[derive(Setters)]`): a method named
    /// after the field, taking one argument, on a receiver of the struct's
    /// type, that the crate does not define.
    fn setter_calls(&self, owner: &str, field: &str) -> Vec<(usize, usize)> {
        let derives = self
            .structs
            .get(owner)
            .is_some_and(|defs| defs.iter().any(|(_, s)| s.setters));
        if !derives {
            return Vec::new();
        }
        let Some(calls) = self.method_calls.get(field) else {
            return Vec::new();
        };
        calls
            .iter()
            .copied()
            .filter(|&(file, index)| {
                let call = &self.files[file].facts.calls[index];
                let Callee::Method { receiver, .. } = &call.callee else {
                    return false;
                };
                call.args.len() == 2
                    && !matches!(call.context.cold, Some(Cold::Test | Cold::DebugAssertion))
                    && self.resolve(receiver, Some(self.files[file].unit))
                        == Some(TyKind::Named(owner.to_owned()))
                    && self
                        .methods_of(owner, field, Some(self.files[file].unit))
                        .is_empty()
            })
            .collect()
    }

    /// Whether every crate call of a function passes CPU data as parameter
    /// `index` (and there is at least one call).
    pub(super) fn param_cpu(&self, function: FnId, index: usize, depth: usize) -> bool {
        self.memo(PlaceKey::Param(function, index), || {
            let callers = self.callers();
            let Some(calls) = callers.get(&function) else {
                return false;
            };
            // Test code and debug assertions say nothing about the
            // arguments a release build passes.
            let calls: Vec<(usize, usize)> = calls
                .iter()
                .copied()
                .filter(|&(file, call)| {
                    !matches!(
                        self.files[file].facts.calls[call].context.cold,
                        Some(Cold::Test | Cold::DebugAssertion)
                    )
                })
                .collect();
            drop(callers);
            !calls.is_empty()
                && calls.iter().all(|&(file, call)| {
                    let call = &self.files[file].facts.calls[call];
                    call.args
                        .get(index)
                        .cloned()
                        .flatten()
                        .is_some_and(|place| {
                            let env = Env::In(call.context.function.map(|f| (file, f)));
                            self.place_cpu(&place, file, &env, depth + 1)
                        })
                })
        })
    }

    /// Whether a site syncs: its subject is a tensor (or may be one) that
    /// may be on a device.
    pub(crate) fn site_syncs(&self, file: usize, site: &Site) -> bool {
        let from = Some(self.files[file].unit);
        self.satisfied(site.requirement.as_ref(), from)
            && self.converts(site)
            && !self.is_cpu(&site.place, file, site.context.function)
    }
}

/// Whether a place reference depends on the enclosing function's parameters.
pub(super) fn holds_param(reference: &PlaceRef) -> bool {
    match reference {
        PlaceRef::Param(_) => true,
        PlaceRef::Value(_) | PlaceRef::HostData(_) | PlaceRef::Const(_) => false,
        PlaceRef::Call { args, .. } | PlaceRef::All(args) => args.iter().any(|a| match a {
            Place::CpuIf(refs) => refs.iter().any(holds_param),
            _ => false,
        }),
    }
}

/// A callee's place in terms of the caller: its parameters replaced by the
/// call's arguments.
pub(crate) fn substitute(place: &Place, args: &[Place]) -> Place {
    let Place::CpuIf(refs) = place else {
        return place.clone();
    };
    let mut out = Place::Device;
    for reference in refs {
        let part = match reference {
            PlaceRef::Param(i) => args.get(*i).cloned().unwrap_or_default(),
            PlaceRef::Value(_) | PlaceRef::HostData(_) | PlaceRef::Const(_) => {
                Place::of(reference.clone())
            }
            PlaceRef::All(places) => places
                .iter()
                .map(|p| substitute(p, args))
                .reduce(Place::both)
                .unwrap_or_default(),
            PlaceRef::Call {
                result,
                args: inner,
                module,
                devices,
            } => Place::of(PlaceRef::Call {
                result: result.clone(),
                args: inner.iter().map(|a| substitute(a, args)).collect(),
                module: *module,
                devices: devices.clone(),
            }),
        };
        out = out.either(part);
    }
    out
}

/// The message a channel receive gives (`rx.recv()`), as the walker
/// types it.
fn is_channel_message(ty: &TypeRef) -> bool {
    matches!(ty, TypeRef::Field { base, field }
        if field == CHANNEL_MESSAGE && matches!(&**base, TypeRef::Named(owner) if owner == CHANNEL))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_callee_place_is_rewritten_in_the_caller_terms() {
        let callee = Place::CpuIf(vec![PlaceRef::Param(0), PlaceRef::Param(2)]);
        let cpu_third = [Place::Device, Place::Device, Place::Cpu];
        assert_eq!(substitute(&callee, &cpu_third), Place::Cpu);
        let caller_param = [Place::of(PlaceRef::Param(1)), Place::Device, Place::Device];
        assert_eq!(
            substitute(&callee, &caller_param),
            Place::of(PlaceRef::Param(1))
        );
        assert_eq!(substitute(&callee, &[]), Place::Device);
        assert!(holds_param(&PlaceRef::Call {
            result: TypeRef::Unknown,
            args: vec![Place::of(PlaceRef::Param(0))],
            module: false,
            devices: Vec::new(),
        }));
    }
}
