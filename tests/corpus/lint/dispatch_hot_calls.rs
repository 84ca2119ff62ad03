//! A call in a function that runs once per step reaches a read through a
//! trait only some of whose implementations read (`Zero` copies a policy,
//! `Random` does not): the read is reported where it is, and the call,
//! which may reach either, is not. A call whose callee reads in every case
//! is reported at the call too.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub trait Agent {
    fn observe(&mut self, action: usize);
}

pub struct Zero<'n> {
    net: &'n nn::Sequential,
}

impl Agent for Zero<'_> {
    fn observe(&mut self, action: usize) {
        let board = Tensor::zeros([1, 4], (Kind::Float, Device::cuda_if_available()));
        let policy = self.net.forward(&board).to(Device::Cpu); //~ warning host-sync
        println!("{action} {policy:?}");
    }
}

pub struct Random;

impl Agent for Random {
    fn observe(&mut self, _action: usize) {}
}

fn value(net: &nn::Sequential) -> f64 {
    let board = Tensor::ones([1, 4], (Kind::Float, Device::cuda_if_available()));
    net.forward(&board).sum(Kind::Float).double_value(&[]) //~ warning host-sync
}

fn step(agent: &mut dyn Agent, net: &nn::Sequential, action: usize) -> f64 {
    agent.observe(action);
    value(net) //~ warning host-sync
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let mut zero = Zero { net: &net };
    let mut random = Random;
    let mut total = 0.0;
    for action in 0..400 {
        let agent: &mut dyn Agent = if action % 2 == 0 { &mut zero } else { &mut random };
        total += step(agent, &net, action); //~ warning host-sync
    }
    println!("{total}");
}
