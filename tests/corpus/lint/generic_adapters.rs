//! A search generic over how a game turns a position into network input
//! (`A::encode(state)` with `A: Adapter`), the way AlphaZero-style crates
//! keep one search for several games. Where every impl of the trait's
//! method builds its tensor from host data, the input is CPU data: a
//! device model run on it works only where the device is the CPU, so its
//! reads wait for no device. An impl that moves its tensor to the device
//! keeps the read a warning.

use tch::{nn, nn::Module, Device, Kind, Tensor};

trait Adapter {
    fn encode(state: &[f32]) -> Tensor;
}

struct Board;

impl Adapter for Board {
    fn encode(state: &[f32]) -> Tensor {
        Tensor::from_slice(state).view([1, 4])
    }
}

trait Loader {
    fn batch(state: &[f32]) -> Tensor;
}

struct Gpu;

impl Loader for Gpu {
    fn batch(state: &[f32]) -> Tensor {
        Tensor::from_slice(state)
            .view([1, 4])
            .to_device(Device::cuda_if_available())
    }
}

fn evaluate<A: Adapter>(net: &nn::Sequential, state: &[f32]) -> f64 {
    let out = net.forward(&A::encode(state));
    f64::try_from(out.sum(Kind::Float)).unwrap()
}

fn evaluate_moved<L: Loader>(net: &nn::Sequential, state: &[f32]) -> f64 {
    let out = net.forward(&L::batch(state));
    f64::try_from(out.sum(Kind::Float)).unwrap() //~ warning host-sync
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let net = nn::seq().add(nn::linear(vs.root(), 4, 1, Default::default()));
    for _ in 0..100 {
        println!("{}", evaluate::<Board>(&net, &[0.0; 4]));
        println!("{}", evaluate_moved::<Gpu>(&net, &[0.0; 4])); //~ warning host-sync
    }
}
