mod utils;

use tch::{nn, nn::Module, nn::OptimizerConfig, Kind, Tensor};
use utils::{DEVICE, GPU_DEVICE};

struct Evaluator {
    model: nn::Sequential,
}

impl Evaluator {
    fn new(device: tch::Device) -> Self {
        let vs = nn::VarStore::new(device);
        let model = nn::seq().add(nn::linear(vs.root(), 8, 4, Default::default()));
        Self { model }
    }

    fn evaluate(&self, board: &Tensor) -> Vec<f64> {
        let logits = self.model.forward(&board.to_device(*DEVICE));
        (0..4).map(|i| logits.double_value(&[0, i])).collect()
    }
}

fn main() {
    let evaluator = Evaluator::new(*DEVICE);
    let board = Tensor::zeros([1, 8], (Kind::Float, *DEVICE));
    for _ in 0..800 {
        let priors = evaluator.evaluate(&board);
        println!("{priors:?}");
    }

    let vs = nn::VarStore::new(GPU_DEVICE);
    let net = nn::linear(vs.root(), 8, 1, Default::default());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for _ in 0..100 {
        let xs = Tensor::rand([16, 8], (Kind::Float, GPU_DEVICE));
        let loss = net.forward(&xs).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", f64::try_from(&loss).unwrap()); //~ warning host-sync
    }
}
