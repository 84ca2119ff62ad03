//! A function that runs a loop of steps of its own (a policy's training on
//! the episodes of an epoch: minibatches, then a summary) is no step: a
//! loop that plays games and then calls it once is the once-per-epoch
//! level, the summary it reads after its loop runs once per call, and the
//! gradients it clears after the loop make no step of it. Its reads inside
//! the loop of minibatches are the per-step ones. A trait call that can
//! reach both such a training and a single update is judged by the
//! implementation that reads.

use tch::{nn, nn::Module, Kind, Tensor};

pub trait Learner {
    fn train(&mut self, episodes: &[Tensor]) -> f64;
}

pub struct Ppo {
    net: nn::Sequential,
    opt: nn::Optimizer,
    epochs: usize,
}

impl Learner for Ppo {
    fn train(&mut self, episodes: &[Tensor]) -> f64 {
        let batch = Tensor::cat(episodes, 0);
        let mut total = Tensor::zeros([], (Kind::Float, batch.device()));
        for _ in 0..self.epochs {
            for minibatch in batch.split(64, 0) {
                let loss = self.net.forward(&minibatch).square().mean(Kind::Float);
                self.opt.zero_grad();
                loss.backward();
                self.opt.step();
                if loss.double_value(&[]) > 1e6 { //~ warning host-sync
                    break;
                }
                total += loss.detach();
            }
        }
        self.opt.zero_grad();
        total.double_value(&[])
    }
}

pub struct QLearning {
    net: nn::Sequential,
    opt: nn::Optimizer,
}

impl Learner for QLearning {
    fn train(&mut self, episodes: &[Tensor]) -> f64 {
        let batch = Tensor::cat(episodes, 0);
        let loss = self.net.forward(&batch).square().mean(Kind::Float);
        self.opt.backward_step(&loss);
        0.0
    }
}

pub fn play(net: &nn::Sequential, start: &Tensor) -> Tensor {
    let mut state = start.shallow_clone();
    for _ in 0..200 {
        state = net.forward(&state).tanh();
    }
    state
}

pub fn run(learner: &mut dyn Learner, net: &nn::Sequential, start: &Tensor, epochs: usize) {
    for _epoch in 0..epochs {
        let mut episodes = Vec::new();
        for _game in 0..16 {
            episodes.push(play(net, start));
        }
        let loss = learner.train(&episodes); //~ note host-sync
        println!("{loss}");
    }
}
