//! A benchmark's routine (criterion's `b.iter(|| ..)`) runs once per
//! measured iteration, each one call of the code measured, as a server
//! answers a request: one copy of the answer per iteration is its point,
//! but reading the answer one element at a time waits once per element.

use criterion::{black_box, Criterion};
use tch::{nn, nn::Module, Device, Tensor};

pub struct Classifier {
    net: nn::Sequential,
    device: Device,
}

impl Classifier {
    pub fn logits(&self, xs: &[f32]) -> Vec<f32> {
        let input = Tensor::from_slice(xs).to_device(self.device);
        let out = self.net.forward(&input);
        (0..out.size()[0])
            .map(|i| out.double_value(&[i]) as f32) //~ warning host-sync
            .collect()
    }

    pub fn embed(&self, xs: &[f32]) -> Vec<f32> {
        let input = Tensor::from_slice(xs).to_device(self.device);
        Vec::<f32>::try_from(self.net.forward(&input)).unwrap()
    }
}

pub fn bench(c: &mut Criterion, model: &Classifier) {
    c.bench_function("logits", |b| {
        b.iter(|| model.logits(black_box(&[1.0, 2.0]))) //~ warning host-sync
    });
    c.bench_function("embed", |b| {
        b.iter(|| model.embed(black_box(&[1.0, 2.0]))) //~ note host-sync
    });
}
