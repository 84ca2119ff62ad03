//! A loss written as a local closure (`let loss = |logits, target| ..`) and
//! called in the training loop returns what its body does, a tensor on the
//! model's device: reading it per batch waits for the device.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 4, 2, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let loss = |t: Tensor, target: Tensor| t.cross_entropy_for_logits(&target);
    let count = |t: &Tensor| t.size()[0];
    for _ in 0..100 {
        let xs = Tensor::rand([8, 4], (Kind::Float, device));
        let ys = Tensor::zeros([8], (Kind::Int64, device));
        let loss = loss(net.forward(&xs), ys);
        opt.backward_step(&loss);
        let loss = f32::try_from(loss).unwrap(); //~ warning host-sync
        let seen = i64::try_from(count(&xs)).unwrap();
        println!("{loss} {seen}");
    }
}
