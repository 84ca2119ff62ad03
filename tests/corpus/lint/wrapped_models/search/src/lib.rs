//! A search over a policy-value model. `evaluate_batch` is the trait's
//! default method: the batching wrapper overrides it, the plain model
//! keeps it, so a call on a generic model reaches both.

use std::sync::mpsc::{channel, Sender};
use wm_nn::NnModel;
use tch::Tensor;

pub trait PolicyValue {
    fn forward(&self, x: &Tensor) -> tch::Result<(Tensor, Tensor)>;

    fn evaluate_batch(&self, features: &[f32], n: usize) -> tch::Result<(Vec<f32>, Vec<f32>)> {
        let input = Tensor::from_slice(features).view([n as i64, 3, 8, 8]);
        let (policy, value) = self.forward(&input)?;
        // Both already sit on the CPU: copying them out waits for nothing.
        let mut policies = vec![0f32; n * 64];
        let mut values = vec![0f32; n];
        policy.view([-1]).copy_data(&mut policies, n * 64);
        value.view([-1]).copy_data(&mut values, n);
        Ok((policies, values))
    }
}

impl PolicyValue for NnModel {
    fn forward(&self, x: &Tensor) -> tch::Result<(Tensor, Tensor)> {
        // The model's own method, not this one.
        NnModel::forward(self, x) //~ warning host-sync
    }
}

/// Hands each batch to a worker thread that owns the model.
pub struct Batching {
    jobs: Sender<(Vec<f32>, usize, Sender<(Vec<f32>, Vec<f32>)>)>,
}

impl PolicyValue for Batching {
    fn forward(&self, _x: &Tensor) -> tch::Result<(Tensor, Tensor)> {
        Err(tch::TchError::Kind("batching works on features".into()))
    }

    fn evaluate_batch(&self, features: &[f32], n: usize) -> tch::Result<(Vec<f32>, Vec<f32>)> {
        let (reply, answer) = channel();
        self.jobs.send((features.to_vec(), n, reply)).unwrap();
        Ok(answer.recv().unwrap())
    }
}

pub fn search<M: PolicyValue>(model: &M, simulations: usize) -> f32 {
    let mut total = 0.0;
    let mut done = 0;
    while done < simulations {
        let features = vec![0f32; 8 * 192];
        let (_, values) = model.evaluate_batch(&features, 8).unwrap(); //~ warning host-sync
        total += values.iter().sum::<f32>();
        done += 8;
    }
    total
}
