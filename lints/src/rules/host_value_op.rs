//! `host-value-op`: tensor ops whose result is a host value.

use super::{infallible_name, Hit, MethodCall, Need, Rule, RuleInfo};

declare_rule! {
    /// ### What it does
    /// Finds `equal`, `allclose` and `is_nonzero` on device tensors inside
    /// loops. Each returns a Rust `bool`, not a tensor.
    ///
    /// ### Why is this bad
    /// To hand back a `bool` the host has to wait for the comparison, and
    /// for every kernel queued before it, to finish on the device. In a
    /// training or decoding loop that stalls the queue once per iteration.
    ///
    /// ### Example
    /// ```rust,ignore
    /// for step in 0..max_len {
    ///     let next = logits.argmax(-1, false);
    ///     if next.equal(&eos) {
    ///         break;
    ///     }
    ///     tokens.push(next);
    /// }
    /// ```
    ///
    /// ### Use instead
    /// Keep the comparison on the device and look at it rarely, e.g. check
    /// a `done` mask every N steps:
    /// ```rust,ignore
    /// let mut done = Tensor::zeros([batch], (Kind::Bool, device));
    /// for step in 0..max_len {
    ///     let next = logits.argmax(-1, false);
    ///     done = done.logical_or(&next.eq_tensor(&eos));
    ///     tokens.push(next);
    ///     if step % 16 == 0 && done.all().int64_value(&[]) == 1 {
    ///         break;
    ///     }
    /// }
    /// ```
    pub HostValueOp => HOST_VALUE_OP,
    id: "host-value-op",
    level: Warn,
    summary: "ops that return a host value (`equal`, `allclose`, `is_nonzero`) inside loops",
    help: "keep the result on the device (e.g. `eq_tensor`, `isclose`) and read it every N steps",
}

impl Rule for HostValueOp {
    fn info(&self) -> &'static RuleInfo {
        &HOST_VALUE_OP
    }

    fn method_call(&self, call: &MethodCall<'_>) -> Option<Hit> {
        method(call)
    }

    fn prefilter_tokens(&self) -> &'static [&'static str] {
        &["allclose"]
    }

    fn macro_idents(&self) -> &'static [&'static str] {
        &["equal", "allclose", "is_nonzero"]
    }
}

/// Checks a method call for an op returning a host value.
fn method(call: &MethodCall<'_>) -> Option<Hit> {
    let name = infallible_name(call.name);
    let need = match name {
        "equal" if call.args.len() == 1 => Need::TchFile,
        "allclose" | "is_nonzero" => Need::Name,
        _ => return None,
    };
    let returns = if name == "is_nonzero" {
        "a host `bool` (it reads the single element)"
    } else {
        "a host `bool`"
    };
    Some(Hit::new(
        HOST_VALUE_OP.id,
        name,
        need,
        format!("`{name}` returns {returns}, so the host waits for the device"),
    ))
}
