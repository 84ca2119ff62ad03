//! A loop over the rows of a batch that hands each row, with values it
//! computes for that row (a mask from `make_mask(&ids[i])`, weights picked
//! by an `if let`), to a helper that reads: the helper runs once per row and
//! its reads wait once per row, where one copy of the batch's results would
//! do. Only a whole item of the loop handed over as it is (each input of a
//! collection, copied for another runtime) makes the call the loop's point.

use tch::{Device, Kind, Tensor};

fn make_mask(ids: &[i64], device: Device) -> Tensor {
    Tensor::from_slice(ids).ne(0).to_kind(Kind::Float).to_device(device)
}

fn score(row: &Tensor, mask: &Tensor, weights: Option<&Tensor>) -> f64 {
    let masked = row * mask;
    let total = match weights {
        Some(w) => (&masked * w).sum(Kind::Float),
        None => masked.sum(Kind::Float),
    };
    total.double_value(&[]) //~ warning host-sync
}

pub fn score_batch(
    embeddings: &Tensor,
    ids: &[Vec<i64>],
    weights: &Option<Vec<Tensor>>,
    device: Device,
) -> Vec<f64> {
    let mut scores = Vec::new();
    for i in 0..ids.len() {
        let row = embeddings.get(i as i64);
        let mask = make_mask(&ids[i], device);
        let row_weights = if let Some(w) = weights {
            Some(w[i].shallow_clone())
        } else {
            None
        };
        scores.push(score(&row, &mask, row_weights.as_ref())); //~ warning host-sync
    }
    scores
}
