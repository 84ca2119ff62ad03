//! An older trainer that no `mod` item declares: cargo never compiles it.

use super::Model;
use tch::{Kind, Tensor};

pub fn run(model: &mut Model) {
    let batches: Vec<(Tensor, Tensor)> = (0..10)
        .map(|_| (Tensor::rand([16, 8], (Kind::Float, tch::Device::Cpu)), Tensor::rand([16, 1], (Kind::Float, tch::Device::Cpu))))
        .collect();
    for epoch in 0..10 {
        let loss = model.train_epoch(&batches);
        println!("epoch {epoch}: {loss}");
    }
}
