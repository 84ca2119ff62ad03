use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Model {
    vs: nn::VarStore,
    net: nn::Linear,
}

impl Model {
    pub fn new() -> Model {
        let vs = nn::VarStore::new(Device::cuda_if_available());
        let net = nn::linear(vs.root(), 8, 1, Default::default());
        Model { vs, net }
    }

    pub fn predict(&self, features: &[f32]) -> f64 {
        let xs = Tensor::from_slice(features).to_device(self.vs.device());
        self.net.forward(&xs).double_value(&[0]) //~ warning host-sync
    }

    pub fn train_batch(&mut self, xs: &Tensor, ys: &Tensor) -> f64 {
        let mut opt = nn::Adam::default().build(&self.vs, 1e-3).unwrap();
        let loss = self.net.forward(xs).mse_loss(ys, tch::Reduction::Mean);
        opt.backward_step(&loss);
        loss.double_value(&[])
    }

    pub fn train_epoch(&mut self, batches: &[(Tensor, Tensor)]) -> f64 {
        let mut total = 0.0;
        for (xs, ys) in batches {
            total += self.train_batch(xs, ys); //~ note host-sync
        }
        total / batches.len() as f64
    }
}
