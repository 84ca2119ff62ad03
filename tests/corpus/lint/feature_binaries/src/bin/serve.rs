//! Declared by name only (`src/bin/serve.rs` by cargo's layout), built
//! only with `--features torch`.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 8, 1, Default::default());
    for _ in 0..100 {
        let xs = Tensor::rand([16, 8], (Kind::Float, device));
        let ys = net.forward(&xs);
        let best = ys.argmax(0, false).int64_value(&[]); //~ note host-sync
        println!("{best}");
    }
}
