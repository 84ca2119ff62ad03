//! Reaches tch only through `net`: its tensors are tch's all the same.

use net::{Device, Kind, Tensor};

fn main() {
    let xs = Tensor::ones([8, 4], (Kind::Float, Device::cuda_if_available()));
    for _ in 0..100 {
        let loss = net::step(&xs);
        println!("{}", loss.double_value(&[])); //~ warning host-sync
    }
}
