//! The trainer before the rewrite: no `mod train_v1` anywhere.
use tch::{Device, Kind, Tensor};

pub fn train(device: Device, steps: usize) {
    let xs = Tensor::ones([8], (Kind::Float, device));
    for _ in 0..steps {
        println!("{}", xs.sum(Kind::Float).double_value(&[]));
    }
}
