//! tch's `Iter2` cuts its batches out of its inputs: they live where the
//! inputs do. Loaded from a file and never moved, they are on the CPU, and
//! a model on a device run on them only works where the device is the CPU.
//! `iter.to_device(device)`, chained or alone, moves the batches.

use tch::data::Iter2;
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Tensor};

fn load_dataset() -> (Tensor, Tensor) {
    (
        Tensor::load("dataset/xs.pt").unwrap(),
        Tensor::load("dataset/ys.pt").unwrap(),
    )
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = nn::linear(vs.root(), 16, 3, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let (xs, ys) = load_dataset();
    for _epoch in 0..10 {
        for (bx, by) in Iter2::new(&xs, &ys, 64).shuffle() {
            let loss = model.forward(&bx).cross_entropy_for_logits(&by);
            opt.backward_step(&loss);
            println!("loss {}", f64::try_from(&loss).unwrap());
        }
        let mut moved = Iter2::new(&xs, &ys, 64);
        moved.to_device(device);
        for (bx, by) in moved {
            let loss = model.forward(&bx).cross_entropy_for_logits(&by);
            opt.backward_step(&loss);
            println!("loss {}", f64::try_from(&loss).unwrap()); //~ warning host-sync
        }
        for (bx, by) in Iter2::new(&xs, &ys, 64).to_device(device) {
            let loss = model.forward(&bx).cross_entropy_for_logits(&by);
            opt.backward_step(&loss);
            println!("loss {}", f64::try_from(&loss).unwrap()); //~ warning host-sync
        }
    }
}
