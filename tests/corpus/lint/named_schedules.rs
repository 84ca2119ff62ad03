//! A schedule asked by name (`if should_eval(step, steps, every)`,
//! `if self.should_log(step)`, `if is_eval_step(i)`) holds on some steps
//! only, wherever the predicate is written: the reads behind it run every N
//! steps, a note. A branch on anything else stays a warning.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub fn should_eval(step: usize, total: usize, every: usize) -> bool {
    step == total || (every > 0 && step.is_multiple_of(every))
}

fn eval_loss(net: &nn::Sequential, xs: &Tensor) -> f64 {
    net.forward(xs).mean(Kind::Float).double_value(&[])
}

pub struct Trainer {
    log_every: usize,
}

impl Trainer {
    fn should_log(&self, step: usize) -> bool {
        step % self.log_every == 0
    }

    pub fn train(&self, vs: &nn::VarStore, net: &nn::Sequential, steps: usize) {
        let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
        let xs = Tensor::randn([32, 8], (Kind::Float, Device::cuda_if_available()));
        for step in 0..steps {
            let loss = net.forward(&xs).mean(Kind::Float);
            opt.backward_step(&loss);
            let step_idx = step + 1;
            if should_eval(step_idx, steps, 50) {
                println!("eval {}", eval_loss(net, &xs)); //~ note host-sync
            }
            if self.should_log(step) {
                println!("loss {}", loss.double_value(&[])); //~ note host-sync
            }
            if step_idx > 10 {
                println!("loss {}", loss.double_value(&[])); //~ warning host-sync
            }
        }
    }
}
