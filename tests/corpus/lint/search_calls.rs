//! A move's tree search runs a loop of simulations of its own, each reading
//! the network's value: the read is reported in that loop, and the training
//! loop's call, which runs the whole search once per pass, is a note. A
//! helper that reads a tensor row by row waits once per row: its read is
//! reported in its loop. Each pass of the training loop runs a whole search
//! before its one update, so the pass is the once-per-epoch level, and the
//! helper's call there is a note too.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn search(net: &nn::Sequential, board: &Tensor, simulations: usize) -> f64 {
    let mut best = f64::MIN;
    for _ in 0..simulations {
        let value = net.forward(board);
        best = best.max(value.double_value(&[0])); //~ warning host-sync
    }
    best
}

fn row_sums(scores: &Tensor) -> Vec<f64> {
    let mut sums = Vec::new();
    for row in 0..scores.size()[0] {
        sums.push(scores.double_value(&[row, 0])); //~ warning host-sync
    }
    sums
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 8, 1, Default::default()));
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    let mut board = Tensor::zeros([1, 8], (Kind::Float, device));
    for _ in 0..200 {
        let value = search(&net, &board, 800); //~ note host-sync
        let scores = net.forward(&board.repeat([4, 1]));
        println!("{value} {:?}", row_sums(&scores)); //~ note host-sync
        opt.backward_step(&(scores.mean(Kind::Float) - value));
        board = board + 1;
    }
}
