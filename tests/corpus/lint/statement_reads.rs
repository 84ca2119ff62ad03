//! One finding per statement, listing every read in it, with advice that
//! fits: formatting wants lazy logging, element reads want one copy.

use tch::{Kind, Tensor};

pub fn log(batches: &[Tensor]) {
    for (step, batch) in batches.iter().enumerate() {
        let mean = batch.mean(Kind::Float);
        let max = batch.max();
        let min = batch.min();
        println!("{step}: mean {} max {} min {}", mean, max, min); //~ warning host-sync
    }
}

pub fn top(scores: &Tensor, indices: &[i64]) -> Vec<f64> {
    let mut out = Vec::new();
    for &i in indices {
        out.push(scores.double_value(&[i])); //~ warning host-sync
    }
    out
}
