//! A VarStore built on the CPU and moved to the accelerator afterwards
//! (`vs.set_device(Device::Mps)`, as a checkpoint is often loaded): the
//! model built from it runs there, so the per-batch loss read waits.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn main() {
    let mut vs = nn::VarStore::new(Device::Cpu);
    let net = nn::seq().add(nn::linear(vs.root(), 8, 1, Default::default()));
    vs.set_device(Device::Mps);
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for _ in 0..1000 {
        let xs = Tensor::rand([32, 8], (Kind::Float, Device::Mps));
        let loss = net.forward(&xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
    }
}
