//! A loop that copies each whole item once (each head's output) runs no
//! step of its own, so it is a note where it runs once; in a function that
//! runs once per batch, it copies every item once per batch, a warning.

use tch::{nn, nn::Module, Device, Kind, Tensor};

struct Tagger {
    heads: Vec<nn::Linear>,
}

impl Tagger {
    fn tag(&self, xs: &Tensor) -> Vec<Vec<f32>> {
        let outputs: Vec<Tensor> = self.heads.iter().map(|h| h.forward(xs)).collect();
        let mut out = Vec::new();
        for scores in &outputs {
            let scores: Vec<f32> = scores.flatten(0, -1).try_into().unwrap(); //~ warning host-sync
            out.push(scores);
        }
        out
    }

    fn describe(&self) -> Vec<Vec<f32>> {
        let mut out = Vec::new();
        for head in &self.heads {
            let weights: Vec<f32> = head.ws.flatten(0, -1).try_into().unwrap(); //~ note host-sync
            out.push(weights);
        }
        out
    }
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let heads = (0..3)
        .map(|i| nn::linear(vs.root() / i, 8, 4, Default::default()))
        .collect();
    let tagger = Tagger { heads };
    println!("{:?}", tagger.describe().len());
    for _ in 0..100 {
        let xs = Tensor::rand([16, 8], (Kind::Float, device));
        let tags = tagger.tag(&xs); //~ warning host-sync
        println!("{}", tags.len());
    }
}
