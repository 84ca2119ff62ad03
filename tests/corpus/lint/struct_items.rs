//! An item of a collection whose type nothing says (`vec![..]` of what a
//! loader returns): its field is the crate's field of that name, and where
//! every store into that field is CPU data, reading it waits for nothing.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct Dataset {
    pub labels: Vec<Tensor>,
}

fn load(n: usize) -> Dataset {
    let mut labels = Vec::new();
    for i in 0..n {
        labels.push(Tensor::scalar_tensor(i as i64 % 3, (Kind::Uint8, Device::Cpu)));
    }
    Dataset { labels }
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let model = nn::linear(vs.root(), 3, 3, Default::default());
    let datasets = vec![load(100), load(20)];
    for dataset in &datasets {
        for i in 0..dataset.labels.len() {
            let output = model.forward(&Tensor::rand([1, 3], (Kind::Float, device)));
            let expected = dataset.labels[i].int64_value(&[]);
            let score = output.double_value(&[0, expected]); //~ warning host-sync
            println!("{score}");
        }
    }
}
