//! Rows and chunks of one tensor copied one by one are reported even in a
//! loop that runs no step: one wait per row where one copy would do. Rows
//! come from `t.get(i)`, from iterating `t.unbind(0)`, `t.split(..)` or
//! `t.chunk(..)` (directly or through a binding), also when the tensor's
//! type is known only to the crate pass. Copying each whole item of a
//! collection of tensors is the loop's purpose, and only a note.

use tch::{Device, Kind, Tensor};

pub struct Batch {
    pub data: Tensor,
}

pub fn rows_to_host(batch: &Batch, n: i64) -> Vec<Tensor> {
    let mut rows = Vec::new();
    for i in 0..n {
        let row = batch.data.get(i);
        let _ = row.to_kind(Kind::Float).to_device(Device::Cpu); //~ warning host-sync
        rows.push(row.to_kind(Kind::Float).to_device(Device::Cpu)); //~ warning host-sync
    }
    rows
}

pub fn unbound_rows(batch: &Batch) -> Vec<Vec<f32>> {
    let mut out = Vec::new();
    for row in batch.data.unbind(0) {
        let _ = row.to_kind(Kind::Float).to_device(Device::Cpu); //~ warning host-sync
    }
    let rows = batch.data.unbind(0);
    for row in &rows {
        out.push(Vec::<f32>::try_from(row).unwrap()); //~ warning host-sync
    }
    let chunks: Vec<Vec<f32>> = batch
        .data
        .chunk(4, 0)
        .iter()
        .map(|c| Vec::<f32>::try_from(c).unwrap()) //~ warning host-sync
        .collect();
    out.extend(chunks);
    out
}

/// Each whole tensor of a checkpoint: the copy is the point.
pub fn checkpoint(tensors: &[Tensor]) -> Vec<Vec<f32>> {
    tensors
        .iter()
        .map(|t| Vec::<f32>::try_from(t).unwrap()) //~ note host-sync
        .collect()
}
