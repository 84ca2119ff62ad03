//! A helper that copies each whole item of a batch, called in a loop over
//! the batch's items inside a function that runs once per training step
//! (through the step function), copies once per item per step: a warning at
//! the call, as a copy written in that loop would be, and at the helper's
//! copy, which runs that often. Called only from a one-off loop over the
//! items, the call stays a note.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn scalar(t: &Tensor) -> f64 {
    t.mean(Kind::Float).to_device(Device::Cpu).double_value(&[]) //~ warning host-sync
}

fn batch_loss(rows: &[Tensor]) -> (Tensor, Vec<f64>) {
    let mut parts = Vec::new();
    for row in rows {
        parts.push(scalar(row)); //~ warning host-sync
    }
    let loss = Tensor::stack(rows, 0).pow_tensor_scalar(2).mean(Kind::Float);
    (loss, parts)
}

fn train_step(model: &nn::Linear, opt: &mut nn::Optimizer, batch: &Tensor) {
    let rows = model.forward(batch).chunk(4, 0);
    let (loss, _parts) = batch_loss(&rows); //~ warning host-sync
    opt.backward_step(&loss);
}

fn report(rows: &[Tensor]) -> Vec<f64> {
    let mut out = Vec::new();
    for row in rows {
        out.push(scalar(row)); //~ note host-sync
    }
    out
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = nn::linear(vs.root(), 8, 1, Default::default());
    let mut opt = nn::Sgd::default().build(&vs, 1e-2).unwrap();
    let batch = Tensor::rand([8, 8], (Kind::Float, device));
    for _step in 0..100 {
        train_step(&model, &mut opt, &batch); //~ warning host-sync
    }
    println!("{:?}", report(&model.forward(&batch).chunk(4, 0)));
}
