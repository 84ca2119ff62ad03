use derive_setters::Setters;
use tch::{nn, nn::Module, Device, Tensor};
use typed_builder::TypedBuilder;

pub struct Output(pub Tensor);

impl Output {
    pub fn action(&self) -> i64 {
        self.0.argmax(-1, false).int64_value(&[])
    }
}

pub struct Agent {
    net: nn::Linear,
}

impl Agent {
    pub fn act(&self, obs: &Tensor) -> Output {
        Output(obs.apply(&self.net))
    }

    pub fn play(&self, observations: &[Tensor]) -> i64 {
        let mut total = 0;
        for obs in observations {
            total += self.act(obs).action();
        }
        total
    }
}

#[derive(Setters, Default)]
#[setters(strip_option)]
pub struct Builder {
    vs: Option<nn::VarStore>,
    width: Option<i64>,
}

impl Builder {
    pub fn build(self) -> Agent {
        let vs = self.vs.unwrap();
        let width = self.width.unwrap();
        Agent {
            net: nn::linear(vs.root(), width, 2, Default::default()),
        }
    }
}

#[derive(TypedBuilder)]
pub struct Scorer {
    device: Device,
    width: i64,
}

impl Scorer {
    pub fn scores(&self, rows: &[Vec<f32>]) -> f64 {
        let mut total = 0.0;
        for row in rows {
            let t = Tensor::from_slice(row).to_device(self.device);
            total += t.sum(tch::Kind::Float).double_value(&[]) * self.width as f64;
        }
        total
    }
}

/// The same, on a device the caller picks.
#[derive(TypedBuilder)]
pub struct DeviceScorer {
    device: Device,
}

impl DeviceScorer {
    pub fn scores(&self, rows: &[Vec<f32>]) -> f64 {
        let mut total = 0.0;
        for row in rows {
            let t = Tensor::from_slice(row).to_device(self.device);
            total += t.sum(tch::Kind::Float).double_value(&[]); //~ warning host-sync
        }
        total
    }
}
