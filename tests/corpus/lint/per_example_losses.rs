//! A batch step that computes each example's loss in a loop over the
//! examples (zipped with their forward outputs) runs the loss, and every
//! helper the loss calls, once per example per step: a read in such a helper
//! (a count deciding an early return) waits for the device that often, a
//! warning where it is as well as at the calls leading to it. The same loss
//! computed once over a held-out set after training stays quiet.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

struct Example {
    input: Tensor,
    target: Tensor,
}

trait Objective {
    fn compute(&self, example: &Example, output: &Tensor) -> Tensor;
}

struct BalancedBce;

fn balanced_bce(logits: &Tensor, target: &Tensor) -> Tensor {
    let positives = target.sum(Kind::Float).double_value(&[]); //~ warning host-sync
    if positives == 0.0 {
        return logits.zeros_like().sum(Kind::Float);
    }
    logits.binary_cross_entropy_with_logits::<Tensor>(target, None, None, tch::Reduction::Mean)
}

impl Objective for BalancedBce {
    fn compute(&self, example: &Example, output: &Tensor) -> Tensor {
        balanced_bce(output, &example.target) //~ warning host-sync
    }
}

fn batch_loss(objective: &dyn Objective, examples: &[Example], outputs: &[Tensor]) -> Tensor {
    let mut total = Tensor::zeros([1], (Kind::Float, outputs[0].device()));
    for (example, output) in examples.iter().zip(outputs.iter()) {
        total += objective.compute(example, output); //~ warning host-sync
    }
    total / examples.len() as f64
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = nn::linear(vs.root(), 16, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let objective = BalancedBce;
    let examples: Vec<Example> = (0..8)
        .map(|_| Example {
            input: Tensor::randn([4, 16], (Kind::Float, device)),
            target: Tensor::rand([4, 1], (Kind::Float, device)).round(),
        })
        .collect();
    for _step in 0..1000 {
        let outputs: Vec<Tensor> = examples.iter().map(|e| model.forward(&e.input)).collect();
        let loss = batch_loss(&objective, &examples, &outputs); //~ warning host-sync
        opt.backward_step(&loss);
    }
}
