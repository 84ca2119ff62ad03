//! Written with another tensor library: its `Tensor` has operations of
//! tch's names (`equal` gives a tensor here, not a host `bool`), and
//! nothing here is tch's.

use burn::backend::LibTorch;
use burn::tensor::Tensor;

type B = LibTorch;

fn main() {
    let device = Default::default();
    let labels = Tensor::<B, 1>::ones([8], &device);
    for _ in 0..100 {
        let predictions = Tensor::<B, 1>::ones([8], &device);
        let correct = predictions.equal(labels.clone());
        println!("{}", correct);
    }
}
