//! The library's older driver is kept beside its successor, and nothing
//! calls it: the search only it calls never runs, and neither does the read
//! that search reaches through its helper. The evaluation the program calls
//! with a turbofish (`evaluate::<Greedy>(..)`) runs, and so does its read.
//! Nothing calls the row copier: an integration test calls a copier of its
//! own by the same name, and what a test names runs in no release build.

use tch::{nn, nn::Module, Kind, Tensor};

pub struct Greedy;

pub fn old_driver(net: &nn::Sequential, position: &Tensor) -> f64 {
    run_search(net, position, 100)
}

pub fn run_search(net: &nn::Sequential, position: &Tensor, simulations: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..simulations {
        let value = net.forward(position).mean(Kind::Float);
        total += value.double_value(&[]); //~ note host-sync
        total += value_of(net, position); //~ note host-sync
    }
    total
}

fn value_of(net: &nn::Sequential, position: &Tensor) -> f64 {
    net.forward(&position.flip([0])).mean(Kind::Float).double_value(&[])
}

pub fn evaluate<P>(net: &nn::Sequential, positions: &Tensor, rounds: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..rounds {
        let values = net.forward(positions).mean(Kind::Float);
        total += values.double_value(&[]); //~ warning host-sync
    }
    total
}

pub fn to_rows<T: tch::kind::Element>(t: &Tensor) -> Vec<Vec<T>> {
    let mut rows = Vec::new();
    for i in 0..t.size()[0] {
        rows.push(Vec::<T>::try_from(t.get(i)).unwrap()); //~ note host-sync
    }
    rows
}
