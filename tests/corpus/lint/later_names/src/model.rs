use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct Policy {
    net: nn::Sequential,
    device: Device,
}

impl Policy {
    pub fn new(vs: &nn::VarStore) -> Policy {
        let net = nn::seq().add(nn::linear(vs.root(), 8, 2, Default::default()));
        Policy {
            net,
            device: vs.device(),
        }
    }

    pub fn choose(&self, observation: &[f32]) -> i64 {
        let xs = Tensor::from_slice(observation).to_device(self.device);
        self.net.forward(&xs).argmax(-1, false).to_kind(Kind::Int64).int64_value(&[]) //~ warning host-sync
    }
}

pub fn load() -> Policy {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    Policy::new(&vs)
}
