//! A small transformer encoder block: multi-head self-attention, residual and
//! layer norm, a GELU feed-forward, residual and layer norm; mean-pooled to
//! four classes. SGD with momentum, cross-entropy.

use tch::nn::{self, Module};
use tch::{TchError, Tensor};

use super::{features, labels, Supervised};
use crate::case::{Batch, Case, Model};
use crate::optim::{named_parameters, Sgd};

const BATCH: i64 = 8;
const SEQUENCE: i64 = 16;
const WIDTH: i64 = 64;
const HEADS: i64 = 4;

struct Block {
    qkv: nn::Linear,
    project: nn::Linear,
    norm1: nn::LayerNorm,
    up: nn::Linear,
    down: nn::Linear,
    norm2: nn::LayerNorm,
    head: nn::Linear,
}

impl Block {
    fn forward(&self, x: &Tensor) -> Result<Tensor, TchError> {
        let (b, s) = (x.size()[0], x.size()[1]);
        let split = |t: Tensor| t.f_view([b, s, HEADS, WIDTH / HEADS])?.f_transpose(1, 2);
        let qkv = self.qkv.forward(x).f_chunk(3, -1)?;
        let (q, k, v) = (
            split(qkv[0].shallow_clone())?,
            split(qkv[1].shallow_clone())?,
            split(qkv[2].shallow_clone())?,
        );
        let scores = q
            .f_matmul(&k.f_transpose(-2, -1)?)?
            .f_div_scalar(((WIDTH / HEADS) as f64).sqrt())?;
        let attended = scores.f_softmax(-1, x.kind())?.f_matmul(&v)?;
        let merged = attended
            .f_transpose(1, 2)?
            .f_contiguous()?
            .f_view([b, s, WIDTH])?;
        let x = self.norm1.forward(&(x + self.project.forward(&merged)));
        let hidden = self.up.forward(&x).f_gelu("none")?;
        let x = self.norm2.forward(&(&x + self.down.forward(&hidden)));
        Ok(self.head.forward(&x.f_mean_dim(1, false, None)?))
    }
}

pub fn case() -> Case {
    Case::new(
        "transformer",
        |vs| {
            let root = vs.root();
            let block = Block {
                qkv: nn::linear(&root / "qkv", WIDTH, 3 * WIDTH, Default::default()),
                project: nn::linear(&root / "project", WIDTH, WIDTH, Default::default()),
                norm1: nn::layer_norm(&root / "norm1", vec![WIDTH], Default::default()),
                up: nn::linear(&root / "up", WIDTH, 2 * WIDTH, Default::default()),
                down: nn::linear(&root / "down", 2 * WIDTH, WIDTH, Default::default()),
                norm2: nn::layer_norm(&root / "norm2", vec![WIDTH], Default::default()),
                head: nn::linear(&root / "head", WIDTH, 4, Default::default()),
            };
            Ok(Box::new(Supervised {
                forward: move |x: &Tensor| block.forward(x),
                optimizer: Box::new(Sgd::new(named_parameters(vs), 0.05, 0.9)),
                input: "tokens",
                target: "labels",
                classify: true,
            }) as Box<dyn Model>)
        },
        |_step| {
            Ok(Batch::new([
                ("tokens", features(&[BATCH, SEQUENCE, WIDTH])),
                ("labels", labels(4, BATCH)),
            ]))
        },
    )
    .describe(
        "transformer encoder block: 4-head attention, layer norm, GELU feed-forward, SGD momentum",
    )
}
