//! `syncing-helper`: tch helpers that read values back internally.

use super::{Hit, MethodCall, Need, Rule, RuleInfo};
use crate::analysis::values::Val;

declare_rule! {
    /// ### What it does
    /// Finds calls to tch helpers that read tensors back to the host inside
    /// their own implementation, when they are called in a loop:
    /// `batch_accuracy_for_logits` (one scalar read per mini-batch of the
    /// data it is given, in tch's own evaluation loop, so a call once per
    /// epoch is the once-per-epoch level, as the rest of that loop is),
    /// `Optimizer::clip_grad_norm` and
    /// `Optimizer::backward_step_clip_norm` (both read the total gradient
    /// norm with `f64::try_from`).
    ///
    /// ### Why is this bad
    /// The sync is invisible at the call site but just as real: the host
    /// waits for the backward pass to finish before it can compute the
    /// clipping coefficient, so the next step cannot be queued early.
    ///
    /// ### Example
    /// ```rust,ignore
    /// for (xs, ys) in data.train_iter(64).to_device(device) {
    ///     let loss = net.forward_t(&xs, true).cross_entropy_for_logits(&ys);
    ///     opt.backward_step_clip_norm(&loss, 1.0);
    /// }
    /// ```
    ///
    /// ### Use instead
    /// Clip on the device without reading the norm back, e.g. scale the
    /// gradients by `(max / (norm + 1e-6)).clamp_max(1.0)` computed as a
    /// tensor, or clip by value with `backward_step_clip`:
    /// ```rust,ignore
    /// for (xs, ys) in data.train_iter(64).to_device(device) {
    ///     let loss = net.forward_t(&xs, true).cross_entropy_for_logits(&ys);
    ///     opt.backward_step_clip(&loss, 0.5);
    /// }
    /// ```
    pub SyncingHelper => SYNCING_HELPER,
    id: "syncing-helper",
    level: Warn,
    summary: "tch helpers that sync internally (`clip_grad_norm`, `batch_accuracy_for_logits`) in loops",
    help: "clip on the device (`backward_step_clip`, or scale by a norm kept as a tensor); for accuracy, sum the correct predictions of the mini-batches on the device and read the total once",
}

impl Rule for SyncingHelper {
    fn info(&self) -> &'static RuleInfo {
        &SYNCING_HELPER
    }

    fn method_call(&self, call: &MethodCall<'_>) -> Option<Hit> {
        method(call)
    }

    fn prefilter_tokens(&self) -> &'static [&'static str] {
        &[
            "batch_accuracy_for_logits",
            "clip_grad_norm",
            "backward_step_clip_norm",
        ]
    }

    fn macro_idents(&self) -> &'static [&'static str] {
        &[
            "batch_accuracy_for_logits",
            "clip_grad_norm",
            "backward_step_clip_norm",
        ]
    }
}

/// Checks a method call for a tch helper that syncs internally.
fn method(call: &MethodCall<'_>) -> Option<Hit> {
    let (name, what) = match call.name {
        "batch_accuracy_for_logits" => {
            // The third argument is the device the batches are moved to; on
            // the CPU nothing waits.
            if call.args.get(2).is_some_and(Val::is_cpu_placement) {
                return None;
            }
            (
                "batch_accuracy_for_logits",
                "reads the accuracy of every mini-batch back to the host",
            )
        }
        "clip_grad_norm" => (
            "clip_grad_norm",
            "reads the total gradient norm back to the host",
        ),
        "backward_step_clip_norm" => (
            "backward_step_clip_norm",
            "reads the total gradient norm back to the host",
        ),
        _ => return None,
    };
    let hit = Hit::new(
        SYNCING_HELPER.id,
        name,
        Need::Name,
        format!("`{name}` {what}"),
    );
    Some(hit)
}
