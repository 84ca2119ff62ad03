//! Which loop is the step loop. The loop that runs the step (forward,
//! backward, an optimizer or environment step, a generation step) is per
//! step, whatever it nests; only loops around it are per epoch.

use tch::{nn, nn::ModuleT, nn::OptimizerConfig, Kind, Tensor};

pub fn train(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)], params: &[Tensor]) {
    for epoch in 0..10 {
        for (step, (xs, ys)) in data.iter().enumerate() {
            let loss = model.forward_t(xs, true).cross_entropy_for_logits(ys);
            opt.backward_step(&loss);
            // A small helper loop inside the step loop.
            for p in params {
                let _ = p.grad().norm();
            }
            // An evaluation loop behind a periodic guard.
            if step % 100 == 0 {
                for (xs, _) in data.iter().take(2) {
                    let _ = model.forward_t(xs, false);
                }
            }
            // Still the step loop: its nested loops do not make it an epoch loop.
            println!("step {step} loss {}", f64::try_from(&loss).unwrap()); //~ warning host-sync
        }
        let last = model.forward_t(&data[0].0, false).mean(Kind::Float);
        println!("epoch {epoch} {}", f64::try_from(&last).unwrap()); //~ note host-sync
    }
}

/// One epoch, in a function of its own.
fn run_epoch(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) -> Tensor {
    let mut total = Tensor::zeros([], (Kind::Float, data[0].0.device()));
    for (xs, ys) in data {
        let loss = model.forward_t(xs, true).cross_entropy_for_logits(ys);
        opt.backward_step(&loss);
        total += loss.detach();
    }
    total
}

pub fn train_epochs(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)]) {
    for epoch in 0..10 {
        let total = run_epoch(model, opt, data);
        println!("epoch {epoch} {}", f64::try_from(&total).unwrap()); //~ note host-sync
    }
}

/// Text generation: the per-token `loop` is the step loop, and loops
/// nested in it run per token too.
pub fn generate(model: &impl ModuleT, prompt: &Tensor, eos: i64) -> Vec<i64> {
    let mut tokens = prompt.shallow_clone();
    let mut out = Vec::new();
    loop {
        let logits = model.forward_t(&tokens, false);
        let next = logits.argmax(-1, false);
        for beam in 0..4 {
            out.push(next.int64_value(&[beam])); //~ warning host-sync
        }
        if i64::try_from(next.max()).unwrap() == eos { //~ warning host-sync
            break;
        }
        tokens = Tensor::cat(&[tokens, next.unsqueeze(-1)], -1);
    }
    out
}
