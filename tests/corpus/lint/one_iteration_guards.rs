//! A branch taken when a loop's counter equals one value (`step == 999`,
//! `steps == step + 1`) runs on one iteration, so its read runs once per
//! loop: a note. A comparison of another value (`worst == 0.0`) is no such
//! guard, and the read behind it stays a warning.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub fn optimize(net: &nn::Sequential, opt: &mut nn::Optimizer, steps: i64) {
    let xs = Tensor::ones([8, 4], (Kind::Float, Device::cuda_if_available()));
    for step in 0..1000 {
        let loss = net.forward(&xs).mean(Kind::Float);
        opt.backward_step(&loss);
        if step == 999 {
            println!("final loss {}", f64::try_from(&loss).unwrap()); //~ note host-sync
        }
        if steps == step + 1 {
            println!("{}", loss.double_value(&[])); //~ note host-sync
        }
        let worst = loss.double_value(&[]); //~ warning host-sync
        if worst == 0.0 {
            println!("{}", loss.double_value(&[])); //~ warning host-sync
        }
    }
}
