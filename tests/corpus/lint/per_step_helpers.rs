//! Functions without a loop of their own that run once per step: a read
//! in one is reported where it is, as well as at the call in the loop,
//! when the loop calls it on every iteration with data that can be on a
//! device; through a trait, each impl the call can reach runs per step.
//! Called once per epoch, behind a periodic guard, or with CPU data, the
//! read waits for nothing per step.

use tch::{nn, Device, Kind, Tensor};

pub struct GradScaler {
    scale: Tensor,
    found_inf: Tensor,
}

impl GradScaler {
    pub fn new(device: Device) -> GradScaler {
        GradScaler {
            scale: Tensor::ones([1], (Kind::Float, device)),
            found_inf: Tensor::zeros([1], (Kind::Float, device)),
        }
    }

    /// Steps only when no gradient overflowed, which it asks the device.
    pub fn step(&mut self, opt: &mut nn::Optimizer) {
        let found_inf = Vec::<f32>::try_from(&self.found_inf).unwrap() == [1.0]; //~ warning host-sync
        if !found_inf {
            opt.step();
        }
    }

    pub fn current_scale(&self) -> f32 {
        Vec::<f32>::try_from(&self.scale).unwrap()[0] //~ warning host-sync
    }
}

fn summary(loss: &Tensor) -> String {
    format!("{:.4}", f64::try_from(loss).unwrap())
}

pub fn train(batches: &[(Tensor, Tensor)], model: &nn::Sequential, opt: &mut nn::Optimizer) {
    let device = Device::cuda_if_available();
    let mut scaler = GradScaler::new(device);
    for epoch in 0..10 {
        for (step, (xs, ys)) in batches.iter().enumerate() {
            let loss = xs.to_device(device).apply(model).cross_entropy_for_logits(&ys.to_device(device));
            opt.zero_grad();
            loss.backward();
            scaler.step(opt); //~ warning host-sync
            println!("scale {}", scaler.current_scale()); //~ warning host-sync
            if step % 100 == 0 {
                println!("{}", summary(&loss)); //~ note host-sync
            }
            let cpu_loss = Tensor::from_slice(&[0.5f32]);
            println!("{}", summary(&cpu_loss));
        }
        println!("epoch {epoch}");
    }
}

pub trait Network {
    fn evaluate(&mut self, board: &[f32]) -> Vec<f32>;
}

pub struct LinearNetwork {
    weights: Tensor,
}

impl LinearNetwork {
    pub fn new() -> LinearNetwork {
        let weights = Tensor::randn([4, 4], (Kind::Float, Device::cuda_if_available()));
        LinearNetwork { weights }
    }
}

impl Network for LinearNetwork {
    fn evaluate(&mut self, board: &[f32]) -> Vec<f32> {
        let input = Tensor::from_slice(board).to_device(self.weights.device());
        let output = self.weights.matmul(&input);
        let values: Vec<f32> = output.into(); //~ warning host-sync
        values
    }
}

/// A tree search evaluating the position it reached, once per simulation.
pub fn search(network: &mut impl Network, root: &[f32], simulations: usize) -> f32 {
    let mut total = 0.0;
    let mut board = root.to_vec();
    for _ in 0..simulations {
        total += network.evaluate(&board)[0]; //~ warning host-sync
        board.rotate_left(1);
    }
    total
}
