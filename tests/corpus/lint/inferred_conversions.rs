//! `t.try_into()` whose host type is inferred from elsewhere (a struct
//! field it is stored in, a tuple returned from a closure) reads the tensor
//! as surely as an annotated one: every `TryFrom<Tensor>` of tch is a host
//! type. `try_into()` of anything else is another conversion.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Stats {
    pub approx_kl: f64,
    pub loss: f64,
    pub steps: u32,
}

pub fn train(model: &nn::Sequential, vs: &nn::VarStore, batches: &[Tensor], stats: &mut Stats) {
    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    let device = Device::cuda_if_available();
    for batch in batches {
        let xs = batch.to_device(device);
        let logratio = model.forward(&xs).log_softmax(-1, Kind::Float);
        let (approx_kl, entropy) = tch::no_grad(|| {
            let kl = (-&logratio).mean(Kind::Float).try_into().unwrap(); //~ warning host-sync
            (kl, logratio.exp().mean(Kind::Float))
        });
        let loss = logratio.mean(Kind::Float) - entropy;
        opt.backward_step(&loss);
        stats.approx_kl = approx_kl;
        stats.loss = loss.try_into().unwrap(); //~ warning host-sync
        stats.steps = 1u64.try_into().unwrap();
    }
}

/// The `Ok` of the `Result` a function returns names the type the tail's
/// bare `into()` converts into: host rows.
fn q_values(net: &nn::Sequential, states: &Tensor) -> anyhow::Result<Vec<Vec<f32>>> {
    let device = Device::cuda_if_available();
    let out = net.forward(&states.to_device(device));
    Ok(out.into()) //~ warning host-sync
}

/// A per-turn caller of it reads every turn.
pub fn play(net: &nn::Sequential, states: &Tensor) {
    for _turn in 0..40 {
        let q = q_values(net, states).unwrap(); //~ warning host-sync
        println!("{}", q.len());
    }
}

/// `Some` of an `Option` the same way; an `Ok` of a tensor is no conversion.
pub fn maybe_row(t: &Tensor) -> Option<Vec<f32>> {
    Some(t.into())
}

pub fn kept(t: &Tensor) -> anyhow::Result<Tensor> {
    Ok(t.shallow_clone().into())
}
