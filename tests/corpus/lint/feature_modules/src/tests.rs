use tch::{Device, Kind, Tensor};

#[test]
fn loss_is_finite() {
    for _ in 0..3 {
        let t = Tensor::ones([2], (Kind::Float, Device::cuda_if_available()));
        assert!(t.sum(Kind::Float).double_value(&[]).is_finite());
    }
}

/// A helper of the tests: test code too, though it has no `#[test]` itself.
pub fn all_finite(batches: &[Tensor]) -> bool {
    let mut finite = true;
    for batch in batches {
        finite &= batch.sum(Kind::Float).double_value(&[]).is_finite();
    }
    finite
}
