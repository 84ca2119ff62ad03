//! The same search, but the inference thread sends its outputs back as
//! they are, on the device: every read of a received tensor waits for it.

use std::sync::mpsc::{channel, Receiver, Sender};
use tch::{nn, nn::Module, Device, Kind, Tensor};

fn serve(net: &nn::Sequential, jobs: Receiver<(Tensor, Sender<(Tensor, Tensor)>)>) {
    while let Ok((input, reply)) = jobs.recv() {
        let out = net.forward(&input.to_device(Device::cuda_if_available()));
        let (policy, value) = (out.shallow_clone(), out.sum(Kind::Float));
        reply.send((policy, value)).unwrap();
    }
}

fn search(jobs: &Sender<(Tensor, Sender<(Tensor, Tensor)>)>) -> f64 {
    let mut total = 0.0;
    for _ in 0..800 {
        let (tx, rx) = channel();
        jobs.send((Tensor::zeros([1, 4], (Kind::Float, Device::Cpu)), tx)).unwrap();
        let (policy, value) = rx.recv().unwrap();
        total += value.double_value(&[]) + policy.double_value(&[0, 1]); //~ warning host-sync
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
        println!("{}", search(&tx)); //~ warning host-sync
    }
}
