//! Waiting for the whole device on purpose: `tch::Cuda::synchronize` makes
//! the host wait until every queued kernel has finished, so once per step it
//! serialises host and device like a read does. A crate trait implemented
//! for tch's `Device` (`device.cuda_synchronize()`) hides the same wait
//! behind a method, and the call is reported where it runs. Once after the
//! loop, before reading the clock, it is what honest timing needs.

use std::time::Instant;
use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

trait CudaSynchronize {
    fn cuda_synchronize(&self);
}

impl CudaSynchronize for Device {
    fn cuda_synchronize(&self) {
        if let Device::Cuda(index) = self {
            tch::Cuda::synchronize(*index as i64); //~ warning host-sync
        }
    }
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 1, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let start = Instant::now();
    for _ in 0..100 {
        let xs = Tensor::randn([8, 4], (Kind::Float, device));
        let loss = net.forward(&xs).mean(Kind::Float);
        opt.backward_step(&loss);
        tch::Cuda::synchronize(0); //~ warning host-sync
        device.cuda_synchronize(); //~ warning host-sync
    }
    tch::Cuda::synchronize(0);
    println!("{:?}", start.elapsed());
}
