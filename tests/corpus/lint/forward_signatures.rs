//! A method named `forward` on a crate type returns what its signature
//! says: an evaluator whose `forward` hands back host values (`(Vec<f32>,
//! f32)`) gives the caller no tensors to read, so printing them waits for
//! nothing; the copy inside it is the read. A model whose `forward_t` is
//! not seen (a type parameter) still returns tensors, destructured or not.

use tch::{CModule, Device, Kind, Tensor};

pub struct Evaluator {
    module: CModule,
    device: Device,
}

impl Evaluator {
    pub fn forward(&self, input: &[f32]) -> (Vec<f32>, f32) {
        let x = Tensor::from_slice(input).reshape([1, 90]).to_device(self.device);
        let out = self.module.forward_ts(&[x]).unwrap();
        let policy = Vec::<f32>::try_from(out.reshape(-1)).unwrap(); //~ warning host-sync
        (policy, 0.0)
    }
}

pub trait Net {
    fn forward_t(&self, xs: &Tensor, train: bool) -> (Tensor, Tensor);
}

pub fn serve<N: Net>(nn: &N, batches: &[Tensor], device: Device) {
    for batch in batches {
        let (values, policies) = nn.forward_t(&batch.to(device), false);
        let values = values.to(Device::Cpu); //~ warning host-sync
        let policies = policies.to_kind(Kind::Float);
        println!("{} {:?}", values.size()[0], policies.size());
    }
}

fn main() {
    let device = Device::cuda_if_available();
    let evaluator = Evaluator {
        module: CModule::load_on_device("model.pt", device).unwrap(),
        device,
    };
    for _ in 0..100 {
        let (policy, value) = evaluator.forward(&[0.0; 90]); //~ warning host-sync
        println!("{} {}", policy.len(), value);
    }
}
