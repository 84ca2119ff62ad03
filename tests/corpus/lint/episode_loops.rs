//! Which loop is hot when a function both runs the model once and repeats
//! steps in a loop of its own (plays an episode of environment steps,
//! generates token by token): the loop inside is the hot one, and a loop
//! calling the function runs once per episode or generation, the
//! once-per-epoch level. A model method that runs its layers or heads in a
//! loop over them is still one step.

use tch::{nn, nn::Module, Kind, Tensor};

pub trait Env {
    fn reset(&mut self) -> Tensor;
    fn step(&mut self, action: i64) -> (Tensor, f64, bool);
}

pub struct Agent {
    policy: nn::Sequential,
    opt: nn::Optimizer,
}

impl Agent {
    pub fn act(&self, obs: &Tensor) -> i64 {
        self.policy.forward(obs).argmax(-1, false).int64_value(&[]) //~ warning host-sync
    }

    pub fn value(&self, obs: &Tensor) -> Tensor {
        self.policy.forward(obs).mean(Kind::Float)
    }

    pub fn train(&mut self, memory: &[(Tensor, i64, f64)]) {
        let obs: Vec<Tensor> = memory.iter().map(|m| m.0.shallow_clone()).collect();
        let loss = self.policy.forward(&Tensor::stack(&obs, 0)).mean(Kind::Float);
        self.opt.backward_step(&loss);
    }
}

/// Runs the model once (the first value), then an episode of steps.
fn play_episode<E: Env>(env: &mut E, agent: &Agent, memory: &mut Vec<(Tensor, i64, f64)>) -> Tensor {
    let mut obs = env.reset();
    let first = agent.value(&obs);
    loop {
        let action = agent.act(&obs); //~ warning host-sync
        let (next, reward, done) = env.step(action);
        memory.push((obs, action, reward));
        obs = next;
        if done {
            break;
        }
    }
    first
}

/// Plays many episodes, then trains once.
pub fn play_then_train<E: Env>(env: &mut E, agent: &mut Agent, episodes: usize) {
    let mut memory = Vec::new();
    for episode in 0..episodes {
        let first = play_episode(env, agent, &mut memory); //~ note host-sync
        println!("episode {episode} first value {}", first.double_value(&[])); //~ note host-sync
    }
    agent.train(&memory);
}

/// The same with the episode written inline.
pub fn play_inline<E: Env>(env: &mut E, agent: &mut Agent, episodes: usize) {
    let mut memory = Vec::new();
    for episode in 0..episodes {
        let mut obs = env.reset();
        loop {
            let action = agent.act(&obs); //~ warning host-sync
            let (next, reward, done) = env.step(action);
            memory.push((obs, action, reward));
            obs = next;
            if done {
                break;
            }
        }
        let value = agent.value(&obs);
        println!("episode {episode} value {}", value.double_value(&[])); //~ note host-sync
    }
    agent.train(&memory);
}

pub struct Generator {
    encoder: nn::Linear,
    decoder: nn::Linear,
    heads: Vec<nn::Linear>,
}

impl Generator {
    /// Encodes once, then generates token by token.
    pub fn generate(&self, prompt: &Tensor, eos: i64) -> Tensor {
        let mut state = prompt.apply(&self.encoder);
        let mut tokens = Vec::new();
        for _ in 0..64 {
            let next = state.apply(&self.decoder).argmax(-1, false);
            if next.int64_value(&[0]) == eos { //~ warning host-sync
                break;
            }
            state = state.apply(&self.encoder);
            tokens.push(next);
        }
        Tensor::stack(&tokens, 0)
    }

    /// One step, run head by head.
    pub fn scores(&self, xs: &Tensor) -> Tensor {
        let hidden = xs.apply(&self.encoder);
        let per_head: Vec<Tensor> = self.heads.iter().map(|h| hidden.apply(h)).collect();
        Tensor::stack(&per_head, 0)
    }
}

pub fn generate_all(model: &Generator, prompts: &[Tensor]) {
    for prompt in prompts {
        let out = model.generate(prompt, 2); //~ note host-sync
        println!("{}", out.sum(Kind::Int64).int64_value(&[])); //~ note host-sync
    }
}

pub fn score_all(model: &Generator, batches: &[Tensor]) {
    for xs in batches {
        let scores = model.scores(xs);
        println!("{}", scores.mean(Kind::Float).double_value(&[])); //~ warning host-sync
    }
}
