//! A batch that the loop itself moves to the device (`batch.inputs
//! .to_device(device)`) was built on the host: what the loop reads of it,
//! before or beside the move, waits for nothing. What the move returns,
//! and the model's output, are device tensors as ever.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct Batch {
    pub inputs: Tensor,
    pub token_mask: Tensor,
    pub seq_lens: Tensor,
}

pub fn max_len(seq_lens: &Tensor) -> i64 {
    i64::try_from(seq_lens.max()).unwrap()
}

pub fn train(model: &nn::Sequential, loader: impl Iterator<Item = Result<Batch, String>>) {
    let device = Device::cuda_if_available();
    for batch in loader {
        let batch = batch.unwrap();
        let n_tokens = i64::try_from(batch.token_mask.sum(Kind::Int64)).unwrap();
        let longest = max_len(&batch.seq_lens);
        let inputs = batch.inputs.to_device(device);
        let mask = batch.token_mask.to_device(device);
        let loss = (model.forward(&inputs) * mask).sum(Kind::Float) / n_tokens;
        let value = f64::try_from(&loss).unwrap(); //~ warning host-sync
        let count = i64::try_from(inputs.sum(Kind::Int64)).unwrap(); //~ warning host-sync
        println!("{value} {count} {longest}");
    }
}
