//! A loop over a model's own parts (its layers as a field of `self`, or a
//! range counting them, as an encoder that shares one layer's weights runs
//! it) is one forward pass, not a loop of steps: the batch loop that calls
//! the model is the per-step loop, and its reads are warnings, not the
//! once-per-epoch notes of a loop around a step loop.

use tch::{nn, nn::Module, Kind, Tensor};

pub struct Encoder {
    layers: Vec<nn::Linear>,
}

impl Encoder {
    pub fn encode(&self, xs: &Tensor) -> Tensor {
        let mut hidden = xs.shallow_clone();
        for layer in &self.layers {
            hidden = layer.forward(&hidden).relu();
        }
        hidden
    }
}

pub struct SharedEncoder {
    layer: nn::Linear,
    n_layers: usize,
}

impl SharedEncoder {
    pub fn encode(&self, xs: &Tensor) -> Tensor {
        let mut hidden = xs.shallow_clone();
        for _ in 0..self.n_layers {
            hidden = self.layer.forward(&hidden).relu();
        }
        hidden
    }
}

pub struct Model {
    encoder: Encoder,
    shared: SharedEncoder,
    head: nn::Linear,
}

impl Model {
    pub fn loss(&self, xs: &Tensor, ys: &Tensor) -> Tensor {
        let hidden = self.encoder.encode(xs) + self.shared.encode(xs);
        hidden.apply(&self.head).cross_entropy_for_logits(ys)
    }
}

pub fn validate(model: &Model, batches: &[(Tensor, Tensor)]) -> f64 {
    let mut total = 0.0;
    for (xs, ys) in batches {
        let loss = model.loss(xs, ys);
        total += f64::try_from(loss.sum(Kind::Float)).unwrap(); //~ warning host-sync
    }
    total
}
