use tch::nn::{self, Module, OptimizerConfig};
use tch::{Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::linear(vs.root(), 5, 5, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for step in 0..1000 {
        let xs = Tensor::rand([64, 5], (Kind::Float, device));
        let loss = net.forward(&xs).mse_loss(&xs, tch::Reduction::Mean);
        opt.backward_step(&loss);
        println!("step {step}: loss {}", detector::loss_value(&loss)); //~ warning host-sync
    }
}
