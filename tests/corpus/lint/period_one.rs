//! A guard whose period is one (`epoch % 1 == 0`, left from tuning the
//! logging interval) holds on every step: the read under it is per step.
//! A real period is a guard.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 16, 4, Default::default());
    let mut opt = nn::AdamW::default().build(&vs, 1e-3).unwrap();
    let xs = Tensor::rand([256, 16], (Kind::Float, device));
    let ys = Tensor::zeros([256], (Kind::Int64, device));
    for epoch in 0..80 {
        let logits = net.forward(&xs);
        opt.backward_step(&logits.cross_entropy_for_logits(&ys));
        let accuracy = logits.accuracy_for_logits(&ys);
        if epoch % 1 == 0 {
            println!("{epoch}: {:?}", accuracy); //~ warning host-sync
        }
        if epoch % 10 == 0 {
            println!("{epoch}: {:?}", accuracy); //~ note host-sync
        }
    }
}
