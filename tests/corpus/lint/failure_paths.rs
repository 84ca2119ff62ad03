//! Code that runs only once something has failed waits for nothing in a
//! run that works: the arguments of `Err(..)`, of `panic!` and its kin,
//! and an assertion's message (its condition runs every time). A message
//! built eagerly for `expect` is formatted on every call.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn gather(log_probs: &Tensor, index: &Tensor) -> Result<Tensor, String> {
    let choice = log_probs.gather(1, index, false).flatten(0, -1);
    match choice.size().first() {
        Some(n) if *n > 0 => Ok(choice),
        _ => Err(format!("empty batch: index {index}, choice {choice}")),
    }
}

pub fn train(model: &nn::Sequential, batches: &[(Tensor, Tensor)]) -> Result<(), String> {
    let device = Device::cuda_if_available();
    for (xs, ys) in batches {
        let xs = xs.to_device(device);
        let ys = ys.to_device(device);
        let log_probs = model.forward(&xs).log_softmax(-1, Kind::Float);
        let chosen = gather(&log_probs, &ys)?;
        let loss = -chosen.mean(Kind::Float);
        assert!(loss.isfinite().int64_value(&[]) == 1, "loss {} at {}", loss, xs); //~ warning host-sync
        if loss.size().is_empty() {
            loss.backward();
        } else {
            panic!("loss is not a scalar: {}", loss);
        }
        loss.f_detach_().expect(&format!("detach {}", loss)); //~ warning host-sync
    }
    Ok(())
}
