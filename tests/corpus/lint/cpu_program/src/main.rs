mod model;

use model::{Bigram, LanguageModel};
use tch::{nn, nn::OptimizerConfig, Device, Kind, Tensor};

fn estimate_loss(model: &dyn LanguageModel, data: &Tensor, iters: i64) -> f64 {
    let mut total = 0.0;
    for i in 0..iters {
        let xs = data.narrow(0, i, 8);
        let ys = data.narrow(0, i + 1, 8);
        total += f64::try_from(model.loss(&xs, &ys)).unwrap();
    }
    total / iters as f64
}

fn main() {
    let device = Device::Cpu;
    let vs = nn::VarStore::new(device);
    let model = Bigram { embedding: nn::embedding(vs.root(), 65, 65, Default::default()) };
    let mut opt = nn::AdamW::default().build(&vs, 1e-3).unwrap();
    let data = Tensor::randint(65, [10_000], (Kind::Int64, device));
    for step in 0..5000 {
        let xs = data.narrow(0, step, 8);
        let ys = data.narrow(0, step + 1, 8);
        let loss = model.loss(&xs, &ys);
        opt.backward_step(&loss);
        println!("{}", f64::try_from(&loss).unwrap());
    }
    println!("{}", estimate_loss(&model, &data, 200));
    println!("{:?}", model.generate(&Tensor::from_slice(&[0i64]), 100));
}
