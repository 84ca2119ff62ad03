//! Declared only in a comment (`// mod unity_env;`): not compiled.
use tch::{Device, Kind, Tensor};

pub fn run(device: Device, steps: usize) {
    let xs = Tensor::ones([8], (Kind::Float, device));
    for _ in 0..steps {
        println!("{}", xs.sum(Kind::Float).double_value(&[]));
    }
}
