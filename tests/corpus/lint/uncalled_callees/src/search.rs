//! A search whose one caller is a driver nothing runs: its per-simulation
//! read never runs either, so it is a note, and so does what it calls on
//! every simulation. The batched search beside it runs from `main`, and
//! its read is reported.

use tch::{nn, nn::Module, Kind, Tensor};

pub fn run_search(net: &nn::Sequential, position: &Tensor, simulations: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..simulations {
        let value = net.forward(position).mean(Kind::Float);
        total += value.double_value(&[]); //~ note host-sync
        total += simulate(net, position); //~ note host-sync
    }
    total
}

/// Runs once per simulation of the search nothing runs: the read it
/// reaches through `value_of` never runs either.
fn simulate(net: &nn::Sequential, position: &Tensor) -> f64 {
    value_of(net, &position.flip([0]))
}

fn value_of(net: &nn::Sequential, position: &Tensor) -> f64 {
    net.forward(position).mean(Kind::Float).double_value(&[])
}

pub fn run_batched(net: &nn::Sequential, positions: &Tensor, rounds: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..rounds {
        let values = net.forward(positions).mean(Kind::Float);
        total += values.double_value(&[]); //~ warning host-sync
    }
    total
}
