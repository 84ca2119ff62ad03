//! Moves written with tch's option-taking variant: `to_device_(device,
//! kind, non_blocking, copy)` goes where its first argument says, like
//! `to_device(device)`, and to the host it is a copy like any other.

use tch::{Device, Kind, Tensor};

pub fn rollout(observations: &[Vec<f32>], device: Device) -> f64 {
    let mut total = 0.0;
    for obs in observations {
        // Host data moved to the device: reads of what it computes sync.
        let xs = Tensor::from_slice(obs).to_device_(device, Kind::Float, true, false);
        let value = (xs * 2.0).sum(Kind::Float);
        total += f64::try_from(&value).unwrap(); //~ warning host-sync
        let host = value.to_device_(Device::Cpu, Kind::Double, false, false); //~ warning host-sync
        // Already on the host: no wait.
        total += f64::try_from(&host).unwrap();
    }
    total
}
