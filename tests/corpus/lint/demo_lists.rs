//! A loop over a list written out in the source, an array or a `vec![..]`
//! of a few items, runs a fixed handful of times: a demo's inputs, each
//! answered once. A read in it is judged at the loop around it, if any.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn predict(model: &nn::Linear, text: &str) -> i64 {
    let x = Tensor::rand([1, 8], (Kind::Float, Device::cuda_if_available())) * text.len() as f64;
    model.forward(&x).argmax(-1, false).int64_value(&[0]) //~ warning host-sync
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let model = nn::linear(vs.root(), 8, 4, Default::default());
    let examples = vec![
        "I love brainstorming new ideas.",
        "I prefer established procedures.",
        "I decide by logic.",
    ];
    for text in examples {
        println!("{text}: {}", predict(&model, text)); //~ note host-sync
    }
    for text in vec!["one more", "and another"] {
        println!("{text}: {}", predict(&model, text)); //~ note host-sync
    }
    // Not written out: a file's lines, one read each, still warn.
    let texts: Vec<String> = std::fs::read_to_string("texts.txt")
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    for text in &texts {
        println!("{text}: {}", predict(&model, text)); //~ warning host-sync
    }
}
