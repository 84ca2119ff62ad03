//! The older driver is kept beside its successor; its call in `main` is
//! commented out, and an import names the search without calling it. A
//! recursive replay that only calls itself never runs either.

mod pool;
mod search;
mod trainers;

use search::{run_batched, run_search};
use tch::{nn, nn::Module, Device, Kind, Tensor};

fn play_one_by_one(net: &nn::Sequential, games: usize) -> f64 {
    let position = Tensor::rand([1, 4], (Kind::Float, Device::cuda_if_available()));
    (0..games).map(|_| run_search(net, &position, 100)).sum() //~ note host-sync
}

/// Replays games one by one, recursing once per game; only it calls itself.
fn replay_games(net: &nn::Sequential, position: &Tensor, games: usize) -> f64 {
    if games == 0 {
        return 0.0;
    }
    let mut total = 0.0;
    for _ in 0..10 {
        let value = net.forward(position).mean(Kind::Float);
        total += value.double_value(&[]); //~ note host-sync
    }
    total + replay_games(net, position, games - 1)
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 1, Default::default()));
    /*
    let score = play_one_by_one(&net, 10);
    */
    let positions = Tensor::rand([64, 4], (Kind::Float, device));
    let score = run_batched(&net, &positions, 100);
    let loss = trainers::supervised::train(&vs, &net, 100);
    let hits = pool::drive(device, 100);
    println!("{score} {loss} {hits}");
}
