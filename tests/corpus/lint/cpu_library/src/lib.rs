use tch::{nn, nn::Module, Device, Kind, Tensor};

pub trait Environment {
    fn state(&self) -> Vec<f32>;
    fn step(&mut self, action: i64) -> bool;
}

pub trait Agent<E: Environment> {
    fn select_action(&self, env: &E) -> i64;
    fn train(&mut self, env: &mut E, steps: usize) -> usize;
}

pub struct DqnAgent {
    q: nn::Sequential,
    /// Device::Cuda(0) to train on a GPU.
    device: Device,
}

impl DqnAgent {
    pub fn new(vs: &nn::Path, device: Device) -> DqnAgent {
        let q = nn::seq().add(nn::linear(vs / "q", 4, 2, Default::default()));
        DqnAgent { q, device }
    }
}

impl<E: Environment> Agent<E> for DqnAgent {
    fn select_action(&self, env: &E) -> i64 {
        let s = Tensor::from_slice(&env.state()).to(self.device);
        self.q.forward(&s).argmax(-1, false).int64_value(&[])
    }

    fn train(&mut self, env: &mut E, steps: usize) -> usize {
        let mut done = 0;
        for _ in 0..steps {
            let action = self.select_action(env);
            if env.step(action) {
                done += 1;
            }
            let _ = Tensor::zeros([1], (Kind::Float, self.device));
        }
        done
    }
}
