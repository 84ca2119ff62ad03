//! A forward pass whose layers run one after another in a loop over them
//! (`for layer in 0..config.num_layers`), each layer reading its experts'
//! token counts: the reads are judged in the loop over the layers, the
//! per-layer forward passes, and a call of the whole forward, which runs
//! that loop once, is a note.

use std::collections::BTreeMap;
use tch::{nn, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Config {
    pub num_layers: usize,
    pub num_experts: i64,
}

fn moe_mlp(hidden: &Tensor, router: &Tensor, experts: &[Tensor]) -> Tensor {
    let choice = hidden.matmul(router).argmax(-1, false);
    let mut out = hidden.zeros_like();
    for (e, weight) in experts.iter().enumerate() {
        let mask = choice.eq(e as i64);
        let tokens = mask.sum(Kind::Float).double_value(&[]); //~ warning host-sync
        if tokens > 0.0 {
            out += hidden.matmul(weight) * mask.unsqueeze(-1);
        }
    }
    out
}

pub fn forward(ids: &Tensor, weights: &BTreeMap<String, Tensor>, config: &Config) -> Tensor {
    let mut hidden = weights["embed"].index_select(0, ids);
    for layer in 0..config.num_layers {
        let router = &weights[&format!("layers.{layer}.router")];
        let experts: Vec<Tensor> = (0..config.num_experts)
            .map(|e| weights[&format!("layers.{layer}.experts.{e}")].shallow_clone())
            .collect();
        hidden = moe_mlp(&hidden, router, &experts); //~ warning host-sync
    }
    hidden
}

pub fn loss(ids: &Tensor, weights: &BTreeMap<String, Tensor>, config: &Config) -> Tensor {
    forward(ids, weights, config).pow_tensor_scalar(2).mean(Kind::Float)
}

pub fn train(vs: &nn::VarStore, weights: &BTreeMap<String, Tensor>, config: &Config) {
    let device = Device::Cuda(0);
    let mut opt = nn::Adam::default().build(vs, 1e-4).unwrap();
    let ids = Tensor::from_slice(&[1i64, 2, 3]).to_device(device);
    for _step in 0..1000 {
        let loss = loss(&ids, weights, config); //~ note host-sync
        opt.backward_step(&loss);
    }
}
