//! Code that runs once the data ran out, about once per pass over it, is
//! not per step: the rest of a block after `if item.is_some() { return item; }`
//! where `item` is a loader's next item, and the `else` of `if let Some(b) =
//! loader.next_batch()`. A loader that moves an exhausted chunk back to the
//! CPU there syncs once per chunk, and its callers in the step loop are quiet.

use tch::{Device, Tensor};

pub struct Chunk {
    data: Tensor,
    position: i64,
    device: Device,
}

impl Chunk {
    fn next_sample(&mut self) -> Option<Tensor> {
        if self.position >= self.data.size()[0] {
            return None;
        }
        self.position += 1;
        Some(self.data.get(self.position - 1))
    }

    fn unload(&mut self) {
        self.data = self.data.to(Device::Cpu);
    }

    fn load(&mut self) {
        self.data = self.data.to_device(self.device);
    }
}

pub struct Loader {
    chunks: Vec<Chunk>,
    current: usize,
}

impl Loader {
    fn next_sample(&mut self) -> Option<Tensor> {
        while self.current < self.chunks.len() {
            let sample = self.chunks[self.current].next_sample();
            if sample.is_some() {
                return sample;
            }
            self.chunks[self.current].unload(); //~ note host-sync
            self.current += 1;
            if let Some(chunk) = self.chunks.get_mut(self.current) {
                chunk.load();
            }
        }
        None
    }

    pub fn next_batch(&mut self, size: usize) -> Option<Tensor> {
        let mut samples = Vec::new();
        for _ in 0..size {
            samples.push(self.next_sample()?); //~ note host-sync
        }
        Some(Tensor::stack(&samples, 0))
    }

    pub fn shuffle(&mut self) {
        for chunk in &mut self.chunks {
            chunk.unload(); //~ note host-sync
            chunk.position = 0;
        }
        self.current = 0;
    }
}

pub fn train(loader: &mut Loader, model: &tch::CModule, opt: &mut tch::nn::Optimizer, steps: usize) {
    for _ in 0..steps {
        let batch = if let Some(batch) = loader.next_batch(32) { //~ note host-sync
            batch
        } else {
            loader.shuffle(); //~ note host-sync
            loader.next_batch(32).unwrap() //~ note host-sync
        };
        let loss = model.forward_ts(&[batch]).unwrap().mean(tch::Kind::Float);
        opt.backward_step(&loss);
    }
}
