//! A call in a loop that runs a few times fixed in the source and runs no
//! step (`for lr in [a, b, c]`: a search over a few settings) counts where
//! the code around the loop runs, as a read written there does: once per
//! run it is silent, inside a training step it waits once per step. A
//! helper that reads one element of a tensor per call is still a loop of
//! reads.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn loss_of(w: &Tensor, xs: &Tensor, scale: f64) -> f64 {
    let loss = xs.matmul(&(w * scale)).square().mean(Kind::Float);
    loss.double_value(&[]) //~ warning host-sync
}

fn entry(t: &Tensor, i: i64) -> f64 {
    t.double_value(&[i]) //~ warning host-sync
}

/// Once per run, before training: tries a few scales and keeps the best.
pub fn pick_scale(w: &Tensor, xs: &Tensor, base: f64) -> f64 {
    let mut best = (f64::INFINITY, base);
    for scale in [base, base * 10.0, base * 100.0, 1e-3] {
        let loss = loss_of(w, xs, scale);
        if loss < best.0 {
            best = (loss, scale);
        }
    }
    best.1
}

pub fn train(vs: &nn::VarStore, net: &nn::Sequential, w: &Tensor, steps: usize) {
    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    let device = Device::cuda_if_available();
    let scale = pick_scale(w, &Tensor::rand([32, 4], (Kind::Float, device)), 1.0);
    for _ in 0..steps {
        let xs = Tensor::rand([32, 4], (Kind::Float, device));
        let loss = (net.forward(&xs) * scale).mean(Kind::Float);
        opt.backward_step(&loss);
        for factor in [0.5, 2.0] {
            println!("{}", loss_of(w, &xs, factor)); //~ warning host-sync
        }
        let probs = net.forward(&xs).softmax(-1, Kind::Float).get(0);
        for i in 0..4 {
            print!("{} ", entry(&probs, i)); //~ warning host-sync
        }
    }
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let w = vs.root().randn("w", &[4, 4], 0.0, 1.0);
    train(&vs, &net, &w, 100);
}
