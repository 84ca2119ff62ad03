use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

/// Nothing calls it: `pool.install(..)` in `main` is the pool's method.
pub fn install() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let model = nn::linear(vs.root(), 4, 1, Default::default());
    let mut opt = nn::Sgd::default().build(&vs, 0.1).unwrap();
    for _ in 0..100 {
        let x = Tensor::rand([8, 4], (Kind::Float, vs.device()));
        let loss = model.forward(&x).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", f64::try_from(&loss).unwrap()); //~ note host-sync
    }
}

pub fn train() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let model = nn::linear(vs.root(), 4, 1, Default::default());
    let mut opt = nn::Sgd::default().build(&vs, 0.1).unwrap();
    for _ in 0..100 {
        let x = Tensor::rand([8, 4], (Kind::Float, vs.device()));
        let loss = model.forward(&x).mean(Kind::Float);
        opt.backward_step(&loss);
        println!("{}", f64::try_from(&loss).unwrap()); //~ warning host-sync
    }
}
