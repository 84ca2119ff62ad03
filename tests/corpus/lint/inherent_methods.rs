//! An engine with an inherent method and a trait's method of the same name
//! (the trait's usually delegates to it): method-call syntax on the engine
//! finds the inherent one, so a call in a loop reaches its reads.

use tch::{CModule, Device, Tensor};

pub trait InferenceEngine {
    fn infer(&self, input: &[f32]) -> Vec<f32>;
}

pub struct TorchEngine {
    module: CModule,
    device: Device,
}

impl TorchEngine {
    pub fn new(path: &str) -> TorchEngine {
        let device = Device::cuda_if_available();
        let module = CModule::load_on_device(path, device).unwrap();
        TorchEngine { module, device }
    }

    pub fn infer(&self, input: &[f32]) -> Vec<f32> {
        let xs = Tensor::from_slice(input).to_device(self.device);
        let logits = self.module.forward_ts(&[xs]).unwrap();
        (0..logits.size()[0])
            .map(|i| logits.double_value(&[i]) as f32) //~ warning host-sync
            .collect()
    }
}

impl InferenceEngine for TorchEngine {
    fn infer(&self, input: &[f32]) -> Vec<f32> {
        TorchEngine::infer(self, input)
    }
}

pub fn score_all(engine: &TorchEngine, inputs: &[Vec<f32>]) -> f32 {
    let mut total = 0.0;
    for input in inputs {
        total += engine.infer(input)[0]; //~ warning host-sync
    }
    total
}
