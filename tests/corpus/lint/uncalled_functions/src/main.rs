//! An older training function kept beside its successor, which nothing
//! calls or names: it never runs, so its per-batch read is a note. A
//! function handed over by name (to a thread) does run, and is reported.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn train_v1(net: &nn::Sequential, opt: &mut nn::Optimizer, xs: &Tensor) {
    for _ in 0..100 {
        let loss = net.forward(xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ note host-sync
    }
}

fn train(net: &nn::Sequential, opt: &mut nn::Optimizer, xs: &Tensor) {
    for _ in 0..100 {
        let loss = net.forward(xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
    }
}

fn worker() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let xs = Tensor::rand([8, 4], (Kind::Float, device));
    train(&net, &mut opt, &xs);
}

fn main() {
    // train_v1 is kept for reference.
    std::thread::spawn(worker).join().unwrap();
}
