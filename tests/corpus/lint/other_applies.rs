//! `state.apply(card)` is a method of the game's own state, not tch's
//! `xs.apply(&module)`, which borrows its module: a loop that applies each
//! game's move after one batched forward runs no model of its own, so the
//! loop around it, one forward per iteration, stays the per-step loop and
//! its copy of the logits to the host is a warning there.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub struct State {
    pub moves: Vec<usize>,
}

impl State {
    pub fn apply(&mut self, card: usize) {
        self.moves.push(card);
    }
}

pub fn self_play(net: &nn::Sequential, games: &mut [State], decisions: usize) {
    let device = Device::cuda_if_available();
    for _ in 0..decisions {
        let x = Tensor::zeros([games.len() as i64, 8], (Kind::Float, device));
        let logits = net.forward(&x).to_device(Device::Cpu); //~ warning host-sync
        let best = Vec::<i64>::try_from(logits.argmax(-1, false)).unwrap();
        for (k, game) in games.iter_mut().enumerate() {
            let card = best[k] as usize;
            game.state_apply(card);
            game.apply(card);
        }
    }
}

trait Apply {
    fn state_apply(&mut self, card: usize);
}

impl Apply for State {
    fn state_apply(&mut self, card: usize) {
        self.apply(card);
    }
}

/// tch's own `apply`, which borrows its module, still runs the model: the
/// loop over layers inside one forward is not a loop of steps.
pub fn tower(x: &Tensor, layers: &[nn::Linear]) -> Tensor {
    let mut h = x.shallow_clone();
    for layer in layers {
        h = h.apply(layer);
    }
    h
}
