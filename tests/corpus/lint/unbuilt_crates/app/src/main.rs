//! The workspace's one member: its per-batch read runs in every build.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let xs = Tensor::rand([8, 4], (Kind::Float, device));
    for _ in 0..100 {
        let loss = net.forward(&xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
    }
}
