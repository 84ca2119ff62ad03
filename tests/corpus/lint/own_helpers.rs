//! A crate type with a method of a tch helper's name (an optimizer of its
//! own with `clip_grad_norm`) runs its own code: the call reaches that
//! method's reads, here one per parameter, and is reported where it is
//! called in the minibatch loop.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct Adam {
    params: Vec<Tensor>,
}

impl Adam {
    pub fn zero_grad(&mut self) {
        for p in &mut self.params {
            p.zero_grad();
        }
    }

    pub fn clip_grad_norm(&self, max_norm: f64) {
        let mut sq_sum = 0.0;
        for p in &self.params {
            let norm = f64::try_from(p.grad().norm()).unwrap(); //~ warning host-sync
            sq_sum += norm * norm;
        }
        if sq_sum.sqrt() > max_norm {
            for p in &self.params {
                let _ = p.grad().g_mul_scalar_(max_norm / sq_sum.sqrt());
            }
        }
    }

    pub fn step(&mut self) {}
}

pub fn update(model: &nn::Sequential, opt: &mut Adam, batches: &[Tensor]) {
    let device = Device::cuda_if_available();
    for batch in batches {
        let loss = model.forward(&batch.to_device(device)).mean(Kind::Float);
        opt.zero_grad();
        loss.backward();
        opt.clip_grad_norm(0.5); //~ warning host-sync
        opt.step();
    }
}
