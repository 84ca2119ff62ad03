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

/// A second server evaluates through a crate function that returns the
/// pair on the device and replaces each part with its CPU copy before
/// answering: the message sent is the CPU copies.
fn evaluate(net: &nn::Sequential, input: &Tensor) -> (Tensor, Tensor) {
    let out = net.forward(input);
    (out.shallow_clone(), out.sum(Kind::Float))
}

fn serve_pairs(net: &nn::Sequential, jobs: Receiver<(Tensor, Sender<(Tensor, Tensor)>)>) {
    while let Ok((input, reply)) = jobs.recv() {
        let mut out = evaluate(net, &input.to_device(Device::cuda_if_available()));
        out.0 = out.0.to(Device::Cpu);
        out.1 = out.1.to(Device::Cpu);
        reply.send(out).unwrap();
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
    let (resize, _sizes) = channel();
    let (reply_to, replies) = channel();
    let mut executor = Executor {
        jobs: tx.clone(),
        resize,
        reply_to,
        replies,
        sizes: Sizes { current: 1 },
    };
    let (pair_jobs, pair_rx) = channel();
    let pair_net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    std::thread::spawn(move || serve_pairs(&pair_net, pair_rx));
    std::thread::spawn(move || serve(&net, rx));
    for _ in 0..100 {
        println!("{}", search(&tx));
        println!("{}", search_with(&mut executor));
        println!("{}", search(&pair_jobs));
    }
}

/// The same service behind a handle that keeps its reply channel in a
/// field and sends it along with each request, and that tells the server
/// a new batch size now and then: neither a channel's end nor a number
/// holds data, so what comes back is still the server's CPU copies.
struct Executor {
    jobs: Sender<(Tensor, Sender<(Tensor, Tensor)>)>,
    resize: Sender<usize>,
    reply_to: Sender<(Tensor, Tensor)>,
    replies: Receiver<(Tensor, Tensor)>,
    sizes: Sizes,
}

struct Sizes {
    current: usize,
}

impl Sizes {
    fn grow(&mut self) -> Option<usize> {
        self.current *= 2;
        (self.current < 1024).then_some(self.current)
    }
}

impl Executor {
    fn evaluate(&mut self, input: Tensor) -> (Tensor, Tensor) {
        if let Some(size) = self.sizes.grow() {
            self.resize.send(size).unwrap();
        }
        self.jobs.send((input, self.reply_to.clone())).unwrap();
        self.replies.recv().unwrap()
    }
}

fn search_with(executor: &mut Executor) -> f64 {
    let mut total = 0.0;
    for _ in 0..800 {
        let (_policy, value) = executor.evaluate(Tensor::zeros([1, 4], (Kind::Float, Device::Cpu)));
        total += f64::try_from(value).unwrap();
    }
    total
}
