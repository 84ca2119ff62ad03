//! An actor-critic agent collecting rollouts: per-step action sampling,
//! a critic update hidden one and two calls away, and masked statistics.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Critic {
    net: nn::Sequential,
    opt: nn::Optimizer,
}

impl Critic {
    pub fn new(vs: &nn::VarStore, observations: i64) -> Critic {
        let root = vs.root();
        let net = nn::seq()
            .add(nn::linear(&root / "c1", observations, 64, Default::default()))
            .add_fn(|xs| xs.tanh())
            .add(nn::linear(&root / "c2", 64, 1, Default::default()));
        let opt = nn::Adam::default().build(vs, 3e-4).unwrap();
        Critic { net, opt }
    }

    /// One gradient step; returns the loss for logging.
    pub fn update(&mut self, observations: &Tensor, returns: &Tensor) -> f32 {
        let values = self.net.forward(observations).squeeze_dim(-1);
        let loss = (values - returns).square().mean(Kind::Float);
        self.opt.backward_step(&loss);
        f32::try_from(&loss).unwrap() //~ warning host-sync
    }

    /// Values on the device, no reads.
    pub fn values(&self, observations: &Tensor) -> Tensor {
        self.net.forward(observations).squeeze_dim(-1)
    }
}

pub struct Agent {
    critic: Critic,
    actor: nn::Sequential,
    step: usize,
}

impl Agent {
    pub fn learn(&mut self, observations: &Tensor, returns: &Tensor) -> f32 {
        self.step += 1;
        self.critic.update(observations, returns) //~ warning host-sync
    }

    pub fn log(&self, loss: &Tensor) {
        if self.step % 50 == 0 {
            println!("critic loss {}", loss);
        }
    }

    pub fn act(&self, observation: &Tensor) -> Tensor {
        self.actor.forward(observation).softmax(-1, Kind::Float).multinomial(1, true)
    }
}

pub trait Env {
    fn step(&mut self, action: i64) -> (Tensor, f64, bool);
    fn reset(&mut self) -> Tensor;
}

pub fn rollout(agent: &mut Agent, env: &mut impl Env, device: Device, steps: usize) {
    let mut observation = env.reset().to_device(device);
    let mut episode_returns = Vec::new();
    for step in 0..steps {
        let action = agent.act(&observation);
        let action = i64::try_from(&action).unwrap(); //~ warning host-sync
        let (next, reward, done) = env.step(action);
        let returns = Tensor::from(reward as f32).to_device(device);
        let loss = agent.learn(&observation, &returns); //~ warning host-sync
        let values = agent.critic.values(&observation);
        let critic_loss = agent.critic.update(&observation, &returns); //~ warning host-sync
        agent.log(&values); //~ note host-sync
        let positive = values.masked_select(&values.gt(0.0)); //~ warning data-dependent-shape
        let active = values.gt(0.5);
        let chosen = values.index(&[Some(&active)]); //~ warning data-dependent-shape
        let where_active = active.nonzero(); //~ warning data-dependent-shape
        let distinct = values.unique(false, false, false); //~ warning data-dependent-shape
        if step.is_multiple_of(100) {
            println!("step {step} value {}", values.mean(Kind::Float)); //~ note host-sync
        }
        episode_returns.push(reward);
        observation = if done { env.reset().to_device(device) } else { next.to_device(device) };
        let _ = (loss, critic_loss, positive, chosen, where_active, distinct);
    }
}

pub fn score_batches(batches: &[Tensor]) -> Vec<f64> {
    let mut all = Vec::new();
    for group in batches.chunks(4) {
        // The closure runs once per element, inside the loop.
        let scores: Vec<f64> = group.iter().map(|v| v.double_value(&[])).collect(); //~ warning host-sync
        all.extend(scores);
    }
    all
}

pub fn monitor(values: &[Tensor]) {
    let report = |t: &Tensor| println!("value {}", t);
    report(&values[0]);
    for value in values {
        report(value); //~ warning host-sync
    }
}
