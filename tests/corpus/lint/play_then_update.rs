//! Each pass of a training loop first plays whole episodes (a function
//! whose loop repeats environment steps) and then takes one optimizer
//! step: the pass is an epoch, so its loss read runs once per epoch of
//! play, a note; the per-step read inside the episode is a warning. A loop
//! whose every pass takes one environment step and one update (no whole
//! episode inside) stays a step loop, and its read a warning.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn play_episode(policy: &nn::Sequential, device: Device) -> Tensor {
    let mut obs = Tensor::zeros([1, 4], (Kind::Float, device));
    let mut rewards = Vec::new();
    for _ in 0..200 {
        let action = tch::no_grad(|| policy.forward(&obs)).argmax(-1, false);
        let chosen = action.int64_value(&[0]); //~ warning host-sync
        obs = obs + chosen as f64;
        rewards.push(obs.sum(Kind::Float));
    }
    Tensor::stack(&rewards, 0)
}

pub fn train(policy: &nn::Sequential, opt: &mut nn::Optimizer, epochs: usize) {
    let device = Device::cuda_if_available();
    for _ in 0..epochs {
        let returns = play_episode(policy, device); //~ note host-sync
        let loss = -returns.mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ note host-sync
    }
}

pub fn train_online(policy: &nn::Sequential, opt: &mut nn::Optimizer, steps: usize) {
    let device = Device::cuda_if_available();
    let obs = Tensor::zeros([1, 4], (Kind::Float, device));
    for _ in 0..steps {
        let loss = policy.forward(&obs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
    }
}
