//! An evaluation loop whose observation builder runs an encoder over the
//! batch in chunks (a loop of forwards over items, no update) and which
//! then runs the policy itself: each pass is one step, so its copies wait
//! once per step. So is a function that runs the policy itself after such
//! an encoder: one step per call. A loop around a search's simulations, or
//! around a sampler's timesteps that hand the latents on, stays the
//! once-per-item level.

use tch::{nn, nn::Module, Device, Kind, Tensor};

struct Encoder {
    net: nn::Sequential,
}

impl Encoder {
    fn encode_chunk(&self, xs: &Tensor) -> Tensor {
        self.net.forward(xs)
    }
}

fn build_obs(encoder: &Encoder, raw: &Tensor, chunk: i64) -> Tensor {
    let mut parts = Vec::new();
    for piece in raw.split(chunk, 0).iter() {
        parts.push(encoder.encode_chunk(piece));
    }
    Tensor::cat(&parts, 0)
}

pub fn evaluate(steps: usize) -> Vec<i64> {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let encoder = Encoder {
        net: nn::seq().add(nn::linear(vs.root() / "enc", 64, 32, Default::default())),
    };
    let policy = nn::seq().add(nn::linear(vs.root() / "pi", 32, 8, Default::default()));
    let mut actions = Vec::new();
    for _ in 0..steps {
        let raw = Tensor::rand([256, 64], (Kind::Float, device));
        let obs = build_obs(&encoder, &raw, 64);
        let logits = tch::no_grad(|| policy.forward(&obs));
        let chosen: Vec<i64> = (&logits.argmax(-1, false)).try_into().unwrap(); //~ warning host-sync
        actions.extend(chosen);
    }
    actions
}

/// Each environment group's observations, encoded chunk by chunk.
fn build_grouped_obs(encoder: &Encoder, groups: &[Tensor]) -> Tensor {
    let mut encoded = Vec::new();
    for group in groups {
        encoded.push(build_obs(encoder, group, 64));
    }
    Tensor::cat(&encoded, 0)
}

/// An actor's step as a function: it builds the observation through the
/// chunked encoder and runs the policy itself, so it is one step per call,
/// and the rollout loop calling it waits once per step for its copy.
fn act_batch(policy: &nn::Sequential, encoder: &Encoder, raw: &Tensor) -> Vec<i64> {
    let obs = build_grouped_obs(encoder, &raw.chunk(4, 0));
    let logits = tch::no_grad(|| policy.forward(&obs));
    (&logits.argmax(-1, false)).try_into().unwrap() //~ warning host-sync
}

pub fn rollout(steps: usize) -> usize {
    let device = Device::cuda_if_available();
    let vs = nn::VarStore::new(device);
    let encoder = Encoder {
        net: nn::seq().add(nn::linear(vs.root() / "enc", 64, 32, Default::default())),
    };
    let policy = nn::seq().add(nn::linear(vs.root() / "pi", 32, 8, Default::default()));
    let mut taken = 0;
    for _ in 0..steps {
        let raw = Tensor::rand([256, 64], (Kind::Float, device));
        taken += act_batch(&policy, &encoder, &raw).len(); //~ warning host-sync
    }
    taken
}

/// One image per sample: the timestep loop hands the latents on, so the
/// sample loop is the once-per-image level and its copy is the image.
pub fn sample(unet: &nn::Sequential, vae: &nn::Sequential, samples: usize) -> Vec<Tensor> {
    let device = Device::cuda_if_available();
    let mut images = Vec::new();
    for _ in 0..samples {
        let mut latents = Tensor::randn([1, 64], (Kind::Float, device));
        for _t in [999, 749, 499, 249] {
            let noise = unet.forward(&latents);
            latents = &latents - noise * 0.1;
        }
        let image = vae.forward(&latents);
        images.push(image.to_device(Device::Cpu)); //~ note host-sync
    }
    images
}
