//! A trainer written as an iterator: each `next` runs one training step
//! and reads its loss. A `for` over it calls `next` once per iteration, so
//! the read waits once per batch, and the loop's head is where the call is.
//! A generic iterator's `next` is std's, not the trainer's.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Trainer {
    net: nn::Sequential,
    opt: nn::Optimizer,
    batches: std::vec::IntoIter<Tensor>,
}

impl Trainer {
    pub fn new(vs: &nn::VarStore, batches: Vec<Tensor>) -> Trainer {
        let net = nn::seq().add(nn::linear(vs.root(), 16, 1, Default::default()));
        let opt = nn::Adam::default().build(vs, 1e-3).unwrap();
        Trainer {
            net,
            opt,
            batches: batches.into_iter(),
        }
    }

    fn train_on_batch(&mut self, xs: &Tensor) -> f64 {
        let loss = self.net.forward(xs).mean(Kind::Float);
        self.opt.backward_step(&loss);
        loss.double_value(&[]) //~ warning host-sync
    }
}

impl Iterator for Trainer {
    type Item = f64;

    fn next(&mut self) -> Option<f64> {
        let xs = self.batches.next()?;
        Some(self.train_on_batch(&xs)) //~ warning host-sync
    }
}

pub fn train(batches: Vec<Tensor>) -> f64 {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let batches = batches.into_iter().map(|b| b.to_device(vs.device())).collect();
    let trainer = Trainer::new(&vs, batches);
    let mut total = 0.0;
    for loss in trainer { //~ warning host-sync
        total += loss;
    }
    total
}

pub fn summarize<I: Iterator<Item = f64>>(losses: I) -> f64 {
    let mut total = 0.0;
    for loss in losses {
        total += loss;
    }
    total
}
