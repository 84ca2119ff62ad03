//! A pass over data loaded on the CPU before the training loop: the
//! collections are built from host data (`collect` of tuples, `push` in a
//! loop, a helper returning them), so reading their tensors waits for
//! nothing. What the training loop moves to the device is another matter.

use tch::{nn, nn::ModuleT, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Row {
    pub x: Vec<f32>,
    pub y: i64,
}

fn load(rows: &[Row]) -> Vec<(Tensor, Tensor)> {
    rows.iter()
        .map(|r| (Tensor::from_slice(&r.x), Tensor::from(r.y)))
        .collect()
}

pub fn train(model: &impl ModuleT, vs: &nn::VarStore, rows: &[Row], device: Device) -> f64 {
    // Start-up: statistics of the loaded data.
    let data = load(rows);
    let mut total = 0.0;
    for (x, _) in &data {
        total += x.sum(Kind::Float).double_value(&[]);
    }
    let pairs: Vec<(Tensor, Tensor)> = rows
        .iter()
        .map(|r| (Tensor::from_slice(&r.x), Tensor::from_slice(&[r.y])))
        .collect();
    for (x, y) in pairs.iter() {
        total += x.mean(Kind::Float).double_value(&[]) + y.double_value(&[0]);
    }
    let mut pushed = Vec::new();
    for r in rows {
        pushed.push((Tensor::from_slice(&r.x), r.y));
    }
    for (x, _) in &pushed {
        total += f64::try_from(x.max()).unwrap();
    }

    let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
    for (xs, ys) in &data {
        let xs = xs.to_device(device);
        let loss = model
            .forward_t(&xs, true)
            .cross_entropy_for_logits(&ys.to_device(device));
        opt.backward_step(&loss);
        total += xs.sum(Kind::Float).double_value(&[]); //~ warning host-sync
    }
    total
}
