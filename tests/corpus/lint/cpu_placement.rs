//! Reads of tensors that live on the CPU although no `Device::Cpu` is in
//! sight at the read: a model from a CPU `VarStore`, libtorch's rule that a
//! CPU operand (not 0-dim) keeps an op on the CPU, a helper whose every
//! caller passes CPU tensors, a CPU copy handed to a helper, and the
//! tensors a crate function builds on the CPU collected into a
//! `Vec<Tensor>` (`collect::<Vec<Tensor>>()`) and run through a device
//! model, which libtorch refuses: only a CPU run gets past it.

use tch::{nn, nn::Module, nn::OptimizerConfig, Device, Kind, Tensor};

fn mlp(p: &nn::Path) -> impl Module {
    nn::seq()
        .add(nn::linear(p / "l1", 4, 8, Default::default()))
        .add_fn(|xs| xs.relu())
        .add(nn::linear(p / "l2", 8, 2, Default::default()))
}

pub fn train_on_the_cpu(xs: &Tensor, ys: &Tensor) {
    let vs = nn::VarStore::new(Device::Cpu);
    let net = mlp(&vs.root());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for epoch in 0..100 {
        let loss = net.forward(xs).cross_entropy_for_logits(ys);
        opt.backward_step(&loss);
        // The model's weights are on the CPU, so its output is too.
        println!("{epoch} {}", f64::try_from(&loss).unwrap());
    }
}

pub fn train_on_a_device(xs: &Tensor, ys: &Tensor, device: Device) {
    let vs = nn::VarStore::new(device);
    let net = mlp(&vs.root());
    let mut opt = nn::Adam::default().build(&vs, 1e-3).unwrap();
    for epoch in 0..100 {
        let loss = net.forward(xs).cross_entropy_for_logits(ys);
        opt.backward_step(&loss);
        println!("{epoch} {}", f64::try_from(&loss).unwrap()); //~ warning host-sync
    }
}

pub fn episode_returns(rewards: &[Tensor], dones: &[Tensor]) -> f64 {
    let mut running = Tensor::zeros([16], (Kind::Float, Device::Cpu));
    let mut total = 0.0;
    for (reward, done) in rewards.iter().zip(dones) {
        running += reward;
        // `running` is a CPU tensor that is not 0-dim: libtorch refuses to
        // mix it with a device tensor, so this product is on the CPU.
        total += f64::try_from((&running * done).sum(Kind::Float)).unwrap();
        // A 0-dim CPU tensor may be combined with a device tensor: no say.
        let scale = Tensor::from(0.5f32);
        total += f64::try_from((&scale * reward).sum(Kind::Float)).unwrap(); //~ warning host-sync
    }
    total
}

/// Reads its argument; every caller below passes CPU data.
fn row_mean(row: &Tensor) -> f64 {
    f64::try_from(row.mean(Kind::Float)).unwrap()
}

/// Reads its argument; one caller passes device data.
fn batch_mean(batch: &Tensor) -> f64 {
    f64::try_from(batch.mean(Kind::Float)).unwrap()
}

pub fn statistics(rows: &[Vec<f32>], logits: &Tensor) -> Vec<f64> {
    let mut means = Vec::new();
    for row in rows {
        let host = Tensor::from_slice(row);
        means.push(row_mean(&host));
        means.push(batch_mean(&host));
        means.push(batch_mean(logits)); //~ warning host-sync
        let copied = logits.to_device(Device::Cpu); //~ warning host-sync
        // The copy is on the CPU: reading it again waits for nothing.
        means.push(row_mean(&copied));
    }
    means
}

pub struct Sampler;

impl Sampler {
    pub fn sample(&self, n: i64) -> Tensor {
        Tensor::rand([n], (Kind::Float, Device::Cpu))
    }
}

pub fn sampled(sampler: &Sampler, device: Device, draws: usize) -> f64 {
    let mut total = 0.0;
    for _ in 0..draws {
        let on_host = sampler.sample(8);
        total += f64::try_from(on_host.sum(Kind::Float)).unwrap();
        // Sampled on the CPU, then moved to the device: the read waits.
        let moved = sampler.sample(8).to(device);
        total += f64::try_from(moved.sum(Kind::Float)).unwrap(); //~ warning host-sync
    }
    total
}

/// Encodes one candidate action on the CPU.
fn encode(action: usize) -> Tensor {
    Tensor::from_slice(&[action as f32, 1.0])
}

/// Scores every candidate with the network, one read per candidate.
fn best_action(net: &dyn Module, device: Device) -> usize {
    let inputs = (0..4).map(|a| encode(a)).collect::<Vec<Tensor>>();
    let scores: Vec<f32> = inputs
        .iter()
        .map(|x| net.forward(x))
        .map(|q| Vec::<f32>::try_from(q.view(-1)).unwrap()[0])
        .collect();
    let moved = (0..4).map(|a| encode(a).to(device)).collect::<Vec<Tensor>>();
    let first = f64::try_from(net.forward(&moved[0]).sum(Kind::Float)).unwrap(); //~ warning host-sync
    (scores[0] as f64 + first) as usize
}

pub fn play(device: Device, steps: usize) -> usize {
    let vs = nn::VarStore::new(device);
    let net = mlp(&vs.root());
    let mut total = 0;
    for _ in 0..steps {
        total += best_action(&net, device); //~ warning host-sync
    }
    total
}
