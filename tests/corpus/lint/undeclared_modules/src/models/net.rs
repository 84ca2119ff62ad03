use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct Agent {
    net: nn::Linear,
    device: Device,
}

impl Agent {
    pub fn new(device: Device) -> Agent {
        let vs = nn::VarStore::new(device);
        Agent {
            net: nn::linear(vs.root(), 4, 2, Default::default()),
            device,
        }
    }

    pub fn select_action(&self) -> i64 {
        let obs = Tensor::zeros([1, 4], (Kind::Float, self.device));
        self.net.forward(&obs).argmax(-1, false).int64_value(&[0]) //~ warning host-sync
    }
}
