use tch::{Kind, Tensor};

/// Reads the accuracy of one batch back to the host.
pub fn batch_accuracy(logits: &Tensor, labels: &Tensor) -> f64 {
    let correct = logits.argmax(-1, false).eq_tensor(labels);
    f64::try_from(correct.to_kind(Kind::Float).mean(Kind::Float)).unwrap() //~ warning host-sync
}
