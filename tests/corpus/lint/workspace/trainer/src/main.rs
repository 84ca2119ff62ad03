mod env;

use metrics_core::accuracy::batch_accuracy;
use tch::{nn, nn::Module, Device, Kind, Tensor};

fn rollout(policy: &impl Module, env: &mut env::Env, observations: &Tensor, labels: &Tensor) -> f64 {
    let mut returns = 0.0;
    for _ in 0..100 {
        let logits = policy.forward(observations);
        let actions = logits.argmax(-1, false);
        let step = env.step(Vec::<i64>::try_from(&actions).unwrap()); //~ warning host-sync
        // Rewards and done flags are built from host slices in env.rs.
        returns += f64::try_from((&step.reward * &step.done).sum(Kind::Float)).unwrap();
        returns += batch_accuracy(&logits, labels); //~ warning host-sync
        #[cfg(feature = "progress")]
        println!("{}", logits.mean(Kind::Float)); //~ warning host-sync
        #[cfg(feature = "profiling")]
        println!("{}", logits.max()); //~ note host-sync
    }
    returns
}

fn main() {
    let vs = nn::VarStore::new(Device::cuda_if_available());
    let policy = nn::linear(vs.root(), 4, 2, Default::default());
    let mut env = env::Env { rewards: vec![0.0; 2] };
    let observations = Tensor::zeros([2, 4], (Kind::Float, vs.device()));
    let labels = Tensor::zeros([2], (Kind::Int64, vs.device()));
    println!("{}", rollout(&policy, &mut env, &observations, &labels));
}
