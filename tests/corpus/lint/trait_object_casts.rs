//! Two kinds of agent playing each other through `&mut dyn Agent` casts
//! (`&mut agents[i] as &mut dyn Agent<G>`): the cast names the trait, so
//! a call on it reaches every implementation, and the one that copies a
//! policy to the host is reported per move.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub trait Agent<G> {
    fn observe(&mut self, action: usize);
}

pub struct Zero<'n> {
    net: &'n nn::Sequential,
}

impl<G> Agent<G> for Zero<'_> {
    fn observe(&mut self, action: usize) {
        let board = Tensor::zeros([1, 4], (Kind::Float, Device::cuda_if_available()));
        let policy = self.net.forward(&board).to(Device::Cpu); //~ warning host-sync
        println!("{action} {policy:?}");
    }
}

pub struct Random;

impl<G> Agent<G> for Random {
    fn observe(&mut self, _action: usize) {}
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let net = nn::seq().add(nn::linear(vs.root(), 4, 4, Default::default()));
    let mut zeros = Vec::new();
    let mut randoms = Vec::new();
    for _ in 0..8 {
        zeros.push(Zero { net: &net });
        randoms.push(Random);
    }
    for (turn, action) in (0..400).enumerate() {
        let game = turn % 8;
        let (player, opponent) = if turn % 2 == 0 {
            (&mut zeros[game] as &mut dyn Agent<u8>, &mut randoms[game] as &mut dyn Agent<u8>)
        } else {
            (&mut randoms[game] as &mut dyn Agent<u8>, &mut zeros[game] as &mut dyn Agent<u8>)
        };
        player.observe(action); //~ warning host-sync
        opponent.observe(action); //~ warning host-sync
    }
}
