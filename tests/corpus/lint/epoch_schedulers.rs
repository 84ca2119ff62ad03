//! An epoch loop that steps a learning-rate schedule and an early-stopping
//! monitor (`scheduler.step(epoch)`, `early_stopping.step(acc)`) is still
//! the once-per-epoch level around the batch loop: those are bookkeeping,
//! not optimizer steps, so the per-epoch evaluation is quiet and the
//! per-batch loss read is reported.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

struct Scheduler {
    base: f64,
}

impl Scheduler {
    fn step(&mut self, epoch: usize) -> f64 {
        self.base * 0.95f64.powi(epoch as i32)
    }
}

struct EarlyStopping {
    best: f64,
}

impl EarlyStopping {
    fn step(&mut self, score: f64) -> bool {
        let stop = score < self.best;
        self.best = self.best.max(score);
        stop
    }
}

fn evaluate(net: &nn::Sequential, xs: &Tensor, ys: &Tensor) -> f64 {
    let correct = net.forward(xs).argmax(-1, false).eq_tensor(ys).sum(Kind::Float);
    correct.double_value(&[]) / ys.size()[0] as f64
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 2, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let mut scheduler = Scheduler { base: 1e-3 };
    let mut early_stopping = EarlyStopping { best: 0.0 };
    let xs = Tensor::rand([1024, 4], (Kind::Float, device));
    let ys = Tensor::zeros([1024], (Kind::Int64, device));
    for epoch in 0..50 {
        let mut total = 0.0;
        for start in (0..1024).step_by(64) {
            let loss = net.forward(&xs.narrow(0, start, 64)).cross_entropy_for_logits(&ys.narrow(0, start, 64));
            opt.zero_grad();
            loss.backward();
            opt.step();
            total += loss.double_value(&[]); //~ warning host-sync
        }
        let acc = tch::no_grad(|| evaluate(&net, &xs, &ys)); //~ note host-sync
        opt.set_lr(scheduler.step(epoch));
        if early_stopping.step(acc) {
            break;
        }
        println!("{epoch} {total} {acc}");
    }
}
