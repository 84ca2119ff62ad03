//! `data-dependent-shape`: ops whose output shape depends on the values.

use super::{infallible_name, Hit, MethodCall, Need, Rule, RuleInfo};
use crate::analysis::values::Val;

declare_rule! {
    /// ### What it does
    /// Finds ops whose output shape depends on the tensor's values, inside
    /// loops: `nonzero`, `argwhere`, `masked_select`, `unique` and its
    /// variants, `repeat_interleave` with a tensor of counts, `bincount`,
    /// and indexing with a boolean mask (`t.index(&[Some(&mask)])` where
    /// `mask` comes from a comparison).
    ///
    /// ### Why is this bad
    /// The host allocates every output tensor, so it has to know the output's
    /// size before it can queue the op; with these ops the size is only known
    /// once the device has computed the input. The host therefore waits for
    /// the device on every call, exactly like a scalar read.
    ///
    /// ### Example
    /// ```rust,ignore
    /// for (obs, rewards) in rollouts {
    ///     let positive = rewards.masked_select(&rewards.gt(0.0));
    ///     loss = loss + positive.mean(Kind::Float);
    /// }
    /// ```
    ///
    /// ### Use instead
    /// Use a fixed-shape formulation: multiply by the mask, or `where_self`:
    /// ```rust,ignore
    /// for (obs, rewards) in rollouts {
    ///     let mask = rewards.gt(0.0).to_kind(Kind::Float);
    ///     let positive = (&rewards * &mask).sum(Kind::Float) / mask.sum(Kind::Float).clamp_min(1.0);
    ///     loss = loss + positive;
    /// }
    /// ```
    pub DataDependentShape => DATA_DEPENDENT_SHAPE,
    id: "data-dependent-shape",
    level: Warn,
    summary: "ops with data-dependent output shapes (`nonzero`, `masked_select`, `unique`, ...) inside loops",
    help: "use a fixed-shape formulation (multiply by the mask, `where_self`, `scatter_add`) or move it out of the loop",
}

impl Rule for DataDependentShape {
    fn info(&self) -> &'static RuleInfo {
        &DATA_DEPENDENT_SHAPE
    }

    fn method_call(&self, call: &MethodCall<'_>) -> Option<Hit> {
        method(call)
    }

    fn prefilter_tokens(&self) -> &'static [&'static str] {
        &[
            "masked_select",
            ".nonzero(",
            "f_nonzero(",
            "nonzero_numpy",
            "argwhere",
            "unique_dim",
            "unique_consecutive",
            "._unique",
            "repeat_interleave",
            "bincount",
        ]
    }

    fn macro_idents(&self) -> &'static [&'static str] {
        &[
            "nonzero",
            "argwhere",
            "masked_select",
            "unique",
            "unique_dim",
            "unique_consecutive",
            "bincount",
            "repeat_interleave",
            "index",
            "i",
        ]
    }
}

/// Checks a method call for an op with a data-dependent output shape.
fn method(call: &MethodCall<'_>) -> Option<Hit> {
    let name = infallible_name(call.name);
    let need = match name {
        "nonzero" | "argwhere" | "unique" => Need::TchFile,
        "nonzero_numpy"
        | "masked_select"
        | "unique_dim"
        | "unique_consecutive"
        | "unique_dim_consecutive"
        | "_unique"
        | "_unique2"
        | "bincount" => Need::Name,
        // A scalar repeat count gives a static shape (PyTorch expands);
        // a tensor of counts needs their sum before the output exists.
        "repeat_interleave" | "repeat_interleave_self_tensor" => Need::Name,
        "index" | "i" if call.args.first().is_some_and(Val::holds_mask) => {
            return Some(Hit::new(
                DATA_DEPENDENT_SHAPE.id,
                format!("{name}(mask)"),
                Need::TchFile,
                "indexing with a boolean mask returns a tensor whose shape depends on the data, so the host waits for the device".into(),
            ));
        }
        _ => return None,
    };
    Some(Hit::new(
        DATA_DEPENDENT_SHAPE.id,
        name,
        need,
        format!("`{name}` returns a tensor whose shape depends on the data, so the host waits for the device"),
    ))
}
