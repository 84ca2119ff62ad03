//! tch's older `From<Tensor>` impls: `let x: f32 = t.into()` reads a
//! scalar and `let v: Vec<f32> = t.into()` copies the tensor, like their
//! `try_into` forms. `.into()` of anything but a tensor is another
//! conversion.

use tch::{Kind, Tensor};

pub fn losses(batches: &[Tensor], names: &[&str]) -> (f32, Vec<String>) {
    let mut total = 0.0;
    let mut labels = Vec::new();
    for (batch, name) in batches.iter().zip(names) {
        let loss: f32 = batch.sum(Kind::Float).into(); //~ warning host-sync
        let values: Vec<f32> = (batch * 2).into(); //~ warning host-sync
        let label: String = (*name).into();
        let count: i64 = 3i32.into();
        total += loss + values.len() as f32 + count as f32;
        labels.push(label);
    }
    (total, labels)
}
