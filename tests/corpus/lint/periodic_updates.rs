//! An agent's per-step call that runs an update only every N steps is still
//! one step per call: the loop of minibatches inside the guarded update
//! does not make the caller an epoch, so the action it copies back on
//! every environment step is reported at the call. A single update behind
//! such a guard (one optimizer step per call, as SAC's is) is a step in
//! itself, and its loss reads run once per optimizer step; so is a block
//! behind such a guard that runs the update inline, unlike one that only
//! logs or evaluates.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

pub struct Agent {
    policy: nn::Sequential,
    critic: nn::Sequential,
    opt: nn::Optimizer,
    t: usize,
    update_interval: usize,
    buffer: Vec<Tensor>,
    last_loss: Option<f64>,
}

impl Agent {
    pub fn new(vs: &nn::VarStore) -> Agent {
        let policy = nn::seq().add(nn::linear(vs.root(), 4, 2, Default::default()));
        let critic = nn::seq().add(nn::linear(vs.root(), 4, 1, Default::default()));
        let opt = nn::Adam::default().build(vs, 3e-4).unwrap();
        Agent { policy, critic, opt, t: 0, update_interval: 128, buffer: Vec::new(), last_loss: None }
    }

    pub fn act_and_train(&mut self, obs: &Tensor) -> Tensor {
        self.t += 1;
        let state = obs.to_device(Device::cuda_if_available());
        let action = self.policy.forward(&state).argmax(-1, false);
        self.buffer.push(state);
        if self.t % self.update_interval == 0 {
            self.update();
        }
        action.to_device(Device::Cpu) //~ warning host-sync
    }

    fn update(&mut self) {
        let states = Tensor::stack(&self.buffer, 0);
        for _epoch in 0..4 {
            for minibatch in states.split(32, 0) {
                let loss = self.critic.forward(&minibatch).square().mean(Kind::Float);
                self.opt.backward_step(&loss);
                assert!(loss.isnan().int64_value(&[]) == 0); //~ warning host-sync
            }
        }
        self.buffer.clear();
    }

    pub fn observe(&mut self, state: &Tensor) {
        self.t += 1;
        if self.t % self.update_interval == 0 {
            self.update_once(state);
        }
    }

    fn update_once(&mut self, state: &Tensor) {
        let loss = self.critic.forward(state).square().mean(Kind::Float);
        self.opt.backward_step(&loss);
        self.last_loss = Some(loss.double_value(&[])); //~ warning host-sync
    }
}

pub fn train(agent: &mut Agent, observations: &[Tensor]) {
    for step in 0..100_000 {
        let obs = &observations[step % observations.len()];
        let action = agent.act_and_train(obs); //~ warning host-sync
        let chosen = action.int64_value(&[0]);
        agent.observe(obs); //~ note host-sync
        if chosen < 0 {
            break;
        }
    }
}

pub fn train_every(model: &nn::Sequential, opt: &mut nn::Optimizer, states: &[Tensor]) {
    let device = Device::cuda_if_available();
    for (step, state) in states.iter().enumerate() {
        let state = state.to_device(device);
        let q = model.forward(&state);
        if step % 10 == 0 {
            let loss = q.square().mean(Kind::Float);
            let value = loss.double_value(&[]); //~ warning host-sync
            opt.backward_step(&loss);
            if step % 1000 == 0 {
                println!("{value} {}", q.mean(Kind::Float).double_value(&[])); //~ note host-sync
            }
        }
        if step % 100 == 0 {
            println!("{}", q.max().double_value(&[])); //~ note host-sync
        }
    }
}
