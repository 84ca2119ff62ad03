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
//! Provenance is tracked one bit deep: a tensor is on the CPU when it comes
//! from `Device::Cpu`, a `(Kind, Device::Cpu)` pair, tch's `*_CPU` constants,
//! a host-data constructor (`Tensor::from_slice`), or only from such tensors.

use crate::rules::Need;

/// A crate-level fact to look up once every file has been read.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeRef {
    /// A type by the last segment of its path (`Critic`, `Tensor`).
    Named(String),
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
    /// Nothing is known.
    Unknown,
}

/// What is known about a tensor.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TensorFacts {
    /// Visibly on the CPU.
    pub cpu: bool,
    /// Visibly 0-dim (a full reduction or a loss).
    pub scalar: bool,
    /// Visibly boolean (a comparison).
    pub mask: bool,
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
        /// Every element visibly on the CPU.
        cpu: bool,
        /// Some element is a boolean mask.
        mask: bool,
    },
    /// A tuple, element by element.
    Tuple(Vec<Val>),
    /// A `tch::Device`.
    Device {
        /// `Device::Cpu`.
        cpu: bool,
    },
    /// An iterator yielding the given values.
    Iter(Box<Val>),
    /// Decided by the crate-level pass.
    Deferred(TypeRef),
    /// A closure bound to a local name, by index into the walker's table.
    Closure(usize),
}

impl Val {
    /// A tensor with unknown placement.
    pub fn device_tensor() -> Val {
        Val::Tensor(TensorFacts::default())
    }

    /// Whether this names the CPU as a placement: `Device::Cpu`, or a
    /// `(Kind, Device::Cpu)` options pair.
    pub fn is_cpu_placement(&self) -> bool {
        match self {
            Val::Device { cpu } => *cpu,
            Val::Tuple(parts) => parts.iter().any(|p| matches!(p, Val::Device { cpu: true })),
            _ => false,
        }
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
        matches!(
            self,
            Val::Tensor(TensorFacts { cpu: true, .. }) | Val::Tensors { cpu: true, .. }
        )
    }

    /// What iterating over this value yields, if it is iterable in a known way.
    pub fn element(&self) -> Option<Val> {
        match self {
            Val::Iter(element) => Some((**element).clone()),
            Val::Tensors { cpu, mask } => Some(Val::Tensor(TensorFacts {
                cpu: *cpu,
                scalar: false,
                mask: *mask,
            })),
            Val::Deferred(t) => Some(Val::Deferred(TypeRef::Part {
                base: Box::new(t.clone()),
                index: None,
            })),
            _ => None,
        }
    }

    /// The value as a type reference for the crate-level pass.
    pub fn type_ref(&self) -> TypeRef {
        match self {
            Val::Deferred(t) => t.clone(),
            Val::Tensor(_) => TypeRef::Named("Tensor".into()),
            _ => TypeRef::Unknown,
        }
    }

    /// The value of either branch of an `if` or `match`.
    pub fn join(self, other: Val) -> Val {
        match (self, other) {
            (a, b) if a == b => a,
            (Val::Tensor(a), Val::Tensor(b)) => Val::Tensor(TensorFacts {
                cpu: a.cpu && b.cpu,
                scalar: a.scalar && b.scalar,
                mask: a.mask && b.mask,
            }),
            // A branch that diverges or is unknown does not make the other
            // branch's tensor less of a tensor, but CPU provenance must hold
            // on every path.
            (Val::Tensor(a), _) | (_, Val::Tensor(a)) => {
                Val::Tensor(TensorFacts { cpu: false, ..a })
            }
            (Val::Deferred(t), _) | (_, Val::Deferred(t)) => Val::Deferred(t),
            (Val::Other, Val::Other) => Val::Other,
            _ => Val::Unknown,
        }
    }

    /// The value of arithmetic between two operands.
    pub fn arithmetic(self, other: Val) -> Val {
        match (&self, &other) {
            (Val::Tensor(a), Val::Tensor(b)) => Val::Tensor(TensorFacts {
                cpu: a.cpu && b.cpu,
                scalar: a.scalar && b.scalar,
                mask: false,
            }),
            (Val::Tensor(a), Val::Other) | (Val::Other, Val::Tensor(a)) => {
                Val::Tensor(TensorFacts { mask: false, ..*a })
            }
            (Val::Tensor(_), _) | (_, Val::Tensor(_)) => Val::device_tensor(),
            (Val::Deferred(_), _) => self,
            (_, Val::Deferred(_)) => other,
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
    /// resolve to a crate-local type or a known non-tensor.
    pub strict: bool,
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
/// must be that the subject is a tensor.
pub(crate) fn gate(subject: &Val, need: Need, mentions_tch: bool) -> Gate {
    match subject {
        Val::Tensor(facts) if facts.cpu => Gate::Skip,
        Val::Tensor(_) => Gate::Report(None),
        Val::Deferred(ty) => Gate::Report(Some(Requirement {
            ty: ty.clone(),
            strict: need != Need::Name,
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
            | "to_device"
            | "to"
            | "g_mul_scalar"
            | "g_add_scalar"
            | "g_div_scalar"
            | "g_sub_scalar"
    )
}

/// Whether a tensor method returns a tensor (for the crate-level pass).
pub(crate) fn tensor_method_returns_tensor(name: &str) -> bool {
    let name = crate::rules::infallible_name(name);
    !non_tensor_result(name) && !tensors_result(name) && name != "device"
}

/// The value of `receiver.name(args)` where the receiver is a tensor.
pub(crate) fn tensor_method(name: &str, receiver: TensorFacts, args: &[Val]) -> Val {
    let name = crate::rules::infallible_name(name);
    if name == "device" {
        return Val::Device { cpu: receiver.cpu };
    }
    if non_tensor_result(name) {
        return Val::Other;
    }
    if tensors_result(name) {
        return Val::Tensors {
            cpu: receiver.cpu,
            mask: false,
        };
    }
    let cpu = match name {
        "to_device" | "to" => args.first().is_some_and(Val::is_cpu_placement),
        "cuda" => false,
        _ => {
            receiver.cpu
                && args.iter().all(|a| {
                    !matches!(a, Val::Tensor(t) if !t.cpu) && !matches!(a, Val::Deferred(_))
                })
        }
    };
    let scalar = scalar_result(name, args.len()) || (receiver.scalar && keeps_shape(name));
    let mask = mask_result(name)
        || (receiver.mask
            && matches!(
                name,
                "shallow_clone" | "detach" | "to_device" | "to" | "copy"
            ));
    Val::Tensor(TensorFacts { cpu, scalar, mask })
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
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_is_strict_for_generic_names_and_lenient_for_tch_names() {
        let tensor = Val::device_tensor();
        let cpu = Val::Tensor(TensorFacts {
            cpu: true,
            ..Default::default()
        });
        assert_eq!(gate(&tensor, Need::Tensor, false), Gate::Report(None));
        assert_eq!(gate(&cpu, Need::Name, true), Gate::Skip);
        assert_eq!(gate(&Val::Unknown, Need::Name, false), Gate::Report(None));
        assert_eq!(gate(&Val::Unknown, Need::TchFile, false), Gate::Skip);
        assert_eq!(gate(&Val::Unknown, Need::TchFile, true), Gate::Report(None));
        assert_eq!(gate(&Val::Unknown, Need::Tensor, true), Gate::Skip);
        assert_eq!(gate(&Val::Other, Need::Name, true), Gate::Skip);
        let field = Val::Deferred(TypeRef::Named("Critic".into()));
        assert!(matches!(
            gate(&field, Need::Tensor, true),
            Gate::Report(Some(Requirement { strict: true, .. }))
        ));
    }

    #[test]
    fn placement_follows_the_data() {
        let cpu = TensorFacts {
            cpu: true,
            ..Default::default()
        };
        assert!(tensor_method("relu", cpu, &[]).is_cpu_tensor());
        assert!(!tensor_method("to_device", cpu, &[Val::Device { cpu: false }]).is_cpu_tensor());
        assert!(tensor_method(
            "to_device",
            TensorFacts::default(),
            &[Val::Device { cpu: true }]
        )
        .is_cpu_tensor());
        assert!(!tensor_method("add", cpu, &[Val::device_tensor()]).is_cpu_tensor());
        assert_eq!(tensor_method("size", cpu, &[]), Val::Other);
        assert!(tensor_method("gt", cpu, &[Val::Other]).holds_mask());
        assert_eq!(
            tensor_method("mean", TensorFacts::default(), &[Val::Other]),
            Val::Tensor(TensorFacts {
                cpu: false,
                scalar: true,
                mask: false
            })
        );
        assert!(Val::Tuple(vec![Val::Other, Val::Device { cpu: true }]).is_cpu_placement());
    }
}
