//! A helper that walks the items it was handed through a model, one by one
//! (scoring each candidate move), waits once per item, and a call of it
//! waits that many times per call. A loop that repeats around such calls
//! (a game's turns) is the step loop: a call there waits once per turn,
//! and so do the calls of the functions it runs. A loop over files calling
//! the same helper is the level around its walk, once per file.

use tch::{nn, nn::Module, Device, Tensor};

pub struct Scorer {
    net: nn::Sequential,
    device: Device,
}

impl Scorer {
    pub fn score_all(&self, states: &[Vec<f32>]) -> Vec<f32> {
        let mut out = Vec::new();
        for state in states.iter() {
            let x = Tensor::from_slice(state).to(self.device);
            out.push(self.net.forward(&x).double_value(&[0]) as f32); //~ warning host-sync
        }
        out
    }
}

pub struct Player {
    scorer: Scorer,
}

impl Player {
    pub fn choose(&self, candidates: &[Vec<f32>]) -> usize {
        let scores = self.scorer.score_all(candidates); //~ warning host-sync
        let mut best = 0;
        for (i, s) in scores.iter().enumerate() {
            if *s > scores[best] {
                best = i;
            }
        }
        best
    }
}

fn candidates_of(state: &[f32]) -> Vec<Vec<f32>> {
    (0..4)
        .map(|k| state.iter().map(|v| v + k as f32).collect())
        .collect()
}

pub fn play(player: &Player) {
    let mut state = vec![0.0f32; 8];
    loop {
        let candidates = candidates_of(&state);
        let pick = player.choose(&candidates); //~ warning host-sync
        state = candidates[pick].clone();
        if state[0] > 100.0 {
            break;
        }
    }
}

pub fn score_files(scorer: &Scorer, files: &[String]) {
    for file in files {
        let states = vec![vec![file.len() as f32; 8]; 16];
        let scores = scorer.score_all(&states); //~ note host-sync
        println!("{file}: {:?}", scores.first());
    }
}

fn main() {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let net = nn::seq().add(nn::linear(vs.root(), 8, 1, Default::default()));
    let player = Player {
        scorer: Scorer { net, device },
    };
    play(&player);
    score_files(&player.scorer, &["a".to_string()]);
}
