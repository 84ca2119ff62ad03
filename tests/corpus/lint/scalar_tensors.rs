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
