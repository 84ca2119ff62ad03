//! A crate model's `forward` may return a struct of its own rather than a
//! tensor (`Logits`, with a sampling method that reads): a method called on
//! what it returns is that struct's, and reads per step where the call
//! does. A tch module's `forward` still returns a tensor.

use tch::{nn, nn::Module, Kind, Tensor};

pub struct Logits {
    tensor: Tensor,
}

impl Logits {
    pub fn sample_one(&self) -> i64 {
        let probs = self.tensor.softmax(-1, Kind::Float);
        i64::from(probs.multinomial(1, false)) //~ warning host-sync
    }
}

pub struct Predictor {
    net: nn::Sequential,
}

impl Predictor {
    pub fn forward(&self, xs: &Tensor) -> Logits {
        Logits {
            tensor: self.net.forward(xs),
        }
    }
}

pub struct Sampler {
    predictor: Predictor,
    head: nn::Linear,
}

impl Sampler {
    pub fn generate(&self, start: &Tensor, steps: usize) -> Vec<i64> {
        let mut samples = Vec::new();
        let mut xs = start.shallow_clone();
        for _ in 0..steps {
            let logits = self.predictor.forward(&xs);
            let sample = logits.sample_one(); //~ warning host-sync
            samples.push(sample);
            xs = self.head.forward(&xs);
            println!("{}", xs.sum(Kind::Float).double_value(&[])); //~ warning host-sync
        }
        samples
    }
}
