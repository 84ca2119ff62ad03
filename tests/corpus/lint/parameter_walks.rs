//! A walk over a model's parameters reads each one once: checking the
//! weights once they are loaded runs no step, so its reads are notes; the
//! same walk in a function that runs once per training step (gradient
//! statistics) reads every parameter every step, a warning, and so does a
//! helper called for each parameter there, at the call and at its read.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn check_weights(vs: &nn::VarStore) -> Vec<String> {
    let mut warnings = Vec::new();
    for (name, tensor) in vs.variables() {
        if tensor.isnan().any().int64_value(&[]) != 0 { //~ note host-sync
            warnings.push(format!("{name} holds NaN"));
        }
        let largest = tensor.abs().max().double_value(&[]); //~ note host-sync
        if largest > 100.0 {
            warnings.push(format!("{name} reaches {largest}"));
        }
    }
    warnings
}

fn gradient_norm(t: &Tensor) -> f64 {
    t.grad().norm().double_value(&[]) //~ warning host-sync
}

fn gradient_stats(vs: &nn::VarStore) -> (f64, f64) {
    let mut total = 0.0;
    let mut largest: f64 = 0.0;
    for tensor in vs.trainable_variables() {
        let norm = tensor.grad().norm().double_value(&[]); //~ warning host-sync
        total += norm;
        largest = largest.max(gradient_norm(&tensor)); //~ warning host-sync
    }
    (total, largest)
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let net = nn::linear(vs.root(), 32, 1, Default::default());
    for warning in check_weights(&vs) {
        eprintln!("{warning}");
    }
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let mut stats = Vec::new();
    for _ in 0..1000 {
        let xs = Tensor::randn([64, 32], (Kind::Float, vs.device()));
        let loss = net.forward(&xs).square().mean(Kind::Float);
        opt.backward_step(&loss);
        stats.push(gradient_stats(&vs)); //~ warning host-sync
    }
    println!("{}", stats.len());
}
