//! `[lint.hot] tests = true` in `hot_tests.devcheck.toml`: test code is
//! linted as hot code.

use tch::{Kind, Tensor};

#[test]
fn every_batch_is_read() {
    let batches = vec![Tensor::randn([4], (Kind::Float, tch::Device::cuda_if_available()))];
    for batch in &batches {
        println!("{}", batch); //~ warning host-sync
    }
}
