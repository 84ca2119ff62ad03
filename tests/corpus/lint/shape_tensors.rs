//! `internal_shape_as_tensor()` builds the shape on the CPU wherever the
//! tensor lives: reading it back waits for nothing. The tensor itself is on
//! the device.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 8, 8, Default::default()));
    for _ in 0..100 {
        let xs = Tensor::rand([16, 8], (Kind::Float, device));
        let ys = net.forward(&xs);
        let shape = Vec::<i64>::try_from(ys.internal_shape_as_tensor()).unwrap();
        let total: f64 = ys.sum(Kind::Float).try_into().unwrap(); //~ warning host-sync
        println!("{shape:?} {total}");
    }
}
