//! An inference thread answers tree-search requests over channels with CPU
//! copies of the network outputs (the batching pattern of AlphaZero-style
//! self-play). Every value sent over a channel in the crate is CPU data, so
//! what a search receives is too: its per-simulation reads wait for no
//! device. The copies in the server loop run once per request.

use std::sync::mpsc::{channel, Receiver, Sender};
use tch::{nn, nn::Module, Device, Kind, Tensor};

fn serve(net: &nn::Sequential, jobs: Receiver<(Tensor, Sender<(Tensor, Tensor)>)>) {
    while let Ok((input, reply)) = jobs.recv() {
        let out = net.forward(&input.to_device(Device::cuda_if_available()));
        let policy = out.to_device(Device::Cpu); //~ note host-sync
        let value = out.sum(Kind::Float).to(Device::Cpu); //~ note host-sync
        reply.send((policy, value)).unwrap();
    }
}

fn search(jobs: &Sender<(Tensor, Sender<(Tensor, Tensor)>)>) -> f64 {
    let mut total = 0.0;
    for _ in 0..800 {
        let (tx, rx) = channel();
        jobs.send((Tensor::zeros([1, 4], (Kind::Float, Device::Cpu)), tx)).unwrap();
        let (policy, value) = rx.recv().unwrap();
        total += value.double_value(&[]) + policy.double_value(&[0, 1]);
    }
    total
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let (tx, rx) = channel();
    std::thread::spawn(move || serve(&net, rx));
    for _ in 0..100 {
        println!("{}", search(&tx));
    }
}
