//! `Tensor::from(x)` of a number is a 0-dim CPU tensor, which libtorch
//! broadcasts onto any device: unlike a CPU tensor of host data
//! (`Tensor::from(vec)`, `Tensor::from_slice`), it does not put the ops it
//! takes part in on the CPU.

use tch::{nn, nn::Module, Kind, Tensor};

pub struct Critic {
    net: nn::Sequential,
    gamma: f64,
    rewards: Vec<f32>,
}

impl Critic {
    pub fn train(&self, obs: &Tensor, next_obs: &Tensor, opt: &mut nn::Optimizer) {
        for _ in 0..100 {
            let target = self.net.forward(next_obs) * Tensor::from(self.gamma);
            let loss = (self.net.forward(obs) - target).square().mean(Kind::Float);
            opt.backward_step(&loss);
            println!("loss {}", f64::try_from(&loss).unwrap()); //~ warning host-sync
        }
    }

    /// Host data, discounted on the host: nothing here waits for a device.
    pub fn discounted(&self) -> Vec<f64> {
        let mut out = Vec::new();
        for _ in 0..10 {
            let returns = Tensor::from(self.rewards.clone()) * Tensor::from(self.gamma);
            out.push(f64::try_from(returns.sum(Kind::Double)).unwrap());
        }
        out
    }
}

pub struct Scorer;

impl Scorer {
    pub fn score(&self, xs: &Tensor) -> Tensor {
        xs.shallow_clone()
    }
}

/// A full reduction with a kind imported on its own (`use tch::Kind::Float`)
/// is 0-dim too, so its debug form prints (reads) its value.
pub fn debug_losses(scorer: &Scorer, batches: &[Tensor]) {
    use tch::Kind::Float;
    for xs in batches {
        let loss = scorer.score(xs).mean(Float);
        eprintln!("loss {loss:?}"); //~ warning host-sync
    }
}
