//! `host-sync`: scalar reads, bulk copies to the host and printing of
//! device tensors.

use super::{
    infallible_name, is_device_move, CalleeName, Conversion, FormatArg, FormatTrait, Hit,
    MethodCall, NamedCall, Need, OwnLoop, PathCall, Rule, RuleInfo, Target,
};
use crate::analysis::facts::Fix;
use crate::analysis::values::Val;

declare_rule! {
    /// ### What it does
    /// Finds reads of tensor data back to the host inside `for`, `while` and
    /// `loop` bodies (and closures that run there):
    ///
    /// * scalar reads: `double_value`, `int64_value`, their `f_` forms,
    ///   `f64::try_from(&t)` and friends, the legacy `f64::from(&t)` of
    ///   tch < 0.12, and `.try_into()` into a scalar;
    /// * bulk copies: `Vec::<T>::try_from(&t)`, `copy_data`,
    ///   `to_device(Device::Cpu)` (also `to_device_(Device::Cpu, ..)`),
    ///   `.to(Device::Cpu)`, ndarray conversions, and `.iter::<T>()`, which
    ///   reads one element per item;
    /// * waiting for the device: `tch::Cuda::synchronize(i)`;
    /// * printing: `t.print()`, `t.to_string()`, and a tensor formatted with
    ///   `{}` in `println!`, `format!`, `write!` or a log macro. `{:?}` only
    ///   prints the shape and kind, except for tensors with fewer than ten
    ///   elements, so it is reported for 0-dim tensors (losses, means, and
    ///   what the function backpropagates from) only.
    ///
    /// Values whose provenance is visibly the CPU (`Device::Cpu`,
    /// `tch::kind::FLOAT_CPU`, `Tensor::from_slice`, and tensors computed
    /// from them) are not reported.
    ///
    /// ### Why is this bad
    /// CUDA and MPS run asynchronously: the host queues kernels and moves on.
    /// Reading a value back makes the host wait until every queued kernel has
    /// finished, so the next step cannot be queued while the device works.
    /// Once per epoch this costs nothing; once per step it serialises host and
    /// device, and it hides in a profile as time spent in the *next* kernel
    /// launch or in `cudaMemcpy`.
    ///
    /// ### Example
    /// ```rust,ignore
    /// for (images, labels) in data.train_iter(64).to_device(device) {
    ///     let loss = net.forward(&images).cross_entropy_for_logits(&labels);
    ///     opt.backward_step(&loss);
    ///     total += loss.double_value(&[]);
    /// }
    /// println!("mean loss {}", total / batches as f64);
    /// ```
    ///
    /// ### Use instead
    /// Accumulate on the device and read once per epoch, or every N steps:
    /// ```rust,ignore
    /// let mut total = Tensor::zeros([], (Kind::Float, device));
    /// for (images, labels) in data.train_iter(64).to_device(device) {
    ///     let loss = net.forward(&images).cross_entropy_for_logits(&labels);
    ///     opt.backward_step(&loss);
    ///     total += loss.detach();
    /// }
    /// println!("mean loss {}", total.double_value(&[]) / batches as f64);
    /// ```
    pub HostSync => HOST_SYNC,
    id: "host-sync",
    level: Warn,
    summary: "scalar reads, copies to the host and printing of device tensors inside loops",
    help: "accumulate on the device and read once after the loop, or every N steps",
}

impl Rule for HostSync {
    fn info(&self) -> &'static RuleInfo {
        &HOST_SYNC
    }

    fn method_call(&self, call: &MethodCall<'_>) -> Option<Hit> {
        method(call)
    }

    fn point_free_method(&self, call: &MethodCall<'_>) -> Option<Hit> {
        method(call)
    }

    fn conversion(&self, conversion: &Conversion<'_>) -> Option<Hit> {
        Some(self::conversion(conversion))
    }

    fn path_call(&self, call: &PathCall<'_>) -> Option<Hit> {
        // devcheck's tracked readbacks: `readbacks::scalar_f64(&loss)`.
        if call.segments.iter().any(|s| s == "readbacks") {
            tracked_readback(call.name)
        } else {
            None
        }
    }

    fn format_arg(&self, arg: &FormatArg<'_>) -> Option<Hit> {
        formatted(arg)
    }

    fn callee(&self, callee: &NamedCall<'_>) -> Option<Hit> {
        // `tch::Cuda::synchronize(i)` waits for the whole device, whatever
        // it is handed.
        let CalleeName::Path(segments) = callee.name else {
            return None;
        };
        let [.., owner, name] = segments else {
            return None;
        };
        (owner == "Cuda" && name == "synchronize").then(|| {
            Hit::new(
                HOST_SYNC.id,
                "Cuda::synchronize",
                Need::Name,
                "`Cuda::synchronize` makes the host wait until every kernel queued on the device has finished"
                    .to_owned(),
            )
            .with_fix(Fix::Wait)
        })
    }

    fn help(&self, fixes: &[Fix]) -> &'static str {
        if fixes.iter().all(|f| *f == Fix::Format) {
            "format lazily: log every N steps (`if step % N == 0`), printing a value accumulated on the device rather than each step's tensor"
        } else if fixes.iter().all(|f| *f == Fix::Element) {
            "copy the tensor to the host once before the loop (`Vec::<T>::try_from`) and index the vector"
        } else if fixes.iter().all(|f| *f == Fix::Wait) {
            "wait only where the host needs the device idle (around a timed region, before a read); reads and copies already wait for the work they need"
        } else if fixes.iter().all(|f| *f == Fix::Bulk) {
            "copy less often: keep what the next step needs on the device, and copy results to the host in one batch after the loop"
        } else {
            HOST_SYNC.help
        }
    }

    fn prefilter_tokens(&self) -> &'static [&'static str] {
        &[
            "double_value",
            "int64_value",
            "copy_data",
            "Device::Cpu",
            ".iter::<",
            "linalg_",
            "Cuda::synchronize",
        ]
    }

    fn macro_idents(&self) -> &'static [&'static str] {
        &[
            "double_value",
            "int64_value",
            "f_double_value",
            "f_int64_value",
            "copy_data",
            "copy_data_u8",
            "to_device",
            "to_device_",
            "to",
            "iter",
            "print",
            "to_string",
            "try_from",
            "from",
            "try_into",
            "scalar_f64",
            "scalar_i64",
            "vec_f32",
            "vec_f64",
            "vec_i64",
            "to_host",
        ]
    }
}

/// Checks a method call for a scalar read, a host copy or printing.
fn method(call: &MethodCall<'_>) -> Option<Hit> {
    let name = infallible_name(call.name);
    let hit = |need, message: String| Some(Hit::new(HOST_SYNC.id, name, need, message));
    match name {
        "double_value" | "int64_value" => {
            let hit = Hit::new(
                HOST_SYNC.id,
                name,
                Need::Name,
                format!("`{name}` reads a tensor element back to the host"),
            );
            // `t.double_value(&[i])` in a loop reads one element per
            // iteration: one bulk copy before the loop does the same.
            Some(if call.element_index {
                hit.with_fix(Fix::Element)
            } else {
                hit
            })
        }
        "copy_data" | "copy_data_u8" => hit(
            Need::Name,
            format!("`{name}` copies the tensor's data to the host"),
        )
        .map(|h| h.with_fix(Fix::Bulk)),
        _ if (is_device_move(name) || name == "to")
            && call.args.first().is_some_and(Val::is_cpu_placement) =>
        {
            let need = if name == "to" {
                Need::TchFile
            } else {
                Need::Name
            };
            Some(
                Hit::new(
                    HOST_SYNC.id,
                    format!("{name}(Device::Cpu)"),
                    need,
                    format!("`{name}(Device::Cpu)` copies the tensor to the host"),
                )
                .with_fix(Fix::Bulk),
            )
        }
        "iter" if call.scalar_turbofish => Some(
            Hit::new(
                HOST_SYNC.id,
                "iter::<T>",
                Need::TchFile,
                "`iter::<T>()` reads the tensor back to the host one element at a time".into(),
            )
            .with_note(
                "each item is a separate scalar read, so a loop over it syncs once per item",
            )
            .with_own_loop(OwnLoop::Elements),
        ),
        // The decompositions and solvers PyTorch documents as synchronizing
        // a CUDA device with the CPU: libtorch checks their result (or runs
        // them) on the host. Their `_ex` variants check nothing by default.
        _ if checks_on_the_host(name) => hit(
            Need::TchFile,
            format!("`{name}` waits for the device: libtorch checks its result on the host"),
        ),
        // The older names of some of them.
        "inverse" | "cholesky" | "svd" | "pinverse" => hit(
            Need::Tensor,
            format!("`{name}` waits for the device: libtorch checks its result on the host"),
        ),
        "print" if call.args.is_empty() => hit(
            Need::Tensor,
            "`print` formats the tensor on the host, reading all its data back".into(),
        )
        .map(|h| h.with_fix(Fix::Format)),
        "to_string" if call.args.len() <= 1 => hit(
            Need::Tensor,
            "`to_string` formats the tensor on the host, reading all its data back".into(),
        )
        .map(|h| h.with_fix(Fix::Format)),
        _ => None,
    }
}

/// The linear-algebra functions PyTorch documents as synchronizing a CUDA
/// device with the CPU, under tch's names: each with its variants
/// (`linalg_pinv_hermitian`, `linalg_svd_u`), not the `_ex` ones, which
/// check nothing unless asked, nor the triangular solve.
fn checks_on_the_host(name: &str) -> bool {
    const DOCUMENTED: &[&str] = &[
        "linalg_cholesky",
        "linalg_inv",
        "linalg_solve",
        "linalg_ldl_factor",
        "linalg_lu_factor",
        "linalg_eig",
        "linalg_eigvals",
        "linalg_eigh",
        "linalg_eigvalsh",
        "linalg_matrix_rank",
        "linalg_svd",
        "linalg_svdvals",
        "linalg_cond",
        "linalg_pinv",
    ];
    DOCUMENTED.iter().any(|base| {
        name.strip_prefix(base).is_some_and(|rest| {
            rest.is_empty()
                || (rest.starts_with('_') && !rest.starts_with("_ex") && rest != "_triangular")
        })
    })
}

/// A read through devcheck's own tracked-readback wrappers
/// (`readbacks::scalar_f64(&t)`): counted by devcheck, but still a sync.
fn tracked_readback(name: &str) -> Option<Hit> {
    let (what, fix) = match name {
        "scalar_f64" | "scalar_i64" => ("reads a tensor scalar back to the host", Fix::Rule),
        "vec_f32" | "vec_f64" | "vec_i64" | "to_host" => {
            ("copies the tensor to the host", Fix::Bulk)
        }
        _ => return None,
    };
    Some(
        Hit::new(
            HOST_SYNC.id,
            format!("readbacks::{name}"),
            Need::Name,
            format!("`readbacks::{name}` {what}"),
        )
        .with_note("devcheck's readbacks check counts this read against the step's budget; it still waits for the device")
        .with_fix(fix),
    )
}

/// Checks `Target::try_from(arg)` / `Target::from(arg)` / `arg.try_into()`.
///
/// A scalar conversion from a reference can only be tch's. `Vec::from(&x)`
/// is common for slices, so bulk conversions need `try_from` (`fallible`)
/// as well before an unknown argument counts.
fn conversion(conversion: &Conversion<'_>) -> Hit {
    let &Conversion {
        op,
        target,
        by_ref,
        fallible,
    } = conversion;
    match target {
        Target::Scalar => Hit::new(
            HOST_SYNC.id,
            op,
            if by_ref { Need::Name } else { Need::Tensor },
            format!("`{op}` reads a tensor scalar back to the host"),
        ),
        Target::Bulk => Hit::new(
            HOST_SYNC.id,
            op,
            if by_ref && fallible {
                Need::TchFile
            } else {
                Need::Tensor
            },
            format!("`{op}` copies the tensor to the host"),
        )
        .with_fix(Fix::Bulk),
        Target::Inferred => Hit::new(
            HOST_SYNC.id,
            op,
            Need::Tensor,
            format!("`{op}` reads the tensor back to the host (every `TryFrom<Tensor>` of tch does)"),
        ),
    }
}

/// Checks one tensor argument of a formatting macro.
fn formatted(arg: &FormatArg<'_>) -> Option<Hit> {
    let &FormatArg {
        macro_name,
        how,
        scalar,
    } = arg;
    match how {
        FormatTrait::Display => Some(
            Hit::new(
                HOST_SYNC.id,
                format!("{macro_name}!(\"{{}}\")"),
                Need::Tensor,
                format!("formatting a tensor with `{{}}` in `{macro_name}!` reads its data back to the host"),
            )
            .with_fix(Fix::Format),
        ),
        FormatTrait::Debug if scalar => Some(
            Hit::new(
                HOST_SYNC.id,
                format!("{macro_name}!(\"{{:?}}\")"),
                Need::Tensor,
                format!("formatting a 0-dim tensor with `{{:?}}` in `{macro_name}!` reads its value back to the host"),
            )
            .with_note("tch's `Debug` prints the values of tensors with fewer than ten elements")
            .with_fix(Fix::Format),
        ),
        FormatTrait::Debug => None,
    }
}
