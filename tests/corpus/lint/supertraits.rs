//! Calls the lint has to follow through traits and plumbing: a method of a
//! supertrait called on a trait object, a boxed one or a generic bounded by
//! the subtrait (it reaches the impls of the supertrait), and a receiver
//! taken out of a collection with `get_mut(..)` and `ok_or_else(..)?`.

use tch::{nn, nn::Module, Tensor};

pub trait Scorer {
    fn score(&self, xs: &Tensor) -> f64;
}

pub trait Policy: Scorer {
    fn name(&self) -> String;
}

pub struct Greedy {
    net: nn::Linear,
}

impl Scorer for Greedy {
    fn score(&self, xs: &Tensor) -> f64 {
        xs.apply(&self.net).max().double_value(&[]) //~ warning host-sync
    }
}

impl Policy for Greedy {
    fn name(&self) -> String {
        "greedy".into()
    }
}

/// A method of the same name elsewhere, which does not sync.
pub struct Counter;

impl Counter {
    pub fn score(&self, _xs: &Tensor) -> f64 {
        1.0
    }
}

pub fn evaluate(policy: &dyn Policy, batches: &[Tensor]) -> f64 {
    let mut total = 0.0;
    for xs in batches {
        total += policy.score(xs); //~ warning host-sync
    }
    total
}

pub fn evaluate_boxed(policies: &[Box<dyn Policy>], batches: &[Tensor]) -> f64 {
    let mut total = 0.0;
    for xs in batches {
        for policy in policies {
            total += policy.score(xs); //~ warning host-sync
        }
    }
    total
}

pub fn evaluate_generic<P: Policy>(policy: &P, batches: &[Tensor]) -> f64 {
    let mut total = 0.0;
    for xs in batches {
        total += policy.score(xs); //~ warning host-sync
    }
    total
}

pub struct Pool {
    models: Vec<Greedy>,
}

pub fn run(pool: &mut Pool, batches: &[Tensor]) -> anyhow::Result<f64> {
    let mut total = 0.0;
    for xs in batches {
        let model = pool
            .models
            .get_mut(0)
            .ok_or_else(|| anyhow::anyhow!("no model"))?;
        total += model.score(xs); //~ warning host-sync
    }
    Ok(total)
}
