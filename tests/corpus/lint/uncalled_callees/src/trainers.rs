//! Two trainers of one name in two modules: `main` calls
//! `supervised::train` by its path, and nothing calls `ppo::train`. Every
//! use of the name is a call that resolves, so the one no call reaches
//! never runs: its per-step read is a note.

pub mod supervised {
    use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

    pub fn train(vs: &nn::VarStore, net: &nn::Sequential, steps: usize) -> f64 {
        let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
        let mut total = 0.0;
        for _ in 0..steps {
            let xs = Tensor::rand([64, 4], (Kind::Float, Device::cuda_if_available()));
            let loss = net.forward(&xs).mean(Kind::Float);
            opt.backward_step(&loss);
            total += f64::try_from(&loss).unwrap(); //~ warning host-sync
        }
        total
    }
}

pub mod ppo {
    use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

    pub fn train(vs: &nn::VarStore, net: &nn::Sequential, steps: usize) -> f64 {
        let mut opt = nn::Adam::default().build(vs, 1e-3).unwrap();
        let mut rewards = 0.0;
        for _ in 0..steps {
            let xs = Tensor::rand([64, 4], (Kind::Float, Device::cuda_if_available()));
            let loss = net.forward(&xs).mean(Kind::Float);
            opt.backward_step(&loss);
            rewards += f64::try_from(&loss).unwrap(); //~ note host-sync
        }
        rewards
    }
}
