//! A closure bound to a name and handed to an iterator adapter
//! (`(0..n).map(search_one)`) runs once per element, as one written in
//! place would: its own reads, and its calls of functions that read, are
//! once per query.

use tch::{Device, Kind, Tensor};

fn best_cell(scores: &Tensor) -> i64 {
    scores.argmax(0, false).int64_value(&[]) //~ warning host-sync
}

pub fn search_many(queries: &Tensor, centroids: &Tensor) -> Vec<(i64, f64)> {
    let device = Device::cuda_if_available();
    let n = queries.size()[0];
    let search_one = |index: i64| {
        let query = queries.get(index).to_device(device);
        let scores = centroids.matmul(&query);
        let cell = best_cell(&scores); //~ warning host-sync
        let top = scores.max().double_value(&[]); //~ warning host-sync
        (cell, top)
    };
    (0..n).map(search_one).collect()
}

/// Called once, the same closure reads once.
pub fn search_first(queries: &Tensor, centroids: &Tensor) -> f64 {
    let first = |index: i64| centroids.matmul(&queries.get(index)).sum(Kind::Float).double_value(&[]);
    first(0)
}

fn pick(probs: &[f32]) -> i64 {
    let mut best = 0;
    for (i, p) in probs.iter().enumerate() {
        if *p > probs[best] {
            best = i;
        }
    }
    best as i64
}

/// A sampler run once per generated token: its closure's copy waits once
/// per token, and so does each call of the closure, as a call of a
/// helper that copies would.
fn sample(logits: &Tensor, temperature: Option<f64>) -> i64 {
    let probs = |t: f64| -> Vec<f32> {
        let probs = (logits / t).softmax(-1, Kind::Float);
        Vec::<f32>::try_from(probs).unwrap() //~ warning host-sync
    };
    match temperature {
        Some(t) => {
            let probs = probs(t); //~ warning host-sync
            pick(&probs)
        }
        None => {
            let probs = probs(1.0); //~ warning host-sync
            pick(&probs)
        }
    }
}

pub fn generate(steps: usize) -> Vec<i64> {
    let device = Device::cuda_if_available();
    let mut tokens = Vec::new();
    for _ in 0..steps {
        let logits = Tensor::rand([32], (Kind::Float, device));
        tokens.push(sample(&logits, Some(0.8))); //~ warning host-sync
    }
    tokens
}
