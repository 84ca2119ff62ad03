//! An integration test: not in the release hot path.

use tch::{Device, Kind, Tensor};

#[test]
fn losses_are_finite() {
    let device = Device::cuda_if_available();
    for _ in 0..3 {
        let loss = Tensor::randn([4], (Kind::Float, device)).mean(Kind::Float);
        assert!(f64::try_from(&loss).unwrap().is_finite());
    }
}
