//! A debugging script where reading back every step is the point.
//! devcheck: allow(host-sync)

use tch::{Device, Kind, Tensor};

pub fn trace(device: Device) {
    let mut x = Tensor::randn([4, 4], (Kind::Float, device));
    for step in 0..100 {
        x = x.matmul(&x).tanh();
        println!("step {step}: {}", x);
        let norm = x.norm().double_value(&[]);
        let nonzero = x.nonzero(); //~ warning data-dependent-shape
        let _ = (norm, nonzero);
    }
}
