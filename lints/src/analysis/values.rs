//! What the walker knows about a value, from syntax alone.
//!
//! The lint has no type checker, so "is this a tensor?" is answered
//! conservatively. A value is known to be a tensor when it is bound from a
//! tch constructor (`Tensor::randn`), a parameter or annotation typed
//! `Tensor`/`&Tensor`, a tensor method (`forward`, `matmul`, `argmax`, ...)
//! or arithmetic on tensors, an element of a `Vec<Tensor>`/`&[Tensor]`, or a
//! tch data iterator (`train_iter`). Fields, crate-local function results and
//! method results are *deferred*: the crate-level pass looks up the struct or
//! signature (`fn loss(..) -> Tensor`) and keeps a finding only if the type
//! is a tensor. Anything else is unknown, and generic calls (`to_string`,
//! `{}`) on unknown values are never reported.
//!
//! Every tensor, device and tch object (a `VarStore`, an `nn::Path`, a
//! module built from one) also carries a [`Place`]: visibly on the CPU, on
//! the CPU if some deferred value or parameter turns out to be, or possibly
//! on a device. The CPU spreads the way libtorch requires it to: an op
//! between a CPU tensor that is not 0-dim and any other tensor runs on the
//! CPU (libtorch refuses to mix them otherwise), a module built from a CPU
//! `VarStore` computes on the CPU, and `to_device(d)` goes where `d` is.

use super::facts::TyKind;
use crate::rules::Need;

/// A crate-level fact to look up once every file has been read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeRef {
    /// A type by the last segment of its path (`Critic`, `Tensor`).
    Named(String),
    /// A generic type with its type arguments (`self` in `impl Robot<Agent>`):
    /// a field typed by a parameter is the argument.
    Instance {
        /// The type's last path segment.
        name: String,
        /// Its type arguments, classified, in order.
        args: Vec<TyKind>,
    },
    /// A field of a value.
    Field {
        /// The value the field is read from.
        base: Box<TypeRef>,
        /// The field's name (or tuple index).
        field: String,
    },
    /// What a function or method returns.
    Return {
        /// The receiver or `Type::` qualifier; `None` for free functions.
        owner: Option<Box<TypeRef>>,
        /// The function's name.
        name: String,
    },
    /// An element of a collection (`index: None`) or of a tuple.
    Part {
        /// The collection or tuple.
        base: Box<TypeRef>,
        /// The tuple index; `None` for a collection's element.
        index: Option<usize>,
    },
    /// What calling a value returns: a closure or function pointer kept in
    /// a field (`(self.loss)(&logits, &ys)`), decided by the field's type.
    Output(Box<TypeRef>),
    /// What a model's `forward` returns: a tensor, unless the receiver is a
    /// crate type whose method of that name returns something else (a
    /// `Logits` struct with methods of its own).
    Forward {
        /// The receiver.
        owner: Box<TypeRef>,
        /// The method's name.
        name: String,
    },
    /// A type as written in an annotation (`Vec<Block>`, `(f64, Tensor)`).
    Written(TyKind),
    /// Nothing is known.
    Unknown,
}

/// Something whose placement the crate-level pass decides.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PlaceRef {
    /// A field or element: placed by what the crate stores into it.
    Value(TypeRef),
    /// A parameter of the enclosing function (receiver first), placed by
    /// the arguments its callers pass.
    Param(usize),
    /// A CPU tensor built by `Tensor::from` from a value of this type: host
    /// data that keeps an op on the CPU, unless the type turns out to be a
    /// number, which makes a 0-dim tensor that libtorch broadcasts.
    HostData(TypeRef),
    /// What a call returns: placed by what a crate-local callee returns
    /// for these arguments, or, for a callee outside the crate (a tch
    /// module, `nn::linear`), on the CPU if an argument is.
    Call {
        /// The call's result (`TypeRef::Return`).
        result: TypeRef,
        /// Where each argument lives (receiver first).
        args: Vec<Place>,
        /// Running a module (`forward`): its output is where the module
        /// (the receiver) is, whatever the input (a module may move it).
        module: bool,
        /// Which arguments are device handles (`tch::Device`): a crate
        /// object handed a device that is not the CPU is built there,
        /// whatever else it is built from (a dataset moving host data).
        devices: Vec<usize>,
    },
    /// On the CPU if every one of these is: a tuple of values with places
    /// of their own (`(policy, value)`), or either branch of an `if`.
    All(Vec<Place>),
    /// A device constant or static another file of the workspace defines
    /// (`use crate::utils::DEVICE;`): on the CPU where every constant of
    /// that name in the workspace is the CPU.
    Const(String),
}

/// Where a value's data lives.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Place {
    /// Possibly on a device; nothing says otherwise.
    #[default]
    Device,
    /// Visibly on the CPU.
    Cpu,
    /// On the CPU if any of these is (decided by the crate-level pass).
    CpuIf(Vec<PlaceRef>),
}

impl Place {
    /// On the CPU if `reference` is.
    pub fn of(reference: PlaceRef) -> Place {
        Place::CpuIf(vec![reference])
    }

    /// On the CPU if the crate stores only CPU data into this field or
    /// collection. Named types and call results carry no place of their own
    /// (a call's place comes with its arguments, see [`PlaceRef::Call`]).
    pub fn of_value(ty: &TypeRef) -> Place {
        match ty {
            TypeRef::Field { .. } | TypeRef::Part { .. } => Place::of(PlaceRef::Value(ty.clone())),
            _ => Place::Device,
        }
    }

    /// Where a call's result lives: see [`PlaceRef::Call`]. Calls whose
    /// arguments hold nothing placed still go to the crate pass, since a
    /// crate-local callee may return CPU data.
    pub fn of_call(result: TypeRef, args: Vec<Place>, module: bool) -> Place {
        Place::of_call_with_devices(result, args, Vec::new(), module)
    }

    /// Where a call's result lives, `devices` naming the arguments that
    /// are device handles (see [`PlaceRef::Call`]).
    pub fn of_call_with_devices(
        result: TypeRef,
        args: Vec<Place>,
        devices: Vec<usize>,
        module: bool,
    ) -> Place {
        if nesting(&args) > MAX_PLACE_NESTING {
            return Place::Device;
        }
        Place::of(PlaceRef::Call {
            result,
            args,
            module,
            devices,
        })
    }

    /// Visibly on the CPU.
    pub fn is_cpu(&self) -> bool {
        matches!(self, Place::Cpu)
    }

    /// The place of something computed from values at both places, where
    /// either being on the CPU puts the result there (an op between a CPU
    /// tensor and another one, a module applied to an input).
    pub fn either(self, other: Place) -> Place {
        match (self, other) {
            (Place::Cpu, _) | (_, Place::Cpu) => Place::Cpu,
            (Place::Device, p) | (p, Place::Device) => p,
            (Place::CpuIf(mut a), Place::CpuIf(b)) => {
                for r in b {
                    if !a.contains(&r) {
                        a.push(r);
                    }
                }
                a.truncate(MAX_PLACE_REFS);
                Place::CpuIf(a)
            }
        }
    }

    /// The place of a value that is one or the other (two branches):
    /// on the CPU only if both are.
    pub fn both(self, other: Place) -> Place {
        match (self, other) {
            (a, b) if a == b => a,
            (Place::Cpu, p) | (p, Place::Cpu) => p,
            (Place::CpuIf(a), Place::CpuIf(b)) => {
                let mut all = Vec::new();
                for part in [Place::CpuIf(a), Place::CpuIf(b)] {
                    match part {
                        Place::CpuIf(refs) if refs.len() == 1 => match &refs[0] {
                            PlaceRef::All(inner) => all.extend(inner.iter().cloned()),
                            _ => all.push(Place::CpuIf(refs)),
                        },
                        part => all.push(part),
                    }
                }
                all.dedup();
                if all.len() > MAX_PLACE_REFS || nesting(&all) > MAX_PLACE_NESTING {
                    return Place::Device;
                }
                Place::of(PlaceRef::All(all))
            }
            _ => Place::Device,
        }
    }
}

/// Conditions kept per value; beyond this the rest are dropped (the value
/// then counts as possibly on a device, which only ever reports more).
const MAX_PLACE_REFS: usize = 8;

/// How deep call places nest (`f(g(h(x)))`) before the walker stops
/// tracking them.
const MAX_PLACE_NESTING: usize = 6;

fn nesting(args: &[Place]) -> usize {
    args.iter()
        .map(|a| match a {
            Place::CpuIf(refs) => refs
                .iter()
                .map(|r| match r {
                    PlaceRef::Call { args, .. } | PlaceRef::All(args) => 1 + nesting(args),
                    _ => 0,
                })
                .max()
                .unwrap_or(0),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// What is known about a tensor.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TensorFacts {
    /// Where it lives.
    pub place: Place,
    /// Visibly 0-dim (a full reduction or a loss).
    pub scalar: bool,
    /// Visibly boolean (a comparison).
    pub mask: bool,
    /// Built by `Tensor::from` from a value of this type (a field, a
    /// call's result): 0-dim if the crate pass finds the type is a number.
    pub zero_dim_if: Option<TypeRef>,
    /// Returned by a model's `forward` called on a crate value
    /// ([`TypeRef::Forward`]), whose type the crate pass may find returns
    /// something other than a tensor.
    pub forward_of: Option<Box<TypeRef>>,
}

impl TensorFacts {
    /// A tensor at `place`.
    pub fn at(place: Place) -> TensorFacts {
        TensorFacts {
            place,
            ..TensorFacts::default()
        }
    }

    /// The place this tensor imposes on an op it takes part in: a 0-dim CPU
    /// tensor may be combined with a device tensor, so it imposes nothing.
    fn imposed(&self) -> Place {
        match &self.zero_dim_if {
            _ if !self.place.is_cpu() => self.place.clone(),
            _ if self.scalar => Place::Device,
            Some(ty) => Place::of(PlaceRef::HostData(ty.clone())),
            None => Place::Cpu,
        }
    }
}

/// What the walker knows about a value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// Nothing.
    Unknown,
    /// Known not to be a tensor (a literal, a number, a string, a `Kind`).
    Other,
    /// A tensor.
    Tensor(TensorFacts),
    /// A collection of tensors (`Vec<Tensor>`, `&[Tensor]`, `[Some(&m)]`).
    Tensors {
        /// Where every element lives.
        place: Place,
        /// Some element is a boolean mask.
        mask: bool,
    },
    /// A tuple, element by element.
    Tuple(Vec<Val>),
    /// A `tch::Device`.
    Device(Place),
    /// An iterator yielding the given values.
    Iter(Box<Val>),
    /// A value whose type the crate-level pass decides (a crate-local
    /// struct, a field, a function's result, a tch object), and the place of
    /// the tensors it holds or makes.
    Deferred(TypeRef, Place),
    /// A closure bound to a local name, by index into the walker's table.
    Closure(usize),
}

impl Val {
    /// A tensor with unknown placement.
    #[cfg(test)]
    pub fn device_tensor() -> Val {
        Val::Tensor(TensorFacts::default())
    }

    /// A tensor at `place`.
    pub fn tensor_at(place: Place) -> Val {
        Val::Tensor(TensorFacts::at(place))
    }

    /// A deferred value with nothing known about its place.
    pub fn deferred(ty: TypeRef) -> Val {
        Val::Deferred(ty, Place::Device)
    }

    /// Where this value's data lives, for values that have data: tensors,
    /// devices, tch objects and deferred values (whose own place is joined
    /// with whatever the crate says about them). `None` for the rest.
    pub fn place(&self) -> Option<Place> {
        match self {
            Val::Tensor(facts) => Some(facts.place.clone()),
            Val::Tensors { place, .. } | Val::Device(place) => Some(place.clone()),
            Val::Deferred(ty, place) => Some(place.clone().either(Place::of_value(ty))),
            Val::Tuple(parts) => parts.iter().filter_map(Val::place).reduce(|a, b| a.both(b)),
            // A collection of tuples, or an iterator: where its items are.
            Val::Iter(element) => element.place(),
            _ => None,
        }
    }

    /// The place this value imposes on an op or a module call it takes part
    /// in: a CPU tensor that may be 0-dim imposes nothing.
    pub fn imposed_place(&self) -> Place {
        match self {
            Val::Tensor(facts) => facts.imposed(),
            other => other.place().unwrap_or_default(),
        }
    }

    /// Whether this names the CPU as a placement: `Device::Cpu`, or a
    /// `(Kind, Device::Cpu)` options pair.
    pub fn is_cpu_placement(&self) -> bool {
        match self {
            Val::Device(place) => place.is_cpu(),
            Val::Tuple(parts) => parts.iter().any(|p| matches!(p, Val::Device(Place::Cpu))),
            _ => false,
        }
    }

    /// The placement a device or `(Kind, Device)` argument names, if it is one.
    pub fn placement(&self) -> Option<Place> {
        match self {
            Val::Device(place) => Some(place.clone()),
            Val::Deferred(..) => self.place(),
            Val::Tuple(parts) => parts.iter().find_map(|p| match p {
                Val::Device(place) => Some(place.clone()),
                Val::Deferred(..) => p.place(),
                _ => None,
            }),
            _ => None,
        }
    }

    /// Whether this is a module that moves its input (see
    /// [`TyKind::MovingModule`]).
    pub fn is_moving_module(&self) -> bool {
        matches!(
            self,
            Val::Deferred(TypeRef::Written(TyKind::MovingModule), _)
        )
    }

    /// Whether this is, or holds, a boolean mask tensor.
    pub fn holds_mask(&self) -> bool {
        match self {
            Val::Tensor(facts) => facts.mask,
            Val::Tensors { mask, .. } => *mask,
            _ => false,
        }
    }

    /// Whether the value is a tensor known to live on the CPU.
    pub fn is_cpu_tensor(&self) -> bool {
        match self {
            Val::Tensor(facts) => facts.place.is_cpu(),
            Val::Tensors { place, .. } => place.is_cpu(),
            _ => false,
        }
    }

    /// What iterating over this value yields, if it is iterable in a known way.
    pub fn element(&self) -> Option<Val> {
        match self {
            Val::Iter(element) => Some((**element).clone()),
            Val::Tensors { place, mask } => Some(Val::Tensor(TensorFacts {
                place: place.clone(),
                mask: *mask,
                ..TensorFacts::default()
            })),
            Val::Deferred(t, place) => Some(Val::Deferred(
                TypeRef::Part {
                    base: Box::new(t.clone()),
                    index: None,
                },
                place.clone(),
            )),
            _ => None,
        }
    }

    /// The value as a type reference for the crate-level pass.
    pub fn type_ref(&self) -> TypeRef {
        match self {
            Val::Deferred(t, _) => t.clone(),
            Val::Tensor(TensorFacts {
                forward_of: Some(forward),
                ..
            }) => (**forward).clone(),
            Val::Tensor(_) => TypeRef::Named("Tensor".into()),
            _ => TypeRef::Unknown,
        }
    }

    /// The value of either branch of an `if` or `match`.
    pub fn join(self, other: Val) -> Val {
        match (self, other) {
            (a, b) if a == b => a,
            (Val::Tensor(a), Val::Tensor(b)) => Val::Tensor(TensorFacts {
                place: a.place.both(b.place),
                scalar: a.scalar && b.scalar,
                mask: a.mask && b.mask,
                zero_dim_if: a
                    .zero_dim_if
                    .filter(|ty| b.zero_dim_if.as_ref() == Some(ty)),
                forward_of: None,
            }),
            // An absent value (`None`, the other arm of `Ok(t) => Some(t)`)
            // holds no data: the value is the tensor, where it is.
            (Val::Tensor(a), Val::Other) | (Val::Other, Val::Tensor(a)) => Val::Tensor(a),
            // A branch that diverges or is unknown does not make the other
            // branch's tensor less of a tensor, but CPU provenance must hold
            // on every path.
            (Val::Tensor(a), _) | (_, Val::Tensor(a)) => Val::Tensor(TensorFacts {
                place: Place::Device,
                ..a
            }),
            (Val::Deferred(t, a), Val::Deferred(_, b)) => Val::Deferred(t, a.both(b)),
            (Val::Tuple(a), Val::Tuple(b)) if a.len() == b.len() => {
                Val::Tuple(a.into_iter().zip(b).map(|(a, b)| a.join(b)).collect())
            }
            (Val::Iter(a), Val::Iter(b)) => Val::Iter(Box::new(a.join(*b))),
            (Val::Deferred(t, a), Val::Other) | (Val::Other, Val::Deferred(t, a)) => {
                Val::Deferred(t, a)
            }
            (Val::Deferred(t, _), _) | (_, Val::Deferred(t, _)) => Val::deferred(t),
            (Val::Device(a), Val::Device(b)) => Val::Device(a.both(b)),
            (Val::Other, Val::Other) => Val::Other,
            _ => Val::Unknown,
        }
    }

    /// The value of arithmetic between two operands.
    pub fn arithmetic(self, other: Val) -> Val {
        match (&self, &other) {
            (Val::Tensor(a), Val::Tensor(b)) => Val::Tensor(TensorFacts {
                place: a
                    .imposed()
                    .either(b.imposed())
                    .either(a.place.clone().both(b.place.clone())),
                scalar: a.scalar && b.scalar,
                mask: false,
                zero_dim_if: None,
                forward_of: None,
            }),
            (Val::Tensor(a), Val::Other) | (Val::Other, Val::Tensor(a)) => {
                Val::Tensor(TensorFacts {
                    mask: false,
                    ..a.clone()
                })
            }
            (Val::Tensor(a), Val::Deferred(..)) | (Val::Deferred(..), Val::Tensor(a)) => {
                let deferred = if matches!(self, Val::Deferred(..)) {
                    &self
                } else {
                    &other
                };
                Val::tensor_at(a.imposed().either(deferred.imposed_place()))
            }
            (Val::Tensor(a), _) | (_, Val::Tensor(a)) => Val::tensor_at(a.imposed()),
            (Val::Deferred(..), _) => self,
            (_, Val::Deferred(..)) => other,
            (Val::Other, Val::Other) => Val::Other,
            _ => Val::Unknown,
        }
    }
}

/// A condition on a deferred value that the crate-level pass checks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The value's type, to be resolved.
    pub ty: TypeRef,
    /// `true`: it must resolve to a tensor. `false`: it must merely not
    /// resolve to a known non-tensor, nor to a crate-local type that defines
    /// `method` itself.
    pub strict: bool,
    /// The method called on the value, for non-strict requirements.
    pub method: Option<String>,
}

/// Whether a rule's hit on `subject` is reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Not a device tensor, or not known to be one.
    Skip,
    /// Report, possibly on a condition checked later.
    Report(Option<Requirement>),
}

/// Decides whether a hit on `subject` is reported, given how sure the rule
/// must be that the subject is a tensor. The subject's place is checked
/// separately.
pub(crate) fn gate(subject: &Val, need: Need, mentions_tch: bool, method: Option<&str>) -> Gate {
    match subject {
        Val::Tensor(facts) if facts.place.is_cpu() => Gate::Skip,
        // What a crate model's `forward` returns: a tensor unless its
        // signature says otherwise.
        Val::Tensor(TensorFacts {
            forward_of: Some(forward),
            ..
        }) => Gate::Report(Some(Requirement {
            ty: (**forward).clone(),
            strict: true,
            method: method.map(str::to_owned),
        })),
        Val::Tensor(_) => Gate::Report(None),
        Val::Deferred(_, Place::Cpu) => Gate::Skip,
        Val::Deferred(ty, _) => Gate::Report(Some(Requirement {
            ty: ty.clone(),
            strict: need != Need::Name,
            method: method.map(str::to_owned),
        })),
        Val::Unknown => match need {
            Need::Name => Gate::Report(None),
            Need::TchFile if mentions_tch => Gate::Report(None),
            _ => Gate::Skip,
        },
        _ => Gate::Skip,
    }
}

/// Tensor methods that return something other than a tensor.
fn non_tensor_result(name: &str) -> bool {
    matches!(
        name,
        "size"
            | "size1"
            | "size2"
            | "size3"
            | "size4"
            | "size5"
            | "size6"
            | "dim"
            | "numel"
            | "kind"
            | "requires_grad"
            | "is_contiguous"
            | "defined"
            | "is_sparse"
            | "is_mkldnn"
            | "stride"
            | "data_ptr"
            | "print"
            | "backward"
            | "double_value"
            | "int64_value"
            | "equal"
            | "allclose"
            | "is_nonzero"
            | "to_string"
            | "copy_data"
            | "copy_data_u8"
            | "iter"
            | "save"
            | "write_npy"
            | "zero_grad"
            | "dim_order"
    )
}

/// Tensor methods returning several tensors.
fn tensors_result(name: &str) -> bool {
    matches!(
        name,
        "split"
            | "split_with_sizes"
            | "chunk"
            | "unbind"
            | "tensor_split"
            | "unsafe_split"
            | "unsafe_chunk"
            | "split_sizes"
            | "tensor_split_indices"
    )
}

/// Tensor methods returning a boolean tensor.
fn mask_result(name: &str) -> bool {
    matches!(
        name,
        "eq" | "ne"
            | "lt"
            | "le"
            | "gt"
            | "ge"
            | "eq_tensor"
            | "ne_tensor"
            | "lt_tensor"
            | "le_tensor"
            | "gt_tensor"
            | "ge_tensor"
            | "greater"
            | "greater_equal"
            | "less"
            | "less_equal"
            | "not_equal"
            | "logical_and"
            | "logical_or"
            | "logical_xor"
            | "logical_not"
            | "isnan"
            | "isinf"
            | "isfinite"
            | "isclose"
            | "isneginf"
            | "isposinf"
            | "signbit"
    )
}

/// tch comparisons with a scalar or tensor argument (`t.gt(0.5)`). On a
/// receiver of unknown type in a file using tch they are taken to build a
/// mask: `PartialOrd::gt` gives a `bool`, which no mask-consuming op accepts.
pub(crate) fn is_comparison(name: &str) -> bool {
    matches!(name, "gt" | "ge" | "lt" | "le" | "eq" | "ne")
        || (mask_result(name) && name.ends_with("_tensor"))
}

/// Methods that reduce to a 0-dim tensor when called without dimensions.
fn scalar_result(name: &str, argc: usize) -> bool {
    match name {
        "mean" | "sum" | "prod" | "nansum" => argc <= 1,
        "max" | "min" | "norm" | "all" | "any" | "median" | "nanmedian" => argc == 0,
        "std" | "var" => argc <= 1,
        _ => is_loss(name),
    }
}

/// tch losses, which reduce to a 0-dim tensor.
pub(crate) fn is_loss(name: &str) -> bool {
    matches!(
        name,
        "cross_entropy_for_logits"
            | "cross_entropy_loss"
            | "nll_loss"
            | "mse_loss"
            | "l1_loss"
            | "smooth_l1_loss"
            | "huber_loss"
            | "binary_cross_entropy"
            | "binary_cross_entropy_with_logits"
            | "kl_div"
            | "accuracy_for_logits"
            | "soft_margin_loss"
            | "margin_ranking_loss"
            | "cosine_embedding_loss"
            | "hinge_embedding_loss"
    )
}

/// Elementwise methods: a 0-dim input stays 0-dim.
fn keeps_shape(name: &str) -> bool {
    matches!(
        name,
        "detach"
            | "detach_"
            | "shallow_clone"
            | "copy"
            | "to_kind"
            | "neg"
            | "abs"
            | "sqrt"
            | "exp"
            | "log"
            | "sigmoid"
            | "relu"
            | "tanh"
            | "square"
            | "clamp"
            | "clamp_min"
            | "clamp_max"
            | "pow_tensor_scalar"
            | "requires_grad_"
            | "set_requires_grad"
            | "contiguous"
            | "to"
            | "g_mul_scalar"
            | "g_add_scalar"
            | "g_div_scalar"
            | "g_sub_scalar"
    )
}

/// What a tensor method returns, if tensors (for the crate-level pass): a
/// tensor, or several (`unbind`, `split`, `chunk`).
pub(crate) fn tensor_method_result(name: &str) -> Option<TyKind> {
    let name = crate::rules::infallible_name(name);
    if tensors_result(name) {
        Some(TyKind::Tensors)
    } else if non_tensor_result(name) || name == "device" {
        None
    } else {
        Some(TyKind::Tensor)
    }
}

/// `internal_shape_as_tensor` (`_shape_as_tensor`): the shape as a CPU
/// tensor.
pub(crate) fn is_shape_tensor(name: &str) -> bool {
    matches!(name, "internal_shape_as_tensor" | "shape_as_tensor")
}

/// The value of `receiver.name(args)` where the receiver is a tensor.
pub(crate) fn tensor_method(name: &str, receiver: TensorFacts, args: &[Val]) -> Val {
    let name = crate::rules::infallible_name(name);
    if name == "device" {
        return Val::Device(receiver.place);
    }
    if non_tensor_result(name) {
        return Val::Other;
    }
    if tensors_result(name) {
        return Val::Tensors {
            place: receiver.place,
            mask: false,
        };
    }
    let place = match name {
        _ if crate::rules::is_device_move(name) || name == "to" => {
            args.first().and_then(Val::placement).unwrap_or_default()
        }
        "cuda" => Place::Device,
        // libtorch builds a tensor's shape as a tensor on the CPU, wherever
        // the tensor lives.
        _ if is_shape_tensor(name) => Place::Cpu,
        _ if is_module_application(name) && !args.is_empty() => {
            module_application(name, receiver.imposed(), &args[0])
        }
        // Advanced indexing takes indices on the CPU whatever the indexed
        // tensor's device (`c.i(&context)`, `c.index(&[Some(ids)])`): the
        // result is where the indexed tensor is.
        "i" | "index" => receiver.place.clone(),
        _ => {
            let tensor_args: Vec<&Val> = args
                .iter()
                .filter(|a| matches!(a, Val::Tensor(_) | Val::Tensors { .. } | Val::Deferred(..)))
                .collect();
            let all_cpu = receiver.place.is_cpu()
                && tensor_args
                    .iter()
                    .all(|a| a.place().is_some_and(|p| p.is_cpu()));
            if tensor_args.is_empty() || all_cpu {
                receiver.place.clone()
            } else {
                tensor_args.iter().fold(receiver.imposed(), |place, arg| {
                    place.either(arg.imposed_place())
                })
            }
        }
    };
    let moved = crate::rules::is_device_move(name);
    let same_shape = keeps_shape(name) || moved;
    let scalar = scalar_result(name, args.len()) || (receiver.scalar && same_shape);
    let zero_dim_if = receiver.zero_dim_if.filter(|_| same_shape);
    let mask = mask_result(name)
        || (receiver.mask && (moved || matches!(name, "shallow_clone" | "detach" | "to" | "copy")));
    Val::Tensor(TensorFacts {
        place,
        scalar,
        mask,
        zero_dim_if,
        forward_of: None,
    })
}

/// tch's `Tensor` methods that run the module given as their first argument
/// on the tensor (`xs.apply(&m)` is `m.forward(xs)`).
pub(crate) fn is_module_application(name: &str) -> bool {
    matches!(name, "apply" | "apply_t" | "apply_opt" | "apply_opt_t")
}

/// Where `input.apply(&module)` computes: as `module.forward(input)`. A
/// module that moves its input computes where it moves it; any other where
/// its input and its weights are, as libtorch refuses to mix a CPU tensor
/// with a device one. The crate pass decides, through the module's type,
/// unless both are visibly on the CPU.
pub(crate) fn module_application(name: &str, input: Place, module: &Val) -> Place {
    if module.is_moving_module() {
        return module.place().unwrap_or_default();
    }
    let weights = module.imposed_place();
    let output = if input.is_cpu() && weights.is_cpu() {
        Place::Cpu
    } else {
        let forward = if name.ends_with("_t") {
            "forward_t"
        } else {
            "forward"
        };
        Place::of_call(
            TypeRef::Return {
                owner: Some(Box::new(module.type_ref())),
                name: forward.to_owned(),
            },
            vec![weights, input.clone()],
            true,
        )
    };
    // `apply_opt` without a module hands back its input.
    if name.starts_with("apply_opt") {
        output.both(input)
    } else {
        output
    }
}

/// Method names that, in a file using tch, make their result a tensor even
/// when nothing is known about the receiver (modules, optimizers' outputs).
pub(crate) fn tch_tensor_method(name: &str) -> bool {
    let name = crate::rules::infallible_name(name);
    is_loss(name)
        || matches!(
            name,
            "forward"
                | "forward_t"
                | "forward_ts"
                | "method_ts"
                | "apply"
                | "apply_t"
                | "matmul"
                | "mm"
                | "bmm"
                | "softmax"
                | "log_softmax"
                | "argmax"
                | "argmin"
                | "relu"
                | "gelu"
                | "view"
                | "reshape"
                | "flatten"
                | "unsqueeze"
                | "squeeze"
                | "squeeze_dim"
                | "transpose"
                | "permute"
                | "detach"
                | "shallow_clone"
                | "to_kind"
                | "narrow"
                | "gather"
                | "index_select"
                | "masked_fill"
                | "logsumexp"
                | "mean_dim"
                | "sum_dim_intlist"
                | "dropout"
                | "zeros_like"
                | "ones_like"
                | "randn_like"
                | "rand_like"
                | "grad"
                | "multinomial"
                | "topk"
                | "sort"
                | "cumsum"
                | "exp"
                | "pow_tensor_scalar"
                | "eq_tensor"
                | "gt_tensor"
                | "lt_tensor"
                | "ge_tensor"
                | "le_tensor"
                | "isinf"
                | "isnan"
                | "isfinite"
                | "isneginf"
                | "isposinf"
                | "logical_not"
                | "logical_and"
                | "logical_or"
                | "masked_select"
                | "nonzero"
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpu() -> TensorFacts {
        TensorFacts::at(Place::Cpu)
    }

    #[test]
    fn the_gate_is_strict_for_generic_names_and_lenient_for_tch_names() {
        let tensor = Val::device_tensor();
        let cpu = Val::Tensor(cpu());
        assert_eq!(gate(&tensor, Need::Tensor, false, None), Gate::Report(None));
        assert_eq!(gate(&cpu, Need::Name, true, None), Gate::Skip);
        assert_eq!(
            gate(&Val::Unknown, Need::Name, false, None),
            Gate::Report(None)
        );
        assert_eq!(gate(&Val::Unknown, Need::TchFile, false, None), Gate::Skip);
        assert_eq!(
            gate(&Val::Unknown, Need::TchFile, true, None),
            Gate::Report(None)
        );
        assert_eq!(gate(&Val::Unknown, Need::Tensor, true, None), Gate::Skip);
        assert_eq!(gate(&Val::Other, Need::Name, true, None), Gate::Skip);
        let field = Val::deferred(TypeRef::Named("Critic".into()));
        assert!(matches!(
            gate(&field, Need::Tensor, true, None),
            Gate::Report(Some(Requirement { strict: true, .. }))
        ));
        let on_cpu = Val::Deferred(TypeRef::Named("Critic".into()), Place::Cpu);
        assert_eq!(gate(&on_cpu, Need::Name, true, None), Gate::Skip);
    }

    #[test]
    fn placement_follows_the_data() {
        assert!(tensor_method("relu", cpu(), &[]).is_cpu_tensor());
        assert!(!tensor_method("to_device", cpu(), &[Val::Device(Place::Device)]).is_cpu_tensor());
        assert!(tensor_method(
            "to_device",
            TensorFacts::default(),
            &[Val::Device(Place::Cpu)]
        )
        .is_cpu_tensor());
        // The option-taking variant moves too.
        let to_device_ = |receiver, device| {
            let args = [Val::Device(device), Val::Other, Val::Other, Val::Other];
            tensor_method("to_device_", receiver, &args)
        };
        assert!(!to_device_(cpu(), Place::Device).is_cpu_tensor());
        assert!(to_device_(TensorFacts::default(), Place::Cpu).is_cpu_tensor());
        assert_eq!(tensor_method("size", cpu(), &[]), Val::Other);
        assert!(tensor_method("gt", cpu(), &[Val::Other]).holds_mask());
        assert_eq!(
            tensor_method("mean", TensorFacts::default(), &[Val::Other]),
            Val::Tensor(TensorFacts {
                place: Place::Device,
                scalar: true,
                mask: false,
                zero_dim_if: None,
                forward_of: None,
            })
        );
        assert!(Val::Tuple(vec![Val::Other, Val::Device(Place::Cpu)]).is_cpu_placement());
    }

    #[test]
    fn a_cpu_operand_that_is_not_0_dim_puts_an_op_on_the_cpu() {
        // libtorch refuses a CPU tensor with a device one unless it is 0-dim.
        let device = Val::device_tensor();
        assert!(tensor_method("mm", cpu(), std::slice::from_ref(&device)).is_cpu_tensor());
        assert!(
            tensor_method("add", TensorFacts::default(), &[Val::Tensor(cpu())]).is_cpu_tensor()
        );
        assert!(Val::Tensor(cpu())
            .arithmetic(device.clone())
            .is_cpu_tensor());
        let cpu_scalar = Val::Tensor(TensorFacts {
            scalar: true,
            ..cpu()
        });
        assert!(!cpu_scalar
            .clone()
            .arithmetic(device.clone())
            .is_cpu_tensor());
        assert!(cpu_scalar.clone().arithmetic(cpu_scalar).is_cpu_tensor());
        // An unknown device tensor with a conditional one: on the CPU if the
        // condition holds.
        let field = Place::of_value(&TypeRef::Field {
            base: Box::new(TypeRef::Named("Env".into())),
            field: "reward".into(),
        });
        let sum = Val::tensor_at(field.clone()).arithmetic(device);
        assert_eq!(sum, Val::tensor_at(field));
    }

    #[test]
    fn host_data_of_a_deferred_type_keeps_ops_on_the_cpu_only_if_it_is_not_a_number() {
        let gamma = TypeRef::Field {
            base: Box::new(TypeRef::Named("Critic".into())),
            field: "gamma".into(),
        };
        let from_field = Val::Tensor(TensorFacts {
            zero_dim_if: Some(gamma.clone()),
            ..cpu()
        });
        // The tensor itself is on the CPU whatever its shape.
        assert!(from_field.is_cpu_tensor());
        // What it imposes on an op is left to the crate pass.
        assert_eq!(
            from_field.arithmetic(Val::device_tensor()),
            Val::tensor_at(Place::of(PlaceRef::HostData(gamma)))
        );
    }

    #[test]
    fn a_module_computes_where_it_moves_its_input_or_where_input_and_weights_are() {
        let moving = Val::Deferred(TypeRef::Written(TyKind::MovingModule), Place::Device);
        assert_eq!(
            module_application("apply", Place::Cpu, &moving),
            Place::Device
        );
        let cpu_layer = Val::Deferred(TypeRef::Named("Linear".into()), Place::Cpu);
        assert_eq!(
            module_application("apply_t", Place::Cpu, &cpu_layer),
            Place::Cpu
        );
        // Otherwise the crate pass decides, as for `layer.forward_t(xs)`.
        let layer = Val::deferred(TypeRef::Named("Linear".into()));
        assert_eq!(
            module_application("apply_t", Place::Cpu, &layer),
            Place::of(PlaceRef::Call {
                result: TypeRef::Return {
                    owner: Some(Box::new(TypeRef::Named("Linear".into()))),
                    name: "forward_t".into(),
                },
                args: vec![Place::Device, Place::Cpu],
                module: true,
                devices: Vec::new(),
            })
        );
        // `apply_opt` may hand back its input.
        assert_eq!(
            module_application("apply_opt", Place::Device, &cpu_layer),
            Place::Device
        );
    }

    #[test]
    fn branches_are_on_the_cpu_only_if_both_are() {
        assert_eq!(Place::Cpu.both(Place::Cpu), Place::Cpu);
        assert_eq!(Place::Cpu.both(Place::Device), Place::Device);
        assert_eq!(
            Place::of(PlaceRef::Param(0)).both(Place::Cpu),
            Place::of(PlaceRef::Param(0))
        );
        assert_eq!(
            Place::of(PlaceRef::Param(0)).both(Place::of(PlaceRef::Param(1))),
            Place::of(PlaceRef::All(vec![
                Place::of(PlaceRef::Param(0)),
                Place::of(PlaceRef::Param(1))
            ]))
        );
        assert_eq!(
            Place::of(PlaceRef::Param(0)).both(Place::Device),
            Place::Device
        );
        assert_eq!(
            Place::of(PlaceRef::Param(0)).either(Place::of(PlaceRef::Param(1))),
            Place::CpuIf(vec![PlaceRef::Param(0), PlaceRef::Param(1)])
        );
    }
}
