use library_callees::{evaluate, Greedy};
use tch::{nn, Device, Kind, Tensor};

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 1, Default::default()));
    let positions = Tensor::rand([64, 4], (Kind::Float, device));
    println!("{}", evaluate::<Greedy>(&net, &positions, 100));
}
