//! Calls the lint has to follow to find the read: methods on elements of a
//! collection of crate types (whose names tch also uses), enum variants,
//! generic receivers bounded by a crate trait, and tch helpers called on a
//! crate-defined model.

use tch::{nn, nn::Module, nn::ModuleT, Kind, Tensor};

pub struct Block {
    linear: nn::Linear,
}

impl Block {
    pub fn forward_t(&self, xs: &Tensor, _train: bool) -> Tensor {
        let out = xs.apply(&self.linear);
        // A per-call check: every layer waits for the device.
        if bool::try_from(out.isinf().any()).unwrap() { //~ warning host-sync
            return out.clamp(-1e4, 1e4);
        }
        out
    }
}

pub struct Stack {
    blocks: Vec<Block>,
}

impl Stack {
    pub fn forward_t(&self, xs: &Tensor, train: bool) -> Tensor {
        let mut hidden = xs.shallow_clone();
        for block in &self.blocks {
            hidden = block.forward_t(&hidden, train); //~ warning host-sync
        }
        hidden
    }
}

pub enum Head {
    Mean(MeanHead),
    Max(MaxHead),
}

pub struct MeanHead;
pub struct MaxHead;

impl MeanHead {
    pub fn score(&self, xs: &Tensor) -> f64 {
        f64::try_from(xs.mean(Kind::Float)).unwrap()
    }
}

impl MaxHead {
    pub fn score(&self, xs: &Tensor) -> f64 {
        xs.max().double_value(&[])
    }
}

impl Head {
    pub fn score(&self, xs: &Tensor) -> f64 {
        match self {
            Head::Mean(head) => head.score(xs),
            Head::Max(head) => head.score(xs),
        }
    }
}

pub fn score_all(head: &Head, batches: &[Tensor]) -> Vec<f64> {
    let mut scores = Vec::new();
    for batch in batches {
        scores.push(head.score(batch)); //~ warning host-sync
    }
    scores
}

pub trait Buffer {
    fn sample(&self, n: usize) -> Tensor;
    fn priority(&self, index: &Tensor) -> f64;
}

pub struct Replay {
    priorities: Tensor,
}

impl Buffer for Replay {
    fn sample(&self, n: usize) -> Tensor {
        self.priorities.multinomial(n as i64, false)
    }

    fn priority(&self, index: &Tensor) -> f64 {
        f64::try_from(self.priorities.index_select(0, index).sum(Kind::Float)).unwrap()
    }
}

pub fn refresh<B: Buffer>(buffer: &B, steps: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..steps {
        let index = buffer.sample(32);
        total += buffer.priority(&index); //~ warning host-sync
    }
    total
}

pub struct Net {
    seq: nn::Sequential,
}

impl ModuleT for Net {
    fn forward_t(&self, xs: &Tensor, _train: bool) -> Tensor {
        xs.apply(&self.seq)
    }
}

pub fn evaluate(net: &Net, images: &Tensor, labels: &Tensor, device: tch::Device) {
    for epoch in 0..3 {
        let accuracy = net.batch_accuracy_for_logits(images, labels, device, 256); //~ warning syncing-helper
        println!("{epoch} {accuracy}");
    }
}
