//! A helper whose tail is a bare `.into()` of a tensor: the declared return
//! type (`f64`, `Vec<f32>`) is what it converts into, a copy to the host, as
//! a `let` annotation would say. Into a tch type it is no read.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn loss_value(loss: &Tensor) -> f64 {
    loss.into() //~ warning host-sync
}

fn probabilities(logits: &Tensor) -> Vec<f32> {
    logits.softmax(-1, Kind::Float).view(-1).into() //~ warning host-sync
}

fn as_input(x: Tensor) -> nn::Input {
    x.into()
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 4, 2, Default::default());
    let mut opt = nn::Sgd::default().build(&vs, 1e-2).unwrap();
    for _ in 0..1000 {
        let xs = Tensor::rand([8, 4], (Kind::Float, device));
        let logits = net.forward(&xs);
        let loss = logits.mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{} {:?}", loss_value(&loss), probabilities(&logits)); //~ warning host-sync
    }
}
