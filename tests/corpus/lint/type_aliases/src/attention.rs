use tch::Tensor;

use crate::att;
use crate::Summary;

/// Every head of every layer copied on its own, where one copy of the
/// whole batch would do.
pub fn heads(layers: &[Tensor], n_heads: i64) -> Vec<att::Heads> {
    let mut out = Vec::new();
    for layer in layers {
        let mut heads = att::Heads::new();
        for head in 0..n_heads {
            let slice = layer.select(1, head);
            heads.push(att::Attention2D::try_from(slice).unwrap()); //~ warning host-sync
        }
        out.push(heads);
    }
    out
}

pub fn summaries(layers: &[Tensor]) -> Vec<Summary> {
    let mut out = Vec::new();
    for layer in layers {
        out.push(Summary::try_from(layer).unwrap());
    }
    out
}
