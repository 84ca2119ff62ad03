//! A model whose forward returns a struct of outputs: each field lives
//! where the model computes, read through a field (`out.logits`) or a
//! destructuring pattern (`let Output { logits, .. } = ..`). A model from a
//! CPU `VarStore` computes on the CPU, so its outputs' fields are CPU data.

use tch::{nn, Device, Tensor};

pub struct Output {
    pub logits: Tensor,
    pub hidden: Option<Tensor>,
}

pub struct Classifier {
    linear: nn::Linear,
}

impl Classifier {
    pub fn new(p: &nn::Path) -> Classifier {
        Classifier {
            linear: nn::linear(p / "out", 16, 4, Default::default()),
        }
    }

    pub fn forward_t(&self, xs: &Tensor, _train: bool) -> Output {
        let logits = xs.apply(&self.linear);
        Output {
            logits,
            hidden: None,
        }
    }
}

pub fn evaluate_on_the_cpu(batches: &[Tensor]) -> i64 {
    let vs = nn::VarStore::new(Device::Cpu);
    let model = Classifier::new(&vs.root());
    let mut correct = 0;
    for xs in batches {
        let out = model.forward_t(xs, false);
        correct += out.logits.argmax(-1, false).int64_value(&[0]);
        let Output { logits, .. } = model.forward_t(xs, false);
        correct += logits.argmax(-1, false).int64_value(&[0]);
    }
    correct
}

pub fn evaluate_on_a_device(batches: &[Tensor], device: Device) -> i64 {
    let vs = nn::VarStore::new(device);
    let model = Classifier::new(&vs.root());
    let mut correct = 0;
    for xs in batches {
        let out = model.forward_t(xs, false);
        correct += out.logits.argmax(-1, false).int64_value(&[0]); //~ warning host-sync
        let Output { logits, .. } = model.forward_t(xs, false);
        correct += logits.argmax(-1, false).int64_value(&[0]); //~ warning host-sync
    }
    correct
}
