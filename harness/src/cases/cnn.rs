//! SimpleCNN: 64 × 3 × 32 × 32 images, conv 3→16 (k3, p1), ReLU, max-pool 2,
//! Linear(16·16·16, 10), Adam, cross-entropy.

use tch::nn::{self, Module};

use super::{features, labels, Supervised};
use crate::case::{Batch, Case, Model};
use crate::optim::{named_parameters, Adam};

pub fn case() -> Case {
    Case::new(
        "cnn",
        |vs| {
            let root = vs.root();
            let conv = nn::conv2d(
                &root / "conv",
                3,
                16,
                3,
                nn::ConvConfig {
                    padding: 1,
                    ..Default::default()
                },
            );
            let fc = nn::linear(&root / "fc", 16 * 16 * 16, 10, Default::default());
            let forward = move |x: &tch::Tensor| {
                conv.forward(x)
                    .f_relu()?
                    .f_max_pool2d([2, 2], [2, 2], [0, 0], [1, 1], false)?
                    .f_flatten(1, -1)
                    .map(|flat| fc.forward(&flat))
            };
            Ok(Box::new(Supervised {
                forward,
                optimizer: Box::new(Adam::new(named_parameters(vs), 1e-3)),
                input: "images",
                target: "labels",
                classify: true,
            }) as Box<dyn Model>)
        },
        |_step| {
            Ok(Batch::new([
                ("images", features(&[64, 3, 32, 32])),
                ("labels", labels(10, 64)),
            ]))
        },
    )
    .describe("SimpleCNN: conv 3→16 k3 p1, ReLU, max-pool 2, Linear(4096, 10), Adam")
}
