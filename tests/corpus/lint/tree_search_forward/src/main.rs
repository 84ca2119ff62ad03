mod search;

use search::{Evaluator, Node};
use tch::{nn, nn::Module, Device, Kind, Tensor};

struct Net {
    body: nn::Sequential,
    device: Device,
}

impl Net {
    fn forward(&self, xs: &Tensor) -> Tensor {
        self.body.forward(xs)
    }
}

impl Evaluator for Net {
    fn evaluate(&self, leaves: &[Vec<usize>]) -> Vec<(Vec<f32>, f32)> {
        let xs = Tensor::zeros([leaves.len() as i64, 16], (Kind::Float, self.device));
        let out = self.forward(&xs);
        let rows: Vec<Vec<f32>> = Vec::<Vec<f32>>::try_from(&out).unwrap(); //~ warning host-sync
        rows.into_iter().map(|r| (r.clone(), r[0])).collect()
    }
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let body = nn::seq().add(nn::linear(vs.root(), 16, 4, Default::default()));
    let net = Net { body, device };
    let mut root = Node::default();
    for _move in 0..200 {
        let value = root.simulate_batch(&net, 8); //~ warning host-sync
        println!("{value}");
    }
}
