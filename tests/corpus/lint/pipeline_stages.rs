//! A loop that takes tensors from a channel and hands its results on, over
//! another channel or into a queue behind a lock, is a stage of a pipeline:
//! it takes one item per step of the thread that sends them (the forward
//! of each batch), so its copy to the host is a wait per step. A loop that
//! only consumes what it receives (a logging task) is a sink, and a loop
//! over requests of host data answers one request per iteration: both
//! stay notes.

use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct WorkItem {
    pub logits: Tensor,
    pub games: Vec<usize>,
}

pub struct Shared {
    pub ready: Mutex<Vec<(usize, Vec<f32>)>>,
    pub wake: Condvar,
}

/// The inference thread: one forward per batch of pending games.
pub fn launch(net: &nn::Sequential, work: Sender<WorkItem>, rounds: usize) {
    let device = Device::cuda_if_available();
    for _ in 0..rounds {
        let x = Tensor::zeros([64, 8], (Kind::Float, device));
        let logits = net.forward(&x);
        work.send(WorkItem { logits, games: (0..64).collect() }).unwrap();
    }
}

/// The scatter thread: one forward's output per item.
pub fn scatter(shared: Arc<Shared>, work: Receiver<WorkItem>) {
    while let Ok(item) = work.recv() {
        let logits = item.logits.to_device(Device::Cpu); //~ warning host-sync
        let host = Vec::<f32>::try_from(logits.flatten(0, -1)).unwrap();
        let mut ready = shared.ready.lock().unwrap();
        for game in item.games {
            ready.push((game, host.clone()));
        }
        drop(ready);
        shared.wake.notify_all();
    }
}

pub struct Batch {
    pub inputs: Tensor,
    pub id: usize,
}

/// A loader thread: batches built on the host.
pub fn load(batches: Sender<Batch>, count: usize) {
    for id in 0..count {
        let inputs = Tensor::zeros([32, 8], (Kind::Float, Device::Cpu));
        batches.send(Batch { inputs, id }).unwrap();
    }
}

/// An inference worker fed batches by loader threads, feeding a writer.
pub fn infer(net: &nn::Sequential, batches: Receiver<Batch>, out: Sender<(usize, Vec<f32>)>) {
    let device = Device::cuda_if_available();
    while let Ok(batch) = batches.recv() {
        let logits = net.forward(&batch.inputs.to_device(device));
        let host = Vec::<f32>::try_from(logits.to_device(Device::Cpu).flatten(0, -1)).unwrap(); //~ warning host-sync
        out.send((batch.id, host)).unwrap();
    }
}

/// A logging task: it reads what it is sent, and hands nothing on.
pub fn log_losses(messages: Receiver<Tensor>) {
    while let Ok(loss) = messages.recv() {
        println!("loss {}", f64::try_from(&loss).unwrap()); //~ note host-sync
    }
}
