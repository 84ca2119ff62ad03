//! A TorchScript module's `forward_ts` returns a tensor (inside a
//! `Result`): copying each row of it with `Vec::<f32>::from` waits for the
//! device once per row, where one copy of the batch would do. The batch is
//! flushed when full, once per batch of items, so each flush is a step.

use tch::{CModule, Device, Kind, Tensor};

fn main() {
    let device = if tch::Cuda::is_available() { Device::Cuda(0) } else { Device::Cpu };
    let model = CModule::load_on_device("leaf_sh.pt", device).unwrap();
    let mut points = Vec::new();
    let mut ids = Vec::new();
    for id in 0..100_000 {
        points.push(Tensor::rand([512, 3], (Kind::Float, device)));
        ids.push(id);
        if points.len() == 64 {
            let batch = Tensor::cat(&points, 0);
            let coefs = model.forward_ts(&[&batch]).unwrap();
            for row in 0..ids.len() {
                let c = coefs.get(row as i64);
                let values = Vec::<f32>::from(&c); //~ warning host-sync
                println!("{}: {}", ids[row], values.len());
            }
            points.clear();
            ids.clear();
        }
    }
}
