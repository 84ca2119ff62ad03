//! A self-play engine whose driver (`tools/run`, listed by the workspace)
//! is missing from the checkout. Nothing here calls `train`, yet the
//! driver does: its per-turn reads are warnings, not notes.

use tch::{nn, nn::ModuleT, Device, Tensor};

pub struct Network {
    pub vs: nn::VarStore,
    net: nn::Sequential,
}

impl Network {
    pub fn new() -> Network {
        let vs = nn::VarStore::new(Device::cuda_if_available());
        let net = nn::seq().add(nn::linear(vs.root(), 64, 1, Default::default()));
        Network { vs, net }
    }

    pub fn train(&self, turns: usize) {
        let device = self.vs.device();
        for _ in 0..turns {
            let moves: Vec<Tensor> = (0..8).map(|_| Tensor::rand([1, 64], (tch::Kind::Float, device))).collect();
            let ratings: Vec<Tensor> = moves.iter().map(|m| self.net.forward_t(m, false)).collect();
            let best = ratings
                .iter()
                .max_by(|a, b| {
                    let x = a.double_value(&[0]); //~ warning host-sync
                    let y = b.double_value(&[0]); //~ warning host-sync
                    x.total_cmp(&y)
                })
                .unwrap();
            let _ = best;
        }
    }
}
