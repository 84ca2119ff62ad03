//! Reads that hide in the shape of the code: a tuple popped from a vector
//! of (number, tensor) pairs, a point-free conversion, tensor-only methods
//! on values of unknown type, itertools and stream combinators as loops, a
//! message formatted eagerly for `expect`, and devcheck's tracked readbacks.

use devcheck::readbacks;
use futures::{stream, StreamExt, TryStreamExt};
use itertools::{izip, Itertools};
use tch::{Kind, Tensor};

pub fn replay(mut memory: Vec<(f64, Tensor, i64)>) -> f64 {
    let mut total = 0.0;
    while !memory.is_empty() {
        let (reward, state, _action) = memory.pop().unwrap();
        total += reward * f64::try_from(state.sum(Kind::Float)).unwrap(); //~ warning host-sync
    }
    total
}

pub fn losses_to_host(losses: &[Tensor]) -> Vec<f32> {
    losses.iter().map(f32::try_from).map(Result::unwrap).collect() //~ warning host-sync
}

pub fn check(batches: &[Tensor], model: &tch::CModule) {
    for batch in batches {
        let h = model.forward_ts(&[batch]).unwrap();
        if bool::try_from(h.isinf().any()).unwrap() { //~ warning host-sync
            println!("overflow");
        }
        let var = model.forward_ts(&[batch]).unwrap();
        let spread = f64::from(var.abs().max()); //~ warning host-sync
        let _ = spread;
    }
}

pub fn pairs(xs: &[Tensor], ys: &[Tensor], zs: &[Tensor]) -> f64 {
    let mut total = 0.0;
    for (x, y) in xs.iter().zip_eq(ys) {
        total += f64::try_from((x - y).abs().sum(Kind::Float)).unwrap(); //~ warning host-sync
    }
    for (x, y, z) in izip!(xs, ys, zs) {
        total += f64::try_from((x * y * z).sum(Kind::Float)).unwrap(); //~ warning host-sync
    }
    total
}

pub async fn accumulate(batches: Vec<Tensor>) -> anyhow::Result<f64> {
    stream::iter(batches.into_iter().map(Ok::<Tensor, anyhow::Error>))
        .try_fold(0.0, |total, batch| async move {
            Ok(total + f64::try_from(batch.mean(Kind::Float))?) //~ warning host-sync
        })
        .await
}

pub fn decode(batches: &[Tensor]) -> Vec<i64> {
    let mut out = Vec::new();
    for logits in batches {
        let best = logits.argmax(-1, false);
        // `format!` runs before `expect` looks at the result, on success too.
        let ids = Vec::<i64>::try_from(&best).expect(&format!("bad batch {}", best)); //~ warning host-sync
        out.extend(ids);
    }
    out
}

pub fn tracked(batches: &[Tensor]) -> f64 {
    let mut total = 0.0;
    for batch in batches {
        total += readbacks::scalar_f64(&batch.mean(Kind::Float)).unwrap(); //~ warning host-sync
    }
    total
}
