//! A builder's setter stores through a field of `self` (`self.config.device
//! = device`): a store into the field of the struct that field holds, so a
//! device chosen by the caller reaches the config, whose default is the CPU.

use tch::{Device, Kind, Tensor};

pub struct Config {
    pub device: Device,
    pub batch_size: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            device: Device::Cpu,
            batch_size: 8,
        }
    }
}

pub struct ScorerBuilder {
    config: Config,
}

impl ScorerBuilder {
    pub fn new() -> Self {
        ScorerBuilder {
            config: Config::default(),
        }
    }

    pub fn device(mut self, device: Device) -> Self {
        self.config.device = device;
        self
    }

    pub fn build(self) -> Scorer {
        Scorer {
            config: self.config,
        }
    }
}

pub struct Scorer {
    config: Config,
}

impl Scorer {
    pub fn score(&self, rows: &[Vec<f32>]) -> Vec<f64> {
        let mut scores = Vec::new();
        for row in rows {
            let t = Tensor::from_slice(row).to_device(self.config.device);
            scores.push(t.sum(Kind::Float).double_value(&[])); //~ warning host-sync
        }
        scores
    }
}

fn main() {
    let scorer = ScorerBuilder::new()
        .device(Device::cuda_if_available())
        .build();
    println!("{:?}", scorer.score(&[vec![1.0, 2.0]]));
}
