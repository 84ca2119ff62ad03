//! Nothing in the repository calls the driver: its own read is a note, as
//! anything nothing calls is, but the search it calls is a public function
//! the library's users may call directly, and its per-simulation read is
//! reported.

use tch::{nn, nn::Module, Kind, Tensor};

pub fn old_driver(net: &nn::Sequential, position: &Tensor) -> f64 {
    let mut total = 0.0;
    for _ in 0..10 {
        total += net.forward(position).mean(Kind::Float).double_value(&[]); //~ note host-sync
    }
    total + run_search(net, position, 100)
}

pub fn run_search(net: &nn::Sequential, position: &Tensor, simulations: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..simulations {
        let value = net.forward(position).mean(Kind::Float);
        total += value.double_value(&[]); //~ warning host-sync
    }
    total
}
