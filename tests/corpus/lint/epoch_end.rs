//! A branch of the step loop taken once per pass over the data: the last
//! batch of an epoch (`batch_idx == n_batches - 1`), or the loader running
//! out (`batch.is_none()` of a `next()`, the `None` arm of a `match` on it,
//! the `else` of `let Some(..) = it.next()`), where the data is reshuffled
//! and the epoch's figures printed. A read there is once per epoch: a note.

use tch::{nn, nn::ModuleT, Kind, Tensor};

pub fn train(model: &impl ModuleT, opt: &mut nn::Optimizer, data: &[(Tensor, Tensor)], n_steps: usize) {
    let n_batches = data.len();
    let mut running = Tensor::zeros([], (Kind::Float, data[0].0.device()));
    for step in 0..n_steps {
        let batch_idx = step % n_batches;
        let (xs, ys) = &data[batch_idx];
        let loss = model.forward_t(xs, true).cross_entropy_for_logits(ys);
        opt.backward_step(&loss);
        running += loss.detach();
        if batch_idx == n_batches - 1 {
            println!("epoch loss {}", running.double_value(&[])); //~ note host-sync
            running = running.zero_();
        }
        // Not once per epoch: a comparison that holds on most steps.
        if batch_idx < n_batches - 1 {
            println!("loss {}", loss.double_value(&[])); //~ warning host-sync
        }
    }
}

pub struct Loader {
    batches: Vec<(Tensor, Tensor)>,
    position: usize,
}

impl Loader {
    pub fn next_batch(&mut self) -> Option<(Tensor, Tensor)> {
        let batch = self.batches.get(self.position)?;
        self.position += 1;
        Some((batch.0.shallow_clone(), batch.1.shallow_clone()))
    }

    pub fn reshuffle(&mut self) {
        self.position = 0;
    }
}

pub fn train_until_exhausted(
    model: &impl ModuleT,
    opt: &mut nn::Optimizer,
    loader: &mut Loader,
    n_steps: usize,
) {
    let mut total = Tensor::zeros([], (Kind::Float, tch::Device::Cuda(0)));
    for _ in 0..n_steps {
        let batch = loader.next_batch();
        if batch.is_none() {
            println!("epoch loss {}", total.double_value(&[])); //~ note host-sync
            loader.reshuffle();
            continue;
        }
        let (xs, ys) = batch.unwrap();
        let loss = model.forward_t(&xs, true).cross_entropy_for_logits(&ys);
        opt.backward_step(&loss);
        total += loss.detach();
    }
}

pub fn train_matching(model: &impl ModuleT, opt: &mut nn::Optimizer, loader: &mut Loader, n_steps: usize) {
    let mut total = Tensor::zeros([], (Kind::Float, tch::Device::Cuda(0)));
    for _ in 0..n_steps {
        let (xs, ys) = match loader.next_batch() {
            Some(batch) => batch,
            None => {
                println!("epoch loss {}", total.double_value(&[])); //~ note host-sync
                loader.reshuffle();
                continue;
            }
        };
        let loss = model.forward_t(&xs, true).cross_entropy_for_logits(&ys);
        opt.backward_step(&loss);
        total += loss.detach();
        let Some((xs, _)) = loader.next_batch() else {
            println!("epoch loss {}", total.double_value(&[])); //~ note host-sync
            loader.reshuffle();
            continue;
        };
        println!("{}", xs.sum(Kind::Float).double_value(&[])); //~ warning host-sync
    }
}

/// `is_none()` of anything else is no such guard: an optional input absent
/// on every step.
pub fn optional_mask(model: &impl ModuleT, batches: &[(Tensor, Option<Tensor>)]) -> f64 {
    let mut total = 0.0;
    for (xs, mask) in batches {
        let out = model.forward_t(xs, false);
        if mask.is_none() {
            total += out.mean(Kind::Float).double_value(&[]); //~ warning host-sync
        }
    }
    total
}
