//! A struct generic over its model, with an impl for one concrete model
//! (`impl Robot<Agent>`): `self.model` is an `Agent` there, so calling its
//! method in a loop reaches `Agent`'s reads, and `Agent::train`, run once
//! per step, reports its own read where it is.

use tch::Kind::Float;
use tch::{nn, Tensor};

pub struct Agent {
    actor: nn::Linear,
    opt: nn::Optimizer,
    memory: Vec<Tensor>,
}

impl Agent {
    pub fn train(&mut self) {
        let states = Tensor::stack(&self.memory, 0);
        let loss = states.apply(&self.actor).mean(Float);
        eprintln!("actor loss: {loss:?}"); //~ warning host-sync
        self.opt.backward_step(&loss);
    }
}

pub struct Robot<S, M> {
    state: S,
    model: M,
}

impl<S> Robot<S, Agent> {
    pub fn run(&mut self, iterations: usize) {
        for _ in 0..iterations {
            self.model.train(); //~ warning host-sync
        }
    }
}
