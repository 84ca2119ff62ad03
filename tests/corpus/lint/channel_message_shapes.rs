//! A search sends its requests to an inference thread as a struct holding
//! the input on the device, and a control channel carries an enum whose
//! variants hold device tensors; the replies are tuples of CPU copies. A
//! reply taken apart as a tuple (`let (policy, value) = rx.recv()?`) comes
//! from the tuples sent, part by part: a struct or enum value sent on
//! another channel is never one, so the per-simulation reads of the reply
//! wait for no device. A part that some tuple sends on the device is read
//! from the device.

use std::sync::mpsc::{channel, Receiver, Sender};
use tch::{nn, nn::Module, Device, Kind, Tensor};

struct Request {
    input: Tensor,
    reply: Sender<(Tensor, Tensor)>,
}

impl Request {
    fn new(input: Tensor, reply: Sender<(Tensor, Tensor)>) -> Self {
        Self { input, reply }
    }
}

enum Control {
    Warmup(Tensor),
    Stop,
}

fn serve(net: &nn::Sequential, jobs: Receiver<Request>, control: Receiver<Control>) {
    while let Ok(request) = jobs.recv() {
        if let Ok(Control::Stop) = control.try_recv() {
            break;
        }
        let out = net.forward(&request.input);
        let policy = out.to(Device::Cpu); //~ note host-sync
        let value = out.sum(Kind::Float).to(Device::Cpu); //~ note host-sync
        request.reply.send((policy, value)).unwrap();
    }
}

struct Searcher {
    jobs: Sender<Request>,
    control: Sender<Control>,
    device: Device,
}

impl Searcher {
    fn evaluate(&self, board: &Tensor) -> f64 {
        let (tx, rx) = channel();
        let request = Request::new(board.to_device(self.device), tx);
        self.jobs.send(request).unwrap();
        let (policy, value) = rx.recv().unwrap();
        value.double_value(&[]) + policy.double_value(&[0, 1])
    }

    fn search(&self, board: &Tensor) -> f64 {
        self.control
            .send(Control::Warmup(Tensor::ones([1, 4], (Kind::Float, self.device))))
            .unwrap();
        let mut total = 0.0;
        for _ in 0..800 {
            total += self.evaluate(board);
        }
        total
    }
}

/// Statistics go out as triples whose last part stays on the device: the
/// read of that part waits for it on every step.
fn report(stats: &Receiver<(Tensor, Tensor, Tensor)>) -> f64 {
    let mut total = 0.0;
    for _ in 0..100 {
        let (_, _, logits) = stats.recv().unwrap();
        total += logits.double_value(&[0]); //~ warning host-sync
    }
    total
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let (tx, rx) = channel();
    let (control, controls) = channel();
    let (stats_tx, stats) = channel();
    let searcher = Searcher {
        jobs: tx,
        control,
        device,
    };
    let board = Tensor::zeros([1, 4], (Kind::Float, Device::Cpu));
    stats_tx
        .send((
            Tensor::zeros([1], (Kind::Float, Device::Cpu)),
            Tensor::zeros([1], (Kind::Float, Device::Cpu)),
            net.forward(&board.to_device(device)),
        ))
        .unwrap();
    std::thread::spawn(move || searcher.search(&board));
    serve(&net, rx, controls);
    println!("{}", report(&stats));
}
