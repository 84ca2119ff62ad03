//! The crate that depends on tch, handing its types on.

pub use tch::{Device, Kind, Tensor};

pub fn step(xs: &Tensor) -> Tensor {
    (xs * 2.0).mean(Kind::Float)
}
