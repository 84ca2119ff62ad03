//! Code that does not run in the hot path of a release build: tests,
//! debug assertions, debug and trace logs (notes), and code behind a cargo
//! feature that `default` does not enable (notes).

use log::{debug, info, trace};
use tch::{Kind, Tensor};

pub fn train(batches: &[Tensor]) {
    for batch in batches {
        let loss = batch.mean(Kind::Float);
        debug_assert!(f64::try_from(&loss).unwrap().is_finite());
        debug!("loss {}", loss); //~ note host-sync
        trace!(loss = %loss, "step"); //~ note host-sync
        info!("loss {}", loss); //~ warning host-sync
    }
}

#[cfg(feature = "profiling")]
pub fn profile(batches: &[Tensor]) {
    for batch in batches {
        println!("{}", batch.sum(Kind::Float)); //~ note host-sync
    }
}

#[cfg(debug_assertions)]
pub fn check(batches: &[Tensor]) {
    for batch in batches {
        assert!(batch.isfinite().all().int64_value(&[]) == 1);
    }
}

#[test]
fn losses_are_finite() {
    let batches = vec![Tensor::randn([4], (Kind::Float, tch::Device::cuda_if_available()))];
    for batch in &batches {
        assert!(f64::try_from(batch.mean(Kind::Float)).unwrap().is_finite());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_batch_is_read() {
        let batches = vec![Tensor::randn([4], (Kind::Float, tch::Device::cuda_if_available()))];
        for batch in &batches {
            println!("{}", batch);
        }
    }
}
