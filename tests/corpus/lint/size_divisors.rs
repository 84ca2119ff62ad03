//! A loss divided by the batch size read from a shape (`t.size()[0]`) is
//! still a 0-dim tensor: a part of a shape is a number, not a tensor, so
//! `{:?}` prints the loss's value.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for _ in 0..100 {
        let xs = Tensor::rand([8, 4], (Kind::Float, device));
        let batch_size = xs.size()[0];
        let loss = net.forward(&xs).sum(Kind::Float) / batch_size;
        println!("loss={loss:?}"); //~ warning host-sync
        println!("shape={:?}", xs.size()[1]);
        opt.backward_step(&loss);
    }
}
