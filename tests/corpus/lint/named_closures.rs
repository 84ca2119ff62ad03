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
