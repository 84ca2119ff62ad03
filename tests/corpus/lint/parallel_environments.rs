//! A loop over parallel environments (`for e in 0..NUM_ENVS`, `for env in
//! envs.iter_mut()`) runs one step of each: together its iterations are one
//! step of the loop around it, which stays the per-step loop. A copy of the
//! sampled actions once per step, before stepping every environment, is a
//! warning there.

use tch::{nn, nn::Module, Device, Kind, Tensor};

const NUM_ENVS: i64 = 16;

pub struct Env;

impl Env {
    pub fn step(&mut self, _action: i64) -> (f64, bool) {
        (0.0, false)
    }
}

fn to_actions(actions: &Tensor) -> Vec<i64> {
    Vec::<i64>::try_from(actions).unwrap() //~ warning host-sync
}

pub fn rollout(policy: &nn::Sequential, envs: &mut [Env], steps: usize) {
    let device = Device::cuda_if_available();
    let observations = Tensor::zeros([NUM_ENVS, 4], (Kind::Float, device));
    for _ in 0..steps {
        let logits = policy.forward(&observations);
        let actions = logits.softmax(-1, Kind::Float).multinomial(1, true);
        let ids = to_actions(&actions); //~ warning host-sync
        for e in 0..NUM_ENVS {
            let (_reward, _done) = envs[e as usize].step(ids[e as usize]);
        }
        for env in envs.iter_mut() {
            env.step(0);
        }
    }
}
