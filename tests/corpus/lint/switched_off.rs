//! A branch switched off in the source itself (`if false { .. }`, kept to
//! turn a comparison back on by hand) never runs; a helper only such
//! branches call never runs either.

use tch::{nn, nn::Module, Device, Kind, Tensor};

fn max_difference(a: &Tensor, b: &Tensor) -> f64 {
    (a - b).abs().max().double_value(&[])
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let fast = nn::linear(vs.root() / "fast", 8, 8, Default::default());
    let reference = nn::linear(vs.root() / "reference", 8, 8, Default::default());
    for _ in 0..1000 {
        let xs = Tensor::randn([4, 8], (Kind::Float, vs.device()));
        let ys = fast.forward(&xs);
        if false {
            println!("{}", max_difference(&ys, &reference.forward(&xs))); //~ note host-sync
        }
        let _ = ys;
    }
}
