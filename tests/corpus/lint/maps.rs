//! Maps of tensors: iterating one gives (key, value) pairs, indexing it or
//! `get` gives a value, `values()` the values; the field of a value whose
//! type is a generic parameter (`T` of a wrapper running a closure) is
//! found by its name.

use std::collections::HashMap;

use tch::{Device, Kind, Tensor};

pub struct Losses {
    pub summed: Tensor,
    pub per_encoder: HashMap<String, Tensor>,
}

fn losses(xs: &Tensor) -> Losses {
    let mut per_encoder = HashMap::new();
    per_encoder.insert("pos".to_string(), xs.mean(Kind::Float));
    Losses { summed: xs.sum(Kind::Float), per_encoder }
}

fn top_k(xs: &Tensor) -> HashMap<String, (Tensor, Tensor)> {
    let mut out = HashMap::new();
    out.insert("pos".to_string(), xs.topk(3, -1, true, true));
    out
}

/// Runs `f` with mixed precision or without: what `f` returns comes back.
fn with_autocast<T>(enabled: bool, f: impl FnOnce() -> T) -> T {
    tch::autocast(enabled, f)
}

pub fn train(batches: &[Tensor], opt: &mut tch::nn::Optimizer) -> HashMap<String, f32> {
    let device = Device::cuda_if_available();
    let mut per_encoder = HashMap::new();
    for batch in batches {
        let xs = batch.to_device(device);
        let losses = with_autocast(true, || losses(&xs));
        opt.backward_step(&losses.summed);
        for (encoder, loss) in losses.per_encoder {
            *per_encoder.entry(encoder).or_insert(0.0) += f32::try_from(loss).unwrap(); //~ warning host-sync
        }
    }
    per_encoder
}

pub fn annotate(batches: &[Tensor], model: &tch::CModule) -> Vec<ndarray::ArrayD<i64>> {
    let mut labels = Vec::new();
    for batch in batches {
        let logits = model.forward_ts(&[batch.to_device(Device::cuda_if_available())]).unwrap();
        for (_, top) in top_k(&logits) {
            let (_, indices) = top;
            let indices: ndarray::ArrayD<i64> = (&indices).try_into().unwrap(); //~ warning host-sync
            labels.push(indices);
        }
        let maps = top_k(&logits);
        let (probs, _) = &maps["pos"];
        println!("{}", f64::try_from(probs.max()).unwrap()); //~ warning host-sync
    }
    labels
}
