//! A dataset built from host data and handed a device moves the data there
//! and keeps the device: what it makes on that device lives there, so its
//! per-row reads wait on it. One built from host data and handed the CPU
//! stays on the CPU.

use tch::{Device, Kind, Tensor};

pub struct Dataset {
    tokens: Tensor,
    device: Device,
    batch_size: i64,
}

impl Dataset {
    pub fn build(tokens: Tensor, batch_size: i64, device: Device) -> Self {
        Self {
            tokens: tokens.to(device),
            device,
            batch_size,
        }
    }

    pub fn batch(&self) -> Tensor {
        let starts = Tensor::randint(100, [self.batch_size], (Kind::Int64, self.device));
        let mut rows = Vec::new();
        for row in 0..self.batch_size {
            let start = starts.int64_value(&[row]); //~ warning host-sync
            rows.push(self.tokens.narrow(0, start, 8));
        }
        Tensor::stack(&rows, 0)
    }
}

pub fn train(steps: usize) {
    let host = Tensor::from_slice(&[1i64; 1000]);
    let data = Dataset::build(host, 16, Device::cuda_if_available());
    for _ in 0..steps {
        let batch = data.batch(); //~ warning host-sync
        println!("{:?}", batch.size());
    }
}

pub struct HostDataset {
    tokens: Tensor,
    device: Device,
}

impl HostDataset {
    pub fn build(tokens: Tensor, device: Device) -> Self {
        Self {
            tokens: tokens.to(device),
            device,
        }
    }

    pub fn first_tokens(&self) -> Vec<i64> {
        let picked = self.tokens.to_device(self.device);
        (0..4).map(|i| picked.int64_value(&[i])).collect()
    }
}

pub fn sample(steps: usize) {
    let data = HostDataset::build(Tensor::from_slice(&[1i64; 1000]), Device::Cpu);
    for _ in 0..steps {
        println!("{:?}", data.first_tokens());
    }
}
