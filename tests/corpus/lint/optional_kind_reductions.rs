//! tch's reductions take their kind as an `Option` in newer releases:
//! `t.mean(None)` of a crate-local function's result is a 0-dim tensor,
//! and reading it into a host number each step waits for the device.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn normalize(diff: &Tensor, scale: &Tensor) -> Tensor {
    diff / scale
}

fn main() {
    let device = Device::Cuda(0);
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 8, 8, Default::default()));
    let mut losses: Vec<f64> = Vec::new();
    for _ in 0..100 {
        let xs = Tensor::rand([16, 8], (Kind::Float, device));
        let ys = net.forward(&xs);
        let scale = ys.std(true);
        losses.push(normalize(&ys, &scale).mean(None).try_into().unwrap()); //~ warning host-sync
    }
    println!("{}", losses.len());
}
