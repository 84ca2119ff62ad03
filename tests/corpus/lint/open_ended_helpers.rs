//! A helper that runs until a condition holds (`while` over a signal's
//! windows, `loop` until a budget is spent) and calls, each time round, a
//! function that computes on the device and reads the answer back, waits
//! once per window: that loop is where it is reported. A loop over the
//! sources calling the helper runs it once per source, the level around it.

use tch::{Device, Kind, Tensor};

fn peak(reference: &[f32], target: &[f32], device: Device) -> i64 {
    let a = Tensor::from_slice(reference).to(device);
    let b = Tensor::from_slice(target).to(device);
    let corr = (a * b).cumsum(0, Kind::Float);
    corr.argmax(0, false).int64_value(&[]) //~ warning host-sync
}

pub fn dense(reference: &[f32], target: &[f32], window: usize, device: Device) -> Vec<i64> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + window <= reference.len().min(target.len()) {
        out.push(peak(&reference[pos..pos + window], &target[pos..pos + window], device)); //~ warning host-sync
        pos += window / 2;
    }
    out
}

pub fn analyse(sources: &[(Vec<f32>, Vec<f32>)], device: Device) {
    for (reference, target) in sources {
        let delays = dense(reference, target, 1024, device); //~ note host-sync
        println!("{:?}", delays.first());
    }
}

fn main() {
    let device = Device::cuda_if_available();
    analyse(&[(vec![0.0; 4096], vec![0.0; 4096])], device);
}
