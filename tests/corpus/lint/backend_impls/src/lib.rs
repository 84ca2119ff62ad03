//! A crate that wraps its tensors for two backends writes one `impl` per
//! backend behind cargo features: a call of the default build reaches the
//! methods the default build compiles (here `tch`), and a read in them
//! runs wherever they are called, as if no other backend's method of the
//! same name were there.

use tch::{nn, nn::Module, Kind};

pub struct Tensor {
    #[cfg(feature = "tch-backend")]
    inner: tch::Tensor,
}

#[cfg(feature = "tch-backend")]
impl Tensor {
    pub fn argmax_value(&self) -> i64 {
        self.inner.argmax(-1, false).int64_value(&[]) //~ warning host-sync
    }

    pub fn apply(&self, net: &nn::Sequential) -> Tensor {
        Tensor {
            inner: net.forward(&self.inner).to_kind(Kind::Float),
        }
    }
}

#[cfg(feature = "mlx")]
impl Tensor {
    pub fn argmax_value(&self) -> i64 {
        0
    }

    pub fn apply(&self, _net: &nn::Sequential) -> Tensor {
        Tensor {}
    }
}

pub fn decode(net: &nn::Sequential, mut state: Tensor, steps: usize) -> Vec<i64> {
    let mut tokens = Vec::new();
    for _ in 0..steps {
        state = state.apply(net);
        tokens.push(state.argmax_value()); //~ warning host-sync
    }
    tokens
}
