//! A rollout loop runs one environment step per iteration, and every N
//! steps an update phase (epochs of minibatches) or an evaluation behind a
//! periodic guard: those loops run every N steps, so they make no epoch of
//! the rollout loop, whose per-step reads stay warnings. The minibatch
//! loop is a step loop of its own.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn to_actions(actions: &Tensor) -> Vec<i64> {
    (0..actions.size()[0])
        .map(|i| actions.int64_value(&[i])) //~ warning host-sync
        .collect()
}

pub fn train(policy: &nn::Sequential, opt: &mut nn::Optimizer, steps: usize, rollout: usize) {
    let device = Device::cuda_if_available();
    let mut obs = Tensor::zeros([8, 4], (Kind::Float, device));
    let mut buffer = Vec::new();
    for step in 0..steps {
        let logits = tch::no_grad(|| policy.forward(&obs));
        let actions = logits.softmax(-1, Kind::Float).multinomial(1, true);
        let host_actions = to_actions(&actions); //~ warning host-sync
        obs = Tensor::from_slice(&host_actions).to_kind(Kind::Float).to_device(device).expand([8, 4], false);
        buffer.push(obs.shallow_clone());
        if step % rollout == 0 {
            let batch = Tensor::stack(&buffer, 0);
            for _epoch in 0..4 {
                for minibatch in batch.split(2, 0) {
                    let loss = policy.forward(&minibatch).mean(Kind::Float);
                    opt.backward_step(&loss);
                    println!("{}", loss.double_value(&[])); //~ warning host-sync
                }
            }
            buffer.clear();
        }
        if step % 1000 == 0 {
            for _ in 0..10 {
                let value = policy.forward(&obs).mean(Kind::Float);
                println!("{}", value.double_value(&[])); //~ warning host-sync
            }
        }
    }
}
