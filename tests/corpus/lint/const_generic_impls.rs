//! A player generic over a const board size and its network (`impl<const N:
//! usize, NET: Network<N>> Player<N, NET>`): the const parameter written
//! among the impl's arguments is no type, so `self.network` is still the
//! network, and the rollout loop reaches its copy to the host.

use tch::{nn, nn::Module, Device, Kind, Tensor};

pub trait Network<const N: usize>: Default {
    fn policy_eval(&self, games: &[Vec<f32>]) -> Vec<f32>;
}

#[derive(Default)]
pub struct Net5 {
    vs: Option<nn::VarStore>,
}

impl Network<5> for Net5 {
    fn policy_eval(&self, games: &[Vec<f32>]) -> Vec<f32> {
        let input = Tensor::from_slice(&games[0]).to_device(Device::cuda_if_available());
        let out = input.relu();
        let v: Vec<f32> = out.into(); //~ warning host-sync
        v
    }
}

pub struct Player<'a, const N: usize, NET: Network<N>> {
    network: &'a NET,
}

impl<'a, const N: usize, NET: Network<N>> Player<'a, N, NET> {
    fn consume_batch(&self) {
        let outputs = self.network.policy_eval(&[vec![1.0]]); //~ warning host-sync
        println!("{outputs:?}");
    }

    pub fn rollout(&mut self) {
        self.consume_batch(); //~ warning host-sync
    }
}

fn main() {
    let net = Net5::default();
    let mut player: Player<5, Net5> = Player { network: &net };
    for _ in 0..1000 {
        player.rollout(); //~ warning host-sync
    }
}
