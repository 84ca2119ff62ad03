//! An agent acting in an environment: each iteration runs the policy,
//! steps the environment with its answer and then calls an update that
//! holds a loop of gradient steps of its own. The iteration is one
//! environment step, so the update's reads outside its loop run once per
//! step, and so does the call. A loop that plays whole episodes and then
//! updates once stays the once-per-epoch level around them.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Env;

impl Env {
    pub fn step(&mut self, action: Vec<f32>) -> (Vec<f32>, f32, bool) {
        (action, 0.0, false)
    }
}

pub struct Agent {
    device: Device,
    actor: nn::Sequential,
    opt: nn::Optimizer,
    alpha: Tensor,
}

impl Agent {
    pub fn new(device: Device) -> Agent {
        let vs = nn::VarStore::new(device);
        let actor = nn::seq().add(nn::linear(vs.root(), 4, 2, Default::default()));
        let opt = nn::Adam::default().build(&vs, 3e-4).unwrap();
        let alpha = Tensor::ones([1], (Kind::Float, device));
        Agent { device, actor, opt, alpha }
    }

    pub fn act(&self, obs: &[f32]) -> Vec<f32> {
        let xs = Tensor::from_slice(obs).to_device(self.device).unsqueeze(0);
        let out = self.actor.forward(&xs).squeeze_dim(0);
        let mut action = vec![0.0f32; 2];
        out.copy_data(&mut action, 2); //~ warning host-sync
        action
    }

    pub fn update(&mut self, gradient_steps: usize) -> f64 {
        let mut total = 0.0;
        for _ in 0..gradient_steps {
            let batch = Tensor::rand([32, 4], (Kind::Float, self.device));
            let loss = self.actor.forward(&batch).pow_tensor_scalar(2).mean(Kind::Float);
            self.opt.backward_step(&loss);
            total += loss.double_value(&[]); //~ warning host-sync
        }
        total + self.alpha.double_value(&[0]) //~ warning host-sync
    }
}

pub fn train(agent: &mut Agent, env: &mut Env) {
    let mut obs = vec![0.0f32; 4];
    for _step in 0..100_000 {
        let action = agent.act(&obs); //~ warning host-sync
        let (next, _reward, _done) = env.step(action);
        obs = next;
        let loss = agent.update(4); //~ warning host-sync
        println!("{loss}");
    }
}

pub fn play_episode(agent: &Agent, env: &mut Env) -> Vec<Vec<f32>> {
    let mut obs = vec![0.0f32; 4];
    let mut seen = Vec::new();
    for _step in 0..200 {
        let action = agent.act(&obs); //~ warning host-sync
        let (next, _reward, done) = env.step(action);
        seen.push(obs);
        obs = next;
        if done {
            break;
        }
    }
    seen
}

pub fn play_then_update(agent: &mut Agent, env: &mut Env) {
    for _iteration in 0..100 {
        let episode = play_episode(agent, env); //~ note host-sync
        let loss = agent.update(episode.len()); //~ note host-sync
        println!("{loss}");
    }
}

fn main() {
    let mut agent = Agent::new(Device::cuda_if_available());
    let mut env = Env;
    train(&mut agent, &mut env);
    play_then_update(&mut agent, &mut env);
}
